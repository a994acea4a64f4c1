"""Semantic core: names across modules, call graph, rank taint, collective effects, summaries."""

from __future__ import annotations

import pickle
from pathlib import Path

from distlint.engine.runner import Task, first_pass
from distlint.semantic.effects import EffectAnalysis
from tests.project_util import facts_of, settings, write_tree


def edges(facts, function: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {t.split(":", 1)[1] for t in facts.edges[function]}


# -- names and the call graph -------------------------------------------------------------------


def test_calls_resolve_through_imports_reexports_relative_imports_and_aliases(
    tmp_path: Path,
) -> None:
    facts = facts_of(
        tmp_path,
        {
            "pkg/__init__.py": "from .utils import barrier_all as sync\n",
            "pkg/utils.py": """
            def barrier_all(): pass
            def helper(): pass
            """,
            "pkg/train.py": """
            from pkg import sync
            from .utils import helper
            from . import utils
            import pkg.utils as u

            def step():
                sync()
                helper()
                utils.helper()
                u.barrier_all()
                alias = helper
                alias()
                unknown_thing()
            """,
        },
    )
    assert edges(facts, "pkg.train:step") == {"barrier_all", "helper"}
    assert facts.unknown_calls["pkg.train:step"] == 1  # recorded as unknown, not guessed


def test_methods_submodules_super_and_constructors(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "m.py": """
            import torch.nn as nn

            class Base(nn.Module):
                def forward(self, x): return x

            class Sub(nn.Module):
                def forward(self, x): return x

            class Net(Base):
                def __init__(self):
                    super().__init__()
                    self.sub = Sub()
                def forward(self, x):
                    y = self.sub(x)
                    y = self.scale(y)
                    return super().forward(y)
                def scale(self, x): return x

            def build():
                return Net()
            """
        },
    )
    assert edges(facts, "m:Net.forward") == {"Sub.forward", "Net.scale", "Base.forward"}
    assert edges(facts, "m:build") == {"Net.__init__"}


def test_recursion_and_cycles_terminate_and_reach(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "a.py": """
            import torch
            from b import pong

            def ping(n):
                return pong(n - 1) if n else ping(0)

            @torch.compile
            def root(n): return ping(n)
            """,
            "b.py": """
            def pong(n):
                from a import ping
                return ping(n)
            """,
        },
    )
    assert {f.split(":", 1)[1] for f in facts.regions} == {"root", "ping", "pong"}


# -- rank taint ---------------------------------------------------------------------------------


RANK_FILES = {
    "pred.py": """
    import torch.distributed as dist

    def is_main():
        return dist.get_rank() == 0

    def world():
        return dist.get_world_size()
    """,
    "m.py": """
    import os
    import torch.distributed as dist
    from pred import is_main, world

    class Trainer:
        def __init__(self, accelerator, cfg):
            rank = dist.get_rank()
            self.is_master = rank == 0
            self.accelerator = accelerator
            self.cfg = cfg

        def sources(self):
            local = int(os.environ.get("LOCAL_RANK", "0"))
            if dist.get_rank() == 0: dist.barrier()
            if os.environ["RANK"] == "0": dist.barrier()
            if local == 0: dist.barrier()
            if mpu.get_tensor_model_parallel_rank() == 0: dist.barrier()
            if self.accelerator.is_main_process: dist.barrier()
            if self.is_master and self.cfg.log: dist.barrier()
            if is_main(): dist.barrier()
            if my_predicate(): dist.barrier()

        def uniform(self):
            if dist.get_world_size() > 1: dist.barrier()
            if dist.is_initialized(): dist.barrier()
            if dist.is_available(): dist.barrier()
            if self.cfg.log: dist.barrier()
            if world() > 1: dist.barrier()
    """,
}


def divergent_lines(facts, function: str) -> list[int]:  # type: ignore[no-untyped-def]
    found = EffectAnalysis(facts).divergences(function)
    facts.resolve(d.at.span for d in found)  # lazily located: measured on demand
    return sorted(d.at.span.span.start.line for d in found)


def test_rank_sources_propagate_through_names_attributes_and_functions(tmp_path: Path) -> None:
    facts = facts_of(tmp_path, RANK_FILES, rank_predicates=("my_predicate",))
    assert divergent_lines(facts, "m:Trainer.sources") == [15, 16, 17, 18, 19, 20, 21, 22]
    assert "pred:is_main" in facts.rank_functions
    assert "pred:world" not in facts.rank_functions


def test_world_size_initialization_and_config_flags_are_uniform(tmp_path: Path) -> None:
    facts = facts_of(tmp_path, RANK_FILES)
    assert divergent_lines(facts, "m:Trainer.uniform") == []


# -- collective effects ---------------------------------------------------------------------------


def signature(facts, function: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [i.kind for i in EffectAnalysis(facts).signature(function)]


def test_explicit_functional_aliased_and_configured_collectives(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "m.py": """
            import torch.distributed as dist
            import torch.distributed._functional_collectives as funcol
            from torch.distributed import all_reduce as ar
            from torch.distributed.distributed_c10d import broadcast
            from mylib import sync_everything

            reduce_all = dist.all_reduce

            def f(t, g):
                ar(t)
                reduce_all(t)
                broadcast(t, src=0)
                funcol.all_reduce(t, "sum", g)
                dist.all_reduce(t, group=g)
                dist.send(t, 1)
                sync_everything()
            """
        },
        collective_wrappers=("mylib.sync_everything",),
    )
    # grouped collectives and point-to-point are left out of signatures (see effects.py)
    assert signature(facts, "m:f") == [
        "all_reduce",
        "all_reduce",
        "broadcast",
        "funcol.all_reduce",
        "sync_everything",
    ]


def test_implicit_collectives_of_wrapped_models_and_libraries(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "m.py": """
            import deepspeed
            from torch.nn.parallel import DistributedDataParallel as DDP
            from torch.distributed.fsdp import fully_shard

            def ddp(net, x):
                model = DDP(net)
                loss = model(x).sum()
                loss.backward()

            def fsdp2(net, x):
                fully_shard(net)
                net(x)

            def libraries(accelerator, fabric, trainer):
                accelerator.wait_for_everyone()
                fabric.barrier()
                trainer.strategy.barrier()

            def ds(net, x):
                engine, opt, _, _ = deepspeed.initialize(model=net)
                loss = engine(x)
                engine.backward(loss)
                engine.step()
            """
        },
    )
    assert len(signature(facts, "m:ddp")) == 2
    assert signature(facts, "m:fsdp2")[0].startswith("forward of the distributed-wrapped")
    assert signature(facts, "m:libraries") == [
        "`accelerator.wait_for_everyone()`",
        "`fabric.barrier()`",
        "`trainer.strategy.barrier()`",
    ]
    assert signature(facts, "m:ds") == [
        "DeepSpeed `engine.backward` (gradient all-reduce)",
        "DeepSpeed `engine.step`",
    ]


def test_transitive_collectives_and_disabling_arguments(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "ckpt.py": """
            import torch.distributed as dist

            def save(state, path, use_distributed_barriers=True):
                if use_distributed_barriers:
                    dist.barrier()

            def save_quiet(state, path):
                save(state, path, False)
            """,
            "m.py": """
            from ckpt import save, save_quiet

            def a(s): save(s, "p")
            def b(s): save(s, "p", use_distributed_barriers=False)
            def c(s): save_quiet(s, "p")
            """,
        },
    )
    assert signature(facts, "m:a") == ["barrier"]
    assert signature(facts, "m:b") == []
    assert signature(facts, "m:c") == []


CHAIN = """
import torch.distributed as dist

def helper(t):
    dist.all_reduce(t)

def f(t, flag):
    rank = dist.get_rank()
    if rank == 0:
        helper(t)
        if flag:
            dist.barrier()
    elif rank == 1:
        helper(t)
        if flag:
            return t
        dist.broadcast(t, 0)
    elif rank == 2:
        helper(t)
    else:
        helper(t)
        dist.barrier()
    return t
"""


def test_branches_after_a_call_in_an_elif_chain(tmp_path: Path) -> None:
    """Each side of each branch is compared, and what a branch adds is kept (for the
    function and mode): a call that issues collectives, then a branch, in one block."""
    facts = facts_of(tmp_path, {"m.py": CHAIN})
    assert divergent_lines(facts, "m:f") == [17, 22]


def test_sequences_are_new_lists_for_the_caller_to_extend(tmp_path: Path) -> None:
    """What a branch adds is kept: the sequences handed out are copies, asked again alike."""
    facts = facts_of(tmp_path, {"m.py": CHAIN})
    analysis = EffectAnalysis(facts)
    effects = facts.functions["m:f"].effects
    first = analysis.sequence(effects, "m:f")
    kinds = [i.kind for i in first]
    first.extend(first)
    assert [i.kind for i in analysis.sequence(effects, "m:f")] == kinds
    chain = next(e for e in effects if e.kind == "branch")
    for side in (chain.body, chain.orelse):
        got = analysis.sequence(side, "m:f")
        got.clear()
        assert analysis.sequence(side, "m:f")  # every side issues something


# -- per-file summaries ---------------------------------------------------------------------------


def test_summaries_are_picklable_and_independent_of_other_files(tmp_path: Path) -> None:
    files = {
        "a.py": """
        import torch
        import torch.distributed as dist
        from b import helper

        @torch.compile(fullgraph=True)
        def step(x):
            if dist.get_rank() == 0:
                dist.barrier()
            return helper(x)
        """,
        "b.py": "def helper(x): return x\n",
    }
    paths = write_tree(tmp_path, files)
    config = settings()
    together = first_pass([Task(p, p.name, config) for p in paths], jobs=1)
    alone = first_pass([Task(paths[0], paths[0].name, config)], jobs=1)
    assert pickle.dumps(together[0].summary) == pickle.dumps(alone[0].summary)
    restored = pickle.loads(pickle.dumps(together[0].summary))
    assert restored.compile_sites[0][1].span.span.start.line == 6


def test_rank_partitions_pair_up_but_a_repeated_condition_does_not(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "m.py": """
            import torch.distributed as dist

            def zero_first(local_rank):
                if local_rank not in [-1, 0]:
                    dist.barrier()
                yield
                if local_rank == 0:
                    dist.barrier()

            def twice():
                if dist.get_rank() == 0:
                    dist.barrier()
                if dist.get_rank() == 0:
                    dist.barrier()
            """
        },
    )
    assert divergent_lines(facts, "m:zero_first") == []
    assert divergent_lines(facts, "m:twice") == [13, 15]


def test_the_gate_finds_rank_branches_at_any_depth_and_only_those(tmp_path: Path) -> None:
    """``EffectAnalysis._has_rank_branch``: the divergence walk is skipped only where no branch
    tests a rank; a rank branch nested in a loop, an else side or a uniform branch, or decided
    by a project predicate or a rank attribute of the class, still counts."""
    facts = facts_of(
        tmp_path,
        {
            "pred.py": """
            import torch.distributed as dist

            def is_main():
                return dist.get_rank() == 0
            """,
            "m.py": """
            import torch.distributed as dist
            from pred import is_main

            def in_loop(steps, flag):
                for _ in steps:
                    if flag:
                        pass
                    elif dist.get_rank() == 0:
                        dist.barrier()

            def in_while_else(flag):
                while flag:
                    if flag:
                        dist.barrier()
                    else:
                        if is_main():
                            dist.barrier()

            def uniform(flag, t):
                if flag:
                    dist.all_reduce(t)
                for _ in range(3):
                    if dist.get_world_size() > 1:
                        dist.barrier()

            def straight(t):
                dist.all_reduce(t)
                return t

            class Trainer:
                def __init__(self):
                    self.rank = dist.get_rank()

                def step(self):
                    if self.rank == 0:
                        dist.barrier()
            """,
        },
    )
    analysis = EffectAnalysis(facts)

    def gated(function: str) -> bool:
        return analysis._has_rank_branch(facts.functions[function].effects, function)

    for function in ("m:in_loop", "m:in_while_else", "m:Trainer.step"):
        assert gated(function), function
        assert divergent_lines(facts, function), function
    for function in ("m:uniform", "m:straight", "pred:is_main"):
        assert not gated(function), function
        assert divergent_lines(facts, function) == [], function


def test_the_rank_rules_measure_only_the_divergences_they_report(tmp_path: Path) -> None:
    """``project_divergences(measured=False)``: DL201 measures the places of the divergences
    it reports, not those of the ones only possible (so that no file is parsed again for a
    place no finding shows); the explain-ranks listing still gets every place measured."""
    from distlint.rules.collectives.rank_divergent_collective import RankDivergentCollective
    from distlint.rules.project import Project
    from distlint.semantic.effects import project_divergences

    facts = facts_of(
        tmp_path,
        {
            "proven.py": """
            import torch.distributed as dist

            def step(t):
                if dist.get_rank() == 0:
                    dist.all_reduce(t)
            """,
            "possible.py": """
            import torch
            import torch.distributed as dist
            from torch.distributed.fsdp import FSDPModule, fully_shard

            def save_checkpoint(path, models):
                if any(isinstance(m, FSDPModule) for m in models):
                    dist.barrier()
                torch.save([m.state_dict() for m in models], path)

            def train(net, epoch):
                model = fully_shard(net)
                if dist.get_rank() == 0 and epoch % 5 == 0:
                    save_checkpoint("c.pt", [model])
            """,
        },
    )
    found = list(RankDivergentCollective.check_project(Project([], facts)))
    assert [(f.path, f.span.start.line) for f in found] == [("proven.py", 6)]
    assert {r.message for r in found[0].related} >= {"rank-dependent condition"}
    assert set(facts.measured) == {"proven.py"}
    divergences = project_divergences(facts)
    assert {d.path for d in divergences} == {"proven.py", "possible.py"}
    assert all(d.at.span.span is not None for d in divergences)
    assert set(facts.measured) == {"proven.py", "possible.py"}
