"""Proof for DL203: object collectives crash a compiled function on torch 2.13.

Runs ``fixtures/DL203/{bad,good,traps}.py`` under the real torch (a single-rank gloo group in
one CPU process) and checks that every flagged call crashes Dynamo exactly where distlint
points, and that the good code runs. The traps run too (marked ``slow``: one more subprocess
that imports torch): all of them run clean.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from distlint.testing import expected_findings
from tests.proof.harness import FIXTURES, Outcome, run_cases, run_fixtures

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

FOLDER = FIXTURES / "DL203"
ERROR_TYPE = "torch._dynamo.exc.InternalTorchDynamoError"
ERROR_TEXT = "UnsafeScriptObjectError: Attempted to access unregistered member on an OpaqueObject"
GB_URL = "compile-graph-break-site/gb/gb2078.html"

# bad case -> (line of the flagged call in bad.py, opaque ProcessGroup member Dynamo trips on)
BAD_CASES = {
    "case_all_gather_object": (25, "_device_types"),
    "case_broadcast_object_list_fullgraph": (32, "_device_types"),
    "case_gather_object": (38, "_device_types"),
    "case_scatter_object_list": (45, "_device_types"),
    "case_monitored_barrier": (52, "monitored_barrier"),
    "case_distributed_c10d_spelling": (59, "_device_types"),
    "case_nested_def_in_compiled_function": (70, "_device_types"),
}
GOOD_CASES = {
    "case_broadcast_config_before_compiled_step",
    "case_monitored_barrier_between_compiled_steps",
    "case_all_reduce_inside_compiled_step",
    "case_losses_exchanged_as_a_tensor",
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Outcome]]:
    """Outcomes of bad.py and good.py, each run in its own subprocess (in parallel)."""
    return run_fixtures(FOLDER)


@pytest.fixture(scope="module")
def trap_outcomes() -> dict[str, Outcome]:
    return run_cases(FOLDER / "traps.py")


def test_bad_cases_are_exactly_the_flagged_lines() -> None:
    lines = {line for _, line, _ in expected_findings(FOLDER / "bad.py")}
    assert lines == {line for line, _ in BAD_CASES.values()}


def test_every_case_ran(outcomes: dict[str, dict[str, Outcome]]) -> None:
    assert set(outcomes["bad"]) == set(BAD_CASES)
    assert set(outcomes["good"]) == GOOD_CASES


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_case_crashes_dynamo_at_the_flagged_call(
    outcomes: dict[str, dict[str, Outcome]], case: str
) -> None:
    line, member = BAD_CASES[case]
    outcome = outcomes["bad"][case]
    assert not outcome.ok
    assert outcome.type == ERROR_TYPE, outcome.traceback
    assert outcome.message.startswith(ERROR_TEXT)
    assert f"Explanation: Member '{member}' is not registered for this opaque object type." in (
        outcome.message
    )
    assert GB_URL in outcome.message
    # Dynamo's "from user code" frame is the call that distlint reports.
    assert re.search(rf'fixtures/DL203/bad\.py", line {line}, in ', outcome.message)


def test_good_cases_run_clean(outcomes: dict[str, dict[str, Outcome]]) -> None:
    failed = {name: o.traceback for name, o in outcomes["good"].items() if not o.ok}
    assert failed == {}


@pytest.mark.slow
def test_traps_run_clean(trap_outcomes: dict[str, Outcome]) -> None:
    assert len(trap_outcomes) == 4
    failed = {name: o.traceback for name, o in trap_outcomes.items() if not o.ok}
    assert failed == {}
