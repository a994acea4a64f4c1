"""Unit tests of DL117 sort-by-tensor-values: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl117_sorting_tensors_by_their_values() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile
        def f(x: torch.Tensor, names, xs: "list[torch.Tensor]"):
            parts = [x, x + 1]
            a = sorted(parts, key=lambda t: float(t.mean()))
            b = sorted((x, x * 2), key=lambda t: t[0])
            c = sorted(parts, key=lambda t: t.shape[0])
            d = sorted(parts, key=lambda t: t.numel())
            e = sorted(names, key=lambda t: t.sum())
            parts.sort()
            x.sort()
            return a, b, c, d, e
        """
    )
    found = run(source, "DL117")
    assert where(found) == [("DL117", 7, 9), ("DL117", 8, 9), ("DL117", 12, 5)]
    assert all(f.severity is Severity.WARNING and "GB0207" in f.message for f in found)
