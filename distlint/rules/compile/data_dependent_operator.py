"""DL115: ``torch.equal`` / ``torch.allclose`` (function or tensor method) inside a compiled
region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL115): these operators
return a Python ``bool`` computed from tensor data. Fake tensors cannot produce it: ``Data
dependent operator`` (GB0033), a graph break, and under ``fullgraph=True`` a compile error --
also with ``torch._dynamo.config.capture_scalar_outputs = True``, which only captures
``.item()``.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions_model import Region

# torch function -> (aten operator named in the message, what to use instead)
OPERATORS = {
    "torch.equal": ("aten.equal", "`torch.all(a == b)` (a 0-d bool tensor)"),
    "torch.allclose": ("aten.allclose", "`torch.isclose(a, b).all()` (a 0-d bool tensor)"),
}
METHODS = {"equal": "torch.equal", "allclose": "torch.allclose"}


class DataDependentOperator(_RegionRule):
    code = "DL115"
    name = "data-dependent-operator"
    severity = Severity.WARNING
    summary = (
        "torch.equal / torch.allclose inside a compiled region return a Python bool from "
        "tensor data: a graph break (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0033",)

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        name = self.ctx.resolve(node.func)
        operator = None
        if name in OPERATORS:
            operator = name
        elif name is None and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in METHODS and node.args and self._tensors(node.func.value, node.args):
                operator = METHODS[method]
        if operator is None:
            return
        aten, instead = OPERATORS[operator]
        spelled = self.spell(node)
        what = (
            f"`{spelled}` returns a Python bool computed from tensor data (`{aten}`), which "
            "Dynamo cannot trace"
        )
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what}: under fullgraph=True this fails on torch 2.13 (`Unsupported: Data "
                f"dependent operator`, GB0033), also with capture_scalar_outputs=True. Use "
                f"{instead} instead."
            ),
            breaks=(
                f"{what}: it graph-breaks on torch 2.13 (GB0033, `Data dependent operator`). "
                f"Use {instead} instead."
            ),
        )

    def _tensors(self, receiver: cst.BaseExpression, args: Sequence[cst.Arg]) -> bool:
        """``a.equal(b)``: the receiver or the argument is known to be a tensor."""
        guess = self.guess()
        first = args[0]
        return guess.is_tensor(receiver) or (
            first.keyword is None and not first.star and guess.is_tensor(first.value)
        )
