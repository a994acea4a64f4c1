"""DL101: branching on a tensor value (``if``, ``while``, a conditional expression, a
comprehension's ``if``, ``and``/``or`` outside a test) inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL101): ``bool()`` of a
tensor is data-dependent branching (GB0170): a graph break, and under ``fullgraph=True`` a
compile error.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import tensor_branches, truth_tested
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions_model import Region


class DataDependentBranch(_RegionRule):
    code = "DL101"
    name = "data-dependent-branch"
    severity = Severity.WARNING
    summary = (
        "Branching on a tensor value inside a compiled region graph-breaks (fullgraph=True: "
        "compile error)."
    )
    tags = ("performance", "correctness", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0170",)

    @in_region
    def _check(self, node: cst.CSTNode, region: Region) -> None:
        for leaf in tensor_branches(node, self.guess()):
            spelled = self.spell(leaf)
            self.report_break(
                leaf,
                region,
                fullgraph=(
                    f"`{spelled}` is a tensor: branching on it under fullgraph=True fails on "
                    "torch 2.13 with `Unsupported: Data-dependent branching` (GB0170). Use "
                    "`torch.where(...)` or `torch.cond(...)` instead of the Python branch."
                ),
                breaks=(
                    f"`{spelled}` is a tensor: branching on it graph-breaks on torch 2.13 "
                    "(GB0170, data-dependent branching): the graph ends here and the rest "
                    "runs eagerly until a new one starts. Use `torch.where(...)` or "
                    "`torch.cond(...)` instead of the Python branch."
                ),
            )

    def visit_If(self, node: cst.If) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check(node)

    @in_region
    def visit_BooleanOperation(self, node: cst.BooleanOperation, region: Region) -> None:
        """``a and b`` outside a test still calls ``bool(a)``."""
        parents = self.ctx.parents
        parent = parents[-1] if parents else None
        if isinstance(parent, (cst.BooleanOperation, cst.If, cst.While, cst.IfExp, cst.CompIf)):
            return
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return
        guess = self.guess()
        for leaf in truth_tested(node.left):
            if guess.is_tensor(leaf):
                self._report_leaf(leaf, region)

    def _report_leaf(self, leaf: cst.BaseExpression, region: Region) -> None:
        spelled = self.spell(leaf)
        self.report_break(
            leaf,
            region,
            fullgraph=(
                f"`{spelled}` is a tensor: `and`/`or` call `bool()` on it, which under "
                "fullgraph=True fails on torch 2.13 with `Unsupported: Data-dependent "
                "branching` (GB0170). Combine masks with `&`/`|` and select with "
                "`torch.where(...)`."
            ),
            breaks=(
                f"`{spelled}` is a tensor: `and`/`or` call `bool()` on it, which graph-breaks "
                "on torch 2.13 (GB0170, data-dependent branching). Combine masks with `&`/`|` "
                "and select with `torch.where(...)`."
            ),
        )
