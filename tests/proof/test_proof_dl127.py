"""Proof for DL127: ``torch.autograd.grad`` in a compiled region does not compile on torch 2.13
at the default ``trace_autograd_ops = False``, and does with it True (as ``loss.backward()``
does, which DL106 then leaves alone).

The fixtures run in the DL1xx subprocess (``tests/proof/dynamo_cases.py``). Each flagged call
fails a ``fullgraph=True`` compile at that very line (GB9186), or is counted as a graph break
that splits the compiled function in two graphs.
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

REFUSED = "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`"
# case -> (how, flagged line): "fg" fails under fullgraph=True, "break" splits the graph
BAD = {
    "case_gradient_penalty_fullgraph": ("fg", 24),
    "case_physics_residual_graph_break": ("break", 42),
    "case_guidance_branch_taken_fullgraph": ("fg", 50),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def test_dl127_cases_are_exactly_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL127", "bad")) == set(BAD)
    assert {line for _, line in BAD.values()} == flagged_lines("DL127")


@pytest.mark.parametrize("case", sorted(BAD))
def test_dl127_autograd_grad_is_refused(runs, case: str) -> None:
    how, line = BAD[case]
    run = cases(runs, "DL127", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, REFUSED, line, "DL127")
        assert "gb9186" in run.message
    else:
        assert_breaks(run, "GB9186", REFUSED)
        assert run.graphs == 2, run


def test_dl106_trace_autograd_ops_has_backward_traced_with_eager_gradients(runs) -> None:
    traced = cases(runs, "DL106", "traps_trace_autograd_ops")
    assert_clean(traced)
    assert traced["case_backward_traced"].value is True
