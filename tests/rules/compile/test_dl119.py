"""Unit tests of DL119 context-manager-from-outside-region: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl119_context_managers_made_outside() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import contextlib

        NG = torch.no_grad()
        NULL = contextlib.nullcontext()
        AC = torch.autocast("cpu")


        class CM:
            def __enter__(self):
                return self

            def __exit__(self, *a):
                return None


        SHARED = CM()


        @torch.compile
        def f(x, param_ctx):
            local = torch.no_grad()
            with NG, SHARED:
                pass
            with NULL, AC, local, param_ctx, torch.no_grad():
                pass
            return x
        """
    )
    found = run(source, "DL119")
    assert where(found) == [("DL119", 25, 10), ("DL119", 25, 14)]
    assert all(f.severity is Severity.WARNING and "GB0142" in f.message for f in found)
