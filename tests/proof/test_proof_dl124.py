"""Proof for DL124 tensor-resize-in-compiled-region: what torch 2.13 does with the fixtures'
compiled functions (``fixtures/DL124``, run by ``tests/proof/dynamo_cases.py``).

A resize of a tensor the region computes fails under fullgraph with GB0126 / GB0127 / GB0128 and
is a counted break without it; a resize of an argument or a buffer (or its ``.data``) is GB0148
either way. Storages' resizes, the one-argument ``set_`` and a container's ``set_(key, value)``
compile without a break.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.proof.dynamo_cases import Run, cases, dynamo_runs
from tests.proof.test_proof_dl1xx import (
    UNSUPPORTED,
    assert_breaks,
    assert_clean,
    assert_fails,
    flagged_lines,
)

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

RESIZE = "Unsupported Tensor.resize_() call"
DELAYED = "Unsupported function call (delayed)"
ON_INPUT = "Getting an inplace view on a graph input is not supported"
# case -> (fullgraph failure or counted break, GB id, the message's first line, flagged line)
DL124_BAD = {
    "case_local_resize_fullgraph": ("fg", "GB0126", RESIZE, 21),
    "case_local_resize_as_graph_break": ("break", "GB0127", "Unsupported Tensor.resize_as_()", 29),
    "case_local_set_storage_graph_break": ("break", "GB0128", "Unsupported Tensor.set_() call", 38),
    "case_buffer_resize_fullgraph": ("fg", "GB0148", DELAYED, 48),
    "case_binding_data_resize_graph_break": ("break", "GB0148", ON_INPUT, 61),
    "case_argument_resize_same_size_graph_break": ("break", "GB0148", ON_INPUT, 67),
    "case_conditional_resize_fullgraph": ("fg", "GB0126", RESIZE, 80),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def test_dl124_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL124", "bad")) == set(DL124_BAD)
    assert {line for *_, line in DL124_BAD.values()} == flagged_lines("DL124")


@pytest.mark.parametrize("case", sorted(DL124_BAD))
def test_dl124_resizes_break(runs, case: str) -> None:
    how, gb, text, line = DL124_BAD[case]
    run = cases(runs, "DL124", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text, line, "DL124")
        assert gb.lower() in run.message
    else:
        assert_breaks(run, gb, text)


def test_dl124_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL124", "good"))
    assert_clean(cases(runs, "DL124", "traps"))
