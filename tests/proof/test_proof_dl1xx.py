"""Proof for the DL1xx rules: what torch 2.13 does with the fixtures' compiled functions.

All fixture files of the DL1xx rules run in ONE subprocess (``tests/proof/dynamo_cases.py``):
for each case we read the exception (``fullgraph=True`` failures), the graph-break reasons
from ``counters["graph_break"]`` (``explain()`` under-reports) and the number
of graphs compiled. Bad cases must fail or break as the rule says; good cases
and traps must compile without a break.

What the generic proof (``test_proof_graph_breaks.py``) checks from the rules' declared
graph-break ids is not repeated here: what is left are the cases it cannot read (its
``DIFFERS``) and what it does not check (exact messages beyond the id, graph counts, a
frame skipped with nothing compiled, a rule's own table of calls).
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


UNSUPPORTED = "torch._dynamo.exc.Unsupported"


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


# -- DL104 ---------------------------------------------------------------------------------------


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


# -- DL110 ---------------------------------------------------------------------------------------

DISABLED = "Skip calling `torch.compiler.disable()`d function"


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
