"""Proof for DL401–DL407: what torch 2.13 does with the code each rule flags.

Runs ``fixtures/DL40x/{bad,good}.py`` under the real torch (CPU, ``aot_eager``) and checks the
documented failure of every bad case (exception type, message, GB id where the message has
one, and the flagged line where torch points at it), and that every good case runs. The traps
run too (marked ``slow``). DL408 has no proof here: its bad code is C++ that would have to be
built first; the failures it predicts are DL404's (same dispatcher, shown below).
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

CODES = ("DL401", "DL402", "DL403", "DL404", "DL405", "DL406", "DL407")
GB = "compile-graph-break-site/gb/gb{}.html"


def _run_all(kinds: tuple[str, ...]) -> dict[tuple[str, str], dict[str, Outcome]]:
    jobs = [(code, kind) for code in CODES for kind in kinds]
    with ThreadPoolExecutor(4) as pool:
        futures = {job: pool.submit(run_cases, FIXTURES / job[0] / f"{job[1]}.py") for job in jobs}
        return {job: future.result() for job, future in futures.items()}


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], dict[str, Outcome]]:
    return _run_all(("bad", "good"))


def bad(outcomes: dict, code: str) -> dict[str, Outcome]:
    return outcomes[(code, "bad")]


def flagged_lines(code: str) -> set[int]:
    return {line for _, line, _ in expected_findings(FIXTURES / code / "bad.py")}


def points_at(outcome: Outcome, code: str, line: int) -> bool:
    """Whether torch's message or traceback names ``line`` of the bad fixture."""
    pattern = rf'fixtures/{code}/bad\.py", line {line}, in '
    return bool(re.search(pattern, outcome.message) or re.search(pattern, outcome.traceback))


@pytest.mark.parametrize("code", CODES)
def test_good_fixture_runs_clean(outcomes: dict, code: str) -> None:
    good = outcomes[(code, "good")]
    assert good, code
    failed = {name: o.traceback for name, o in good.items() if not o.ok}
    assert failed == {}


# -- DL401 -----------------------------------------------------------------------------------------


def test_dl401_compiled_calls_fail_without_fake(outcomes: dict) -> None:
    found = bad(outcomes, "DL401")
    assert found["case_eager_call_works"].ok
    ops = {
        "case_compiled_call": "rms_scale",
        "case_compiled_call_fullgraph_through_torch_ops": "clip_norm",
        "case_compiled_call_returning_none_without_mutation": "log_only",
        "case_compiled_call_with_meta_kernel_only": "halve",
    }
    for case, op in ops.items():
        outcome = found[case]
        assert outcome.type == "torch._dynamo.exc.TorchRuntimeError", outcome.traceback
        assert outcome.message.startswith("RuntimeError when making fake tensor call")
        assert f"There was no fake impl registered for <CustomOpDef(dl401::{op})>" in (
            outcome.message
        )
        assert GB.format("4315") in outcome.message
    assert len(flagged_lines("DL401")) == len(ops)


# -- DL402 -----------------------------------------------------------------------------------------


def test_dl402_backward_fails_without_autograd(outcomes: dict) -> None:
    found = bad(outcomes, "DL402")
    eager = found["case_backward_eager"]
    assert eager.type == "builtins.RuntimeError"
    assert re.fullmatch(
        r"Trying to backward through dl402\.(swish|row_scale)\.default but no autograd formula "
        r"was registered\. Please use register_autograd to add one\.",
        eager.message.strip(),
    )
    compiled = found["case_compiled_forward"]
    assert compiled.type == "torch._dynamo.exc.BackendCompilerFailed", compiled.traceback
    assert compiled.message.startswith("backend='aot_eager' raised:")
    assert re.search(
        r"RuntimeError: Trying to backward through dl402\.(swish|row_scale)\.default but no "
        r"autograd formula was registered",
        compiled.message,
    )


# -- DL403 -----------------------------------------------------------------------------------------

DL403_TEXT = (
    "You must implement either the backward or vjp method for your custom autograd.Function "
    "to use it with backward mode AD."
)


def test_dl403_backward_raises_not_implemented(outcomes: dict) -> None:
    found = bad(outcomes, "DL403")
    for case in (
        "case_backward_through_scale_by_two",
        "case_backward_through_clamped_exp",
        "case_backward_through_inherited_forward_only",
    ):
        assert found[case].type == "builtins.NotImplementedError", found[case].traceback
        assert found[case].message == DL403_TEXT
    fullgraph = found["case_fullgraph_compile_of_forward"]
    assert fullgraph.type == "torch._dynamo.exc.Unsupported", fullgraph.traceback
    assert fullgraph.message.startswith("Observed exception")
    assert f"NotImplementedError('{DL403_TEXT}')" in fullgraph.message
    assert GB.format("0088") in fullgraph.message


# -- DL404 -----------------------------------------------------------------------------------------


def test_dl404_missing_fake_and_autograd_kernels(outcomes: dict) -> None:
    found = bad(outcomes, "DL404")
    fullgraph = found["case_fullgraph_compile_without_fake"]
    assert fullgraph.type == "torch._dynamo.exc.Unsupported", fullgraph.traceback
    assert fullgraph.message.startswith("Operator does not support running with fake tensors")
    assert "unsupported operator: dl404.lut_scale.default" in fullgraph.message
    assert GB.format("0090") in fullgraph.message
    for case, op in (
        ("case_backward_without_autograd_kernel", "lut_scale"),
        ("case_backward_without_autograd_kernel_with_fake", "lut_shift"),
    ):
        # The case first asserts that backward warned "an autograd kernel was not registered",
        # then fails because x.grad stayed None.
        outcome = found[case]
        assert outcome.type == "builtins.AssertionError", outcome.traceback
        assert outcome.message == f"x.grad is None after backward through dl404::{op}"


# -- DL405 -----------------------------------------------------------------------------------------


def test_dl405_opcheck_rejects_the_schema(outcomes: dict) -> None:
    found = bad(outcomes, "DL405")
    for case, argument in (
        ("case_ema_update_opcheck", "avg"),
        ("case_scale_into_opcheck", "out"),
        ("case_zero_first_row_opcheck", "x"),
    ):
        outcome = found[case]
        assert outcome.type == "torch.testing._internal.optests.generate_tests.OpCheckError"
        assert outcome.message.startswith(
            f"opcheck(op, ...): test_schema failed with Argument {argument} is not defined as "
            "mutable but was mutated"
        )
    assert len(flagged_lines("DL405")) == 3


# -- DL406 -----------------------------------------------------------------------------------------

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)


def test_dl406_eager_fails_at_the_flagged_line(outcomes: dict) -> None:
    found = bad(outcomes, "DL406")
    eager = [name for name in found if name != "case_compiled_ema_decay"]
    lines = flagged_lines("DL406")
    assert len(eager) == len(lines)
    hit: set[int] = set()
    for name in eager:
        outcome = found[name]
        assert outcome.type == "builtins.RuntimeError", outcome.traceback
        expected = VIEW_OF_LEAF if name == "case_masked_bias" else LEAF
        assert outcome.message == expected
        hit |= {line for line in lines if points_at(outcome, "DL406", line)}
    assert hit == lines


def test_dl406_compile_is_a_hard_error(outcomes: dict) -> None:
    outcome = bad(outcomes, "DL406")["case_compiled_ema_decay"]
    assert outcome.type == "torch._dynamo.exc.TorchRuntimeError", outcome.traceback
    assert outcome.message.startswith("RuntimeError when making fake tensor call")
    assert LEAF in outcome.message
    assert GB.format("4315") in outcome.message
    assert points_at(outcome, "DL406", 18)


# -- DL407 -----------------------------------------------------------------------------------------

SAVED = (
    "one of the variables needed for gradient computation has been modified by an inplace operation"
)


def test_dl407_backward_refuses_modified_saved_outputs(outcomes: dict) -> None:
    found = bad(outcomes, "DL407")
    ops = {
        "case_sigmoid_mul_inplace": "Sigmoid",
        "case_tanh_add_inplace": "Tanh",
        "case_exp_imul": "Exp",
        "case_softmax_mul_inplace": "Softmax",
        "case_relu_mul_inplace": "Relu",
        "case_inplace_relu_module_after_sigmoid": "Sigmoid",
        "case_sequential_inplace_relu_after_sigmoid": "Sigmoid",
        "case_item_assignment_on_sigmoid": "Sigmoid",
    }
    assert len(ops) == len(flagged_lines("DL407"))
    for case, op in ops.items():
        outcome = found[case]
        assert outcome.type == "builtins.RuntimeError", outcome.traceback
        assert outcome.message.startswith(SAVED)
        assert f"which is output 0 of {op}, is at version 1; expected version 0" in (
            outcome.message
        )
    compiled = found["case_compiled_sigmoid_mul_inplace"]
    assert compiled.type == "torch._dynamo.exc.BackendCompilerFailed", compiled.traceback
    assert compiled.message.startswith("backend='aot_eager' raised:")
    assert f"RuntimeError: {SAVED}" in compiled.message


# -- traps -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_traps_run_clean() -> None:
    traps = _run_all(("traps",))
    failed = {
        (code, name): o.traceback
        for (code, _), cases in traps.items()
        for name, o in cases.items()
        if not o.ok
    }
    assert failed == {}
    assert all(traps[(code, "traps")] for code in CODES)
