"""Unit tests of DL121 compile-method-on-torch-nn-module: which receivers are taken for a
torch.nn instance, and which are left alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch 2.13 compiles nothing there.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.conftest import run


def lines(source: str) -> list[int]:
    return [f.span.start.line for f in run(textwrap.dedent(source), "DL121")]


def test_dl121_locals_chains_and_constructions() -> None:
    source = """\
        import torch
        import torch.nn as nn
        from torch.nn import Linear

        a = nn.Linear(2, 2)
        a.compile()
        b = Linear(2, 2).to("cuda").half()
        b.compile(mode="max-autotune")
        nn.Conv2d(3, 3, 3).compile()
        nn.modules.linear.Linear(2, 2).eval().compile()


        def build():
            block = nn.TransformerEncoderLayer(8, 2)
            block.compile()
            return block
        """
    found = run(textwrap.dedent(source), "DL121")
    assert [f.span.start.line for f in found] == [6, 8, 9, 10, 15]
    assert {f.severity for f in found} == {Severity.WARNING}
    assert found[0].message.startswith(
        "`a.compile()` compiles nothing: `a` is a torch.nn `Linear`, and on torch 2.13"
    )


def test_dl121_self_attributes_assigned_only_torch_nn_modules() -> None:
    source = """\
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, small):
                super().__init__()
                self.norm = nn.LayerNorm(8)
                self.norm.compile()
                self.mixed = nn.Linear(8, 8) if small else Custom()
                self.mixed.compile()
                self.later = nn.Linear(8, 8)
                self.later.compile()

            def swap(self):
                self.later = Custom()
        """
    assert lines(source) == [8]


def test_dl121_leaves_other_receivers_alone() -> None:
    source = """\
        import re
        import torch.nn as nn


        class Scaled(nn.Linear):
            def forward(self, x):
                return super().forward(x) * 2


        def given(module: nn.Module, layers):
            module.compile()
            for block in layers:
                block.compile()
            s = Scaled(2, 2)
            s.compile()
            p = re.compile("x")
            lst = nn.ModuleList([nn.Linear(2, 2)])
            lst.compile()
            m = nn.Linear(2, 2)
            m = wrap(m)
            m.compile()
            n, k = nn.Linear(2, 2), 3
            n.compile()
            q = nn.Linear(2, 2)
            q.compile(q)  # a positional argument: not Module.compile
        """
    assert lines(source) == []


def test_dl121_names_bound_only_by_assignments_reach_the_guess() -> None:
    """The gate before a scope's guess (``_assigned_names``): only a name some ``=`` or
    annotated assignment of the scope binds can be a torch.nn instance. ``torch`` of
    ``@torch.compile(...)`` and a parameter are not; an import shadowed by an assignment, a
    chained or annotated assignment, one in a block or a one-line suite, and a ``:=`` in a
    function still are."""
    source = """\
        import torch
        import torch.nn as nn


        @torch.compile(backend="inductor")
        def step(model, x):
            model.compile()
            return model(x)


        def shadowed():
            torch = nn.Linear(2, 2)
            torch.compile()


        def chained(flag):
            a = b = nn.Linear(2, 2)
            b.compile()
            c: nn.Module = nn.Conv2d(3, 3, 3)
            c.compile()
            if flag: d = nn.GRU(2, 2)
            with torch.no_grad():
                d.compile()


        def looped(blocks):
            for f in blocks:
                f.compile()
            g = nn.Linear(2, 2)
            g += 1
            g.compile()


        torch.compile(backend="eager")
        layer = nn.Linear(2, 2)
        layer.compile()
        """
    assert lines(source) == [13, 18, 20, 23, 36]
    walrus = """\
        import torch.nn as nn


        def walrus():
            if (e := nn.LSTM(2, 2)) is not None:
                e.compile()
        """
    assert lines(walrus) == [6]
