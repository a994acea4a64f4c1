"""DL505 private-torch-module: what distlint reports and where; the paths it leaves to DL504."""

from __future__ import annotations

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Severity
from distlint.rules.registry import get_rule
from tests.rules.api.api_util import code_block, dl504, dl505, where


def test_dl505_metadata() -> None:
    rule = get_rule("DL505")
    assert rule is not None and rule.severity is Severity.NOTE and rule.default_enabled


def test_dl505_example_on_its_page_is_reported_and_the_fix_is_not() -> None:
    example = code_block("DL505.md", "Example")
    marked = [n for n, line in enumerate(example.splitlines(), 1) if line.endswith("# DL505")]
    assert [f.span.start.line for f in dl505(example)] == marked
    assert dl505(code_block("DL505.md", "Use instead")) == []


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
    # importing torch.distributed._shard does not warn (ShardedTensor warns when used): it is
    # a private module, DL505's, not a deprecated one
    assert where(dl505(source)) == [(4, 6), (5, 6)]
    assert [f.span.start.line for f in dl504(source)] == [1, 2, 3]


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


def test_dl505_silent_in_a_test_that_runs_only_below_a_torch_version() -> None:
    """A test that never runs on newer torch (Lightning's ``RunIf(max_torch=...)``, a skip
    on newer versions) is guarded as the body of an ``if`` on the version is; a lower bound
    (``min_torch``, a skip on older versions: the test runs on every newer torch) or a skip
    on the machine (no GPU) guards nothing."""
    found = dl505(
        """\
        import unittest
        import pytest
        import torch
        from packaging import version
        from lightning.pytorch.utilities.testing import RunIf

        @RunIf(max_torch="2.1.0")
        def test_sharded():
            from torch.distributed._sharding_spec import ChunkShardingSpec

        @pytest.mark.skipif(torch.__version__ >= "2.0", reason="old API")
        def test_tree():
            from torch.utils._pytree import tree_flatten

        @unittest.skipUnless(version.parse(torch.__version__) < version.parse("2.1"), "old")
        def test_fake():
            from torch._subclasses.fake_tensor import FakeTensorMode

        @pytest.mark.skipif(not "2.1" > torch.__version__, reason="old API")
        def test_not():
            from torch._utils import _rebuild_tensor

        @RunIf(min_torch="2.4")
        def test_lower_bound():
            from torch._utils import _rebuild_parameter

        @pytest.mark.skipif(torch.__version__ < "2.0", reason="new API")
        def test_skipped_on_older():
            from torch._utils import _flatten_dense_tensors

        @pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
        def test_gpu():
            from torch._utils import _unflatten_dense_tensors

        @unittest.skipUnless(TORCH_GREATER_EQUAL_2_1, "a flag: its direction is not read")
        def test_flag():
            from torch._utils import _take_tensors
        """
    )
    assert [f.span.start.line for f in found] == [25, 29, 33, 37]


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


def test_dl505_reports_a_shim_path_dl504_leaves_to_an_older_lowest_torch() -> None:
    """torch.distributed.tensor became the public home of torch.distributed._tensor in 2.5: a
    project on 2.4 has only the private path (DL505, a note), one on 2.5 and up is told to
    import from the public module (DL504, which DL505 then leaves alone)."""
    source = "from torch.distributed._tensor import DTensor\n"
    both = frozenset({"DL504", "DL505"})
    for lowest, code in (("2.4", "DL505"), ("2.5", "DL504"), (None, "DL504")):
        settings = FileSettings(enabled=both, torch_floor=lowest)
        found = check_file(FileSource(source, "t.py"), settings).findings
        assert [f.code for f in found] == [code], lowest


def test_dl505_names_a_public_home_only_from_the_torch_that_has_it() -> None:
    """On a project whose lowest torch is 2.4 (LLaMA-Factory), torch.distributed.tensor does
    not export DTensor yet: the note must not tell it to import from there today."""
    source = "from torch.distributed._tensor import DTensor, Shard\n"
    settings = FileSettings(enabled=frozenset({"DL505"}), torch_floor="2.4")
    (found,) = check_file(FileSource(source, "t.py"), settings).findings
    assert "From torch 2.5 on, the public `torch.distributed.tensor` has `DTensor`" in (
        found.message
    )
    assert "Import `DTensor`" not in found.message
