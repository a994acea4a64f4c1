"""Unit tests of DL110 disabled-call-under-fullgraph: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER
from tests.rules.conftest import run, where


def test_dl110_disabled_helpers_under_fullgraph() -> None:
    source = HEADER + (
        "@torch.compiler.disable\ndef helper(x):\n    return x\n\n"
        "wrapped = torch._dynamo.disable(helper)\n\n"
        "class M(torch.nn.Module):\n"
        "    @torch._dynamo.disable\n    def dump(self, h):\n        pass\n\n"
        "    @torch.compile(fullgraph=True)\n    def forward(self, x):\n"
        "        self.dump(x)\n        return helper(x) + wrapped(x)\n"
    )
    found = run(source, *DL101_TO_DL110)
    assert where(found) == [("DL110", 17, 9), ("DL110", 18, 16), ("DL110", 18, 28)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB0099" in found[0].message and "GB0098" in found[1].message


def test_dl110_silent_without_fullgraph_or_when_shadowed() -> None:
    source = HEADER + (
        "@torch.compiler.disable\ndef helper(x):\n    return x\n\n"
        "@torch.compile\ndef f(x):\n    return helper(x)\n\n"
        "@torch.compile(fullgraph=True)\ndef g(x, helper):\n    return helper(x)\n"
    )
    assert run(source, *DL101_TO_DL110) == []


def test_dl110_disabled_callables_passed_into_a_fullgraph_function() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn


        @torch.compiler.disable
        def stats(x):
            return x


        eager_layer = torch.compiler.disable(nn.Linear(2, 2))


        class Box:
            fn = torch.compiler.disable(stats)

            @torch.compile(fullgraph=True)
            def run(self, x):
                return self.fn(x)


        @torch.compile(fullgraph=True)
        def apply(x, hook):
            return hook(x)


        @torch.compile
        def lenient(x, hook):
            return hook(x)


        apply(1, stats)
        apply(1, hook=eager_layer)
        lenient(1, stats)
        apply(stats, 1)
        """
    )
    found = run(source, "DL110")
    assert where(found) == [("DL110", 20, 16), ("DL110", 33, 10), ("DL110", 34, 15)]
    assert "GB0099" in found[0].message
    assert "GB0098" in found[1].message and "GB0148" in found[2].message
