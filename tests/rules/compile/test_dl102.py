"""Unit tests of DL102 tensor-to-python: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER, compiled
from tests.rules.conftest import run, where


@pytest.mark.parametrize(
    "expr, gb",
    [
        ("x.sum().item()", "GB0124"),
        ("int(x)", "GB0124"),
        ("float(x.mean())", "GB0124"),
        ("x.long().tolist()", "GB0033"),
        ("x.tolist()", "GB0109"),
    ],
)
def test_dl102_notes_without_fullgraph(expr: str, gb: str) -> None:
    (finding,) = run(compiled(f"v = {expr}\nreturn v\n"), "DL102")
    assert (finding.span.start.line, finding.span.start.column) == (6, 9)
    assert finding.severity is Severity.NOTE
    assert gb in finding.message


def test_dl102_fullgraph_arithmetic_and_size_uses_are_captured() -> None:
    body = (
        "a = x * x.sum().item()\n"
        "n = x.long().sum().item()\n"
        "b = torch.zeros(n)\n"
        "c = x.long().tolist()\n"
        "return a, b, c\n"
    )
    assert run(compiled(body, fullgraph=True), "DL102") == []


@pytest.mark.parametrize(
    "body, text",
    [
        ("if bool(x.sum() > 0):\n    return x\nreturn -x\n", "Could not guard on data-dependent"),
        ("t = x.sum().item()\nif t > 0:\n    return x\nreturn -x\n", "Could not guard"),
        ("for _ in range(x.sum().item()):\n    x = x * 2\nreturn x\n", "specialized integer"),
        ("n = int(x.sum())\nfor _ in range(n):\n    x = x * 2\nreturn x\n", "specialized integer"),
        ("return x.float().tolist()\n", "Tensor.tolist() with non-integer tensor` (GB0109)"),
        ("y = torch.softmax(x, 0)\nreturn y.tolist()\n", "non-integer tensor` (GB0109)"),
    ],
)
def test_dl102_fullgraph_errors(body: str, text: str) -> None:
    (finding,) = run(compiled(body, fullgraph=True), "DL102")
    assert finding.severity is Severity.ERROR
    assert text in finding.message


def test_dl102_fullgraph_list_of_a_tensor_of_unknown_dtype_is_not_reported() -> None:
    """torch 2.13 captures an integer tensor's ``.tolist()`` under fullgraph=True and fails
    only on a floating-point one: without knowing which, nothing is claimed (physicsnemo's
    ``mesh.mesh.cpu().flatten().tolist()`` holds ranks). A known float tensor still fails."""
    assert run(compiled("return x.flatten().tolist()\n", fullgraph=True), "DL102") == []
    (finding,) = run(compiled("return x.float().flatten().tolist()\n", fullgraph=True), "DL102")
    assert finding.severity is Severity.ERROR


def test_dl102_capture_scalar_outputs_list_of_unknown_dtype_is_not_reported() -> None:
    source = HEADER + (
        "torch._dynamo.config.capture_scalar_outputs = True\n\n@torch.compile\ndef f(x):\n"
        "    return x.tolist(), x.float().tolist()\n"
    )
    assert where(run(source, "DL102")) == [("DL102", 8, 24)]


def test_dl102_capture_scalar_outputs_keeps_only_failing_cases() -> None:
    source = HEADER + (
        "torch._dynamo.config.capture_scalar_outputs = True\n\n@torch.compile\ndef f(x):\n"
        "    a = x * x.sum().item()\n"
        "    if x.max().item() > 0:\n"
        "        a = a + 1\n"
        "    return a, x.float().tolist(), x.long().tolist()\n"
    )
    found = run(source, "DL102")
    assert where(found) == [("DL102", 9, 8), ("DL102", 11, 15)]
    assert all(f.severity is Severity.NOTE for f in found)


@pytest.mark.parametrize(
    "body",
    [
        "return (x * 2).cpu() + x.to('cpu')\n",
        "return x * int(x.shape[0]) * float(scale)\n",
        "return [v for _, v in config.items()]\n",
        "return x.numpy()\n",
    ],
)
def test_dl102_traps(body: str) -> None:
    source = compiled(body, params="x: torch.Tensor, scale=1.0, config=None")
    assert run(source, "DL102") == []


def test_dl102_eager_item_is_fine() -> None:
    source = HEADER + "def train(model, x):\n    loss = model(x)\n    return loss.item()\n"
    assert run(source, *DL101_TO_DL110) == []


@pytest.mark.parametrize(
    "test",
    [
        "isinstance(n, int)",
        "n is None",
        "n is not None and x.dim() > 1",
        "None is n",
        "hasattr(n, 'shape')",
        "callable(n)",
        "len(n) > 1",
        "n.numel()",
        "n.dim() == 1 and n.shape[0] > 2",
    ],
)
def test_dl102_type_and_identity_tests_are_not_control_flow(test: str) -> None:
    """A value only tested for its type, identity or shape (torchrl's ``isinstance(cursor,
    torch.Tensor)`` and ``cursor.numel()`` before ``cursor = int(cursor.item())``) drives no
    branch: under fullgraph=True it is captured, without fullgraph it is a plain conversion."""
    body = f"n = x.sum().item()\nif {test}:\n    return x * n\nreturn x\n"
    assert run(compiled(body, fullgraph=True), "DL102") == []
    (finding,) = run(compiled(body), "DL102")
    assert "drives control flow" not in finding.message


@pytest.mark.parametrize(
    "test", ["n > 0", "n", "n is None or n > 0", "isinstance(x, int) or n", "n.sum() > 0"]
)
def test_dl102_a_test_of_the_value_is_still_control_flow(test: str) -> None:
    body = f"n = x.sum().item()\nif {test}:\n    return x * n\nreturn x\n"
    (finding,) = run(compiled(body, fullgraph=True), "DL102")
    assert finding.severity is Severity.ERROR
    assert "drives control flow" in finding.message


def test_dl102_tolist_of_a_receiver_not_known_to_be_a_tensor_is_left_alone() -> None:
    """``.tolist()`` is a method of arrays and of tensordict's stacks of strings too (torchrl's
    ``text.tolist()`` in an LLM wrapper): only a receiver known to be a tensor is reported."""
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile
        def f(x: torch.Tensor, text):
            a = text.tolist()
            b = x.tolist()
            return a, b
        """
    )
    assert [line for _, line, _ in where(run(source, "DL102"))] == [7]


def test_dl102_a_file_that_turns_scalar_capture_on_anywhere_is_captured() -> None:
    """torchrec's test helpers assign ``capture_scalar_outputs = True`` inside a function, and
    thunder's tests patch it around the compiled call: which runs it covers is not known, so
    what it captures is left alone in the whole file; what breaks anyway is still reported."""
    for setting in (
        "torch._dynamo.config.capture_scalar_outputs = True",
        "with torch._dynamo.config.patch(capture_scalar_outputs=True): pass",
        'with torch._dynamo.config.patch("capture_scalar_outputs", True): pass',
    ):
        source = HEADER + textwrap.dedent(
            f"""\
            def setup():
                {setting}

            @torch.compile
            def f(x: torch.Tensor):
                n = x.sum().item()
                if x.max().item() > 0:
                    n += 1
                return x * n
            """
        )
        assert [line for _, line, _ in where(run(source, "DL102"))] == [10], setting


def test_dl102_rows_of_a_tensor_are_tensors() -> None:
    """A loop or comprehension over a tensor binds its rows (fixtures/DL102/bad_rows.py: GB0033
    for ``r.tolist()`` of a row on torch 2.13), as do ``enumerate(t)`` and ``zip(t, u)``."""
    body = (
        "zc = torch.argsort(x, dim=1)\n"  # line 6
        "a = [r.tolist() for r in zc]\n"
        "for r2 in x:\n"
        "    b = r2.tolist()\n"
        "for i, r3 in enumerate(zc):\n"
        "    c = r3.tolist()\n"
        "for p, q in zip(x, zc):\n"
        "    d = p.tolist() + q.tolist()\n"
        "for j, (s, t) in enumerate(zip(x[1:], x.T)):\n"
        "    e = s.item() + t.item()\n"
        "return a, b, c, d, e\n"
    )
    lines = [line for _, line, _ in where(run(compiled(body), "DL102"))]
    assert lines == [7, 9, 11, 13, 13, 15, 15]


def test_dl102_what_a_loop_binds_from_other_than_a_tensor_is_not_a_tensor() -> None:
    """A Python list of tensors stays as today (not known), as do ``range()``, ``.shape``,
    ``.tolist()``, a dict, a call such as ``t.unbind()``, the index of ``enumerate`` and a
    name that something else rebinds."""
    body = (
        "xs = [x, x + 1]\n"
        "a = [r.tolist() for r in xs] + [y.tolist() for y in ys]\n"
        "b = [int(i) for i in range(3)] + [int(d) for d in x.shape]\n"
        "c = [v.tolist() for v in x.tolist()]\n"
        "table = {}\n"
        "e = [k.tolist() for k in table]\n"
        "f = [u.tolist() for u in x.unbind(0)]\n"
        "g = [int(i) for i, _ in enumerate(x)]\n"
        "for w in x:\n"
        "    h = w.tolist()\n"
        "w = [1, 2]\n"
        "return a, b, c, e, f, g, h, w\n"
    )
    found = run(compiled(body, params="x: torch.Tensor, ys: list[torch.Tensor]"), "DL102")
    assert [(line, col) for _, line, col in where(found)] == [(9, 30)]  # x.tolist() itself


def test_dl102_a_loop_over_a_locally_rebound_zip_binds_no_rows() -> None:
    """``zip`` (or ``enumerate``) rebound in the function is not the builtin: the names it
    binds are not rows of a tensor. The tensor guess asks the same scope-table check as the
    region rules' ``is_builtin`` (a resolve-based check missed the local assignment)."""
    body = (
        "zip = pair_up\n"  # line 6
        "for p, q in zip(x, x):\n"
        "    d = p.tolist()\n"
        "enumerate = numbered\n"
        "for i, r in enumerate(x):\n"
        "    e = r.tolist()\n"
        "return d, e\n"
    )
    assert where(run(compiled(body), "DL102")) == []
