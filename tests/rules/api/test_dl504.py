"""DL504 deprecated-torch-api: what distlint reports, where, and the fixes it offers, judged
against the project's lowest torch; the generated table (torch's own markers)."""

from __future__ import annotations

from distlint.findings import Severity
from distlint.knowledge.torch_tables import available_versions, version_key
from distlint.rules.api._deprecations import deprecated_apis
from tests.rules.api.api_util import code_block, dl504, where


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


def test_dl504_example_on_its_page_is_reported_and_the_fix_is_not() -> None:
    example = code_block("DL504.md", "Example")
    marked = [n for n, line in enumerate(example.splitlines(), 1) if line.endswith("# DL504")]
    assert [f.span.start.line for f in dl504(example)] == marked
    assert dl504(code_block("DL504.md", "Use instead")) == []


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
    assert where(found) == [(2, 6), (4, 8)]
    assert found[0].message == (
        "`torch.distributed._shard.checkpoint` is deprecated since torch 2.4 or earlier (importing "
        "it emits a `DeprecationWarning`). Use `torch.distributed.checkpoint` instead."
    )


def test_dl504_sharded_tensor_only_where_torch_warns() -> None:
    """torch 2.13 warns when a ShardedTensor is used (its ``__torch_function__``), not when
    ``torch.distributed._shard`` is imported: the imports, the class named, a spec built and
    ``sharded_tensor.empty`` are silent; the creators and calls that warn are reported."""
    found = dl504(
        """\
        import torch
        from torch.distributed._shard import sharded_tensor, shard_parameter
        from torch.distributed._shard.metadata import ShardMetadata
        from torch.distributed._shard.sharded_tensor import ShardedTensor
        from torch.distributed._shard.sharding_spec import ChunkShardingSpec
        from torch.distributed._shard.sharding_spec._internals import validate_non_overlapping

        spec = ChunkShardingSpec(dim=0, placements=["rank:0/cpu"])
        empty = sharded_tensor.empty(spec, 4)
        isinstance(empty, ShardedTensor)
        zeros = sharded_tensor.zeros(spec, 4)
        shard_parameter(model, "weight", spec)
        ShardedTensor._init_from_local_tensor(t, spec, 4)
        torch.distributed._shard.sharded_tensor.randn(spec, 4)
        """
    )
    assert where(found) == [(11, 9), (12, 1), (13, 1), (14, 1)]
    assert found[0].message == (
        "`sharded_tensor.zeros` is deprecated since torch 2.13 (calling it emits a "
        "`FutureWarning`). Use `torch.distributed.tensor` instead."
    )


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


def test_the_binding_gate_finds_what_a_search_of_the_whole_text_finds() -> None:
    """_may_bind tries the binding regex only where a name's last part occurs: it must agree
    with a search of the whole text (lookbehinds included)."""
    from distlint.rules.api.deprecated_torch_api import _catalog, _may_bind

    catalog = _catalog(None, None)
    assert catalog.binding_words is not None
    texts = [
        "",
        "from torch.distributed import _all_gather_base\n",
        "from torch.distributed import _all_gather_base as agb\n",
        "def _all_gather_base(x):\n    pass\n",
        "class vmap:\n    pass\n",
        "dist._all_gather_base(out, x)\n",
        "x = dist._all_gather_base\n",
        "my_all_gather_base = 1\n_all_gather_base_x = 2\n",
        "y = torch.vmap if a else b\n",
        "if vmap in fns:\n    pass\nz = vmap\n",
    ]
    for text in texts:
        expected = catalog.binding_words.search(text) is not None
        assert _may_bind(text, catalog.name_parts, catalog.binding_words) is expected, text
    assert _may_bind("import x\n", catalog.name_parts, None) is False


def test_dl504_bare_names_bound_in_any_scope() -> None:
    """visit_Module keeps a name bound only at module level when the module's table binds it
    to a deprecated name: one bound in a def or class body, an alias of an alias, and one
    that a def shadows must still be judged in their own scopes, and an alias in a def of an
    alias of an import."""
    found = dl504(
        """\
        import torch.distributed as dist
        agb = dist._all_gather_base
        again = agb
        all_gather = 1

        def f(out, t):
            from torch.distributed import _reduce_scatter_base as rsb
            rsb(out, t)
            again(out, t)
            d = dist
            local = d._all_gather_base
            local(out, t)

        def g(out, t, agb):
            agb(out, t)
            all_gather(out, t)

        class C:
            from torch.distributed import _all_gather_base as inner

            def h(self, out, t):
                from torch.distributed import _all_gather_base as all_gather
                all_gather(out, t)
        """
    )
    assert where(found) == [(2, 7), (3, 9), (8, 5), (9, 5), (11, 13), (12, 5), (23, 9)]


def test_dl504_monkeypatched_attribute_is_not_a_use() -> None:
    """Replacing a deprecated function (slime wraps every collective of torch.distributed)
    calls nothing; the original passed to the wrapper is still a use."""
    found = dl504(
        """\
        import torch
        import torch.distributed as dist

        dist.all_gather_into_tensor = wrap(dist.all_gather_into_tensor)
        dist.reduce_scatter_tensor = my_reduce_scatter
        torch.distributed._shard.sharding_spec._internals._find_nd_overlapping_shards = fast
        dist.all_gather_into_tensor += 0
        """
    )
    assert where(found) == [(4, 36), (7, 1)]


def test_dl504_private_submodule_names_only_a_public_module_that_exists() -> None:
    """torch.distributed._tensor.api holds torch.distributed.tensor._api: the message must
    not send people to a torch.distributed.tensor.api that no torch has."""
    found = dl504(
        """\
        from torch.distributed._tensor.api import DTensor
        from torch.distributed._tensor.device_mesh import init_device_mesh
        """,
        "2.7",
    )
    assert "public `torch.distributed.tensor` has the same API" in found[0].message
    assert "`torch.distributed.tensor.api`" not in found[0].message
    assert "public `torch.distributed.tensor.device_mesh` has the same" in found[1].message


def test_dl504_old_api_in_the_handler_of_a_try_that_uses_the_replacement() -> None:
    """tutel tries torch.amp.autocast("cuda") and falls back on torch.cuda.amp.autocast under
    a bare except: on a torch that has the replacement the old one never runs. A handler of a
    try that does not use the replacement still counts."""
    found = dl504(
        """\
        import torch

        try:
            with torch.amp.autocast("cuda", enabled=False):
                out = route()
        except:
            with torch.cuda.amp.autocast(enabled=False):
                out = route()
        try:
            out = route()
        except:
            with torch.cuda.amp.autocast(enabled=False):
                out = route()
        """
    )
    assert where(found) == [(12, 10)]


def test_dl504_class_only_checked_by_assert_is_instance() -> None:
    """unittest's assertIsInstance(obj, cls) only looks at cls (mmengine checks the scaler its
    wrapper built); a scaler created in the object argument is still a use."""
    found = dl504(
        """\
        import torch
        from torch.cuda.amp import GradScaler

        class T:
            def test(self):
                self.assertIsInstance(wrapper.loss_scaler, GradScaler)
                self.assertNotIsInstance(wrapper.loss_scaler, torch.cuda.amp.GradScaler)
                self.assertIsInstance(GradScaler(), object)
        """
    )
    assert where(found) == [(8, 31)]


def test_dl504_an_import_alias_is_not_a_use() -> None:
    """``import X as Y`` creates nothing (importing a deprecated class does not warn): only
    Y's unguarded uses are reported, one finding per use, none on the import line. A use only
    in a version guard's branches is the project's fallback (silent either way)."""
    found = dl504(
        """\
        import torch
        from torch.cuda.amp import GradScaler as TorchGradScaler
        from torch.cuda.amp import autocast as old_autocast

        def make_scaler():
            return TorchGradScaler()

        def enter():
            if torch.__version__ < "2.4":
                return old_autocast()
            return torch.amp.autocast("cuda")
        """
    )
    assert where(found) == [(6, 12)]  # the call; not the alias on line 2 or 3
    assert found[0].message.startswith("`TorchGradScaler` is deprecated")
