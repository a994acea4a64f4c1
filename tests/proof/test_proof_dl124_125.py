"""Proof for DL124 tensor-resize-in-compiled-region and DL125
parameter-created-in-compiled-region: what torch 2.13 does with the fixtures' compiled
functions (``fixtures/DL124``, ``fixtures/DL125``, run by ``tests/proof/dynamo_cases.py``).

DL124: a resize of a tensor the region computes fails under fullgraph with GB0126 / GB0127 /
GB0128 and is a counted break without it; a resize of an argument or a buffer (or its
``.data``) is GB0148 either way. Storages' resizes, the one-argument ``set_`` and a container's
``set_(key, value)`` compile without a break.

DL125: ``nn.Parameter`` of a tensor the region computes is GB0264; of a number or nothing,
GB0226. Of an argument or a buffer (lifted out of the graph), with
``graph_break_on_nn_param_ctor = False`` (module level or patched), in ``__init__`` or through
a materialised lazy module: no break.
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
CONSTRUCTOR = "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"
NO_TENSOR = "`torch.nn.Parameter()` with unsupported data type"
# code -> case -> (fullgraph failure or counted break, GB id, text of the reason, flagged line)
BAD = {
    "DL124": {
        "case_local_resize_fullgraph": ("fg", "GB0126", RESIZE, 21),
        "case_local_resize_as_graph_break": ("break", "GB0127", "Tensor.resize_as_() call", 29),
        "case_local_set_storage_graph_break": ("break", "GB0128", "Tensor.set_() call", 38),
        "case_buffer_resize_fullgraph": ("fg", "GB0148", DELAYED, 48),
        "case_binding_data_resize_graph_break": ("break", "GB0148", ON_INPUT, 61),
        "case_argument_resize_same_size_graph_break": ("break", "GB0148", ON_INPUT, 67),
        "case_conditional_resize_fullgraph": ("fg", "GB0126", RESIZE, 80),
    },
    "DL125": {
        "case_lazy_init_fullgraph": ("fg", "GB0264", CONSTRUCTOR, 24),
        "case_factory_fullgraph": ("fg", "GB0264", CONSTRUCTOR, 30),
        "case_local_from_factory_graph_break": ("break", "GB0264", CONSTRUCTOR, 37),
        "case_imported_name_on_a_copy_graph_break": ("break", "GB0264", CONSTRUCTOR, 43),
        "case_no_data_graph_break": ("break", "GB0226", NO_TENSOR, 49),
        "case_number_fullgraph": ("fg", "GB0226", NO_TENSOR, 55),
    },
}
CLEAN = {
    "DL124": ("good", "traps"),
    "DL125": ("good", "traps", "traps_flag_off", "traps_flag_patched"),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


@pytest.mark.parametrize("code", sorted(BAD))
def test_bad_cases_cover_the_flagged_lines(runs, code: str) -> None:
    assert set(cases(runs, code, "bad")) == set(BAD[code])
    assert {line for *_, line in BAD[code].values()} == flagged_lines(code)


@pytest.mark.parametrize(
    ("code", "case"), [(code, case) for code in sorted(BAD) for case in sorted(BAD[code])]
)
def test_bad_cases_fail_under_fullgraph_or_break(runs, code: str, case: str) -> None:
    how, gb, text, line = BAD[code][case]
    run = cases(runs, code, "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text, line, code)
        assert gb.lower() in run.message
    else:
        assert_breaks(run, gb, text)


@pytest.mark.parametrize("code", sorted(CLEAN))
def test_good_cases_and_traps_compile_without_a_break(runs, code: str) -> None:
    for kind in CLEAN[code]:
        assert_clean(cases(runs, code, kind))
