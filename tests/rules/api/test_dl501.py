"""DL501 unknown-keyword-argument: what distlint reports, where, and the fixes it offers (the
proof tests, tests/proof/test_proof_dl5xx.py, show torch fails as the messages say), on one
torch release and on a project's torch range (accepted by some releases only: a warning naming
both sides)."""

from __future__ import annotations

import pytest

from distlint.findings import Applicability, Severity
from distlint.knowledge.torch_tables import load_table
from tests.rules.api.api_util import dl501, fixed, only, range_findings, where


def test_dl501_range_facts() -> None:
    """Read from the wheels: barrier's timeout= arrived after 2.4 (the tests below rely on it)."""
    old, new = load_table("2.4"), load_table("2.13")
    barrier = "torch.distributed.barrier"
    assert not old.signature(barrier).accepts_keyword("timeout")
    assert new.signature(barrier).accepts_keyword("timeout")


def test_dl501_compile_dynamic_shapes_suggests_dynamic() -> None:
    (finding,) = dl501("m = torch.compile(net, dynamic_shapes=True)\n")
    assert where([finding]) == [(6, 24)]
    assert finding.severity is Severity.ERROR
    assert finding.message == (
        "`torch.compile` has no keyword `dynamic_shapes` in torch 2.13: the call raises "
        "`TypeError: compile() got an unexpected keyword argument 'dynamic_shapes'`. "
        "Did you mean `dynamic`?"
    )
    assert finding.fix is not None and finding.fix.applicability is Applicability.UNSAFE
    assert fixed(finding) == ["dynamic"]


def test_dl501_init_process_group_debug_names_the_real_apis() -> None:
    (finding,) = dl501('dist.init_process_group("nccl", debug=dist.DebugLevel.DETAIL)\n')
    assert "init_process_group() got an unexpected keyword argument 'debug'" in finding.message
    assert "TORCH_DISTRIBUTED_DEBUG=DETAIL" in finding.message
    assert "dist.set_debug_level" in finding.message
    assert finding.fix is None  # no keyword replaces it


@pytest.mark.parametrize(
    "call",
    [
        "DDP(net, find_unused_params=True)",
        "torch.nn.parallel.DistributedDataParallel(net, find_unused_params=True)",
        "torch.nn.parallel.distributed.DistributedDataParallel(net, find_unused_params=True)",
    ],
)
def test_dl501_ddp_spellings(call: str) -> None:
    (finding,) = dl501(f"m = {call}\n")
    assert "DistributedDataParallel.__init__() got an unexpected keyword" in finding.message
    assert fixed(finding) == ["find_unused_parameters"]


def test_dl501_fsdp_and_fully_shard() -> None:
    found = dl501(
        """\
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard
        from torch.distributed._composable.fsdp import fully_shard as fs2
        a = FSDP(net, use_orig_param=True)
        fully_shard(net, reshard_after_foward=True)
        fs2(net, meshes=None)
        """
    )
    assert [f.message.split("`")[5] for f in found] == [
        "use_orig_param",
        "reshard_after_foward",
        "meshes",
    ]


def test_dl501_partial_decorator_and_module_compile() -> None:
    found = dl501(
        """\
        jit = functools.partial(torch.compile, dynamic_shape=True)

        @torch.compile(fullgrph=True)
        def f(x):
            return x

        model.compile(dynamic_shapes=True)
        """
    )
    assert where(found) == [(6, 40), (8, 16), (12, 15)]
    assert all("compile() got an unexpected keyword" in f.message for f in found)


def test_dl501_sees_a_keyword_anywhere_in_the_call() -> None:
    # visit_Call skips calls without a keyword: one after positional and starred arguments,
    # or in a partial's arguments, must still be seen
    found = dl501(
        """\
        a = torch.compile(net, *extra, **options, dynamic_shape=True)
        b = functools.partial(torch.compile, net, *extra, fullgrph=True)
        """
    )
    assert where(found) == [(6, 43), (7, 51)]


def test_dl501_kwargs_unpacking_hides_only_unseen_keys() -> None:
    found = dl501(
        """\
        a = torch.compile(net, **options)
        b = torch.compile(net, fullgraph=True, **options)
        c = torch.compile(net, **options, dynamic_shapes=True)
        """
    )
    assert where(found) == [(8, 35)]


def test_dl501_traps() -> None:
    found = dl501(
        """\
        import re
        from torch.utils.checkpoint import checkpoint

        def init_process_group(debug=False):
            return debug

        re.compile("x", flags=0)
        recipe.compile(optimizer="adam", loss="ce")
        checkpoint(block, x, use_reentrant=False, scale=2.0)
        init_process_group(debug=True)
        torch.compile(net, backend="eager", mode=None, options=None, disable=False)
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=None, async_op=False)
        """
    )
    assert found == []


def test_dl501_positional_only_keyword() -> None:
    (finding,) = dl501('torch.library.triton_op(name="ns::op", mutates_args=())\n')
    assert "takes `name` only by position" in finding.message
    assert "positional-only arguments passed as keyword arguments" in finding.message


def test_dl501_silent_on_a_compile_method_that_is_not_nn_module_compile() -> None:
    found = dl501(
        """\
        import deepspeed

        class Engine(torch.nn.Module):
            def compile(self, backend="inductor", compile_kwargs=None):
                self.module = torch.compile(self.module, backend=backend)

            def warm_up(self):
                self.compile(compile_kwargs={"fullgraph": True})

        engine = Engine(net)
        engine.compile(compile_kwargs={"dynamic": False})
        ds_engine, optimizer, _, _ = deepspeed.initialize(model=net, config=cfg)
        ds_engine.compile(backend="inductor", compile_kwargs={"mode": "max-autotune"})
        net.compile(dynamic_shapes=True)
        """
    )
    assert where(found) == [(19, 13)]  # only `net.compile`


def test_dl501_silent_on_a_name_imported_from_another_library_on_some_path() -> None:
    found = dl501(
        """\
        try:
            from apex.parallel import DistributedDataParallel as DDP
            USE_APEX = True
        except ImportError:
            from torch.nn.parallel import DistributedDataParallel as DDP
            USE_APEX = False

        from torch.nn.parallel import DistributedDataParallel as TorchDDP

        model = DDP(model, delay_allreduce=True) if USE_APEX else DDP(model)
        other = TorchDDP(model, delay_allreduce=True)
        """
    )
    assert [f.span.start.line for f in found] == [16]  # only the plain torch import


def test_dl501_silent_on_a_keyword_the_file_probes_in_the_signature() -> None:
    """apex: ``no_copy`` is passed only when ``inspect`` found it in torch's signature; the
    same keyword passed in a file that never probes for it is still reported."""
    probed = """\
        import inspect
        import torch.distributed as dist

        HAS_NO_COPY = "no_copy" in inspect.getfullargspec(dist.all_gather).args
        HAS_ASYNC = "async_op" in inspect.signature(dist.reduce_scatter).parameters

        def gather(out, t):
            if HAS_NO_COPY:
                dist.all_gather(out, t, no_copy=True)
            else:
                dist.all_gather(out, t)
        """
    assert dl501(probed) == []
    unprobed = probed.replace('"no_copy" in inspect', '"other" in inspect')
    assert [(f.span.start.line, "no_copy" in f.message) for f in dl501(unprobed)] == [(14, True)]


def test_dl501_silent_on_compile_of_a_class_with_a_base_from_another_package() -> None:
    """open_clip's tests: ``TinyTask(TrainingTask)``, whose ``compile(target=...)`` is the base
    class's own method, not ``nn.Module.compile``; a module of this file is still checked."""
    found = dl501(
        """\
        import torch.nn as nn
        from open_clip.task import TrainingTask

        class TinyTask(TrainingTask):
            pass

        class Tinier(TinyTask):
            pass

        class Net(nn.Module):
            pass

        task = TinyTask()
        task.compile(target="model")
        Tinier().compile(target="model")
        net = Net()
        net.compile(fullgrph=True)
        """
    )
    assert [("fullgrph" in f.message) for f in found] == [True]


BARRIER = """\
import datetime
import torch.distributed as dist

dist.barrier(timeout=datetime.timedelta(seconds=30))
"""


def test_dl501_keyword_of_newer_releases_only_is_a_warning_naming_them() -> None:
    first = next(
        t.version
        for t in map(load_table, ("2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12"))
        if t.signature("torch.distributed.barrier").accepts_keyword("timeout")
    )
    finding = only(range_findings(BARRIER, "DL501", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        f"`dist.barrier` (`torch.distributed.barrier`) takes keyword `timeout` only in torch "
        f"{first}-2.14: on torch 2.4"
    )
    assert "the call raises `TypeError: barrier() got an unexpected keyword argument " in (
        finding.message
    )
    assert finding.message.endswith(
        f"Guard it with a version check, or raise the project's lowest torch to {first}."
    )
    assert finding.fix is None
    # a project whose lowest torch has it: nothing to say
    assert range_findings(BARRIER, "DL501", first) == []
    # a project that stays on 2.4: the call always fails, an error
    pinned = only(range_findings(BARRIER, "DL501", "2.4", "2.4"))
    assert pinned.severity is Severity.ERROR
    assert "has no keyword `timeout` in torch 2.4:" in pinned.message


def test_dl501_keyword_no_release_accepts_stays_an_error() -> None:
    source = "import torch.distributed as dist\n\ndist.barrier(timout=5)\n"
    finding = only(range_findings(source, "DL501", "2.4"))
    assert finding.severity is Severity.ERROR
    assert "has no keyword `timout` in torch 2.4-2.14:" in finding.message
    # the suggestion must hold on every release of the range: 2.4 has no `timeout`
    assert "Did you mean" not in finding.message and finding.fix is None
    newer = only(range_findings(source, "DL501", "2.12"))
    assert "Did you mean `timeout`?" in newer.message


def test_table_rules_say_nothing_for_a_torch_older_than_every_table() -> None:
    """LLaMA2-Accessory pins torch==2.0.1, where FSDP still takes ``ignored_parameters`` (later
    renamed ``ignored_states``): the oldest shipped table (2.4) cannot speak for it, so DL501,
    DL502 and DL503 are silent. A range that reaches a known release is judged as before."""
    source = (
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n"
        "model = FSDP(torch.nn.Linear(2, 2), ignored_parameters=[])\n"
        "torch._dynamo.config.no_such_setting = 1\n"
        "step = torch.compile(model, mode='fastest')\n"
    )
    codes = ("DL501", "DL502", "DL503")
    assert [f for code in codes for f in range_findings(source, code, "2.0", "2.0")] == []
    assert [f for code in codes for f in range_findings(source, code, "1.13", "2.1")] == []
    judged = [f.code for code in codes for f in range_findings(source, code, "2.0", "2.4")]
    assert judged == ["DL501", "DL502", "DL503"]


def test_a_callee_is_spelled_only_for_a_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call of an API with a signature is checked; the callee's code is generated (a
    codegen) only for a call that passes a keyword the API rejects."""
    import libcst as cst

    spelled: list[cst.CSTNode] = []
    real = cst.Module.code_for_node

    def noting(self, node):  # type: ignore[no-untyped-def]
        spelled.append(node)
        return real(self, node)

    monkeypatch.setattr(cst.Module, "code_for_node", noting)
    assert dl501("m = torch.compile(net, dynamic=True)\n") == []
    assert spelled == []
    assert len(dl501("m = torch.compile(net, dynamic_shapes=True)\n")) == 1
    assert len(spelled) == 1


def test_dl501_own_compile_classes_are_judged_in_the_scope_of_the_first_compile_call() -> None:
    """The file's own ``compile`` classes are found when a ``.compile(...)`` call needs them
    (not at a ``re.compile``), with the names of the scope of the file's first ``.compile``
    call, as when they were found at that call (here ``Base`` is a local there)."""
    source = """\
        import re
        import torch
        from ext import Base

        class Model(Base):
            pass

        def f():
            Base = None
            return re.compile("x")

        m = Model()
        m.compile(fullgraph=True, bogus=1)
        """
    assert ["bogus" in f.message for f in dl501(source)] == [True]
    assert dl501(source.replace('re.compile("x")', "1")) == []
