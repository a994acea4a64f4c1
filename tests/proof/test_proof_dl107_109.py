"""Proof for DL107-DL109 and DL105's FSDP2 case: what torch 2.13 does with the fixtures.

The fixtures run with all DL1xx fixtures in ONE subprocess (``tests/proof/dynamo_cases.py``,
shared with test_proof_dl1xx.py). From each ``case_*`` function we read its return value (the
shapes it got through, the compiled and eager results, the hook count), the exception, the
graphs compiled and the reasons Dynamo gave up (``counters["unimplemented"]``).
Distributed cases use the fake process group (``backend="fake"``, ``FakeStore``) and destroy
it themselves.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from distlint.testing import expected_findings
from tests.proof.dynamo_cases import Run, cases, dynamo_runs
from tests.proof.harness import FIXTURES

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]


FILES = [
    "fixtures/DL107/bad.py",
    "fixtures/DL107/good.py",
    "fixtures/DL107/traps.py",
    "fixtures/DL108/bad.py",
    "fixtures/DL108/good.py",
    "fixtures/DL108/traps.py",
    "fixtures/DL109/bad.py",
    "fixtures/DL109/good.py",
    "fixtures/DL109/traps.py",
    "fixtures/DL109/bad_library.py",
    "fixtures/DL109/traps_library.py",
    "fixtures/DL105/bad_fsdp2.py",
    "fixtures/DL105/good_fsdp2.py",
    "fixtures/DL105/traps_fsdp2.py",
]
LIMIT_HIT = "torch._dynamo.exc.FailOnRecompileLimitHit"


def test_every_fixture_ran(runs: dict[str, dict[str, Run]]) -> None:
    assert set(FILES) <= set(runs)


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def flagged_lines(code: str, kind: str = "bad") -> set[int]:
    return {line for _, line, _ in expected_findings(FIXTURES / code / f"{kind}.py")}


def lines_in(run: Run, code: str, kind: str = "bad") -> set[int]:
    text = run.message + run.traceback
    return {int(n) for n in re.findall(rf'fixtures/{code}/{kind}\.py", line (\d+)', text)}


def all_ok(runs_of_file: dict[str, Run]) -> None:
    failed = {n: (r.type, r.message[:300]) for n, r in runs_of_file.items() if not r.ok}
    assert failed == {}


# -- DL107 ---------------------------------------------------------------------------------------


def test_dl107_bad_cases_cover_the_flagged_lines(runs) -> None:
    bad = cases(runs, "DL107", "bad")
    assert set(bad) == {
        "case_sequence_lengths_fullgraph",
        "case_slices_fall_back_to_eager",
        "case_compiled_module_buckets",
        "case_global_step_fullgraph",
    }
    assert len(flagged_lines("DL107")) == 4


@pytest.mark.parametrize("case", ["case_sequence_lengths_fullgraph", "case_global_step_fullgraph"])
def test_dl107_fullgraph_fails_at_the_ninth_shape_or_value(runs, case: str) -> None:
    run = cases(runs, "DL107", "bad")[case]
    assert not run.ok and run.type == LIMIT_HIT, run
    assert run.message == "Hard failure due to fullgraph=True"
    # the cause chained to it carries the registry entry GB0039
    assert "Unsupported: Dynamo recompile limit exceeded" in run.traceback
    assert "gb0039" in run.traceback
    assert run.graphs == 8  # 8 compiles (recompile_limit), then the 9th fails
    # it fails at the call in the loop (flagged for shapes; the global is flagged where read)
    assert lines_in(run, "DL107") & (flagged_lines("DL107") | {68}), run.traceback


@pytest.mark.parametrize("case", ["case_slices_fall_back_to_eager", "case_compiled_module_buckets"])
def test_dl107_without_fullgraph_stops_compiling_after_eight(runs, case: str) -> None:
    run = cases(runs, "DL107", "bad")[case]
    assert run.ok, run.traceback
    assert run.value == 12  # 12 shapes ran, ...
    assert run.graphs == 8  # ... but only 8 were compiled: the rest ran eagerly, silently


def test_dl107_good_and_traps_stay_below_the_limit(runs) -> None:
    good = cases(runs, "DL107", "good")
    all_ok(good)
    assert {n: r.graphs for n, r in good.items() if r.graphs > 2} == {}
    traps = cases(runs, "DL107", "traps")
    all_ok(traps)
    assert {n: r.graphs for n, r in traps.items()} == {
        "case_dynamic_none": 2,  # static once, then automatic dynamic
        "case_mark_dynamic_on_static_callable": 1,
        "case_shape_branch_with_dynamic_none": 3,  # 3 compiles on torch 2.13.0
        "case_dataloader_without_drop_last": 2,
        "case_few_fixed_sizes": 3,
        "case_global_float_rebound": 2,
        "case_slices_sized_by_each_parameter": 3,  # one per distinct parameter shape
    }


def test_dl107_dataloader_without_drop_last_adds_one_shape(runs) -> None:
    """Correction to the catalog: a DataLoader's short last batch is ONE extra shape."""
    run = cases(runs, "DL107", "traps")["case_dataloader_without_drop_last"]
    assert run.ok and run.graphs == 2


def test_dl107_global_float_turns_dynamic(runs) -> None:
    run = cases(runs, "DL107", "traps")["case_global_float_rebound"]
    assert run.ok and run.graphs == 2


# -- DL108 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["case_called_before_init_process_group", "case_process_group_recreated"]
)
def test_dl108_compiled_value_stays_stale(runs, case: str) -> None:
    run = cases(runs, "DL108", "bad")[case]
    assert run.ok, run.traceback
    value = run.value
    assert isinstance(value, dict)
    assert value["compiled"] != value["eager"], value
    assert run.graphs == 1  # no recompile: the folded constant has no guard


def test_dl108_stale_values_are_the_ones_measured(runs) -> None:
    bad = cases(runs, "DL108", "bad")
    # world size folded as 1 ("not initialised"), eager 1/4; rank folded as 0, eager 1
    assert bad["case_called_before_init_process_group"].value == {"compiled": 1.0, "eager": 0.25}
    assert bad["case_process_group_recreated"].value == {"compiled": 0.0, "eager": 1.0}
    assert len(flagged_lines("DL108")) == 2


def test_dl108_good_and_traps_give_the_eager_value(runs) -> None:
    for kind in ("good", "traps"):
        files = cases(runs, "DL108", kind)
        all_ok(files)
        for name, run in files.items():
            assert isinstance(run.value, dict)
            assert run.value["compiled"] == run.value["eager"], (kind, name, run.value)


# -- DL109 ---------------------------------------------------------------------------------------


def test_dl109_hooks_after_the_first_compiled_call_never_fire(runs) -> None:
    bad = cases(runs, "DL109", "bad")
    all_ok(bad)
    assert {name: run.value for name, run in bad.items()} == {
        "case_submodule_hook_after_torch_compile": 0,
        "case_pre_hooks_on_all_modules_after_module_compile": 0,
        "case_model_called_from_compiled_function": 0,
    }
    assert len(flagged_lines("DL109")) == 3


def test_dl109_library_built_models_hooks_after_the_first_call_never_fire(runs) -> None:
    bad = cases(runs, "DL109", "bad_library")
    all_ok(bad)
    assert {name: run.value for name, run in bad.items()} == {
        "case_sequential_submodule_hook_after_torch_compile": 0,
        "case_moved_sequential_children_hooks": 0,
    }


def test_dl109_library_module_table_matches_torch_nn() -> None:
    """Every capitalised torch.nn name the table takes for a module builder is an nn.Module
    subclass on the installed torch, and the names it leaves out are not."""
    import torch

    from distlint.knowledge.module_factories import builds_module

    names = [name for name in dir(torch.nn) if name[:1].isupper()]
    classes = {name: getattr(torch.nn, name) for name in names}
    modules = {
        n for n, c in classes.items() if isinstance(c, type) and issubclass(c, torch.nn.Module)
    }
    taken = {name for name in names if builds_module(f"torch.nn.{name}")}
    assert taken == modules, (taken - modules, modules - taken)
    assert len(modules) > 100


def test_dl109_torch_nn_module_compile_method_compiles_nothing(runs) -> None:
    """Why ``m.compile()`` of a library-built model is not reported: on a torch.nn class the
    forward's frame is skipped, nothing is compiled and the children's hooks fire."""
    run = cases(runs, "DL109", "traps_library")["case_torch_nn_module_compiled_in_place"]
    assert run.ok and run.graphs == 0 and run.value == 9, run


def test_dl109_good_and_traps_hooks_fire(runs) -> None:
    for kind in ("good", "traps", "traps_library"):
        files = cases(runs, "DL109", kind)
        all_ok(files)
        assert all(isinstance(r.value, int) and r.value > 0 for r in files.values()), files


# -- DL105: FSDP2 ----------------------------------------------------------------------------------


def test_dl105_fsdp2_root_frame_is_skipped(runs) -> None:
    run = cases(runs, "DL105", "bad_fsdp2")["case_compiled_root_over_sharded_blocks"]
    assert run.ok, run.traceback
    reasons = "\n".join(run.unimplemented)
    assert "Attempted to call function marked as skipped" in reasons  # GB0007, FSDP hooks
    assert "graph break in loop" in reasons, reasons  # GB7000: the root frame is skipped
    assert run.graphs >= 1  # only Block.forward compiles


def test_dl105_fsdp2_root_fails_under_fullgraph(runs) -> None:
    run = cases(runs, "DL105", "bad_fsdp2")["case_compiled_root_over_sharded_blocks_fullgraph"]
    assert not run.ok and run.type == "torch._dynamo.exc.Unsupported", run
    assert "Attempted to call function marked as skipped" in run.message
    assert "gb0007" in run.message


def test_dl105_fsdp2_per_block_compile_and_unsharded_blocks_do_not_break(runs) -> None:
    for kind in ("good_fsdp2", "traps_fsdp2"):
        files = cases(runs, "DL105", kind)
        all_ok(files)
        for name, run in files.items():
            assert run.breaks == [] and run.unimplemented == [], (kind, name, run)
            assert run.graphs >= 1, (kind, name)
