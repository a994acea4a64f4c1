"""Unit tests of DL405 custom-op-undeclared-mutation: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

from distlint.findings import Severity
from tests.rules.conftest import where
from tests.rules.custom_ops.conftest import findings


def test_dl405_undeclared_mutations() -> None:
    found = findings(
        """
        import torch
        from torch.library import custom_op

        @torch.library.custom_op("t::a", mutates_args=())
        def a(x: torch.Tensor, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x.add_(1)
            x.mul_(2)
            torch.mul(x, 2, out=out)
            y += 1
            return x.clone()

        @custom_op("t::b", mutates_args=["x"])
        def b(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> None:
            x.zero_()
            v = y.view(-1)
            v[0] = 1.0
            z.data.fill_(0)
        """,
        "DL405",
    )
    assert where(found) == [
        ("DL405", 7, 5),
        ("DL405", 9, 5),
        ("DL405", 10, 5),
        ("DL405", 17, 5),
        ("DL405", 18, 5),
    ]
    assert found[0].severity is Severity.ERROR
    assert "`x`" in found[0].message and "Argument x is not defined as mutable" in found[0].message
    assert found[0].related and found[0].related[0].message == "custom_op defined here"


def test_dl405_traps() -> None:
    assert (
        findings(
            """
            import torch

            @torch.library.custom_op("t::a", mutates_args=())
            def a(x: torch.Tensor) -> torch.Tensor:
                x = x.clone()
                x.add_(1)
                out = torch.empty_like(x)
                torch.mul(x, 2, out=out)
                return out

            @torch.library.custom_op("t::b", mutates_args="unknown")
            def b(x: torch.Tensor) -> None:
                x.zero_()

            @torch.library.custom_op("t::c", mutates_args={"x"})
            def c(x: torch.Tensor) -> None:
                x.view(-1).zero_()

            @torch.library.custom_op("t::d", mutates_args=(), schema="(Tensor x) -> Tensor")
            def d(x):
                x.zero_()
                return x

            @torch.library.custom_op("t::e", mutates_args=())
            def e(x: torch.Tensor) -> torch.Tensor:
                def inner(x):
                    x.add_(1)
                    return x
                return inner(x.clone())

            def not_an_op(x):
                x.add_(1)
            """,
            "DL405",
        )
        == []
    )
