"""The rank lattice (distlint/semantic/rankflow.py) and path comparison, rule by rule.

Each test is a small program with a collective behind one condition; what the rank review
listing (``distlint explain-ranks``) says there shows which level the condition got: proven
places are what DL201 (proven rank, error) and DL208 (rank-dependent raise) report, "possible"
ones (maybe rank) what DL209 reported before it was removed. The expected places are written by
hand.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from distlint.output.docs import parse_doc
from distlint.rules.collectives.rank_review import RankPlace
from tests.project_util import check_sources, rank_labels, rank_review

RANK_RULES = ("DL201", "DL208")
HEADER = """\
import os
import torch
import torch.distributed as dist
"""


def findings(tmp_path: Path, body: str, files: dict[str, str] | None = None) -> list[tuple]:
    """(label, line) of the review listing's places in ``m.py`` = HEADER + body (line 1 is
    HEADER's): DL201/DL208 for proven places, "possible" for the others."""
    sources = {"m.py": HEADER + textwrap.dedent(body), **(files or {})}
    return rank_labels(tmp_path, sources).get("m.py", [])


# -- rank: proven -> DL201 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "condition",
    [
        "dist.get_rank() == 0",
        "int(os.environ['LOCAL_RANK']) == 0",
        "int(os.environ.get('RANK', '0')) % 8 == 0",
        "args.local_rank in (-1, 0)",
        "str(dist.get_rank()) == '0'",
        "torch.tensor(dist.get_rank()).item() == 0",
        "accelerator.is_main_process",
        "not trainer.is_global_zero",
    ],
)
def test_rank_sources_and_what_preserves_them_are_proven(tmp_path: Path, condition: str) -> None:
    body = f"""
    def f(t, args, accelerator, trainer):
        if {condition}:
            dist.all_reduce(t)
    """
    assert findings(tmp_path, body) == [("DL201", 7)]


def test_reassignment_kills_and_later_assignment_does_not_reach_back(tmp_path: Path) -> None:
    body = """
    def f(t, cfg):
        flag = cfg.sync
        if flag:
            dist.barrier()
        flag = dist.get_rank() == 0
        rank = dist.get_rank()
        rank = 0
        if rank == 0:
            dist.barrier()
        if flag:
            dist.barrier()
    """
    assert findings(tmp_path, body) == [("DL201", 15)]


def test_elements_of_a_project_function_returning_a_rank_tuple(tmp_path: Path) -> None:
    files = {
        "info.py": """
        import torch.distributed as dist

        def get_dist_info():
            return dist.get_rank(), dist.get_world_size()
        """
    }
    body = """
    from info import get_dist_info

    def save(t):
        rank, world_size = get_dist_info()
        if world_size > 1:
            dist.barrier()
        if rank == 0:
            dist.barrier()
    """
    assert findings(tmp_path, body, files) == [("DL201", 12)]


def test_what_a_rank_branch_assigns_differs_between_ranks(tmp_path: Path) -> None:
    body = """
    def train(model, loader, rank):
        for epoch in range(10):
            model.step(loader)
            stop = False
            if rank == 0 and model.converged():
                stop = True
            if stop:
                break
            dist.barrier()
    """
    assert findings(tmp_path, body) == [("DL201", 12)]


def test_a_counter_only_rank_zero_updates_differs(tmp_path: Path) -> None:
    body = """
    def train(model, cfg):
        patience = 0
        for epoch in range(cfg.epochs):
            model.step()
            if dist.get_rank() == 0:
                if model.improved():
                    patience = 0
                else:
                    patience += 1
            if patience >= cfg.patience:
                break
            dist.barrier()
    """
    assert findings(tmp_path, body) == [("DL201", 15)]


def test_a_value_the_other_ranks_receive_equals_the_sources(tmp_path: Path) -> None:
    body = """
    def train(model, rank):
        for epoch in range(10):
            model.step()
            stop = False
            if rank in {-1, 0}:
                stop = model.should_stop()
            if rank != -1:
                box = [stop if rank == 0 else None]
                dist.broadcast_object_list(box, 0)
                if rank != 0:
                    stop = box[0]
            if stop:
                break
            dist.barrier()


    def chat(model):
        while True:
            if dist.get_rank() == 0:
                try:
                    prompt = input()
                except EOFError:
                    prompt = ""
                dist.broadcast_object_list([prompt], src=0)
            else:
                box = [None]
                dist.broadcast_object_list(box, src=0)
                prompt = box[0]
            if not prompt:
                break
            model.generate(prompt)
            dist.barrier()


    class Optimizer:
        def __init__(self, rank):
            self.rank = rank

        def step(self, groups):
            for group in groups:
                if group["rank"] >= 0 and self.rank >= 0:
                    dist.broadcast(group["param"], group["rank"])


    class Critic:
        def train_step(self):
            dist.all_reduce(self.loss)

        def run(self, server, rank):
            if rank == 0:
                server.bind(fn=self.train_step)  # the server calls it per request
                server.serve()
            else:
                while self.alive:
                    dist.broadcast(self.command, 0)
                    self.train_step()


    def resume(path):
        if False and dist.get_rank() == 0 and os.path.exists(path):
            return None
        dist.barrier()
        return path


    def serve(server, rank):
        if rank == 0:
            server.run()  # answers requests through callbacks that broadcast
        else:
            while True:
                request = [None]
                dist.broadcast_object_list(request, src=0)
                if request[0] is None:
                    break
    """
    # served loops are only possibly divergent: notes for review
    assert findings(tmp_path, body) == [("possible", 59), ("possible", 76)]


def test_tuple_unpacking_assigns_each_element(tmp_path: Path) -> None:
    body = """
    def f(t):
        world_size, rank = get_world_size_and_rank()
        if world_size > 1:
            dist.barrier()
        if rank == 0:
            dist.all_reduce(t)
        a, b = dist.get_rank(), 4
        if b > 1:
            dist.barrier()
    """
    assert findings(tmp_path, body) == [("DL201", 10)]


def test_self_attributes_are_per_class(tmp_path: Path) -> None:
    body = """
    class Trainer:
        def __init__(self):
            self.is_chief = dist.get_rank() == 0
            self.log = True

        def step(self, t):
            if self.log:
                dist.barrier()
            if self.is_chief:
                dist.all_reduce(t)


    class Other:
        def __init__(self):
            self.is_chief = False

        def step(self, t):
            if self.is_chief:
                dist.all_reduce(t)
    """
    assert findings(tmp_path, body) == [("DL201", 14)]


def test_a_project_predicate_in_another_file_is_proven(tmp_path: Path) -> None:
    files = {
        "comm.py": """
        import torch.distributed as dist

        def chief():
            return dist.get_rank() == 0

        def settings_ok():
            return True
        """
    }
    body = """
    from comm import chief, settings_ok

    def f(t):
        if settings_ok():
            dist.barrier()
        if chief():
            dist.barrier()
    """
    assert findings(tmp_path, body, files) == [("DL201", 11)]


# -- uniform, placement, unknown: silent ---------------------------------------------------------


@pytest.mark.parametrize(
    "condition",
    [
        "dist.get_world_size() > 1",
        "rank >= 0",
        "rank != -1",
        "local_rank == -1",
        "rank is None",
        "is_pipeline_first_stage() and is_pipeline_last_stage()",
        "cfg.average",
    ],
)
def test_uniform_tests_are_silent(tmp_path: Path, condition: str) -> None:
    body = f"""
    def f(t, cfg, rank, local_rank):
        if {condition}:
            dist.all_reduce(t)
    """
    assert findings(tmp_path, body) == []


@pytest.mark.parametrize(
    "condition",
    [
        "args.local_rank == -1",
        "args.local_rank == -1 and args.evaluate",
        "cfg.eval and rank < 0",
        "args.world_size == 1 and args.local_rank != 0",
    ],
)
def test_a_raise_only_single_process_runs_reach_is_silent(tmp_path: Path, condition: str) -> None:
    """unilm's fine-tuning scripts: ``local_rank == -1`` (and anything) is false in a job."""
    body = f"""
    def f(t, args, cfg, rank):
        if args.local_rank in [-1, 0]:
            if {condition}:
                raise ValueError("single process only")
        dist.barrier()
    """
    assert findings(tmp_path, body) == []


def test_loop_indexes_and_counters_over_a_loader_are_uniform(tmp_path: Path) -> None:
    body = """
    def train(loader, rank, accum, total):
        sampler = DistributedSampler(loader.dataset, rank=rank)
        step = 0
        for index, batch in enumerate(DataLoader(loader.dataset, sampler=sampler)):
            loss = batch.sum()
            step += 1
            if (index + 1) % accum == 0:
                dist.all_reduce(loss)
            if step >= total:
                break
            dist.barrier()
    """
    assert findings(tmp_path, body) == []


def test_a_device_from_the_local_rank_is_a_placement(tmp_path: Path) -> None:
    body = """
    def resume(path, local_rank, max_steps):
        device = f"cuda:{local_rank}"
        other = torch.device("cuda", local_rank)
        ckpt = torch.load(path, map_location=device)
        model = build().to(other)
        if ckpt["step"] >= max_steps:
            return None
        if model.ready:
            return None
        dist.barrier()
        return ckpt
    """
    assert findings(tmp_path, body) == []


def test_collectives_make_their_argument_uniform(tmp_path: Path) -> None:
    body = """
    def f(model, rank):
        stop = [should_stop(model) if rank == 0 else None]
        dist.broadcast_object_list(stop, src=0)
        if stop[0]:
            return
        flag = torch.tensor([rank])
        dist.all_reduce(flag)
        if flag.item() > 0:
            return
        dist.barrier()
    """
    assert findings(tmp_path, body) == []


# -- maybe: possible only --------------------------------------------------------------------------


def test_values_through_unknown_calls_are_maybe(tmp_path: Path) -> None:
    body = """
    def f(ckpt_dir, rank):
        path = os.path.join(ckpt_dir, f"rank{rank}.pt")
        if not os.path.exists(path):
            return None
        dist.barrier()
        return path
    """
    assert findings(tmp_path, body) == [("possible", 8)]


# -- paths: compare what each side issues until they meet -----------------------------------------


def test_a_rank_dependent_raise_is_dl208(tmp_path: Path) -> None:
    body = """
    def f(t, path):
        if dist.get_rank() == 0 and not os.path.exists(path):
            raise FileNotFoundError(path)
        dist.broadcast(t, src=0)
    """
    assert findings(tmp_path, body) == [("DL208", 7)]


def test_balanced_exits_are_silent(tmp_path: Path) -> None:
    body = """
    def gather_all(items, rank):
        out = []
        for item in items:
            if rank == 0 and item.special:
                dist.all_gather(out, item.big)
                continue
            dist.all_gather(out, item.small)
        return out


    def sub_group(t, rank, ranks):
        group = dist.new_group(ranks)
        if rank not in ranks:
            dist.barrier()
            return
        dist.all_reduce(t, group=group)
        dist.barrier()


    def retry(info, rank):
        while True:
            if rank == 0 and not ready():
                continue
            dist.all_reduce(info)
            break
    """
    assert findings(tmp_path, body) == []


def test_an_exit_that_skips_a_later_collective_is_reported(tmp_path: Path) -> None:
    body = """
    def f(metrics, rank):
        for name, value in metrics.items():
            if name.startswith("debug/") and rank != 0:
                continue
            dist.all_reduce(value)
    """
    assert findings(tmp_path, body) == [("DL201", 8)]


def test_a_rank_zero_server_loop_against_a_receive_loop_is_not_compared(tmp_path: Path) -> None:
    body = """
    def serve(t, rank):
        if rank == 0:
            run_server()
            dist.broadcast(t, src=0)
        else:
            while True:
                dist.broadcast(t, src=0)
                if t.item() == 1:
                    break


    def only_rank_zero_loops(t, rank):
        if rank == 0:
            while t.item() > 0:
                dist.all_reduce(t)
    """
    assert findings(tmp_path, body) == [("DL201", 19)]


def test_complementary_branches_at_different_depths_and_in_enter_exit(tmp_path: Path) -> None:
    body = """
    def build(path, rank):
        if rank != 0:
            dist.barrier()
        if os.path.exists(path):
            load(path)
            if rank == 0:
                dist.barrier()
        else:
            make(path)
            if rank == 0:
                dist.barrier()


    def pretrain(args):
        if dist.get_rank() != 0:
            dist.barrier()
        dataset = build(args)
        if dist.get_rank() == 0 and args.local_rank != -1:
            dist.barrier()
        return dataset


    def load_examples(args, evaluate):
        if args.local_rank not in [-1, 0] and not evaluate:
            dist.barrier()
        features = build(args)
        if args.local_rank == 0 and not evaluate:
            dist.barrier()
        return features


    class FirstRankFirst:
        def __enter__(self):
            self.first = dist.get_rank() == 0
            if not self.first:
                dist.barrier()
            return self

        def __exit__(self, *exc):
            if self.first:
                dist.barrier()
    """
    assert findings(tmp_path, body) == []


def test_a_divergence_that_needs_a_particular_configuration_is_only_possible(
    tmp_path: Path,
) -> None:
    body = """
    def open_store(uri):
        if uri.startswith("dbfs:"):
            dist.broadcast_object_list([uri], src=0)
        return uri


    def download(uri):
        if dist.get_rank() == 0:
            open_store(uri)


    def finish(t):
        if dist.get_rank() != 0:
            return
        if dist.get_world_size() > 1:
            dist.barrier()
    """
    assert findings(tmp_path, body) == [("DL201", 18), ("possible", 13)]


def test_groups_passed_positionally_or_through_parameters(tmp_path: Path) -> None:
    body = """
    def reduce_mean(t, group=None):
        dist.all_reduce(t, group=group)


    def f(t, pp_group, dp_rank):
        if dp_rank != 0:
            return
        dist.barrier(pp_group)


    def g(t, grp):
        if dist.get_rank() == 0:
            reduce_mean(t, group=grp)
        if dist.get_rank() == 0:
            reduce_mean(t)
    """
    assert findings(tmp_path, body) == [("DL201", 19)]


def test_literal_arguments_decide_a_helpers_rank_test(tmp_path: Path) -> None:
    body = """
    def first_on_zero(rank):
        if rank not in (-1, 0):
            dist.barrier()
        prepare()
        if rank == 0:
            dist.barrier()


    def build_loader(rank):
        first_on_zero(rank)


    def f(rank):
        if rank in (-1, 0):
            build_loader(rank=-1)
    """
    assert findings(tmp_path, body) == []


def test_real_code_look_alikes_are_silent(tmp_path: Path) -> None:
    """False alarms met on public training code, each reduced to its shape."""
    body = """
    import functools

    from distrib import get_distrib_size


    def get_file(path, object_store=None):
        if object_store is None:
            dist.broadcast_object_list([path], src=0)
        return path


    def download(path, store):
        if dist.get_rank() == 0:
            get_file(path, object_store=store)
        dist.barrier()


    def search(study, n_trials):
        if dist.get_rank() == 0:
            def objective(trial):
                dist.broadcast_object_list([trial], src=0)
                return 0.0
            study.optimize(objective, n_trials=n_trials)
        else:
            for _ in range(n_trials):
                dist.broadcast_object_list([None], src=0)


    def restore(ckpt, dp_rank):
        state = ckpt["rng"][dp_rank]
        if not state["tracker"]:
            raise KeyError("tracker")
        dist.barrier()


    def report(t):
        if get_distrib_size()[2] > 1:
            dist.barrier()


    def cached_fid(path, world_size):
        rank = dist.get_rank()
        found = os.path.isfile(path) if rank == 0 else False
        if world_size > 1:
            flag = torch.tensor(int(found))
            dist.broadcast(flag, src=0)
            found = bool(flag)
        if found:
            return path
        dist.barrier()
        return None


    def to_float(value, is_distributed):
        if is_distributed and isinstance(value, torch.Tensor):
            dist.all_reduce(value)
        return float(value)


    def log_weight(weight, is_distributed):
        if dist.get_rank() == 0:
            print(to_float(weight, is_distributed=is_distributed))


    @functools.cache
    def fid(step):
        dist.all_reduce(torch.tensor(float(step)))
        return step


    def best_fid(steps):
        best = max(fid(step) for step in steps)
        if dist.get_rank() == 0:
            print(fid(best))


    def sample(model, prompt):
        model = torch.nn.parallel.DistributedDataParallel(model)
        if dist.get_rank() == 0:
            model.generate(prompt)
    """
    files = {
        "distrib.py": """
        import os

        def get_distrib_size():
            return int(os.environ["LOCAL_RANK"]), int(os.environ["RANK"]), 4
        """
    }
    # the entry picked by the rank may differ: a note for review, never an error
    assert findings(tmp_path, body, files) == [
        ("possible", 30),
        ("possible", 66),
        ("possible", 78),
    ]


# -- messages and docs -----------------------------------------------------------------------


def test_message_names_where_the_rank_comes_from(tmp_path: Path) -> None:
    sources = {
        "m.py": HEADER
        + textwrap.dedent(
            """
            def f(t):
                chief = dist.get_rank() == 0
                if chief:
                    dist.all_reduce(t)
            """
        )
    }
    result = check_sources(tmp_path, sources, enabled=RANK_RULES)["m.py"]
    (finding,) = result.findings
    assert "(rank from `dist.get_rank()` at m.py:6)" in finding.message
    assert [r.message for r in finding.related] == [
        "rank-dependent condition",
        "the rank comes from here",
    ]


def _docs_example(code: str) -> str:
    page = (Path(__file__).resolve().parents[2] / "docs" / "rules" / f"{code}.md").read_text()
    example = parse_doc(page).sections["Example"]
    return example.split("```python", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize("code", RANK_RULES)
def test_docs_example_triggers_the_rule(tmp_path: Path, code: str) -> None:
    results = check_sources(tmp_path, {"example.py": _docs_example(code)}, enabled=RANK_RULES)
    assert code in {f.code for f in results["example.py"].findings}


def test_the_removed_dl209_pages_example_is_listed_as_possible(tmp_path: Path) -> None:
    """The "Removed" page of DL209 shows what it reported: the listing has it, proven by none."""
    assert rank_labels(tmp_path, {"example.py": _docs_example("DL209")}) == {
        "example.py": [("possible", 11)]  # the `return` (line 1: the fence line's end)
    }


# -- wrapped models returned by project functions ------------------------------------------------

BUILD = """\
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_model(net):
    model = DDP(net)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def setup_normed(net):
    model = DDP(nn.Sequential(net, nn.BatchNorm1d(8)))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def setup_quiet(net):
    return DDP(net, broadcast_buffers=False)


def plain(net):
    return net, None
"""


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        # DDP's forward broadcasts buffers: proven for a BatchNorm, not for an unknown net
        ("model, opt = setup_normed(net)", [("DL201", 11)]),
        ("model, opt = setup_model(net)", [("possible", 11)]),
        ("model = setup_quiet(net)", []),
        ("model, opt = plain(net)", []),
        ("opt, model = setup_model(net)", []),  # element 1 is the optimizer
        ("model, opt = setup_model(net)\n        model = net", []),  # reassigned
    ],
)
def test_a_wrapped_model_returned_from_another_module(tmp_path: Path, made, expected) -> None:
    body = f"""
    from build import plain, setup_model, setup_normed, setup_quiet

    def train(net, batch):
        {made}
        if dist.get_rank() == 0:
            with torch.no_grad():
                model(batch)
        dist.barrier()
    """
    found = findings(tmp_path, body, {"build.py": BUILD})
    assert [(code, line - (1 if "\n" in made else 0)) for code, line in found] == expected


def test_a_raise_for_a_one_process_world_is_silent(tmp_path: Path) -> None:
    """waveglow/flowtron: ``if n_gpus == 1 and rank != 0: raise``: with one process in the
    world no other rank waits, and in a real job the test is false."""
    body = """
    def main(t):
        rank = int(os.getenv("RANK", "0"))
        n_gpus = int(os.getenv("WORLD_SIZE", "1"))
        if n_gpus == 1 and rank != 0:
            raise RuntimeError("single GPU training on rank > 0")
        dist.broadcast(t, src=0)
    """
    assert findings(tmp_path, body) == []


# -- the listing says why a divergence on a rank-varying condition is only possible ------------

MAYBE_CASES = {
    "buffers": (
        """
    from torch.nn.parallel import DistributedDataParallel as DDP

    def sample(net, x):
        model = DDP(net)
        if dist.get_rank() == 0:
            model(x)
        dist.barrier()
    """,
        "cannot prove that this model has some",
    ),
    "configuration": (
        """
    def save(models, path):
        if any(getattr(m, "sharded", False) for m in models):
            dist.barrier()
        torch.save(models, path)

    def train(models, path):
        if dist.get_rank() == 0:
            save(models, path)
        dist.all_reduce(torch.ones(1))
    """,
        "issued only in some configurations",
    ),
    "cached": (
        """
    import functools

    @functools.cache
    def world_total():
        t = torch.ones(1)
        dist.all_reduce(t)
        return t.item()

    def log():
        if dist.get_rank() == 0:
            print(world_total())
    """,
        "a cache hit issues nothing",
    ),
    "condition": (
        """
    def resume(ckpt_dir):
        rank = dist.get_rank()
        if not os.path.exists(os.path.join(ckpt_dir, f"rank{rank}.pt")):
            return None
        dist.barrier()
    """,
        "through code the analysis cannot see through",
    ),
}


@pytest.mark.parametrize("case", sorted(MAYBE_CASES))
def test_a_note_says_why_the_divergence_is_only_possible(tmp_path: Path, case: str) -> None:
    body, phrase = MAYBE_CASES[case]
    sources = {"m.py": HEADER + textwrap.dedent(body)}
    places: list[RankPlace] = rank_review(tmp_path, sources).get("m.py", [])
    notes = [place.why for place in places]
    assert [(place.kind, place.doubt) for place in places] == [("possible", case)], notes
    assert phrase in notes[0]
    others = {p for c, (_, p) in MAYBE_CASES.items() if c != case}
    assert not any(p in notes[0] for p in others)


def test_a_wrapped_model_kept_on_an_object_of_another_module(tmp_path: Path) -> None:
    """``trainer.model(x)`` on rank 0, where ``Trainer`` (another module) keeps an FSDP model in
    ``self.model``: a certain all-gather. A DDP without proven buffers is only possible
    (listed as possible); an attribute the class does not wrap is nothing."""
    files = {
        "pkg/__init__.py": "",
        "pkg/trainer.py": """
        import torch.distributed as dist
        from torch import nn
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Trainer:
            def __init__(self, model):
                self.model = FSDP(model)
                self.plain = nn.Linear(4, 4)
                self.replica = DDP(nn.Linear(4, 4))
        """,
        "pkg/evaluate.py": """
        import torch.distributed as dist
        from pkg.trainer import Trainer

        def main(model, batch):
            trainer = Trainer(model)
            if dist.get_rank() == 0:
                trainer.model(batch)
            if dist.get_rank() == 0:
                trainer.plain(batch)
            if dist.get_rank() == 0:
                trainer.replica(batch)
        """,
    }
    assert rank_labels(tmp_path, files)["pkg/evaluate.py"] == [("DL201", 8), ("possible", 12)]
    results = check_sources(tmp_path, files, ["DL201"])
    message = results["pkg/evaluate.py"].findings[0].message
    assert "the distributed-wrapped model `Trainer` keeps in `self.model`" in message
