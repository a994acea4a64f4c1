"""Proof for DL501, DL503, DL504 and DL505 on torch 2.13.

Runs ``fixtures/DL50{1,3,4}/{bad,good}.py`` under the real torch and checks that every flagged
line fails (or warns) exactly as the rule's message says, and that the corrected code runs. The
traps run too (marked ``slow``). DL504's fixtures run with ``-W error::FutureWarning`` so that
a deprecation warning becomes the case's outcome, and every entry of DL504's generated table is
triggered again to check its recorded warning. DL505's private modules are checked to exist,
to import without notice, and to share their objects with the public homes the data names.
DL502's proof is in test_proof_dl502.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from distlint.rules.api._deprecations import deprecated_apis
from distlint.testing import expected_findings
from tests.proof.harness import FIXTURES, REPO, Outcome, run_cases, run_fixtures

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

TYPE_ERROR = "builtins.TypeError"
ATTRIBUTE_ERROR = "builtins.AttributeError"
FUTURE_WARNING = "builtins.FutureWarning"


def _unexpected(name: str, keyword: str) -> str:
    return f"{name}() got an unexpected keyword argument '{keyword}'"


# case -> (flagged line, exception type, exact message, line the exception is raised at)
DL501_BAD = {
    "case_compile_dynamic_shapes": (30, TYPE_ERROR, _unexpected("compile", "dynamic_shapes"), 30),
    "case_init_process_group_debug": (
        40,
        TYPE_ERROR,
        _unexpected("init_process_group", "debug"),
        35,  # the call starts on line 35; the keyword is on line 40
    ),
    "case_ddp_find_unused_params": (
        45,
        TYPE_ERROR,
        _unexpected("DistributedDataParallel.__init__", "find_unused_params"),
        45,
    ),
    "case_fsdp_use_orig_param": (
        50,
        TYPE_ERROR,
        _unexpected("FullyShardedDataParallel.__init__", "use_orig_param"),
        50,
    ),
    "case_fully_shard_misspelled_keyword": (
        55,
        TYPE_ERROR,
        _unexpected("fully_shard", "reshard_after_foward"),
        55,
    ),
    "case_decorator_factory": (59, TYPE_ERROR, _unexpected("compile", "fullgrph"), 59),
    # the partial is built fine; torch.compile raises when the partial is called
    "case_partial_compile_wrapper": (67, TYPE_ERROR, _unexpected("compile", "dynamic_shape"), 68),
    "case_module_compile_method": (74, TYPE_ERROR, _unexpected("compile", "dynamic_shapes"), 74),
    "case_dataloader_drop_remainder": (
        80,
        TYPE_ERROR,
        _unexpected("DataLoader.__init__", "drop_remainder"),
        80,
    ),
    "case_collective_reduce_op_keyword": (
        86,
        TYPE_ERROR,
        _unexpected("all_reduce", "reduce_op"),
        86,
    ),
    "case_make_graphed_callables_warmup": (
        91,
        TYPE_ERROR,
        _unexpected("make_graphed_callables", "num_warmup"),
        91,
    ),
    "case_distributed_sampler_num_replica": (
        96,
        TYPE_ERROR,
        _unexpected("DistributedSampler.__init__", "num_replica"),
        96,
    ),
}


def _missing(name: str) -> str:
    return f"{name} does not exist"


DL503_BAD = {
    "case_misspelled_dynamo_flag": (
        15,
        ATTRIBUTE_ERROR,
        _missing("torch._dynamo.config.suppress_error"),
        15,
    ),
    "case_alias_import": (
        19,
        ATTRIBUTE_ERROR,
        _missing("torch._dynamo.config.capture_scalar_output"),
        19,
    ),
    "case_made_up_inductor_option": (
        23,
        ATTRIBUTE_ERROR,
        _missing("torch._inductor.config.coordinate_descent_tunning"),
        23,
    ),
    "case_nested_inductor_option": (
        27,
        ATTRIBUTE_ERROR,
        _missing("torch._inductor.config.triton.cudagraph"),
        27,
    ),
    "case_inductor_group_assigned_whole": (
        31,
        ATTRIBUTE_ERROR,
        _missing("torch._inductor.config.triton"),
        31,
    ),
    "case_augmented_assignment": (
        35,
        ATTRIBUTE_ERROR,
        _missing("torch._dynamo.config.cache_limit"),
        35,
    ),
    "case_setattr": (39, ATTRIBUTE_ERROR, _missing("torch._dynamo.config.verbos"), 39),
    "case_patch_context_manager": (
        43,
        ATTRIBUTE_ERROR,
        _missing("torch._dynamo.config.recompile_limt"),
        43,  # raised when the with statement enters the patch
    ),
    "case_patch_dict": (48, ATTRIBUTE_ERROR, _missing("torch._inductor.config.max_autotun"), 48),
}

_APIS = {api.name: api for api in deprecated_apis()}


def _warning(name: str) -> str:
    """The exact warning text recorded in the DL504 table for an entry."""
    message = _APIS[name].message
    assert message is not None, name
    return message


# case -> (the flagged line, which is also where the FutureWarning is raised; the table entry)
DL504_CASES = {
    "case_private_all_gather_base": (30, "torch.distributed._all_gather_base"),
    "case_private_reduce_scatter_base": (35, "torch.distributed._reduce_scatter_base"),
    "case_all_gather_into_tensor": (41, "torch.distributed.all_gather_into_tensor"),
    "case_reduce_scatter_tensor": (46, "torch.distributed.reduce_scatter_tensor"),
    "case_functional_all_gather_tensor": (
        51,
        "torch.distributed._functional_collectives.all_gather_tensor",
    ),
    "case_functional_reduce_scatter_tensor": (
        56,
        "torch.distributed._functional_collectives.reduce_scatter_tensor",
    ),
    "case_reduce_op_alias": (60, "torch.distributed.reduce_op"),
    "case_private_get_global_rank": (66, "torch.distributed._get_global_rank"),
    "case_checkpoint_save_state_dict": (70, "torch.distributed.checkpoint.save_state_dict"),
    "case_cuda_amp_grad_scaler": (81, "torch.cuda.amp.GradScaler"),
    "case_cuda_amp_autocast": (85, "torch.cuda.amp.autocast"),
    "case_cuda_amp_custom_fwd": (90, "torch.cuda.amp.custom_fwd"),
    "case_cuda_amp_custom_bwd": (94, "torch.cuda.amp.custom_bwd"),
    "case_cpu_amp_autocast": (98, "torch.cpu.amp.autocast"),
    "case_weight_norm": (103, "torch.nn.utils.weight_norm"),
    "case_sdp_kernel": (107, "torch.backends.cuda.sdp_kernel"),
    "case_assert_allclose": (112, "torch.testing.assert_allclose"),
    "case_clip_grad_norm_without_underscore": (116, "torch.nn.utils.clip_grad_norm"),
    "case_nll_loss_2d": (120, "torch.nn.NLLLoss2d"),
    "case_cuda_memory_cached": (124, "torch.cuda.memory_cached"),
    "case_functorch_vmap": (128, "functorch.vmap"),
    "case_autograd_all_reduce": (136, "torch.distributed.nn.all_reduce"),
    "case_fsdp_state_dict_type": (
        141,
        "torch.distributed.fsdp.FullyShardedDataParallel.state_dict_type",
    ),
    "case_sharded_tensor": (149, "torch.distributed._shard.sharded_tensor.zeros"),
}
DL504_BAD = {
    case: (line, FUTURE_WARNING, _warning(name), line) for case, (line, name) in DL504_CASES.items()
}
# bad.py's module-level finding (line 17, the private FSDP2 import) is proven by
# test_private_module_paths_are_the_public_objects; its case runs clean.
DL504_BAD_OK = {"case_private_fsdp2_path"}
DL504_IMPORT_LINE = 17

BAD = {"DL501": DL501_BAD, "DL503": DL503_BAD, "DL504": DL504_BAD}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, dict[str, Outcome]]]:
    found = {code: run_fixtures(FIXTURES / code) for code in ("DL501", "DL503")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONWARNINGS", "error::FutureWarning")
        found["DL504"] = run_fixtures(FIXTURES / "DL504")
    return found


@pytest.mark.parametrize("code", sorted(BAD))
def test_bad_cases_are_exactly_the_flagged_lines(code: str) -> None:
    lines = {line for _, line, _ in expected_findings(FIXTURES / code / "bad.py")}
    expected = {case[0] for case in BAD[code].values()}
    if code == "DL504":
        expected.add(DL504_IMPORT_LINE)
    assert lines == expected


@pytest.mark.parametrize("code", sorted(BAD))
def test_every_case_ran(outcomes, code: str) -> None:
    extra = DL504_BAD_OK if code == "DL504" else set()
    assert set(outcomes[code]["bad"]) == set(BAD[code]) | extra


@pytest.mark.parametrize(
    ("code", "case"), [(code, case) for code in sorted(BAD) for case in sorted(BAD[code])]
)
def test_bad_case_fails_as_documented(outcomes, code: str, case: str) -> None:
    _, error_type, message, raise_line = BAD[code][case]
    outcome = outcomes[code]["bad"][case]
    assert not outcome.ok
    assert outcome.type == error_type, outcome.traceback
    assert outcome.message == message
    frames = re.findall(rf'fixtures/{code}/bad\.py", line (\d+), in (\w+)', outcome.traceback)
    assert frames and frames[-1] == (str(raise_line), case), outcome.traceback


@pytest.mark.parametrize("code", sorted(BAD))
def test_good_cases_run_clean(outcomes, code: str) -> None:
    good = outcomes[code]["good"]
    assert good
    failed = {name: o.traceback for name, o in good.items() if not o.ok}
    assert failed == {}


def test_dl504_bad_case_without_warning_runs(outcomes) -> None:
    for case in DL504_BAD_OK:
        assert outcomes["DL504"]["bad"][case].ok


def test_private_module_paths_are_the_public_objects() -> None:
    """DL504's module entries: the private path holds the very objects of the public one."""
    import torch.distributed._composable.fsdp as private_fsdp
    import torch.distributed._tensor as private_tensor
    import torch.distributed.fsdp as fsdp
    import torch.distributed.tensor as tensor

    for name in ("fully_shard", "FSDPModule", "MixedPrecisionPolicy", "CPUOffloadPolicy"):
        assert getattr(private_fsdp, name) is getattr(fsdp, name)
    assert private_tensor.DTensor is tensor.DTensor
    assert "DTensor has moved to torch.distributed.tensor" in (private_tensor.__doc__ or "")


def _generator():  # type: ignore[no-untyped-def]
    """scripts/gen_deprecations.py, which generated the DL504 table and observes its triggers."""
    path = REPO / "scripts" / "gen_deprecations.py"
    spec = importlib.util.spec_from_file_location("gen_deprecations", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _table_entries() -> list[dict]:
    path = REPO / "distlint" / "knowledge" / "data" / "deprecated_torch.json"
    return json.loads(path.read_text(encoding="utf-8"))["entries"]


_WARNING_ENTRIES = sorted(e["name"] for e in _table_entries() if e["category"] is not None)


@pytest.fixture(scope="module")
def observed() -> dict[str, tuple[str, str] | None]:
    """Every entry's trigger run again on the installed torch: the first deprecation warning."""
    gen = _generator()
    triggers = {e["name"]: e["trigger"] for e in _table_entries() if e["category"] is not None}
    return {name: gen.first_warning(result) for name, result in gen.observe(triggers).items()}


@pytest.mark.parametrize("name", _WARNING_ENTRIES)
def test_every_dl504_entry_warns_as_recorded(observed, name: str) -> None:
    """The installed torch still emits the recorded category and exact message for the entry
    (called with placeholder arguments, created, read, imported in a fresh interpreter, or its
    seed code run on a single-rank gloo group; see scripts/gen_deprecations.py)."""
    api = _APIS[name]
    assert observed[name] == (api.category, api.message), api.reference


def test_the_fixture_proves_the_common_entries_under_their_real_use() -> None:
    """The entries people use most are also proven by running fixtures/DL504/bad.py."""
    proven = {name for _, name in DL504_CASES.values()}
    assert proven <= set(_APIS)
    assert {
        "torch.cuda.amp.GradScaler",
        "torch.cuda.amp.autocast",
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
        "torch.distributed._shard.sharded_tensor.zeros",
    } <= proven


_SHARD_SILENT = """
import warnings, torch, torch.distributed as dist
warnings.simplefilter("error")
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
import torch.distributed._shard
from torch.distributed._shard import sharded_tensor, sharding_plan, sharded_optim
from torch.distributed._shard.metadata import ShardMetadata
from torch.distributed._shard.sharded_tensor import Shard, ShardedTensor
from torch.distributed._shard.sharding_spec import ChunkShardingSpec
spec = ChunkShardingSpec(dim=0, placements=["rank:0/cpu"])
empty = sharded_tensor.empty(spec, 4)
assert isinstance(empty, ShardedTensor)
local = [Shard(torch.zeros(4), ShardMetadata([0], [4], "rank:0/cpu"))]
sharded_tensor.init_from_local_shards(local, 4)
"""


def test_sharded_tensor_warns_only_where_the_table_says() -> None:
    """torch.distributed._shard is no deprecated module: importing it (and its submodules),
    naming ShardedTensor and creating one with nothing applied to it emit no warning; the
    table's ShardedTensor entries are the calls that do (test_every_dl504_entry_warns...)."""
    assert not any(api.name == "torch.distributed._shard" for api in deprecated_apis())
    proc = subprocess.run(
        [sys.executable, "-c", _SHARD_SILENT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_no_entry_was_lost_from_the_hand_written_table() -> None:
    """The entries DL504 had before the table was generated are all still there."""
    assert {
        "torch.distributed._all_gather_base",
        "torch.distributed._reduce_scatter_base",
        "torch.distributed.all_gather_into_tensor",
        "torch.distributed.reduce_scatter_tensor",
        "torch.distributed._functional_collectives.all_gather_tensor",
        "torch.distributed._functional_collectives.all_gather_tensor_autograd",
        "torch.distributed._functional_collectives.reduce_scatter_tensor",
        "torch.distributed._functional_collectives.reduce_scatter_tensor_autograd",
        "torch.distributed.reduce_op",
        "torch.distributed._get_global_rank",
        "torch.distributed.checkpoint.save_state_dict",
        "torch.distributed.checkpoint.load_state_dict",
        "torch.distributed._composable.fsdp",
        "torch.distributed._tensor",
    } <= set(_APIS)


@pytest.mark.slow
def test_generated_tables_match_installed_torch() -> None:
    """scripts/gen_deprecations.py --check: the shipped DL504/DL505 data is what torch says."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_deprecations.py"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("code", sorted(BAD))
def test_traps_run_clean(code: str) -> None:
    outcomes = run_cases(FIXTURES / code / "traps.py")
    assert outcomes
    failed = {name: o.traceback for name, o in outcomes.items() if not o.ok}
    assert failed == {}


# -- DL505 private-torch-module -------------------------------------------------------------------


def test_dl505_fixtures_run_clean() -> None:
    """The private imports of bad.py work today, and so do the public ones of good.py."""
    found = run_fixtures(FIXTURES / "DL505", kinds=("bad", "good", "traps"))
    for kind, outcomes in found.items():
        assert outcomes, kind
        failed = {name: o.traceback for name, o in outcomes.items() if not o.ok}
        assert failed == {}, kind


def test_dl505_flagged_modules_exist_and_import_without_any_warning() -> None:
    """A private module gives no notice: importing it emits no warning at all on torch 2.13."""
    modules = sorted(
        {
            "torch.distributed.fsdp._runtime_utils",
            "torch._utils",
            "torch.distributed._composable",
            "torch.distributed.tensor._api",
            "torch.utils._pytree",
            "torch.utils.data._utils.collate",
        }
    )
    code = (
        "import importlib, json, warnings\n"
        "import torch\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    for name in {modules!r}:\n"
        "        importlib.import_module(name)\n"
        "print(json.dumps([str(w.message) for w in caught]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_dl505_every_public_home_holds_the_same_object() -> None:
    """Checked in a fresh interpreter, as a program that imports them sees them: the first
    torch.compile of a process (Dynamo's ``TorchPatcher.patch``) replaces ``torch.jit.trace``,
    ``trace_module`` and ``_get_trace_graph`` with ``disable(...)`` wrappers, so in this test
    process, after any in-process compile (tests/proof/test_proof_fixes.py), ``torch.jit.trace``
    is no longer ``torch.jit._trace.trace``."""
    from distlint.rules.api.private_torch_module import private_modules

    homes = private_modules().public_homes
    assert homes
    code = (
        "import importlib, json, sys\n"
        "homes = json.loads(sys.argv[1])\n"
        "differ = [\n"
        "    [private, name, public]\n"
        "    for private, names in homes.items()\n"
        "    for name, public in names.items()\n"
        "    if getattr(importlib.import_module(public), name)\n"
        "    is not getattr(importlib.import_module(private), name)\n"
        "]\n"
        "print(json.dumps(differ))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(homes)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_dl505_dynamo_rewraps_torch_jit_trace_at_the_first_compile() -> None:
    """Why the check above runs in a fresh interpreter: the identity it proves holds until the
    process first compiles, then ``torch.jit.trace`` is Dynamo's wrapper of it."""
    code = (
        "import torch\n"
        "from torch.jit._trace import trace\n"
        "before = torch.jit.trace is trace\n"
        "torch.compile(lambda x: x + 1, backend='eager')(torch.ones(2))\n"
        "print(before, torch.jit.trace is trace)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "True False"


def test_dl505_a_private_module_of_torch_1_is_gone() -> None:
    with pytest.raises(ModuleNotFoundError, match=re.escape("No module named 'torch._six'")):
        __import__("torch._six")
