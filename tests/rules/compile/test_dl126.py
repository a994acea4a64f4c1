"""Unit tests of DL126 one-hot-without-num-classes: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl126.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER, compiled
from tests.rules.conftest import run, where

IMPORTS = "import torch.nn.functional as F\nfrom torch.nn.functional import one_hot\n"


def _compiled(body: str, *, fullgraph: bool = False) -> str:
    return IMPORTS + compiled(body, fullgraph=fullgraph, params="y, n")


@pytest.mark.parametrize(
    ("expr", "gb"),
    [
        ("F.one_hot(y)", "GB0246"),
        ("one_hot(y)", "GB0246"),
        ("torch.nn.functional.one_hot(y)", "GB0246"),
        ("torch._C._nn.one_hot(y)", "GB0246"),
        ("F.one_hot(torch.arange(4))", "GB0246"),
        ("F.one_hot(y, -1)", "GB0246"),
        ("F.one_hot(input=y)", "GB0246"),
        ("F.one_hot(y, num_classes=-1)", "GB0033"),
    ],
)
def test_dl126_reports_a_number_of_classes_read_from_the_data(expr: str, gb: str) -> None:
    (finding,) = run(_compiled(f"return {expr}\n"), "DL126")
    assert (finding.span.start.line, finding.span.start.column) == (8, 12)
    assert finding.severity is Severity.WARNING
    assert f"{gb}, " in finding.message and "graph breaks" in finding.message


@pytest.mark.parametrize(
    "expr",
    [
        "F.one_hot(y, 5)",
        "F.one_hot(y, num_classes=5)",
        "F.one_hot(y, n)",
        "F.one_hot(y, num_classes=n)",
        "F.one_hot(y, self.n)",
        "F.one_hot(*args)",
        "F.one_hot(y, **options)",
        "F.one_hot()",
    ],
)
def test_dl126_a_given_or_unknown_number_of_classes_is_left_alone(expr: str) -> None:
    assert run(_compiled(f"return {expr}\n"), "DL126") == []


def test_dl126_severity_under_fullgraph_follows_whether_the_call_always_runs() -> None:
    source = _compiled(
        """\
        a = F.one_hot(y)
        b = F.one_hot(y, num_classes=-1)
        if n:
            return F.one_hot(y)
        return a, b
        """,
        fullgraph=True,
    )
    always, keyword, branch = run(source, "DL126")
    assert always.severity is Severity.ERROR and keyword.severity is Severity.ERROR
    assert "Unsupported: " in always.message and "GB0246" in always.message
    assert "UserError: " in keyword.message and "GB0033" not in keyword.message
    assert branch.severity is Severity.WARNING and "only on some paths" in branch.message


def test_dl126_is_silent_outside_regions_and_for_project_functions() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import torch.nn.functional as F

        def one_hot(y):
            return F.one_hot(y, 4)

        def eager(y):
            return F.one_hot(y)

        @torch.compile(fullgraph=True)
        def step(y):
            return one_hot(y) + eager_side(y)

        def eager_side(y):
            if not torch.compiler.is_compiling():
                return F.one_hot(y)
            return y
        """
    )
    assert where(run(source, "DL126")) == []
