"""Unit tests of DL501 (unknown keyword), DL503 (unknown compiler config), DL504 (deprecated
distributed API). The proof tests show torch fails as the messages say; these pin what distlint
reports, where, and the fixes it offers. DL502 is tested in test_rules_dl203_dl502.py.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Applicability, Finding, Severity
from distlint.knowledge.torch_tables import available_versions, version_key
from distlint.rules.api._deprecations import deprecated_apis
from distlint.rules.registry import get_rule


def findings(source: str, code: str, torch_version: str = "2.13") -> list[Finding]:
    """Findings for a project on exactly ``torch_version`` (2.13: the proof tests' torch)."""
    settings = FileSettings(
        enabled=frozenset({code}), torch_floor=torch_version, torch_ceiling=torch_version
    )
    result = check_source(textwrap.dedent(source), "t.py", settings)
    assert result.errors == ()
    return list(result.findings)


def where(found: list[Finding]) -> list[tuple[int, int]]:
    return [(f.span.start.line, f.span.start.column) for f in found]


def fixed(finding: Finding) -> list[str]:
    assert finding.fix is not None
    return [edit.content for edit in finding.fix.edits]


def test_metadata() -> None:
    for code, severity in (
        ("DL501", Severity.ERROR),
        ("DL503", Severity.ERROR),
        ("DL504", Severity.WARNING),
    ):
        rule = get_rule(code)
        assert rule is not None and rule.severity is severity and rule.default_enabled


# -- DL501 ----------------------------------------------------------------------------------------

HEADER = """\
import functools
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def dl501(body: str) -> list[Finding]:
    return findings(HEADER + textwrap.dedent(body), "DL501")


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


# -- DL503 ----------------------------------------------------------------------------------------


def dl503(source: str) -> list[Finding]:
    return findings(source, "DL503")


def test_dl503_assignments_in_every_import_form() -> None:
    found = dl503(
        """\
        import torch
        import torch._dynamo.config as dc
        from torch._inductor import config
        import torch._inductor.config

        torch._dynamo.config.suppress_error = True
        dc.capture_scalar_output = True
        config.triton.cudagraph = True
        torch._inductor.config.max_autotun = True
        dc.recompile_limt += 1
        x: int = 0
        dc.verbos: bool = True
        """
    )
    assert where(found) == [(6, 1), (7, 1), (8, 1), (9, 1), (10, 1), (12, 1)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert found[0].message == (
        "`torch._dynamo.config.suppress_error` does not exist in torch 2.13: the assignment "
        "raises `AttributeError: torch._dynamo.config.suppress_error does not exist`. "
        "Did you mean `suppress_errors`?"
    )
    # fixes keep the module spelling
    assert fixed(found[1]) == ["dc.capture_scalar_outputs"]
    assert fixed(found[2]) == ["config.triton.cudagraphs"]
    assert fixed(found[3]) == ["torch._inductor.config.max_autotune"]


def test_dl503_group_assigned_whole() -> None:
    (finding,) = dl503("import torch\ntorch._inductor.config.triton = {}\n")
    assert "`triton` is a group of settings" in finding.message
    assert "torch._inductor.config.triton." in finding.message


def test_dl503_setattr_and_patch() -> None:
    found = dl503(
        """\
        import torch
        from torch._dynamo import config

        setattr(config, "verbos", True)
        with config.patch(recompile_limt=4):
            pass
        with torch._inductor.config.patch({"max_autotun": True}):
            pass

        @torch._dynamo.config.patch("suppress_error", True)
        def f():
            pass
        """
    )
    assert where(found) == [(4, 17), (5, 19), (7, 36), (10, 29)]
    assert "`setattr` raises" in found[0].message
    assert "the patch raises" in found[1].message


def test_dl503_traps() -> None:
    found = dl503(
        """\
        import types
        import torch
        import torch._dynamo.config as dc

        torch._dynamo.config.cache_size_limit = 64
        torch._dynamo.config.dynamic_shapes = True
        torch._dynamo.config.recompile_limit += 1
        torch._dynamo.config.optimize_ddp = "python_reducer"
        torch._inductor.config.triton.cudagraphs = True
        with torch._inductor.config.patch({"triton.cudagraphs": False}):
            pass
        config = types.SimpleNamespace()
        config.anything = 1

        def configure(dc):
            dc.anything = 1

        setattr(dc, name, True)
        """
    )
    assert found == []


# -- DL504 ----------------------------------------------------------------------------------------


def dl504(source: str, torch_version: str | None = None) -> list[Finding]:
    return findings(source, "DL504", torch_version)


def test_dl504_deprecated_functions() -> None:
    found = dl504(
        """\
        import torch.distributed as dist
        import torch.distributed._functional_collectives as funcol
        from torch.distributed import _reduce_scatter_base
        from torch.distributed.checkpoint import load_state_dict

        dist._all_gather_base(out, t)
        _reduce_scatter_base(out, t)
        dist.all_gather_into_tensor(out, t)
        funcol.reduce_scatter_tensor(t, "sum", 0, group)
        op = dist.reduce_op.SUM
        load_state_dict(sd, reader)
        """
    )
    assert where(found) == [(6, 1), (7, 1), (8, 1), (9, 1), (10, 6), (11, 1)]
    assert all(f.severity is Severity.WARNING for f in found)
    assert found[0].message == (
        "`dist._all_gather_base` is deprecated since torch 2.4 or earlier (calling it emits a "
        "`FutureWarning`). Use `torch.distributed.all_gather_single` instead."
    )
    assert "using it emits" in found[4].message


def test_dl504_private_module_paths() -> None:
    found = dl504(
        """\
        import torch
        import torch.distributed._tensor as dt
        from torch.distributed._composable.fsdp import fully_shard
        from torch.distributed._composable import fsdp
        x = torch.distributed._tensor.DTensor
        """
    )
    assert where(found) == [(2, 8), (3, 6), (4, 43), (5, 5)]
    assert "`torch.distributed.fsdp`" in found[1].message
    assert "`torch.distributed.tensor.DTensor`" in found[3].message


def test_dl504_traps() -> None:
    found = dl504(
        """\
        import torch.distributed as dist
        import torch.distributed._functional_collectives as funcol
        from torch.distributed.fsdp import fully_shard

        def _all_gather_base(out, t):
            out.copy_(t)

        _all_gather_base(out, t)
        model.load_state_dict(sd)
        dist.all_gather_single(out, t)
        funcol.all_reduce(t, "sum", group)
        dist.ReduceOp.SUM
        """
    )
    assert found == []


def test_dl504_table_entries_are_complete() -> None:
    apis = deprecated_apis()
    assert len(apis) >= 10
    for api in apis:
        assert api.kind in ("function", "class", "attribute", "module")
        assert api.reference and api.observed
        # a replacement, or torch's own words say there is none (the message quotes them)
        assert api.replacement or api.message
        # dated from the shipped tables' deprecation markers (scripts/gen_deprecations.py)
        assert api.since in available_versions() and version_key(api.since) <= (2, 13)
    names = {api.name for api in apis}
    assert {
        "torch.distributed._all_gather_base",
        "torch.distributed._reduce_scatter_base",
        "torch.distributed._composable.fsdp",
        "torch.distributed.all_gather_into_tensor",
    } <= names


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


GUARDED = """\
    import torch
    import torch.distributed as dist
    from packaging import version

    if version.parse(torch.__version__) < version.parse("1.13"):
        gather = dist._all_gather_base
    if TORCH_VERSION < (2, 0):
        from torch.distributed._tensor import DTensor
    if hasattr(dist, "reduce_scatter_tensor"):
        rs = dist.reduce_scatter_tensor
    else:
        rs = dist._reduce_scatter_base
    try:
        from torch.distributed.fsdp import fully_shard
    except (ImportError, AttributeError):
        from torch.distributed._composable.fsdp import fully_shard
    try:
        model = torch.compile(net, dynamic_shapes=True)
    except TypeError:
        model = torch.compile(net)
    if is_torch_min_version("2.4.0"):
        model = torch.compile(net, fullgrph=True)
    fn = dist.all_gather_single if hasattr(dist, "all_gather_single") else dist._all_gather_base
    """


def test_dl501_and_dl504_silent_under_version_and_feature_guards() -> None:
    assert findings(GUARDED, "DL504") == []
    assert findings(GUARDED, "DL501") == []


def test_guards_do_not_hide_unguarded_uses() -> None:
    source = textwrap.dedent(GUARDED).rstrip(" ") + (
        "try:\n"
        "    x = dist._all_gather_base\n"
        "except RuntimeError:\n"
        "    pass\n"
        "if world_size > 1:\n"
        "    torch.compile(net, fullgrph=True)\n"
    )
    assert [f.span.start.line for f in findings(source, "DL504")] == [25]
    assert [f.span.start.line for f in findings(source, "DL501")] == [29]


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


# -- DL504: the generated table (torch's own markers) ---------------------------------------------


def _code_block(page: str, section: str) -> str:
    from distlint.output.docs import docs_dir, parse_doc

    doc = parse_doc((docs_dir() / page).read_text(encoding="utf-8"))
    text = doc.sections[section]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def test_dl504_example_on_its_page_is_reported_and_the_fix_is_not() -> None:
    example = _code_block("DL504.md", "Example")
    marked = [n for n, line in enumerate(example.splitlines(), 1) if line.endswith("# DL504")]
    assert [f.span.start.line for f in dl504(example)] == marked
    assert dl504(_code_block("DL504.md", "Use instead")) == []


def test_dl504_amp_weight_norm_fsdp_and_functorch() -> None:
    found = dl504(
        """\
        import functorch
        import torch
        import torch.nn as nn
        from torch.cuda.amp import GradScaler, autocast, custom_fwd
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.nn.utils import weight_norm

        scaler = GradScaler()
        with autocast(enabled=True):
            pass

        class Fn(torch.autograd.Function):
            @staticmethod
            @custom_fwd(cast_inputs=torch.float32)
            def forward(ctx, x):
                return x

        conv = weight_norm(nn.Conv1d(2, 2, 1))
        other = nn.utils.weight_norm(nn.Conv1d(2, 2, 1))
        with FSDP.state_dict_type(model, state_dict_type):
            pass
        functorch.vmap(f)
        with torch.backends.cuda.sdp_kernel(enable_math=True):
            pass
        """
    )
    assert where(found) == [(8, 10), (9, 6), (14, 6), (18, 8), (19, 9), (20, 6), (22, 1), (23, 6)]
    assert found[0].message == (
        "`GradScaler` is deprecated since torch 2.4 or earlier (creating one emits a "
        "`FutureWarning`). "
        "Use `torch.amp.GradScaler('cuda', args...)` instead."
    )
    assert "torch.nn.utils.parametrizations.weight_norm" in found[3].message


def test_dl504_public_spellings_are_silent() -> None:
    found = dl504(
        """\
        import torch
        from torch.nn.utils.parametrizations import weight_norm

        scaler = torch.amp.GradScaler("cuda")
        with torch.amp.autocast("cuda"), torch.autocast("cuda"):
            pass
        conv = weight_norm(torch.nn.Conv1d(2, 2, 1))
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        model.apply(init_weights)
        Fn.apply(x)
        torch.testing.assert_close(a, b)
        """
    )
    assert found == []


def test_dl504_class_only_named_in_annotations_or_isinstance_is_silent() -> None:
    found = dl504(
        """\
        import torch
        from torch.cuda.amp import GradScaler

        def step(scaler: torch.cuda.amp.GradScaler, other: GradScaler | None = None) -> None:
            if isinstance(scaler, (GradScaler, torch.cuda.amp.GradScaler)):
                pass
            x: GradScaler = GradScaler()
        """
    )
    assert where(found) == [(7, 21)]  # the call only


def test_dl504_silent_when_a_name_is_imported_from_elsewhere_on_another_path() -> None:
    found = dl504(
        """\
        import torch
        try:
            from torch import vmap
        except ImportError:
            from functorch import vmap
        if torch.cuda.is_available():
            from flagai import mpu
        else:
            import torch.nn.utils as mpu

        vmap(f)
        clip = mpu.clip_grad_norm
        torch.nn.utils.clip_grad_norm(params, 1.0)
        """
    )
    assert where(found) == [(13, 1)]


def test_dl504_silent_where_warnings_are_ignored_on_purpose() -> None:
    found = dl504(
        """\
        import warnings
        import torch

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.nn.utils.weight_norm(conv)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            scaler = torch.cuda.amp.GradScaler()
        with warnings.catch_warnings(record=True):
            torch.nn.utils.weight_norm(conv)
        """
    )
    assert where(found) == [(11, 5)]  # recording warnings is not ignoring them


def test_dl504_deprecated_modules_and_sharded_tensor() -> None:
    found = dl504(
        """\
        import torch
        from torch.distributed._shard.checkpoint import FileSystemReader
        from torch.distributed._shard.sharded_tensor import ShardedTensor
        import torch.distributed._sharded_tensor
        x = torch.distributed._shard.sharding_spec.ChunkShardingSpec
        """
    )
    assert where(found) == [(2, 6), (3, 6), (4, 8), (5, 5)]
    assert found[0].message == (
        "`torch.distributed._shard.checkpoint` is deprecated since torch 2.4 or earlier (importing "
        "it emits a "
        "`DeprecationWarning`). Use `torch.distributed.checkpoint` instead."
    )
    assert "(creating a ShardedTensor emits a `FutureWarning`)" in found[1].message
    assert "Use `torch.distributed.tensor` instead." in found[1].message


def test_dl504_entry_without_a_replacement_quotes_torch() -> None:
    found = dl504(
        """\
        import torch.distributed._symmetric_memory as symm_mem
        symm_mem.enable_symm_mem_for_group(group)
        """
    )
    assert [f.message for f in found] == [
        "`symm_mem.enable_symm_mem_for_group` is deprecated since torch 2.11 (calling it emits a "
        '`FutureWarning`: "`enable_symm_mem_for_group` is deprecated. There is no need to call '
        'this function anymore.").'
    ]


def test_dl504_generated_table_records_what_torch_emitted() -> None:
    apis = deprecated_apis()
    assert len(apis) >= 100
    names = [n for api in apis for n in (api.name, *api.aliases)]
    assert len(names) == len(set(names))  # one entry per spelling
    for api in apis:
        if api.category is None:
            assert api.kind == "module" and api.note and api.replacement
        else:
            assert api.category in ("FutureWarning", "DeprecationWarning")
            assert api.message and api.when
    by_name = {api.name: api for api in apis}
    assert by_name["torch.cuda.amp.autocast"].kind == "class"
    assert by_name["torch.distributed.reduce_op"].kind == "attribute"
    assert "torch.cuda.amp.autocast_mode.autocast" in by_name["torch.cuda.amp.autocast"].aliases


# -- DL505 private-torch-module ------------------------------------------------------------------


def dl505(source: str, module_name: str | None = None) -> list[Finding]:
    settings = FileSettings(enabled=frozenset({"DL505"}))
    result = check_source(textwrap.dedent(source), "t.py", settings, module_name)
    assert result.errors == ()
    return list(result.findings)


def test_dl505_metadata() -> None:
    rule = get_rule("DL505")
    assert rule is not None and rule.severity is Severity.NOTE and rule.default_enabled


def test_dl505_example_on_its_page_is_reported_and_the_fix_is_not() -> None:
    example = _code_block("DL505.md", "Example")
    marked = [n for n, line in enumerate(example.splitlines(), 1) if line.endswith("# DL505")]
    assert [f.span.start.line for f in dl505(example)] == marked
    assert dl505(_code_block("DL505.md", "Use instead")) == []


def test_dl505_import_forms_and_public_homes() -> None:
    found = dl505(
        """\
        import torch.distributed.fsdp._runtime_utils
        import torch._utils as tu
        from torch.utils import _pytree
        from torch.utils.data._utils.collate import default_collate
        from torch.distributed.tensor._api import DTensor, distribute_tensor
        from torch._tensor import Tensor, _rebuild_from_type
        from torch._higher_order_ops.cond import cond
        """
    )
    assert where(found) == [(1, 8), (2, 8), (3, 25), (4, 6), (5, 6), (6, 6), (7, 6)]
    assert found[0].message == (
        "`torch.distributed.fsdp._runtime_utils` is a private torch module: it may change or "
        "disappear in any torch release without a deprecation warning."
    )
    assert found[3].message.endswith(
        "Import `default_collate` from the public `torch.utils.data` (the same object)."
    )
    assert "Import `DTensor`, `distribute_tensor` from the public `torch.distributed.tensor`" in (
        found[4].message
    )
    assert found[5].message.endswith("Public homes of the same objects: `torch.Tensor`.")
    assert "Import `cond` from the public `torch`" in found[6].message


def test_dl505_silent_on_documented_surfaces_helpers_and_private_names() -> None:
    found = dl505(
        """\
        import torch._dynamo
        import torch._dynamo.config
        import torch._inductor.config as inductor_config
        import torch._functorch.config
        from torch._dynamo import config, mark_dynamic
        from torch._inductor import config as ic
        from torch._logging import set_logs
        import torch.distributed._functional_collectives as funcol
        from torch.distributed import _functional_collectives
        from torch.distributed._symmetric_memory import empty
        from torch._C import _get_privateuse1_backend_name
        from torch._C._distributed_c10d import ProcessGroup
        from torch.testing._internal.distributed.fake_pg import FakeStore
        from torch._dynamo.testing import CompileCounter
        from torch._dynamo.utils import counters
        from torch._inductor.test_case import TestCase
        from torch.distributed import get_global_rank as _get_global_rank
        from torch.nn.modules.utils import _pair
        from torch.optim.lr_scheduler import _LRScheduler
        from torch import __config__, __future__
        import torch._six
        from torch._six import inf
        from . import _private
        from mylib._internal import thing
        """
    )
    assert found == []


def test_dl505_leaves_deprecated_and_shim_paths_to_dl504() -> None:
    source = """\
        from torch.distributed._tensor import DTensor
        from torch.distributed._composable import fsdp
        from torch.distributed._composable.fsdp import fully_shard
        from torch.distributed._shard.sharded_tensor import ShardedTensor
        from torch.distributed._composable import replicate
        """
    assert where(dl505(source)) == [(5, 6)]
    assert [f.span.start.line for f in dl504(source)] == [1, 2, 3, 4]


def test_dl505_silent_under_guards_type_checking_and_in_torch_itself() -> None:
    found = dl505(
        """\
        from typing import TYPE_CHECKING
        import torch
        try:
            from torch.utils._python_dispatch import TorchDispatchMode
        except ImportError:
            TorchDispatchMode = None
        if TYPE_CHECKING:
            from torch._subclasses.fake_tensor import FakeTensor
        if torch.__version__ >= "2.4":
            from torch._higher_order_ops.while_loop import while_loop
        if hasattr(torch, "_utils"):
            import torch._utils
        """
    )
    assert found == []
    inside_torch = "from torch._utils import _flatten_dense_tensors\n"
    assert dl505(inside_torch, module_name="torch.distributed.fsdp.api") == []
    assert len(dl505(inside_torch, module_name="mylib.fsdp")) == 1


def test_dl505_table_is_generated_from_torch() -> None:
    from distlint.rules.api.private_torch_module import first_private, private_modules

    table = private_modules()
    assert table.torch_version.startswith("2.13")
    assert {"torch._utils", "torch.utils._pytree", "torch.distributed._composable"} <= table.modules
    assert "torch._six" not in table.modules  # removed in torch 2.0
    assert all(first_private(m) == m for m in table.modules)
    homes = table.public_homes["torch.utils.data._utils.collate"]
    assert homes["default_collate"] == "torch.utils.data"
    assert first_private("torch.distributed.fsdp._fully_shard._fsdp_param") == (
        "torch.distributed.fsdp._fully_shard"
    )
    assert first_private("torch.__future__") is None


def test_dl505_silent_when_the_import_is_tried_with_a_fallback_for_any_failure() -> None:
    found = dl505(
        """\
        try:
            from torch.optim import _functional as F
        except:
            F = None
        try:
            from torch._utils import _flatten_dense_tensors
        except Exception:
            _flatten_dense_tensors = None
        try:
            from torch.utils._pytree import tree_map
        except RuntimeError:
            tree_map = None
        """
    )
    assert where(found) == [(10, 10)]


def test_dl504_silent_on_the_fallback_after_an_early_return_guard() -> None:
    found = dl504(
        """\
        import torch
        import torch.distributed._functional_collectives as funcol
        from torch.distributed.nn import all_gather

        def gather(t):
            if hasattr(funcol, "all_gather_single_autograd"):
                return funcol.all_gather_single_autograd(t, 0, None)
            return torch.cat(torch.distributed.nn.all_gather(t))

        def gather_bare(t):
            if torch.__version__ >= "2.5": return funcol.all_gather_single_autograd(t, 0, None)
            return all_gather(t)

        def not_a_guard(t):
            if t.numel() == 0:
                return t
            return torch.cat(torch.distributed.nn.all_gather(t))
        """
    )
    assert where(found) == [(17, 22)]


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


def test_api_rules_silent_in_a_test_that_is_always_skipped() -> None:
    """xformers: a removed dynamo flag patched on a test marked ``skipif(True, ...)`` never
    runs; the same test without the mark, or with a computed condition, is reported."""
    skipped = """\
        import pytest
        import torch._dynamo

        @pytest.mark.skipif(True, reason="broken on nightly")
        @torch._dynamo.config.patch("a_flag_that_is_gone", True)
        def test_compile():
            torch.compile(print, fullgrph=True)

        @pytest.mark.skip
        def test_other():
            torch.compile(print, fullgrph=True)
        """
    assert findings(HEADER + textwrap.dedent(skipped), "DL503") == []
    assert dl501(skipped) == []
    live = skipped.replace("skipif(True,", "skipif(torch.cuda.device_count() < 2,")
    assert [f.code for f in findings(HEADER + textwrap.dedent(live), "DL503")] == ["DL503"]
    assert [f.code for f in dl501(live)] == ["DL501"]


def test_dl505_reports_a_shim_path_dl504_leaves_to_an_older_lowest_torch() -> None:
    """torch.distributed.tensor became the public home of torch.distributed._tensor in 2.5: a
    project on 2.4 has only the private path (DL505, a note), one on 2.5 and up is told to
    import from the public module (DL504, which DL505 then leaves alone)."""
    source = "from torch.distributed._tensor import DTensor\n"
    both = frozenset({"DL504", "DL505"})
    for lowest, code in (("2.4", "DL505"), ("2.5", "DL504"), (None, "DL504")):
        settings = FileSettings(enabled=both, torch_floor=lowest)
        found = check_source(source, "t.py", settings).findings
        assert [f.code for f in found] == [code], lowest
