"""Unit tests of DL120 not-a-context-manager: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl120_classes_without_the_protocol() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from elsewhere import Imported


        class Plain:
            pass


        class Magic:
            def __getattr__(self, name):
                return None


        class Enters:
            __enter__ = __exit__ = lambda *a: None


        @torch.compile
        def f(x):
            with Plain(), Magic(), Enters(), Imported():
                pass
            return x
        """
    )
    (finding,) = run(source, "DL120")
    assert where([finding]) == [("DL120", 22, 10)]
    assert finding.severity is Severity.ERROR and "GB0142" in finding.message
