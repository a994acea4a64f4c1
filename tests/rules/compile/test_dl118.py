"""Unit tests of DL118 side-effect-in-checkpoint-body: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl118_mutations_of_outside_containers_in_hop_bodies() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import collections
        from torch.utils.checkpoint import checkpoint

        QUEUE = collections.deque()
        SEEN = set()
        OTHER = object()


        def body(x, acc):
            QUEUE.append(x)
            SEEN.add(1)
            OTHER.update(x)
            acc.append(x)
            local = {}
            local["a"] = x
            return x


        @torch.compile
        def f(x):
            total = 0
            def inner(t):
                nonlocal total
                total = total + 1
                return t
            y = checkpoint(body, x, [], use_reentrant=False)
            return checkpoint(inner, y, use_reentrant=False)
        """
    )
    found = run(source, "DL118")
    assert where(found) == [("DL118", 13, 5), ("DL118", 14, 5), ("DL118", 27, 9)]
    assert all(f.severity is Severity.WARNING and "GB0067" in f.message for f in found)
