"""Proof for DL125 parameter-created-in-compiled-region: what torch 2.13 does with the
fixtures' compiled functions (``fixtures/DL125``, run by ``tests/proof/dynamo_cases.py``).

``nn.Parameter`` of a tensor the region computes fails under fullgraph with GB0264 and is a
counted break without it; of a number or nothing, GB0226. Of an argument or a buffer (lifted
out of the graph), with ``graph_break_on_nn_param_ctor = False``, in ``__init__`` or through a
materialised lazy module: no break.
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

CONSTRUCTOR = "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"
NO_TENSOR = "`torch.nn.Parameter()` with unsupported data type"
# case -> (fullgraph failure or counted break, GB id, the message's first line, flagged line)
DL125_BAD = {
    "case_lazy_init_fullgraph": ("fg", "GB0264", CONSTRUCTOR, 24),
    "case_factory_fullgraph": ("fg", "GB0264", CONSTRUCTOR, 30),
    "case_local_from_factory_graph_break": ("break", "GB0264", CONSTRUCTOR, 37),
    "case_imported_name_on_a_copy_graph_break": ("break", "GB0264", CONSTRUCTOR, 43),
    "case_no_data_graph_break": ("break", "GB0226", NO_TENSOR, 49),
    "case_number_fullgraph": ("fg", "GB0226", NO_TENSOR, 55),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def test_dl125_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL125", "bad")) == set(DL125_BAD)
    assert {line for *_, line in DL125_BAD.values()} == flagged_lines("DL125")


@pytest.mark.parametrize("case", sorted(DL125_BAD))
def test_dl125_parameters_made_in_the_region_break(runs, case: str) -> None:
    how, gb, text, line = DL125_BAD[case]
    run = cases(runs, "DL125", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text, line, "DL125")
        assert gb.lower() in run.message
    else:
        assert_breaks(run, gb, text)


def test_dl125_sourced_tensors_init_lazy_modules_and_the_flag_off_compile(runs) -> None:
    assert_clean(cases(runs, "DL125", "good"))
    assert_clean(cases(runs, "DL125", "traps"))
    assert_clean(cases(runs, "DL125", "traps_flag_off"))
