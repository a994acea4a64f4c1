"""Unit tests of DL111 explicit-graph-break: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distlint.findings import Severity
from tests.project_util import check_sources
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl111_direct_call_is_an_error_under_fullgraph() -> None:
    source = HEADER + (
        "@torch.compile(fullgraph=True)\ndef f(x):\n    torch._dynamo.graph_break()\n    return x\n"
    )
    (finding,) = run(source, "DL111")
    assert (finding.code, finding.span.start.line) == ("DL111", 6)
    assert finding.severity is Severity.ERROR
    assert "GB0025" in finding.message and "2.13" in finding.message


def test_dl111_without_fullgraph_is_a_warning() -> None:
    source = HEADER + (
        "from torch._dynamo import skip_frame\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    skip_frame()\n"
        "    return x\n"
    )
    (finding,) = run(source, "DL111")
    assert finding.severity is Severity.WARNING
    assert "GB4297" in finding.message and "whole function" in finding.message


def test_dl111_nested_def_and_self_method_bodies_of_checkpoint_and_cond() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch.utils.checkpoint import checkpoint


        class Block(torch.nn.Module):
            def _inner(self, x):
                torch._dynamo.graph_break()
                return x

            def forward(self, x):
                def branch(t):
                    torch._dynamo.graph_break()
                    return t

                y = checkpoint(self._inner, x, use_reentrant=False)
                return torch.cond(y.sum() > 0, branch, branch, (y,))


        model = torch.compile(Block())
        """
    )
    found = run(source, "DL111")
    assert where(found) == [("DL111", 9, 9), ("DL111", 14, 13)]
    assert found[0].severity is Severity.WARNING  # checkpoint, no fullgraph
    assert found[1].severity is Severity.ERROR  # torch.cond fails even without fullgraph


def test_dl111_silent_outside_regions_and_for_other_names() -> None:
    source = HEADER + textwrap.dedent(
        """\
        def eager(x):
            torch._dynamo.graph_break()
            return x


        @torch.compile(fullgraph=True)
        def f(x, graph_break):
            graph_break()
            torch._dynamo.reset()
            return x
        """
    )
    assert run(source, "DL111") == []


def test_dl111_follows_helpers_across_modules(tmp_path: Path) -> None:
    results = check_sources(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": """\
                import torch._dynamo


                def debug(x):
                    torch._dynamo.graph_break()
                    return x
                """,
            "pkg/model.py": """\
                import torch

                from pkg.helpers import debug


                @torch.compile(fullgraph=True)
                def step(x):
                    return debug(x) + 1
                """,
        },
        enabled=["DL111"],
    )
    (finding,) = results["pkg/helpers.py"].findings
    assert (finding.code, finding.span.start.line, finding.severity) == (
        "DL111",
        5,
        Severity.ERROR,
    )
    assert results["pkg/model.py"].findings == ()
