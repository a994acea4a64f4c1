"""Unit tests of DL603 cudagraph-mutated-input: what it reports, where, and what it leaves alone.

CI has no GPU: the failures were observed on an H200 (torch 2.11.0+cu130) and are re-measured by
experiments/cuda_graph_collectives.py.
"""

from __future__ import annotations

from distlint.findings import Severity
from tests.rules.conftest import findings
from tests.rules.cuda_graphs.conftest import lines


def test_dl603_mutated_inputs() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(a, b):
            a.add_(1)
            b[0] = 1
            c = a * 2
            c.mul_(2)
            return c

        @torch.compile(options={"triton.cudagraphs": True})
        def g(a):
            a.zero_()
            return a

        @torch.compile
        def h(a):
            a.zero_()
            return a

        def plain(a):
            a.zero_()
        """,
        "DL603",
    )
    assert lines(found) == [5, 6, 13]
    assert all(f.severity is Severity.WARNING for f in found)
    assert "skipping cudagraphs due to mutated inputs" in found[0].message
    assert found[0].related  # "compiled at t.py:3"


def test_dl603_string_keys_add_entries_to_a_mapping_input() -> None:
    """A tensor cannot be indexed by a string: ``td[str(i)] = ...`` adds an entry to a mapping
    (tensordict's compile benchmarks, three false alarms), while ``x[i] = ...`` writes into
    the tensor."""
    found = findings(
        """
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(td, x, i):
            td[str(i)] = x
            td["loss"] = x.sum()
            td[f"k{i}"] = x
            td["a" "b"] = x
            x[i] = 0
            td[i] = x
            return td
        """,
        "DL603",
    )
    assert lines(found) == [10, 11]
