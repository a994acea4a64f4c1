"""Unit tests of DL115 data-dependent-operator: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl115_functions_and_tensor_methods() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile
        def f(x: torch.Tensor, y, other):
            a = torch.equal(x, y)
            b = x.allclose(y)
            c = y.equal(x)
            d = other.equal(y)
            e = torch.isclose(x, y)
            return a, b, c, d, e
        """
    )
    found = run(source, "DL115", "DL101")
    assert where(found) == [("DL115", 6, 9), ("DL115", 7, 9), ("DL115", 8, 9)]
    assert all(f.severity is Severity.WARNING and "GB0033" in f.message for f in found)


def test_dl115_branch_on_allclose_is_not_a_tensor_branch() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile(fullgraph=True)
        def f(x: torch.Tensor, y: torch.Tensor):
            if torch.allclose(x, y):
                return x
            return y
        """
    )
    (finding,) = run(source, "DL115", "DL101")
    assert finding.code == "DL115" and finding.severity is Severity.ERROR
