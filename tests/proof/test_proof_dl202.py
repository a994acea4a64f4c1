"""Proof for DL202: untraceable collectives break compiled graphs on torch 2.13.

Runs ``fixtures/DL202/{bad,good,traps}.py`` under the real torch (a single-rank gloo group in
one CPU process; the ``send`` case on the fake process group, in a process of its own, since a
rank cannot send to itself). Every flagged call either fails a ``fullgraph=True`` compile with
``Unsupported`` at that very line, or (without ``fullgraph``) shows up in Dynamo's graph-break
counters with the GB id distlint cites. The traceable collectives compile with
``fullgraph=True``, so they really do not break.
"""

from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from distlint.testing import expected_findings
from tests.proof.harness import FIXTURES, Outcome, run_cases

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

FOLDER = FIXTURES / "DL202"
UNSUPPORTED = "torch._dynamo.exc.Unsupported"
BREAKS = "fixture_DL202_bad.GraphBreaksObserved"
SKIPPED = "Attempted to call function marked as skipped"
P2P = "P2P compilation disabled for isend/irecv"
ASYNC = "async_op=True for distributed collectives"
P2P_OP = "P2P compilation disabled for P2POp construction"
P2P_BATCH = "P2P compilation disabled for batch_isend_irecv"

# case -> (line of the flagged call, fullgraph?, start of Dynamo's message, GB id)
BAD_CASES = {
    "case_broadcast": (38, False, SKIPPED, "gb0007"),
    "case_barrier_fullgraph": (45, True, SKIPPED, "gb0007"),
    "case_reduce": (52, False, SKIPPED, "gb0007"),
    "case_reduce_scatter_list_fullgraph": (59, True, SKIPPED, "gb0007"),
    "case_gather": (66, False, SKIPPED, "gb0007"),
    "case_scatter_fullgraph": (73, True, SKIPPED, "gb0007"),
    "case_all_to_all_list": (80, False, SKIPPED, "gb0007"),
    "case_recv_fullgraph": (87, True, P2P, "gb2696"),
    "case_isend_fullgraph": (93, True, P2P, "gb2696"),
    "case_irecv_fullgraph": (101, True, P2P, "gb2696"),
    "case_send_fullgraph": (108, True, P2P, "gb2696"),
    "case_new_group": (114, False, SKIPPED, "gb0007"),
    "case_async_all_reduce_fullgraph": (123, True, ASYNC, "gb0172"),
    "case_async_all_gather_single": (131, False, ASYNC, "gb0172"),
    "case_async_positional_fullgraph": (139, True, ASYNC, "gb0172"),
    "case_private_module_spelling_fullgraph": (147, True, SKIPPED, "gb0007"),
    "case_p2p_op": (154, False, P2P_OP, "gb1750"),
    "case_batch_isend_irecv_fullgraph": (161, True, P2P_BATCH, "gb9300"),
    # the batch and its two P2POps on one line: the first P2POp fails first
    "case_p2p_ops_in_a_batch_fullgraph": (168, True, P2P_OP, "gb1750"),
    "case_ring_exchange": (176, False, P2P_OP, "gb1750"),
}
# the other flagged lines of a case: the P2POps of the ring exchange's batch
ALSO_FLAGGED = {"case_ring_exchange": (178, 179)}
# these need the fake process group (world size 2): a rank cannot send to itself
SEPARATE = ["case_ring_exchange", "case_send_fullgraph"]
GOOD_CASES = {
    "case_traceable_collectives_compile_with_fullgraph",
    "case_untraceable_collectives_run_between_compiled_steps",
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Outcome]]:
    """bad.py (all but the fake-process-group cases), those cases, and good.py, in parallel
    processes."""
    shared = sorted(set(BAD_CASES) - set(SEPARATE))
    with ThreadPoolExecutor(3) as pool:
        bad = pool.submit(run_cases, FOLDER / "bad.py", *shared)
        send = pool.submit(run_cases, FOLDER / "bad.py", *SEPARATE)
        good = pool.submit(run_cases, FOLDER / "good.py")
        return {"bad": {**bad.result(), **send.result()}, "good": good.result()}


def test_bad_cases_are_exactly_the_flagged_lines() -> None:
    lines = {line for _, line, _ in expected_findings(FOLDER / "bad.py")}
    also = {line for more in ALSO_FLAGGED.values() for line in more}
    assert lines == {line for line, _, _, _ in BAD_CASES.values()} | also


def test_every_case_ran(outcomes: dict[str, dict[str, Outcome]]) -> None:
    assert set(outcomes["bad"]) == set(BAD_CASES)
    assert set(outcomes["good"]) == GOOD_CASES


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_case_breaks_the_graph_at_the_flagged_call(
    outcomes: dict[str, dict[str, Outcome]], case: str
) -> None:
    line, fullgraph, text, gb = BAD_CASES[case]
    outcome = outcomes["bad"][case]
    assert not outcome.ok
    gb_url = f"compile-graph-break-site/gb/{gb}.html"
    if fullgraph:
        assert outcome.type == UNSUPPORTED, outcome.traceback
        assert outcome.message.startswith(text)
        assert gb_url in outcome.message
        # Dynamo's "from user code" frame is the call that distlint reports.
        assert re.search(rf'fixtures/DL202/bad\.py", line {line}, in ', outcome.message)
    else:
        # Without fullgraph the step runs; the breaks Dynamo counted are the message.
        assert outcome.type == BREAKS, outcome.traceback
        reasons = outcome.message.split("\n---\n")
        assert any(r.startswith(text) and gb_url in r for r in reasons), reasons


def test_a_batch_breaks_at_its_p2p_ops_then_at_the_batch(
    outcomes: dict[str, dict[str, Outcome]],
) -> None:
    """ColossalAI's ring exchange: the P2POps and batch_isend_irecv are counted breaks (under
    fullgraph=True the first P2POp fails first: case_p2p_ops_in_a_batch_fullgraph)."""
    reasons = outcomes["bad"]["case_ring_exchange"].message.split("\n---\n")
    assert {r.splitlines()[0]: r for r in reasons}.keys() == {P2P_OP, P2P_BATCH}
    assert any(r.startswith(P2P_BATCH) and "gb/gb9300.html" in r for r in reasons)


def test_good_cases_run_clean(outcomes: dict[str, dict[str, Outcome]]) -> None:
    failed = {name: o.traceback for name, o in outcomes["good"].items() if not o.ok}
    assert failed == {}


@pytest.mark.slow
def test_traps_run_clean() -> None:
    trap_outcomes = run_cases(FOLDER / "traps.py")
    assert len(trap_outcomes) == 5
    failed = {name: o.traceback for name, o in trap_outcomes.items() if not o.ok}
    assert failed == {}
