"""Proof for the DL1xx rules: what torch 2.13 does with the fixtures' compiled functions.

All fixture files of the DL1xx rules run in ONE subprocess (``tests/proof/dynamo_cases.py``):
for each case we read the exception (``fullgraph=True`` failures), the graph-break reasons
from ``counters["graph_break"]`` (``explain()`` under-reports) and the number
of graphs compiled. Bad cases must fail or break as the rule says; good cases
and traps must compile without a break.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from distlint.rules.compile._breaks import HOST_CALLS
from distlint.testing import expected_findings
from tests.proof.dynamo_cases import Run, cases, dynamo_runs
from tests.proof.harness import FIXTURES

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Run]]:
    return dynamo_runs()


def frame_line(run: Run, code: str, kind: str = "bad") -> set[int]:
    """Lines of the fixture named in the message's "from user code" part."""
    text = run.message + run.traceback
    return {int(n) for n in re.findall(rf'fixtures/{code}/{kind}\.py", line (\d+)', text)}


def assert_fails(run: Run, error: str, text: str, line: int | None, code: str) -> None:
    assert not run.ok, f"expected {error}, but it compiled: {run}"
    assert run.type == error, run.traceback
    assert text in run.message, run.message[:600]
    if line is not None:
        assert line in frame_line(run, code), (line, run.message[:1500])


def assert_breaks(run: Run, gb: str | None, reason: str | None = None) -> None:
    assert run.ok, run.traceback
    if gb is not None:
        assert gb in run.gb_ids, run.breaks
    else:
        assert run.graphs >= 2, run  # split graphs without a counted reason
    if reason is not None:
        assert any(reason in b for b in run.breaks), run.breaks


def assert_clean(runs_of_file: dict[str, Run], max_graphs: int = 1) -> None:
    """Every case ran, with no counted break and at most ``max_graphs`` graphs (a break that
    Dynamo does not count, such as a data-dependent branch, still splits the graph)."""
    bad = {
        name: (run.type, run.message[:300], run.breaks, run.graphs)
        for name, run in runs_of_file.items()
        if run.breaks or not run.ok or run.graphs > max_graphs
    }
    assert bad == {}


def flagged_lines(code: str, kind: str = "bad") -> set[int]:
    return {line for _, line, _ in expected_findings(FIXTURES / code / f"{kind}.py")}


# -- DL101 ---------------------------------------------------------------------------------------

GB0170_FG = "Data-dependent branching"
UNSUPPORTED = "torch._dynamo.exc.Unsupported"

DL101_BAD = {
    "case_if_sum_positive": ("break", 14),
    "case_if_any_fullgraph": ("fg", 21),
    "case_while_fullgraph": ("fg", 28),
    "case_if_tensor_fullgraph": ("fg", 35),
    "case_if_tensor_flag_equals_float": ("break", 42),
    "case_ternary_fullgraph": ("fg", 49),
    "case_and_of_number_and_tensor": ("break", 55),
    "case_module_forward_fullgraph": ("fg", 68),
    # children reached through an nn.Sequential call, ModuleDict.items(), a comprehension
    "case_sequential_child_fullgraph": ("fg", 79),
    "case_module_dict_child_fullgraph": ("fg", 86),
    "case_module_list_child_in_a_comprehension_fullgraph": ("fg", 93),
}


def test_dl101_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL101", "bad")) == set(DL101_BAD)
    assert {line for _, line in DL101_BAD.values()} == flagged_lines("DL101")


@pytest.mark.parametrize("case", sorted(DL101_BAD))
def test_dl101_bad(runs, case: str) -> None:
    how, line = DL101_BAD[case]
    run = cases(runs, "DL101", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, GB0170_FG, line, "DL101")
        assert "gb0170" in run.message
    else:
        # Without fullgraph: a break, the code still runs in two graphs. Dynamo does not
        # count this one in counters["graph_break"] (explain() shows `generic_jump`).
        assert_breaks(run, None)


def test_dl101_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL101", "good"))
    assert_clean(cases(runs, "DL101", "traps"))


# -- DL102 ---------------------------------------------------------------------------------------

USER_ERROR = "torch._dynamo.exc.UserError"
NO_GUARD = "Could not guard on data-dependent expression"
NO_INT = "Could not extract specialized integer from data-dependent expression"
ITEM_BREAK = "Unsupported Tensor.item() call with capture_scalar_outputs=False"

DL102_BAD = {
    "case_item_arithmetic": ("break", 15, "GB0124", ITEM_BREAK),
    "case_int_of_tensor": ("break", 20, "GB0124", ITEM_BREAK),
    "case_float_of_tensor": ("break", 25, "GB0124", ITEM_BREAK),
    "case_int_tolist": ("break", 30, "GB0033", "Data dependent operator"),
    "case_bool_in_if_fullgraph": ("fg", 36, USER_ERROR, NO_GUARD),
    "case_item_in_if_fullgraph": ("fg", 44, USER_ERROR, NO_GUARD),
    "case_item_as_range_fullgraph": ("fg", 51, USER_ERROR, NO_INT),
    "case_float_tolist_fullgraph": (
        "fg",
        58,
        UNSUPPORTED,
        "Tensor.tolist() with non-integer tensor",
    ),
}


def test_dl102_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL102", "bad")) == set(DL102_BAD)
    # the item() in gated_by_item is flagged at line 43; torch fails at the `if` (line 44)
    lines = {line for _, line, _, _ in DL102_BAD.values()} - {44} | {43}
    assert lines == flagged_lines("DL102")


@pytest.mark.parametrize("case", sorted(DL102_BAD))
def test_dl102_bad(runs, case: str) -> None:
    how, line, what, text = DL102_BAD[case]
    run = cases(runs, "DL102", "bad")[case]
    if how == "fg":
        assert_fails(run, what, text, line, "DL102")
    else:
        assert_breaks(run, what, text)


def test_dl102_capture_scalar_outputs_keeps_control_flow_and_float_tolist_breaks(runs) -> None:
    capture = cases(runs, "DL102", "bad_capture")
    # the `if` on the captured value still splits the graph (not counted as a reason)
    assert_breaks(capture["case_item_in_if_still_breaks"], None)
    assert_breaks(
        capture["case_float_tolist_still_breaks"], "GB0109", "Tensor.tolist() with non-integer"
    )


def test_dl102_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL102", "good"))
    assert_clean(cases(runs, "DL102", "traps"))


# -- DL104 ---------------------------------------------------------------------------------------

SKIPPED = "Attempted to call function marked as skipped"
DL104_BAD = {
    "case_print": ("break", 25, "GB0059", "Failed to trace builtin operator"),
    "case_print_fullgraph": ("fg", 32, "GB0059", "Failed to trace builtin operator"),
    "case_logger_on_disabled_level": (
        "break",
        39,
        "GB0291",
        "logging.Logger method not supported for non-export cases",
    ),
    "case_warnings_warn": ("break", 46, "GB0007", SKIPPED),
    "case_time_fullgraph": ("fg", 52, "GB0007", SKIPPED),
    "case_perf_counter": ("break", 60, "GB0007", SKIPPED),
    "case_random_random_fullgraph": ("fg", 66, "GB0007", SKIPPED),
    "case_manual_seed": ("break", 72, "GB0007", SKIPPED),
    "case_torch_save": ("break", 79, "GB0007", SKIPPED),
    "case_deepcopy_fullgraph": ("fg", 85, "GB4198", "Attempted to copy.deepcopy a tensor"),
    "case_data_ptr_fullgraph": ("fg", 91, "GB0088", "Observed exception"),
    "case_environ_write": ("break", 97, "GB0007", SKIPPED),
}


def test_dl104_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL104", "bad")) == set(DL104_BAD)
    assert {case[1] for case in DL104_BAD.values()} == flagged_lines("DL104")


@pytest.mark.parametrize("case", sorted(DL104_BAD))
def test_dl104_bad(runs, case: str) -> None:
    how, line, gb, text = DL104_BAD[case]
    run = cases(runs, "DL104", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text or "", line, "DL104")
        assert gb.lower() in run.message
    else:
        assert_breaks(run, gb, text)


def test_dl104_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL104", "good"))
    assert_clean(cases(runs, "DL104", "traps"))


def test_dl104_host_calls_in_project_disabled_functions_are_not_traced(runs) -> None:
    """A project decorator handing the function to ``torch.compiler.disable``: Dynamo skips the
    call (GB0098) and never reaches the print or the log call inside."""
    run = cases(runs, "DL104", "traps_project_disable")[
        "case_host_calls_in_project_disabled_functions"
    ]
    assert_breaks(run, "GB0098", "Skip calling `torch.compiler.disable()`d function")
    assert run.gb_ids == {"GB0098"}, run.breaks


@pytest.mark.parametrize("name", sorted(HOST_CALLS))
def test_dl104_every_host_call_of_the_table_breaks_with_its_id(runs, name: str) -> None:
    """The rule's table of host calls is its claim: each call, alone in a compiled function,
    breaks the graph with the GB id the table gives it."""
    run = cases(runs, "DL104", "bad_host_calls")[f"case_{name.replace('.', '_')}"]
    assert run.ok, run.traceback
    assert run.gb_ids == {f"GB{HOST_CALLS[name]}"}, run.breaks


def test_dl104_project_predicates_decide_what_dynamo_traces(runs) -> None:
    """A project function returning ``not is_dynamo_compiling() and ...`` is false while Dynamo
    traces, and one returning ``is_dynamo_compiling() or ...`` true: the host calls they guard
    are never reached (traps), or always reached (bad), as DL104 reads them across modules."""
    assert_clean(cases(runs, "DL104", "exporting/traps_predicates"))
    bad = cases(runs, "DL104", "exporting/bad_predicates")
    flagged = {
        line for _, line, _ in expected_findings(FIXTURES / "DL104/exporting/bad_predicates.py")
    }
    for name, run in bad.items():
        assert_fails(run, UNSUPPORTED, "print", None, "DL104")
        lines = {
            int(n)
            for n in re.findall(r'bad_predicates\.py", line (\d+)', run.message + run.traceback)
        }
        assert lines & flagged, (name, run.message[:800])


# -- DL103 ---------------------------------------------------------------------------------------

DL103_BAD = {
    "case_nonzero": 12,
    "case_unique": 17,
    "case_boolean_mask": 22,
    "case_masked_select": 27,
    "case_one_argument_where": 32,
    "case_repeat_interleave_tensor_repeats": 38,
}


def test_dl103_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL103", "bad")) == set(DL103_BAD)
    assert set(DL103_BAD.values()) == flagged_lines("DL103")


@pytest.mark.parametrize("case", sorted(DL103_BAD))
def test_dl103_bad_breaks_on_a_dynamic_shape_operator(runs, case: str) -> None:
    run = cases(runs, "DL103", "bad")[case]
    assert_breaks(run, "GB0036", "Dynamic shape operator")


def test_dl103_fullgraph_and_capture_setting_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL103", "good"))
    assert_clean(cases(runs, "DL103", "good_capture"))
    assert_clean(cases(runs, "DL103", "traps"))


# -- DL105 ---------------------------------------------------------------------------------------

DL105_BAD = {
    "case_print_in_for_loop": 22,
    "case_logging_in_while_loop": 31,
    "case_item_in_loop": 41,
    "case_tensor_branch_in_loop": 49,
    "case_module_forward_loop": 62,
}


def test_dl105_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL105", "bad")) == set(DL105_BAD)
    assert set(DL105_BAD.values()) == flagged_lines("DL105")


@pytest.mark.parametrize("case", sorted(DL105_BAD))
def test_dl105_bad_frame_is_skipped_and_nothing_compiles(runs, case: str) -> None:
    run = cases(runs, "DL105", "bad")[case]
    assert run.ok, run.traceback
    # GB7000 "graph break in loop": the whole frame falls back to eager. Not even the graph
    # before the break is kept, and no break is counted for it.
    assert run.graphs == 0, run
    assert run.breaks == [], run.breaks


def test_dl105_good_loops_compile_to_one_graph(runs) -> None:
    good = cases(runs, "DL105", "good")
    assert_clean(good)
    assert all(run.graphs == 1 for run in good.values()), good
    assert_clean(cases(runs, "DL105", "traps"))


# -- DL106 ---------------------------------------------------------------------------------------

DL106_BAD = {
    "case_backward": ("break", 18, "GB0123", "Unsupported Tensor.backward() call"),
    "case_backward_fullgraph": ("fg", 25, "GB0123", "Unsupported Tensor.backward() call"),
    "case_zero_grad_fullgraph": ("fg", 31, "GB0008", None),
    # SGD.step runs `torch._dynamo.graph_break()` first (GB0025)
    "case_optimizer_step_fullgraph": ("fg", 38, "GB0025", "Call to `torch._dynamo.graph_break()`"),
    # the function form is skipped outright, not traced to the Tensor method
    "case_autograd_backward": (
        "break",
        45,
        "GB0007",
        "Attempted to call function marked as skipped",
    ),
}


def test_dl106_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL106", "bad")) == set(DL106_BAD)
    assert {case[1] for case in DL106_BAD.values()} == flagged_lines("DL106")


@pytest.mark.parametrize("case", sorted(DL106_BAD))
def test_dl106_bad(runs, case: str) -> None:
    how, line, gb, text = DL106_BAD[case]
    run = cases(runs, "DL106", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text or "", line, "DL106")
        assert gb.lower() in run.message
    else:
        assert_breaks(run, gb, text)


def test_dl106_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL106", "good"), max_graphs=2)  # the model and the loss
    assert_clean(cases(runs, "DL106", "traps"))


# -- DL110 ---------------------------------------------------------------------------------------

DISABLED = "Skip calling `torch.compiler.disable()`d function"
DISABLED_METHOD = "Skip inlining `torch.compiler.disable()`d function"
DL110_BAD = {
    "case_compiler_disable": (33, DISABLED, "gb0098"),
    "case_dynamo_disable": (39, DISABLED, "gb0098"),
    "case_disable_as_a_call": (44, DISABLED, "gb0098"),
    "case_disabled_method": (59, DISABLED_METHOD, "gb0099"),
    "case_disable_imported_with_a_fallback_def": (78, DISABLED, "gb0098"),
    "case_disabled_class_attribute_alias": (108, DISABLED_METHOD, "gb0099"),
    # passed into the fullgraph function: the traceback runs through the flagged call
    "case_disabled_function_passed_in": (124, DISABLED, "gb0098"),
    "case_disabled_module_passed_in": (128, "Unsupported function call (delayed)", "gb0148"),
}


def test_dl110_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL110", "bad")) == set(DL110_BAD)
    assert {line for line, _, _ in DL110_BAD.values()} == flagged_lines("DL110")


@pytest.mark.parametrize("case", sorted(DL110_BAD))
def test_dl110_bad_fails_under_fullgraph(runs, case: str) -> None:
    line, text, gb = DL110_BAD[case]
    run = cases(runs, "DL110", "bad")[case]
    assert_fails(run, UNSUPPORTED, text, line, "DL110")
    assert gb in run.message


def test_dl110_good_compiles_and_traps_only_break_by_design(runs) -> None:
    assert_clean(cases(runs, "DL110", "good"))
    traps = cases(runs, "DL110", "traps")
    assert_breaks(traps["case_disabled_call_without_fullgraph"], "GB0098", DISABLED)
    assert_clean(
        {
            "shadow": traps["case_local_function_shadows_the_helper"],
            "not called": traps["case_disabled_function_passed_but_not_called"],
        }
    )


# -- DL111 ---------------------------------------------------------------------------------------

HOP_UNCAPTURED = "torch._dynamo.exc.UncapturedHigherOrderOpError"
DL111_BAD = {
    "case_direct_fullgraph": ("fg", 19, "gb0025", "Call to `torch._dynamo.graph_break()`"),
    "case_helper_fullgraph": ("fg", 24, "gb0025", "Call to `torch._dynamo.graph_break()`"),
    "case_without_fullgraph": ("break", 36, "GB0025", "Call to `torch._dynamo.graph_break()`"),
    "case_skip_frame_fullgraph": ("fg", 43, "gb4297", "Call to `torch._dynamo.skip_frame()`"),
    "case_step_unsupported_fullgraph": (
        "fg",
        50,
        "gb0284",
        "cannot resume from torch._dynamo.step_unsupported()",
    ),
    # no break is counted: the whole frame is skipped (0 graphs); Dynamo records why
    "case_step_unsupported_without_fullgraph": ("skip", 57, "GB4636", None),
    "case_checkpoint_body_fullgraph": ("fg", 62, "gb0025", "Call to `torch._dynamo.graph_break()`"),
    "case_cond_branch": ("cond", 72, "gb0025", "Call to `torch._dynamo.graph_break()`"),
    "case_property_getter_fullgraph": (
        "fg",
        124,
        "gb0025",
        "Call to `torch._dynamo.graph_break()`",
    ),
    "case_setattr_without_fullgraph": (
        "break",
        134,
        "GB0025",
        "Call to `torch._dynamo.graph_break()`",
    ),
}


def test_dl111_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL111", "bad")) == set(DL111_BAD)
    assert {case[1] for case in DL111_BAD.values()} == flagged_lines("DL111")


@pytest.mark.parametrize("case", sorted(DL111_BAD))
def test_dl111_bad(runs, case: str) -> None:
    how, line, gb, text = DL111_BAD[case]
    run = cases(runs, "DL111", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text, line, "DL111")
        assert gb in run.message
    elif how == "cond":  # fails without fullgraph: torch.cond must be captured whole
        assert_fails(run, HOP_UNCAPTURED, text, line, "DL111")
        assert gb in run.message
    elif how == "skip":
        assert run.ok and run.graphs == 0, run
        assert any(gb.lower() in reason for reason in run.unimplemented), run.unimplemented
    else:
        assert_breaks(run, gb, text)


def test_dl111_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL111", "good"))
    assert_clean(cases(runs, "DL111", "traps"))


# -- DL112 ---------------------------------------------------------------------------------------

SKIPPED_INLINE = "Attempted to inline function marked as skipped"
DL112_BAD = {
    "case_unittest_assert_fullgraph": ("fg", 25, "gb0008", SKIPPED_INLINE),
    "case_unittest_assert_default": ("break", 34, "GB0008", SKIPPED_INLINE),
    "case_disable_inside_fullgraph": ("fg", 47, "gb0007", SKIPPED),
    "case_dynamo_disable_inside_default": ("break", 53, "GB0007", SKIPPED),
}


def test_dl112_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL112", "bad")) == set(DL112_BAD)
    assert {case[1] for case in DL112_BAD.values()} == flagged_lines("DL112")


@pytest.mark.parametrize("case", sorted(DL112_BAD))
def test_dl112_bad(runs, case: str) -> None:
    how, line, gb, text = DL112_BAD[case]
    run = cases(runs, "DL112", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, text, line, "DL112")
        assert gb in run.message
    else:
        assert_breaks(run, gb, text)


def test_dl112_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL112", "good"))
    assert_clean(cases(runs, "DL112", "traps"))


# -- DL113 ---------------------------------------------------------------------------------------

BUILD_CLASS = "Invalid call to __build_class__"


def test_dl113_bad(runs) -> None:
    bad = cases(runs, "DL113", "bad")
    assert set(bad) == {"case_local_class_fullgraph", "case_local_dataclass_in_a_helper"}
    assert flagged_lines("DL113") == {15, 23}
    assert_fails(bad["case_local_class_fullgraph"], UNSUPPORTED, BUILD_CLASS, 15, "DL113")
    assert "gb8977" in bad["case_local_class_fullgraph"].message
    # the helper's local dataclass: a break (the dataclass decorator breaks too, GB0059)
    assert_breaks(bad["case_local_dataclass_in_a_helper"], "GB8977", BUILD_CLASS)


def test_dl113_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL113", "good"))
    assert_clean(cases(runs, "DL113", "traps"))


# -- DL114 ---------------------------------------------------------------------------------------

NO_TP_ITER = "missing tp_iter"
DL114_BAD = {
    "case_zip_fullgraph": ("fg", 53),
    "case_map_without_fullgraph": ("break", 57),  # sum(values): a break, one graph
    "case_zip_in_a_loop_without_fullgraph": ("skip", 61),  # a for loop: the frame is skipped
    "case_generator_fullgraph": ("fg", 65),
    "case_enumerate_keyword_fullgraph": ("fg", 69),
    "case_dict_items_into_a_compiled_module": ("fg", 75),
}


def test_dl114_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL114", "bad")) == set(DL114_BAD)
    assert {line for _, line in DL114_BAD.values()} == flagged_lines("DL114")


@pytest.mark.parametrize("case", sorted(DL114_BAD))
def test_dl114_bad(runs, case: str) -> None:
    how, line = DL114_BAD[case]
    run = cases(runs, "DL114", "bad")[case]
    if how == "fg":
        # the traceback names the flagged call site, the message the loop that iterates
        assert_fails(run, UNSUPPORTED, NO_TP_ITER, line, "DL114")
        assert "gb0811" in run.message
    elif how == "skip":
        assert run.ok and run.graphs == 0 and run.breaks == [], run
        assert any("gb0811" in reason for reason in run.unimplemented), run.unimplemented
    else:
        assert_breaks(run, "GB0811", NO_TP_ITER)


def test_dl114_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL114", "good"))
    assert_clean(cases(runs, "DL114", "traps"))


# -- DL115 ---------------------------------------------------------------------------------------

DATA_DEPENDENT = "Data dependent operator"
DL115_BAD = {
    "case_equal_fullgraph": ("fg", 13, "aten.equal"),
    "case_allclose_in_if": ("break", 19, "aten.allclose"),
    "case_allclose_method_fullgraph": ("fg", 26, "aten.allclose"),
    "case_equal_method": ("break", 31, "aten.equal"),
}


def test_dl115_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL115", "bad")) == set(DL115_BAD)
    assert {case[1] for case in DL115_BAD.values()} == flagged_lines("DL115")


@pytest.mark.parametrize("case", sorted(DL115_BAD))
def test_dl115_bad(runs, case: str) -> None:
    how, line, operator = DL115_BAD[case]
    run = cases(runs, "DL115", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, DATA_DEPENDENT, line, "DL115")
        assert "gb0033" in run.message and operator in run.message
    else:
        assert_breaks(run, "GB0033", DATA_DEPENDENT)


def test_dl115_capture_scalar_outputs_still_fails(runs) -> None:
    run = cases(runs, "DL115", "bad_capture")["case_equal_with_capture_scalar_outputs"]
    assert flagged_lines("DL115", "bad_capture") == {15}
    assert_fails(run, UNSUPPORTED, DATA_DEPENDENT, None, "DL115")
    assert 15 in frame_line(run, "DL115", "bad_capture")
    assert "gb0033" in run.message


def test_dl115_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL115", "good"), max_graphs=2)  # two compiled functions
    assert_clean(cases(runs, "DL115", "traps"))


# -- DL116 ---------------------------------------------------------------------------------------


def test_dl116_bad_modules_fail_compiled_and_eager(runs) -> None:
    bad = cases(runs, "DL116", "bad")
    assert set(bad) == {
        "case_doubler_fullgraph",
        "case_shift_fullgraph",
        "case_shift_eager",
        "case_projector_built",
    }
    # the flagged lines are the __init__ of Doubler (14), Shift (22) and Projector (30)
    assert flagged_lines("DL116") == {14, 22, 30}
    assert_fails(
        bad["case_projector_built"],
        "builtins.AttributeError",
        "cannot assign module before Module.__init__() call",
        None,
        "",
    )
    shift = bad["case_shift_fullgraph"]
    assert_fails(shift, UNSUPPORTED, "Uninitialized nn.Module", None, "DL116")
    assert "gb0119" in shift.message and "of type Shift" in shift.message
    doubler = bad["case_doubler_fullgraph"]
    assert_fails(
        doubler,
        "torch._dynamo.exc.InternalTorchDynamoError",
        "'Doubler' object has no attribute '_parameters'",
        None,
        "DL116",
    )
    eager = bad["case_shift_eager"]
    assert_fails(
        eager, "builtins.AttributeError", "object has no attribute '_backward_hooks'", None, ""
    )


def test_dl116_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL116", "good"))
    assert_clean(cases(runs, "DL116", "traps"))


# -- DL117 ---------------------------------------------------------------------------------------

NON_CONSTANT_SORT = "sort with non-constant keys"
DL117_BAD = {
    "case_sum_key_fullgraph": ("fg", 14),
    "case_item_key_list_sort_fullgraph": ("fg", 20),
    "case_norm_key_annotated_list_fullgraph": ("fg", 26),
    "case_sorted_scalars_without_fullgraph": ("break", 32),
}


def test_dl117_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL117", "bad")) == set(DL117_BAD)
    assert {line for _, line in DL117_BAD.values()} == flagged_lines("DL117")


@pytest.mark.parametrize("case", sorted(DL117_BAD))
def test_dl117_bad(runs, case: str) -> None:
    how, line = DL117_BAD[case]
    run = cases(runs, "DL117", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, NON_CONSTANT_SORT, line, "DL117")
        assert "gb0207" in run.message
    else:
        assert_breaks(run, "GB0207", NON_CONSTANT_SORT)


def test_dl117_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL117", "good"))
    traps = cases(runs, "DL117", "traps")
    assert_clean(traps, max_graphs=1)


# -- DL118 ---------------------------------------------------------------------------------------

UNSAFE_SIDE_EFFECT = "HOP: Unsafe side effect"
DL118_BAD = {
    "case_global_list_fullgraph": ("fg", 20),
    "case_global_counter_without_fullgraph": ("break", 31),
    "case_global_dict_item_fullgraph": ("fg", 36),
    "case_closure_list_fullgraph": ("fg", 55),
    "case_self_container_fullgraph": ("fg", 68),
    "case_cond_branch": ("cond", 76),
}


def test_dl118_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL118", "bad")) == set(DL118_BAD)
    assert {line for _, line in DL118_BAD.values()} == flagged_lines("DL118")


@pytest.mark.parametrize("case", sorted(DL118_BAD))
def test_dl118_bad(runs, case: str) -> None:
    how, line = DL118_BAD[case]
    run = cases(runs, "DL118", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, UNSAFE_SIDE_EFFECT, line, "DL118")
        assert "gb0067" in run.message
    elif how == "cond":
        assert_fails(run, HOP_UNCAPTURED, UNSAFE_SIDE_EFFECT, line, "DL118")
        assert "gb0067" in run.message
    else:
        assert_breaks(run, "GB0067", UNSAFE_SIDE_EFFECT)


def test_dl118_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL118", "good"))
    assert_clean(cases(runs, "DL118", "traps"))


# -- DL119 ---------------------------------------------------------------------------------------

UNSUPPORTED_CM = "Unsupported context manager"
DL119_BAD = {
    "case_global_no_grad_fullgraph": ("fg", 27),
    "case_global_user_context_manager": ("skip", 35),  # the frame runs eagerly, 0 graphs
    "case_self_attribute_fullgraph": ("fg", 47),
    "case_enclosing_local_fullgraph": ("fg", 56),
}


def test_dl119_bad_cases_cover_the_flagged_lines(runs) -> None:
    assert set(cases(runs, "DL119", "bad")) == set(DL119_BAD)
    assert {line for _, line in DL119_BAD.values()} == flagged_lines("DL119")


@pytest.mark.parametrize("case", sorted(DL119_BAD))
def test_dl119_bad(runs, case: str) -> None:
    how, line = DL119_BAD[case]
    run = cases(runs, "DL119", "bad")[case]
    if how == "fg":
        assert_fails(run, UNSUPPORTED, UNSUPPORTED_CM, line, "DL119")
        assert "gb0142" in run.message
    else:
        assert run.ok and run.graphs == 0 and run.breaks == [], run
        assert any("gb0142" in reason for reason in run.unimplemented), run.unimplemented


def test_dl119_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL119", "good"))
    assert_clean(cases(runs, "DL119", "traps"))


# -- DL120 ---------------------------------------------------------------------------------------


def test_dl120_bad(runs) -> None:
    bad = cases(runs, "DL120", "bad")
    assert set(bad) == {"case_section_fullgraph", "case_subclass_without_fullgraph"}
    assert flagged_lines("DL120") == {22, 30}
    fullgraph = bad["case_section_fullgraph"]
    assert_fails(fullgraph, UNSUPPORTED, UNSUPPORTED_CM, 22, "DL120")
    assert "gb0142" in fullgraph.message
    # without fullgraph Dynamo gives up on the frame (GB0142) and eager Python raises
    default = bad["case_subclass_without_fullgraph"]
    assert_fails(
        default, "builtins.TypeError", "does not support the context manager protocol", 30, "DL120"
    )
    assert any("gb0142" in reason for reason in default.unimplemented), default.unimplemented


def test_dl120_good_and_traps_compile_without_a_break(runs) -> None:
    assert_clean(cases(runs, "DL120", "good"))
    assert_clean(cases(runs, "DL120", "traps"))


# -- DL121 ---------------------------------------------------------------------------------------


def test_dl121_compile_method_of_torch_nn_modules_compiles_nothing(runs) -> None:
    bad = cases(runs, "DL121", "bad")
    assert set(bad) == {
        "case_linear",
        "case_sequential_moved_to_a_device",
        "case_layer_on_self_compiled_in_init",
        "case_built_and_compiled_in_one_expression",
    }
    assert flagged_lines("DL121") == {16, 24, 30, 41}
    for name, run in bad.items():
        assert run.ok and run.graphs == 0 and run.unimplemented == [], (name, run)


def test_dl121_torch_compile_and_own_forwards_compile(runs) -> None:
    for kind in ("good", "traps"):
        for name, run in cases(runs, "DL121", kind).items():
            assert run.ok, (name, run)
            if name != "case_a_regular_expression":
                assert run.graphs == 1, (kind, name, run)


# -- DL122 ---------------------------------------------------------------------------------------

RNN_BREAK = "Attempted to wrap RNN, GRU, or LSTM"
DL122_BAD = {
    "case_lstm_fullgraph": ("fg", 19),
    "case_gru_graph_break": ("break", 30),
    "case_local_rnn_graph_break": ("break", 36),
}


def test_dl122_recurrent_modules_are_not_traced(runs) -> None:
    bad = cases(runs, "DL122", "bad")
    assert set(bad) == set(DL122_BAD)
    assert {line for _, line in DL122_BAD.values()} == flagged_lines("DL122")
    for name, (how, line) in DL122_BAD.items():
        run = bad[name]
        if how == "fg":
            assert_fails(run, UNSUPPORTED, RNN_BREAK, line, "DL122")
            assert "gb0014" in run.message
        else:  # counted as unimplemented: Dynamo runs the module eagerly, the rest traced
            assert run.ok, run.traceback
            assert any("gb0014" in r and RNN_BREAK in r for r in run.unimplemented), run


def test_dl122_cells_outside_modules_and_allow_rnn_compile(runs) -> None:
    assert_clean(cases(runs, "DL122", "good"))
    assert_clean(cases(runs, "DL122", "traps"))
    assert_clean(cases(runs, "DL122", "traps_allow_rnn"))
