"""Unit tests of DL127 autograd-grad-in-compiled-region: what it reports, where, and what it
leaves alone; and DL106's ``loss.backward()``, silenced by the same setting.

The proof tests (tests/proof/test_proof_dl127.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER, compiled
from tests.rules.conftest import run, where

IMPORTS = "from torch import autograd\nfrom torch.autograd import grad as agrad\n"


@pytest.mark.parametrize(
    "call",
    [
        "torch.autograd.grad(y, x)",
        "autograd.grad(y, x, create_graph=True)",
        "agrad(outputs=y, inputs=[x], grad_outputs=torch.ones_like(y))",
    ],
)
def test_dl127_reports_autograd_grad_in_any_import_form(call: str) -> None:
    source = IMPORTS + compiled(f"y = x.sum()\nreturn {call}[0]\n")
    (finding,) = run(source, "DL127")
    assert (finding.span.start.line, finding.span.start.column) == (9, 12)
    assert finding.severity is Severity.WARNING
    assert "GB9186" in finding.message and "trace_autograd_ops = True" in finding.message


def test_dl127_is_an_error_under_fullgraph_where_it_always_runs() -> None:
    source = compiled(
        """\
        y = x.sum()
        g = torch.autograd.grad(y, x, create_graph=True)[0]
        if g.shape[0] > 1:
            return torch.autograd.grad(g.sum(), x)[0]
        return g
        """,
        fullgraph=True,
    )
    always, branch = run(source, "DL127")
    assert always.severity is Severity.ERROR and "Unsupported: " in always.message
    assert branch.severity is Severity.WARNING and "only on some paths" in branch.message


def test_dl127_look_alikes_and_eager_code_are_left_alone() -> None:
    source = HEADER + textwrap.dedent(
        """\
        def grad(x):
            return x[1:] - x[:-1]

        def eager(x):
            return torch.autograd.grad(x.sum(), x)[0]

        @torch.compile(fullgraph=True)
        def step(x, w):
            if not torch.compiler.is_compiling():
                torch.autograd.grad(x.sum(), x)
            return grad(x) + torch.func.grad(lambda t: t.sum())(x) + w.grad
        """
    )
    assert run(source, "DL127") == []


@pytest.mark.parametrize(
    "setting",
    [
        "torch._dynamo.config.trace_autograd_ops = True\n",
        "def setup():\n    torch._dynamo.config.trace_autograd_ops = True\n",
        "def run(f, x):\n"
        "    with torch._dynamo.config.patch(trace_autograd_ops=True):\n"
        "        return f(x)\n",
        "@torch._dynamo.config.patch('trace_autograd_ops', True)\n"
        "def run(f, x):\n"
        "    return f(x)\n",
    ],
)
def test_trace_autograd_ops_silences_dl127_and_dl106_backward(setting: str) -> None:
    source = compiled(
        """\
        loss = x.sum()
        g = torch.autograd.grad(loss, x, create_graph=True)[0]
        g.sum().backward()
        opt.step()
        return g
        """,
        params="x, opt",
    )
    assert where(run(source, "DL106", "DL127")) == [
        ("DL127", 7, 9),
        ("DL106", 8, 5),
        ("DL106", 9, 5),
    ]
    # the optimizer step still breaks: only the autograd calls are traced
    assert where(run(source + setting, "DL106", "DL127")) == [("DL106", 9, 5)]


def test_trace_autograd_ops_false_leaves_both_reported() -> None:
    source = compiled("g = torch.autograd.grad(x.sum(), x)[0]\ng.sum().backward()\nreturn g\n")
    off = source + "torch._dynamo.config.trace_autograd_ops = False\n"
    assert [f.code for f in run(off, "DL106", "DL127")] == ["DL127", "DL106"]
