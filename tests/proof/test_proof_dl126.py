"""Proof for DL126: ``F.one_hot`` without a number of classes does not compile on torch 2.13.

The fixtures run in the DL1xx subprocess (``tests/proof/dynamo_cases.py``). Each flagged call
fails a ``fullgraph=True`` compile at that very line (GB0246, or the GB0033 ``UserError`` for
``num_classes=-1``), or splits the compiled function in two graphs around it; with
``capture_dynamic_output_shape_ops`` and ``capture_scalar_outputs`` on as well. A number of
classes known when tracing (a literal, an attribute, an int argument) compiles in one graph.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.proof.dynamo_cases import Run, cases, dynamo_runs
from tests.proof.test_proof_dl1xx import (
    NO_INT,
    UNSUPPORTED,
    USER_ERROR,
    assert_breaks,
    assert_fails,
    flagged_lines,
    frame_line,
)

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

DATA_DEPENDENT = "Attempted to use `torch.nn.functional.one_hot` with data-dependent output shape"
# case -> (how, flagged line, GB id): "fg" fails under fullgraph=True, "break" splits the graph
BAD = {
    "case_arange_in_forward_fullgraph": ("fg", 23, "GB0246"),
    "case_argmax_graph_break": ("break", 30, "GB0246"),
    "case_positional_minus_one_fullgraph": ("fg", 35, "GB0246"),
    "case_keyword_minus_one_fullgraph": ("fg", 40, "GB0033"),
    "case_keyword_minus_one_graph_break": ("break", 46, "GB0033"),
    "case_branch_taken_fullgraph": ("fg", 52, "GB0246"),
    "case_builtin_name_graph_break": ("break", 59, "GB0246"),
}
BAD_CAPTURE = {
    "case_fullgraph": ("fg", 20, "GB0246"),
    "case_graph_break": ("break", 26, "GB0246"),
    "case_keyword_minus_one_two_graphs": ("break", 32, None),  # not counted, still 2 graphs
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def _check(run: Run, how: str, line: int, gb: str | None, kind: str) -> None:
    if how == "break":
        assert_breaks(run, gb)
        assert run.graphs == 2, run
        return
    if gb == "GB0246":
        assert_fails(run, UNSUPPORTED, DATA_DEPENDENT, None, "DL126")
        assert "gb0246" in run.message
    else:  # a UserError: no GB link in the message
        assert_fails(run, USER_ERROR, NO_INT, None, "DL126")
    assert line in frame_line(run, "DL126", kind), run.message[:1500]


@pytest.mark.parametrize(("kind", "table"), [("bad", BAD), ("bad_capture", BAD_CAPTURE)])
def test_dl126_cases_are_exactly_the_flagged_lines(runs, kind: str, table: dict) -> None:
    assert set(cases(runs, "DL126", kind)) == set(table)
    assert {line for _, line, _ in table.values()} == flagged_lines("DL126", kind)


@pytest.mark.parametrize("case", sorted(BAD))
def test_dl126_one_hot_without_num_classes_breaks(runs, case: str) -> None:
    _check(cases(runs, "DL126", "bad")[case], *BAD[case], "bad")


@pytest.mark.parametrize("case", sorted(BAD_CAPTURE))
def test_dl126_capture_settings_do_not_help(runs, case: str) -> None:
    _check(cases(runs, "DL126", "bad_capture")[case], *BAD_CAPTURE[case], "bad_capture")
