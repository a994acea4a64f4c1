"""Unit tests of DL101 data-dependent-branch: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER, compiled
from tests.rules.conftest import run, where


@pytest.mark.parametrize(
    "body, column",
    [
        ("if x.sum() > 0:\n    x = x + 1\nreturn x\n", 8),
        ("if (x > 4).any():\n    x = x + 1\nreturn x\n", 8),
        ("while x.sum() < 100:\n    x = x * 2\nreturn x\n", 11),
        ("if x:\n    x = x + 1\nreturn x\n", 8),
        ("return x if x.mean() > 0 else -x\n", 17),
        ("if not x.all():\n    x = x + 1\nreturn x\n", 12),
        ("n = torch.norm(x)\nif n > 1:\n    x = x / n\nreturn x\n", None),
        ("y = x.abs()\nif y.max() == 1.0:\n    x = x + 1\nreturn x\n", None),
        ("return [v for v in (x, -x) if v.sum() > 0]\n", 35),
    ],
)
def test_dl101_reports_tensor_tests(body: str, column: int | None) -> None:
    (finding,) = run(compiled(body), "DL101")
    assert finding.code == "DL101"
    assert finding.severity is Severity.WARNING
    if column is not None:
        assert finding.span.start.column == column
    assert "GB0170" in finding.message
    assert "torch.where" in finding.message
    assert finding.related and finding.related[0].span.start.line == 4  # the root


def test_dl101_fullgraph_is_an_error_with_the_torch_message() -> None:
    (finding,) = run(
        compiled("if x.sum() > 0:\n    return x\nreturn -x\n", fullgraph=True), *DL101_TO_DL110
    )
    assert finding.severity is Severity.ERROR
    assert "`Unsupported: Data-dependent branching` (GB0170)" in finding.message


def test_dl101_and_or_report_the_tensor_operand() -> None:
    source = compiled(
        "if scale > 0 and x.norm() > scale:\n    x = x / 2\nreturn x\n",
        params="x: torch.Tensor, scale: float",
    )
    assert where(run(source, *DL101_TO_DL110)) == [("DL101", 6, 22)]


def test_dl101_boolean_operation_outside_a_test() -> None:
    source = compiled("ok = x.any() or x.sum() > 0\nreturn ok\n")
    assert where(run(source, "DL101")) == [("DL101", 6, 10)]


@pytest.mark.parametrize(
    "body",
    [
        "if x.shape[0] > 8:\n    x = x[:8]\nreturn x\n",
        "if x.dim() == 2 and x.size(1) > 1:\n    x = x.sum(1)\nreturn x\n",
        "if x.dtype == torch.float64 or x.ndim > 3:\n    x = x.float()\nreturn x\n",
        "if bias is not None:\n    x = x + bias\nreturn x\n",
        "if isinstance(scale, int):\n    x = x * 2\nreturn x\n",
        "if scale > 1.0 and len(x) > 0:\n    x = x * scale\nreturn x\n",
        "assert (x > -10).all()\nreturn x\n",
        "if flag:\n    x = x + 1\nreturn x\n",  # unannotated: may be a Python bool
        "if x.device.type == 'cpu':\n    x = x + 1\nreturn x\n",
        "if x.numel() > 0:\n    x = x + 1\nreturn x\n",
    ],
)
def test_dl101_traps(body: str) -> None:
    source = compiled(body, params="x: torch.Tensor, bias=None, scale=1.0, flag=False")
    assert run(source, "DL101") == []


def test_dl101_self_training_and_eager_code_are_silent() -> None:
    source = HEADER + (
        "class M(torch.nn.Module):\n"
        "    @torch.compile\n"
        "    def forward(self, x):\n"
        "        if self.training:\n"
        "            x = x * 2\n"
        "        return x\n"
        "\n"
        "def eager(x):\n"
        "    if x.sum() > 0:\n"
        "        return x\n"
        "    return -x\n"
    )
    assert run(source, *DL101_TO_DL110) == []


def test_dl101_module_level_tensor_flag() -> None:
    source = HEADER + (
        "STOP = torch.tensor(False)\n\n@torch.compile\ndef f(x):\n"
        "    if STOP:\n        return x\n    return x + 1\n"
    )
    assert where(run(source, *DL101_TO_DL110)) == [("DL101", 8, 8)]
