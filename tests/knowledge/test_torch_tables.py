"""Tests for distlint.knowledge.torch_tables and scripts/gen_torch_tables.py.

Tests marked ``torch`` import the real torch: the drift test regenerates the tables and compares
them with the shipped JSON, and the proof tests check every recorded fact against torch itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from distlint.knowledge.torch_tables import (
    TorchTable,
    available_versions,
    closest,
    describe_versions,
    expand,
    load_table,
    tables_between,
)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "distlint" / "knowledge" / "data" / "torch-tables.json"


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_torch_tables", ROOT / "scripts" / "gen_torch_tables.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table() -> TorchTable:
    return load_table("2.13")


# --- loader (no torch) -------------------------------------------------------------------------


def test_versions_and_lookup():
    versions = available_versions()
    assert "2.13" in versions
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    newest = load_table(None)
    assert newest is load_table(versions[-1])
    assert load_table("2.13.0+cpu") is load_table("2.13") is load_table("2.13.0")
    assert load_table("2.13").torch_version.startswith("2.13.")


def test_unknown_version_lists_available():
    with pytest.raises(ValueError, match=r"'1\.0'.*available: .*2\.13"):
        load_table("1.0")
    with pytest.raises(ValueError, match="available"):
        load_table("nightly")


def test_shipped_json_is_canonical():
    """The merged file is what the generator writes for the tables it holds: merging the
    expanded tables again gives the same text (so each release's table round-trips)."""
    gen = _generator()
    text = SHIPPED.read_text(encoding="utf-8")
    tables = gen.shipped_tables()
    assert list(tables) == available_versions()
    assert text == gen.render_merged(gen.merge(tables))


def test_merge_expand_round_trip():
    gen = _generator()
    tables = {
        "2.4": {"torch_version": "2.4.1", "names": ["a", "b"], "sig": {"f": [1], "g": 2}, "v": 1},
        "2.5": {"torch_version": "2.5.1", "names": ["b"], "sig": {"f": [1, 2]}, "v": 1},
        "2.6": {"torch_version": "2.6.0", "names": ["a", "b"], "sig": {"f": [1]}, "v": 2},
    }
    merged = gen.merge(tables)
    assert merged["lists"]["names"] == {"2.4-2.6": ["b"], "2.4,2.6": ["a"]}
    assert merged["maps"]["sig"] == {"f": [["2.4,2.6", [1]], ["2.5", [1, 2]]], "g": [["2.4", 2]]}
    assert merged["values"]["v"] == [["2.4-2.5", 1], ["2.6", 2]]
    for version, table in tables.items():
        assert expand(merged, version) == table


def test_eleven_releases_shipped_compactly():
    """torch 2.4 to 2.14, each read from its own wheel, in one file much smaller than the
    releases' tables side by side."""
    assert available_versions() == [f"2.{minor}" for minor in range(4, 15)]
    separate = sum(len(_generator().render(t)) for t in _generator().shipped_tables().values())
    assert SHIPPED.stat().st_size * 3 < separate


def test_tables_know_every_name_dl504_proposes():
    """DL504 proposes a replacement only where the project's lowest torch has it: every
    replacement (and drop-in) must be a name the tables track, else it would never be
    proposed. A new DL504 entry needs the tables regenerated."""
    from distlint.rules.api._deprecations import deprecated_apis
    from distlint.rules.api.deprecated_torch_api import DROP_IN

    observed = load_table("2.13")
    proposed = {api.replacement for api in deprecated_apis() if api.replacement} | set(
        DROP_IN.values()
    )
    dotted = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # not prose, not "torch._check*"
    torch_names = {n for n in proposed if n.startswith("torch.") and dotted.fullmatch(n)}
    assert torch_names and torch_names <= observed.api_names


def test_tables_between_clamps_to_the_shipped_releases():
    assert [t.version for t in tables_between("2.6", "2.8")] == ["2.6", "2.7", "2.8"]
    assert [t.version for t in tables_between("2.1", "2.5")] == ["2.4", "2.5"]
    assert [t.version for t in tables_between("2.12")] == ["2.12", "2.13", "2.14"]
    assert [t.version for t in tables_between("2.99")] == ["2.14"]
    assert [t.version for t in tables_between(None)] == ["2.14"]
    assert [t.version for t in tables_between(None, "2.9")] == ["2.9"]
    assert describe_versions(["2.4", "2.5", "2.6", "2.9"]) == "2.4-2.6,2.9"


def test_backends(table):
    assert {"inductor", "eager", "aot_eager", "cudagraphs"} <= table.backends
    assert table.listed_backends == {"cudagraphs", "inductor", "openxla", "tvm"}
    assert table.is_backend("inductor") and table.is_backend("eager")
    for bad in ("nvfuser", "aot_ts_nvfuser", "onnxrt", "Inductor", "EAGER"):
        assert not table.is_backend(bad)
    assert table.raw["compile_backends"]["eager"] == {"hidden": True, "tags": ("debug",)}
    assert table.compile_checks["backend_lookup"]["case_sensitive"] is True


def test_modes(table):
    assert table.modes == {
        "default",
        "lite",
        "reduce-overhead",
        "max-autotune-no-cudagraphs",
        "max-autotune",
    }
    assert table.mode_options["reduce-overhead"] == {"triton.cudagraphs": True}
    assert all(table.is_mode(m) for m in (None, "", "default", "max-autotune"))
    assert not table.is_mode("bogus-mode") and not table.is_mode("reduce_overhead")


def test_inductor_options(table):
    assert table.option_type("max_autotune") == "bool"
    assert table.option_type("max-autotune") == "bool"  # torch maps '-' to '_'
    assert table.option_type("triton.cudagraphs") == "bool"
    assert table.option_type("guard_filter_fn") == "any"  # popped by torch.compile
    assert table.option_type("not_a_real_option") is None
    assert table.option_type("force_disable_caches") is None  # alias: config only
    assert table.option_value_ok("max_autotune", True) is True
    assert table.option_value_ok("max_autotune", 1) is False
    assert table.option_value_ok("compile_threads", "x") is True  # not checked by torch
    assert table.option_value_ok("cudagraph_policy", None) is False  # "never"
    assert table.option_value_ok("nope", 1) is None
    int_key = next(k for k, t in sorted(table.inductor_options.items()) if t == "int")
    float_key = next(k for k, t in sorted(table.inductor_options.items()) if t == "float")
    assert table.option_value_ok(int_key, True) is True  # isinstance(True, int)
    assert table.option_value_ok(float_key, 1) is False
    assert table.option_value_ok(float_key, 1.0) is True


def test_config_names(table):
    dynamo = table.config_names("torch._dynamo.config")
    assert {"cache_size_limit", "recompile_limit", "dynamic_shapes", "optimize_ddp"} <= dynamo
    assert {"capture_scalar_outputs", "capture_dynamic_output_shape_ops"} <= dynamo
    assert "bogus_flag" not in dynamo and "os" not in dynamo
    inductor = table.config_names("inductor")
    assert {"triton.cudagraphs", "max_autotune", "force_disable_caches"} <= inductor
    assert "triton" not in inductor
    alias = table.config_aliases["torch._dynamo.config.cache_size_limit"]
    assert alias == "torch._dynamo.config.recompile_limit"
    with pytest.raises(ValueError):
        table.config_names("torch.config")


def test_messages(table):
    assert table.message("unknown_backend", name="nvfuser") == (
        "Invalid backend: 'nvfuser', see `torch._dynamo.list_backends()` for available backends."
    )
    assert table.message("unknown_mode", mode="bogus-mode") == (
        "Unrecognized mode=bogus-mode, should be one of: default, lite, reduce-overhead, "
        "max-autotune-no-cudagraphs, max-autotune"
    )
    assert table.message("option_type", key="k", got="int", expected="bool") == (
        "Unexpected type of attr k, got int should be bool"
    )
    errors = table.compile_checks["errors"]
    assert {e["raised_at"] for e in errors.values()} == {"compile"}
    assert errors["unknown_backend"]["exception"] == "torch._dynamo.exc.InvalidBackend"


def test_signatures(table):
    compile_ = table.signature("torch.compile")
    assert compile_ is not None and compile_.error_name == "compile"
    assert {"fullgraph", "dynamic", "backend", "mode", "options"} <= set(compile_.keywords)
    assert not compile_.accepts_keyword("dynamic_shapes")
    assert compile_.unexpected_keyword_message("dynamic_shapes") == (
        "compile() got an unexpected keyword argument 'dynamic_shapes'"
    )
    ddp = table.signature("torch.nn.parallel.DistributedDataParallel")
    assert ddp.error_name == "DistributedDataParallel.__init__" and ddp.kind == "class"
    assert "find_unused_parameters" in ddp.keywords and "module" in ddp.keywords
    assert "self" not in ddp.keywords
    assert not table.signature("torch.distributed.init_process_group").accepts_keyword("debug")
    # other public spellings resolve to the same entry
    assert table.signature("torch.utils.data.dataloader.DataLoader") is table.signature(
        "torch.utils.data.DataLoader"
    )
    assert table.signature("torch.distributed._composable.fsdp.fully_shard") is (
        table.signature("torch.distributed.fsdp.fully_shard")
    )
    # **kwargs accepts anything; unknown APIs have no entry
    assert table.signature("torch.utils.checkpoint.checkpoint").accepts_keyword("anything")
    assert table.signature("torch.not_an_api") is None and table.signature(None) is None
    assert table.signature("torch.cuda.CUDAGraph") is None  # C++ type: not introspectable
    for name in ("torch.distributed.all_reduce", "torch.distributed.barrier", "torch.cuda.graph"):
        assert table.signature(name) is not None, name


def test_closest():
    backends = load_table().backends
    assert closest("Inductor", backends) == "inductor"
    assert closest("EAGER", backends) == "eager"
    assert closest("aot_eagr", backends) == "aot_eager"
    assert closest("reduce_overhead", load_table().modes) == "reduce-overhead"
    assert closest("completely-unrelated", backends) is None
    assert closest("x", []) is None


def test_loader_does_not_import_torch():
    code = (
        "import sys\n"
        "from distlint.knowledge.torch_tables import load_table\n"
        "load_table(None).option_type('max_autotune')\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


# --- drift (torch) -----------------------------------------------------------------------------


@pytest.mark.torch
def test_shipped_tables_match_installed_torch():
    import torch

    gen = _generator()
    fresh = gen.build()
    version = ".".join(fresh["torch_version"].split(".")[:2])
    tables = gen.shipped_tables()
    assert version in tables, (
        f"no tables for torch {torch.__version__}: run python scripts/gen_torch_tables.py"
    )
    shipped = json.loads(gen.render(tables[version]))
    fresh_json = json.loads(gen.render(fresh))
    shipped.pop("torch_version"), fresh_json.pop("torch_version")  # patch releases share a table
    assert fresh_json == shipped, "run python scripts/gen_torch_tables.py --check for the diff"


# --- proof of the recorded facts (torch) --------------------------------------------------------


def _torch_object(dotted: str):  # type: ignore[no-untyped-def]
    import importlib

    module_name, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


# Callables whose wrappers need positional arguments before Python binds the keywords.
_POSITIONAL = {
    "torch.distributed.fsdp.fully_shard": lambda torch: (torch.nn.Linear(2, 2),),
    "torch.library.define": lambda torch: ("distlint_sig::op(Tensor x) -> Tensor",),
    "torch.library.impl": lambda torch: ("distlint_sig::op", "cpu"),
}


@pytest.mark.torch
def test_every_signature_rejects_unknown_keywords_as_recorded(table):
    """DL501's claim, for every API in the table: an unknown keyword raises the recorded
    TypeError; an API recorded with **kwargs does not reject it at binding."""
    import warnings

    import torch

    checked = 0
    for name, signature in sorted(table.signatures.items()):
        if signature.var_keyword:
            continue
        args = _POSITIONAL.get(name, lambda torch: ())(torch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError) as err:
                _torch_object(name)(*args, distlint_bogus_kw=1)
        assert str(err.value) == signature.unexpected_keyword_message("distlint_bogus_kw"), name
        checked += 1
    assert checked > 60
    for alias, canonical in table.signature_aliases.items():
        assert _torch_object(alias) is _torch_object(canonical), alias


@pytest.fixture
def clean_env():
    """torch.compile with triton.cudagraphs sets CUPTI env vars; undo that."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _ident(x):
    return x


@pytest.mark.torch
def test_unknown_backend_raises_at_compile_call(table):
    import torch
    from torch._dynamo.exc import InvalidBackend

    for name in ("nvfuser", "aot_ts_nvfuser", "onnxrt", "Inductor", "EAGER"):
        with pytest.raises(InvalidBackend) as err:
            torch.compile(_ident, backend=name)
        assert str(err.value) == table.message("unknown_backend", name=name)
    with pytest.raises(InvalidBackend):
        torch.compile(_ident, backend="nvfuser", disable=True)
    with pytest.raises(InvalidBackend):
        torch.nn.Linear(2, 2).compile(backend="nvfuser")
    decorator = torch.compile(backend="nvfuser")  # factory form: deferred ...
    with pytest.raises(InvalidBackend):
        decorator(_ident)  # ... until applied
    for name in table.backends:
        torch.compile(_ident, backend=name)  # every recorded backend is accepted


@pytest.mark.torch
def test_unknown_mode_raises_at_compile_call(table, clean_env):
    import torch

    with pytest.raises(RuntimeError) as err:
        torch.compile(_ident, mode="bogus-mode")
    assert str(err.value) == table.message("unknown_mode", mode="bogus-mode")
    with pytest.raises(RuntimeError, match="Unrecognized mode=reduce_overhead"):
        torch.compile(_ident, mode="reduce_overhead", disable=True)
    decorator = torch.compile(mode="bogus-mode")
    with pytest.raises(RuntimeError):
        decorator(_ident)
    for mode in (*table.modes, None, ""):
        torch.compile(_ident, mode=mode)


@pytest.mark.torch
def test_mode_and_options_together_raise_for_any_backend(table):
    import torch

    expected = table.message("mode_and_options")
    for backend in ("inductor", "eager"):
        for mode, options in (("default", {}), ("max-autotune", {"max_autotune": True})):
            with pytest.raises(RuntimeError) as err:
                torch.compile(_ident, backend=backend, mode=mode, options=options)
            assert str(err.value) == expected


@pytest.mark.torch
def test_unknown_option_key_raises_at_compile_call(table):
    import torch

    known = repr(list(torch._inductor.config.get_config_copy().keys()))
    for key in ("not_a_real_option", "force_disable_caches", "max_autotunes"):
        with pytest.raises(RuntimeError) as err:
            torch.compile(_ident, options={key: True})
        assert str(err.value) == table.message("unknown_option", key=key, known=known)
    # accepted: dash spelling, and the keys torch.compile pops before validation
    options = {"max-autotune": False, "guard_filter_fn": None, "use_aoti": False}
    torch.compile(_ident, options=options)


@pytest.mark.torch
def test_option_value_types_match_torch(table, clean_env):
    import torch

    with pytest.raises(RuntimeError) as err:
        torch.compile(_ident, options={"max_autotune": 1})
    expected = table.message("option_type", key="max_autotune", got="int", expected="bool")
    assert str(err.value) == expected
    never = table.compile_checks["errors"]["option_type_never"]
    samples = [True, 1, 1.5, "s", None, [1], (1,), {"a": 1}]
    by_type: dict[str, str] = {}
    for key, kind in sorted(table.inductor_options.items()):
        if key not in ("triton.cudagraphs", "use_aoti"):
            by_type.setdefault(kind, key)  # one option of each recorded type
    assert {"bool", "int", "float", "str", "NoneType", "any", "never"} <= by_type.keys()
    for kind, key in by_type.items():
        for value in samples:
            try:
                torch.compile(_ident, options={key: value})
                accepted = True
            except RuntimeError as e:
                assert "Unexpected type of attr" in str(e)
                accepted = False
            except TypeError as e:
                assert (type(e).__name__, str(e)) == (never["exception"], never["message"])
                accepted = False
            assert accepted is table.option_value_ok(key, value), (kind, key, value)


@pytest.mark.torch
def test_only_inductor_validates_mode_and_options():
    import torch

    def f(x):
        return x * 2 + 1

    x = torch.arange(3.0)
    try:
        assert torch.equal(torch.compile(f, backend="eager", fullgraph=True)(x), f(x))
        torch._dynamo.reset()
        # eager gets mode=/options= as kwargs at first call and only logs a warning
        assert torch.equal(torch.compile(f, backend="eager", mode="bogus-mode")(x), f(x))
        torch._dynamo.reset()
        compiled = torch.compile(f, backend="aot_eager", options={"not_a_real_option": 1})
        assert torch.equal(compiled(x), f(x))
    finally:
        torch._dynamo.reset()


THIRD_PARTY = """
import torch
from torch._dynamo.exc import InvalidBackend

assert "distlint_ep_backend" in torch._dynamo.list_backends()
f = torch.compile(lambda x: x + 1, backend="distlint_ep_backend")
assert f(torch.zeros(2)).tolist() == [1.0, 1.0]
import distlint_ep_mod
assert distlint_ep_mod.CALLS == 1

@torch._dynamo.register_backend
def distlint_runtime_backend(gm, example_inputs):
    return gm.forward

assert torch.compile(lambda x: x - 1, backend="distlint_runtime_backend")(torch.ones(1)) == 0
for name in ("Distlint_Ep_Backend", "DISTLINT_RUNTIME_BACKEND"):
    try:
        torch.compile(lambda x: x, backend=name)
    except InvalidBackend:
        pass
    else:
        raise AssertionError(name)
print("ok")
"""


@pytest.mark.torch
def test_third_party_backend_registration(tmp_path):
    """Entry points in group torch_dynamo_backends and register_backend add backend strings."""
    (tmp_path / "distlint_ep_mod.py").write_text(
        textwrap.dedent("""
            CALLS = 0
            def backend(gm, example_inputs):
                global CALLS
                CALLS += 1
                return gm.forward
        """)
    )
    dist_info = tmp_path / "distlint_ep_mod-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: distlint-ep-mod\n")
    (dist_info / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\ndistlint_ep_backend = distlint_ep_mod:backend\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", THIRD_PARTY], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
