"""Unit tests of DL114 iterator-argument-to-compiled-function: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where

ITERATES = HEADER + textwrap.dedent(
    """\
    @torch.compile(fullgraph=True)
    def f(pairs, x):
        return x + sum(a for a in pairs)


    g = torch.compile(lambda x: x)
    """
)


def test_dl114_reports_iterators_and_dict_views() -> None:
    source = ITERATES + textwrap.dedent(
        """\
        d = {"a": 1}
        f(reversed([1, 2]), 1)
        f(d.values(), 1)
        f(filter(None, [1]), x=1)
        f(pairs=iter([1]), x=1)
        """
    )
    found = run(source, "DL114")
    assert where(found) == [
        ("DL114", 11, 3),
        ("DL114", 12, 3),
        ("DL114", 13, 3),
        ("DL114", 14, 9),
    ]
    assert all(f.severity is Severity.ERROR and "GB0811" in f.message for f in found)


def test_dl114_silent_on_lists_keys_unknown_receivers_and_shadowing_locals() -> None:
    source = ITERATES + textwrap.dedent(
        """\
        f(list(zip([1], [2])), 1)
        f({"a": 1}.keys(), 1)
        f(table.values(), 1)
        f(1, zip([1], [2]))


        def local():
            def f(pairs, x):
                return pairs
            return f(zip([1], [2]), 1)
        """
    )
    assert run(source, "DL114") == []
