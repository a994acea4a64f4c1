"""Proof for DL123 requires-grad-change-in-compiled-region: what torch 2.13 does with the
fixtures' compiled functions.

The fixtures run with all DL1xx fixtures in ONE subprocess (``tests/proof/dynamo_cases.py``,
shared with test_proof_dl1xx.py). Bad cases must fail under ``fullgraph=True`` or break with
the GB id the finding names (inside a loop: the whole frame skipped, GB7000); good cases and
traps must compile to one graph without a break.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.proof.dynamo_cases import Run, cases, dynamo_runs
from tests.proof.test_proof_dl1xx import UNSUPPORTED, assert_clean, assert_fails, flagged_lines

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

SETATTR = "setattr() on Tensor.requires_grad"
FACTORY = "Attempted to use tensor creation function with requires_grad=True"
RETURNED = "returning intermediate with requires_grad_()"
LEAKED = "requires_grad_() intermediate leaked as output"

# case -> (how, flagged line, GB id, torch's message); how: "fg" (fullgraph=True fails at the
# line), "fg-output" (fullgraph=True fails when the graph's outputs are built: no user frame to
# check), "break" (a counted break with that id and message; counters do not keep the line),
# "loop" (the whole frame skipped: GB7000)
DL123_BAD = {
    "case_target_requires_grad_fullgraph": ("fg", 19, "GB0206", SETATTR),
    "case_weight_frozen_in_forward": ("break", 30, "GB0206", SETATTR),
    "case_parameters_frozen_in_a_loop": ("loop", 42, "GB0206", SETATTR),
    "case_setattr_on_an_intermediate": ("break", 49, "GB0206", SETATTR),
    "case_zero_loss_fallback_fullgraph": ("fg", 57, "GB0225", FACTORY),
    "case_factory_under_no_grad": ("break", 66, "GB0225", FACTORY),
    "case_new_tensor_with_requires_grad": ("break", 72, "GB0225", FACTORY),
    "case_requires_grad_on_a_factory_fullgraph": ("fg-output", 78, "GB7324", RETURNED),
    "case_requires_grad_on_a_detached_input": ("break", 85, "GB8985", LEAKED),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def test_dl123_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL123", "bad")) == set(DL123_BAD)
    assert {line for _, line, _, _ in DL123_BAD.values()} == flagged_lines("DL123")


@pytest.mark.parametrize("case", sorted(DL123_BAD))
def test_dl123_bad(runs, case: str) -> None:
    how, line, gb, text = DL123_BAD[case]
    run = cases(runs, "DL123", "bad")[case]
    if how.startswith("fg"):
        assert_fails(run, UNSUPPORTED, text, line if how == "fg" else None, "DL123")
        assert gb.lower() in run.message, run.message[:600]
        return
    assert run.ok, run.traceback
    if how == "break":
        assert gb in run.gb_ids, run.breaks
        assert any(text in b for b in run.breaks), run.breaks
    else:  # the break is in a loop: nothing of the frame is compiled, no break is counted
        assert run.graphs == 0 and run.breaks == [], run
        reasons = " ".join(run.unimplemented)
        assert gb.lower() in reasons and "gb7000" in reasons, run.unimplemented


def test_dl123_good_and_traps_compile_to_one_graph(runs) -> None:
    for kind in ("good", "traps"):
        found = cases(runs, "DL123", kind)
        assert_clean(found)
        assert all(run.graphs == 1 and run.unimplemented == [] for run in found.values()), found
