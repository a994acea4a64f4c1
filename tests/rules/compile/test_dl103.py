"""Unit tests of DL103 dynamic-output-shape: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER, compiled
from tests.rules.conftest import run, where


@pytest.mark.parametrize(
    "expr",
    [
        "torch.nonzero(x)",
        "x.nonzero()",
        "torch.unique(x)",
        "x[x > 0]",
        "x[~torch.isnan(x)]",
        "torch.masked_select(x, x > 0)",
        "torch.where(x > 0)",
        "torch.repeat_interleave(x, x.long())",
    ],
)
def test_dl103_reports_dynamic_shapes(expr: str) -> None:
    (finding,) = run(compiled(f"return {expr}\n"), "DL103")
    assert finding.severity is Severity.NOTE
    assert (finding.span.start.line, finding.span.start.column) == (6, 12)
    assert "GB0036" in finding.message


def test_dl103_mask_through_a_name() -> None:
    source = compiled("mask = x > 0\nreturn x[mask]\n")
    assert where(run(source, *DL101_TO_DL110)) == [("DL103", 7, 12)]


@pytest.mark.parametrize(
    "source",
    [
        compiled("return torch.nonzero(x)\n", fullgraph=True),
        HEADER
        + "torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
        + "@torch.compile\ndef f(x):\n    return torch.nonzero(x)\n",
        compiled("m = x > 0\nreturn torch.where(m, x, 0.0) + torch.repeat_interleave(x, 2)\n"),
        compiled("m = x > 0\nx[m] = 0.0\nreturn x * m\n"),
        compiled("return x[idx]\n", params="x: torch.Tensor, idx: torch.Tensor"),
    ],
    ids=["fullgraph", "capture-config", "static-where", "mask-write", "int-index"],
)
def test_dl103_silent(source: str) -> None:
    assert run(source, "DL103") == []


def test_the_region_rules_find_a_functions_bindings_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """DL102 and DL103 (and the other region rules) each guess which names are tensors; what
    the function binds is found once for all of them, each keeping its own answers."""
    from distlint.rules.compile import _analysis

    built: list[int] = []  # each function whose bindings a guess found
    real = _analysis.TensorGuess._note_binding

    def noting(self, node):  # type: ignore[no-untyped-def]
        if self.func is not None and node is self.func.body.body[0]:
            built.append(id(self.func))
        return real(self, node)

    monkeypatch.setattr(_analysis.TensorGuess, "_note_binding", noting)
    source = compiled("y = x * 2\nn = y.sum().item()\nreturn torch.nonzero(y), n\n")
    found = run(source, *DL101_TO_DL110)
    assert {"DL102", "DL103"} <= {f.code for f in found}
    assert built and len(built) == len(set(built))


def test_no_tensor_guess_for_calls_that_cannot_convert_or_change_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DL102 and DL103 ask which names are tensors only about a candidate's arguments
    (``int(x)``, ``x.nonzero()``): a compiled function of other calls makes no guess."""
    from distlint.rules.compile import _analysis

    made: list[object] = []
    real = _analysis.TensorGuess.__init__

    def noting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(_analysis.TensorGuess, "__init__", noting)
    assert run(compiled("y = x.float().pow(2).mean()\nreturn y.detach()\n"), "DL102", "DL103") == []
    assert made == []
    assert [f.code for f in run(compiled("return int(x), x.nonzero()\n"), "DL102", "DL103")] == [
        "DL102",
        "DL103",
    ]
    assert made


def test_dl103_repeat_interleave_with_its_output_size_is_static() -> None:
    """``repeat_interleave(x, repeats, output_size=n)`` (lmdeploy's MLA attention) does not
    compute its size from the repeats: traced without a break on torch 2.13 (DL103 traps)."""
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile
        def f(x: torch.Tensor, repeats: torch.Tensor, total: int):
            a = torch.repeat_interleave(x, repeats, output_size=total)
            b = x.repeat_interleave(repeats, output_size=total)
            c = torch.repeat_interleave(x, repeats)
            return a, b, c
        """
    )
    assert [line for _, line, _ in where(run(source, "DL103"))] == [8]
