"""Proof for DL502: torch 2.13 rejects these torch.compile arguments in the call itself.

Runs ``fixtures/DL502/{bad,good,traps}.py`` under the real torch. Every bad case fails in the
``torch.compile(...)`` call (or when the decorator factory is applied), before the model runs;
the good cases compile (and, on the debug backends, run a training step). The traps run too
(marked ``slow``: one more subprocess that imports torch) and must all succeed.
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

FOLDER = FIXTURES / "DL502"
INVALID_BACKEND = "torch._dynamo.exc.InvalidBackend"
RUNTIME_ERROR = "builtins.RuntimeError"
MODES = "should be one of: default, lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune"
BOTH = "Either mode or options can be specified, but both can't be specified at the same time."


def _invalid_backend(name: str) -> str:
    return f"Invalid backend: '{name}', see `torch._dynamo.list_backends()` for available backends."


# bad case -> (line of the finding, exception type, message start, line torch raises at)
BAD_CASES = {
    "case_removed_nvfuser_backend": (29, INVALID_BACKEND, _invalid_backend("nvfuser"), 29),
    "case_backend_name_in_wrong_case": (34, INVALID_BACKEND, _invalid_backend("Inductor"), 34),
    "case_misspelled_mode": (
        39,
        RUNTIME_ERROR,
        f"Unrecognized mode=max-autotune-no-cudagraph, {MODES}",
        39,
    ),
    "case_mode_and_options_together": (46, RUNTIME_ERROR, BOTH, 44),
    "case_mode_and_options_with_debug_backend": (53, RUNTIME_ERROR, BOTH, 53),
    "case_unknown_options_key": (
        58,
        RUNTIME_ERROR,
        "Unexpected optimization option cuda_graphs, known options are [",
        None,  # the message lists every option; the traceback tail holds only the message
    ),
    "case_option_value_of_wrong_type": (
        63,
        RUNTIME_ERROR,
        "Unexpected type of attr max_autotune, got str should be bool",
        63,
    ),
    "case_int_for_float_option": (
        68,
        RUNTIME_ERROR,
        "Unexpected type of attr cpu_gpu_bw, got int should be float",
        68,
    ),
    "case_module_compile_method": (74, RUNTIME_ERROR, f"Unrecognized mode=fastest, {MODES}", 74),
    "case_decorator_factory": (
        81,
        RUNTIME_ERROR,
        f"Unrecognized mode=reduce_overhead, {MODES}",
        81,  # raised when the decorator is applied, before `step` is ever called
    ),
    # The partial builds fine; torch.compile raises when the partial is called.
    "case_partial_compile_wrapper": (89, INVALID_BACKEND, _invalid_backend("nvfuser"), 90),
}
GOOD_CASES = {
    "case_debug_backend_eager",
    "case_debug_backend_aot_eager",
    "case_backend_name_lowercase",
    "case_valid_mode",
    "case_options_without_mode",
    "case_float_option_given_a_float",
    "case_module_compile_method",
    "case_module_compile_method_with_mode",
    "case_decorator_factory",
    "case_partial_compile_wrapper",
}
_FRAME = re.compile(r'fixtures/DL502/bad\.py", line (\d+), in (\w+)')


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Outcome]]:
    """Outcomes of bad.py and good.py, each run in its own subprocess (in parallel)."""
    return run_fixtures(FOLDER)


@pytest.fixture(scope="module")
def trap_outcomes() -> dict[str, Outcome]:
    return run_cases(FOLDER / "traps.py")


def test_bad_cases_are_exactly_the_flagged_lines() -> None:
    lines = {line for _, line, _ in expected_findings(FOLDER / "bad.py")}
    assert lines == {case[0] for case in BAD_CASES.values()}


def test_every_case_ran(outcomes: dict[str, dict[str, Outcome]]) -> None:
    assert set(outcomes["bad"]) == set(BAD_CASES)
    assert set(outcomes["good"]) == GOOD_CASES


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_case_is_rejected_by_the_compile_call(
    outcomes: dict[str, dict[str, Outcome]], case: str
) -> None:
    _, error_type, message, raise_line = BAD_CASES[case]
    outcome = outcomes["bad"][case]
    assert not outcome.ok
    assert outcome.type == error_type, outcome.traceback
    assert outcome.message.startswith(message), outcome.message[:300]
    if raise_line is not None:
        # The innermost fixture frame is the compile call in the case itself: nothing ran
        # the model (no frame in train_once, forward or the decorated step).
        frames = _FRAME.findall(outcome.traceback)
        assert frames, outcome.traceback
        assert frames[-1] == (str(raise_line), case)


def test_good_cases_run_clean(outcomes: dict[str, dict[str, Outcome]]) -> None:
    failed = {name: o.traceback for name, o in outcomes["good"].items() if not o.ok}
    assert failed == {}


@pytest.mark.slow
def test_traps_run_clean(trap_outcomes: dict[str, Outcome]) -> None:
    """Only inductor validates mode= and options=; the other traps are valid as written."""
    assert len(trap_outcomes) == 14
    failed = {name: o.traceback for name, o in trap_outcomes.items() if not o.ok}
    assert failed == {}
