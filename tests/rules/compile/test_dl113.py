"""Unit tests of DL113 class-definition-in-compiled-region: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl113_class_in_compiled_function_and_in_a_helper() -> None:
    source = HEADER + textwrap.dedent(
        """\
        def helper(x):
            class Inner:
                class Deeper:
                    pass
            return x


        @torch.compile(fullgraph=True)
        def step(x):
            class Local:
                pass
            return helper(x)


        def eager():
            class Fine:
                pass
        """
    )
    found = run(source, "DL113")
    assert where(found) == [("DL113", 5, 11), ("DL113", 13, 11)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB8977" in found[0].message
