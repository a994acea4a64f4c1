"""Unit tests of DL604 cudagraph-output-reuse: what it reports, where, and what it leaves alone.

CI has no GPU: the failures were observed on an H200 (torch 2.11.0+cu130) and are re-measured by
experiments/cuda_graph_collectives.py.
"""

from __future__ import annotations

from tests.rules.conftest import findings
from tests.rules.cuda_graphs.conftest import lines


def test_dl604_read_after_next_call_and_kept_in_loop() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        h = torch.compile(f, mode="reduce-overhead")

        def train(x, loader):
            y1 = f(x)
            y2 = f(x + 1)
            print(y1[0], y2)
            outs = []
            for batch in loader:
                outs.append(h(batch))
                outs.append(h(batch).clone())
                outs.append(h(batch).sum().item())
            y3 = f(x).clone()
            y4 = f(x)
            return y3, y4
        """,
        "DL604",
    )
    assert lines(found) == [12, 15]
    assert "overwritten by a subsequent run" in found[0].message
    assert found[0].related[0].message == "overwritten by this call"


def test_dl604_traps() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        @torch.compile
        def plain(x):
            return x * 2

        def use_first(x):
            y1 = f(x)
            total = y1.sum()
            y2 = f(x)
            return total, y2

        def rebinding(x):
            y = f(x)
            y = f(y)
            return y

        def no_graphs(x):
            a = plain(x)
            b = plain(x)
            return a, b
        """,
        "DL604",
    )
    assert found == []


def test_dl604_mark_step_begin_does_not_protect_a_kept_output() -> None:
    """GPU (H200, torch 2.11): with cudagraph_mark_step_begin() before each call, a kept output
    still held the next call's values (experiments/results/one_gpu_checks-h200-torch2.11.json).
    """
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        def marked(loader):
            kept = []
            for batch in loader:
                torch.compiler.cudagraph_mark_step_begin()
                kept.append(f(batch))
            return kept
        """,
        "DL604",
    )
    assert lines(found) == [11]
    assert "does not prevent this" in found[0].message


def test_dl604_scans_the_module_top_level() -> None:
    """A script's own statements: the read after the next call is reported in the module body
    and in its ``if __name__ == "__main__":`` block; a callable assigned later is graphed only
    from its assignment on, and functions still see module-level callables."""
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        x = torch.ones(4)
        a = f(x)
        b = f(x + 1)
        print(a, b)
        g = lambda t: t
        c = g(x)
        d = g(x)
        print(c, d)
        g = torch.compile(g, mode="reduce-overhead")
        if __name__ == "__main__":
            e = g(x)
            y = g(x)
            print(e.sum(), y)
        """,
        "DL604",
    )
    assert lines(found) == [10, 19]


def test_dl604_module_top_level_traps() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        x = torch.ones(4)
        a = f(x)
        total = a.sum()
        a = f(a)
        print(total, a)
        b = f(x).clone()
        c = f(x)
        print(b, c)
        """,
        "DL604",
    )
    assert found == []


def test_dl604_a_configured_compile_wrapper_with_reduce_overhead_counts() -> None:
    from distlint.file_settings import FileSettings
    from tests.rules.conftest import check

    source = """\
        from mylib.jit import fast_compile

        def g(x):
            return x * 2

        h = fast_compile(g, mode="reduce-overhead")

        def train(x):
            outs = []
            for batch in x:
                outs.append(h(batch))
            return outs
        """
    assert findings(source, "DL604") == []
    wrapped = FileSettings(
        enabled=frozenset({"DL604"}), compile_wrappers=("mylib.jit.fast_compile",)
    )
    assert lines(check(source, wrapped)) == [11]
