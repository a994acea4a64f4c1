"""DL125: an ``nn.Parameter(...)`` created inside a compiled region from a tensor the region
computes (lazy initialisation in ``forward``), or from no tensor at all.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL125): with
``torch._dynamo.config.graph_break_on_nn_param_ctor = True`` (the default) Dynamo stops at
``nn.Parameter(torch.randn(...))`` (GB0264, ``Attempted to use `torch.nn.Parameter()`
constructor with Dynamo``); with a number or no argument it stops whatever the flag says
(GB0226, ``torch.nn.Parameter() with unsupported data type``). A break; under
``fullgraph=True`` a compile error. A tensor Dynamo reads from a source (an argument of the
compiled function, a buffer) is lifted out of the graph instead: no break.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _RegionRule
from distlint.rules.compile._tensor_origin import computed_in_region
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region
from distlint.syntax.walker import call_argument

PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
FLAG = "graph_break_on_nn_param_ctor"  # torch._dynamo.config; True by default on torch 2.13
INSTEAD = (
    "Create the parameter in `__init__`, or use a lazy module (`nn.LazyLinear`-style) and "
    "materialise it with one call before compiling."
)


class ParameterCreatedInCompiledRegion(_RegionRule):
    code = "DL125"
    name = "parameter-created-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "nn.Parameter(...) created inside a compiled region from a tensor the region computes "
        "(lazy init in forward): graph break (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0226", "GB0264")

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self.active = "Parameter" in ctx.source

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        if self.ctx.resolve(node.func) not in PARAMETER or any(arg.star for arg in node.args):
            return
        data = call_argument(node, 0, "data")
        spelled = self.spell(node)
        if data is None or _is_literal(data):
            gb = 'GB0226, "`torch.nn.Parameter()` with unsupported data type"'
            what = f"`{spelled}` is given no tensor inside a compiled region"
            instead = f"Pass it a tensor. {INSTEAD}"
        elif self._breaks_on_constructor() and computed_in_region(self.guess(), data):
            gb = 'GB0264, "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"'
            what = f"`{spelled}` creates a parameter from a tensor the compiled region computes"
            instead = (
                f"{INSTEAD} (Setting `torch._dynamo.config.{FLAG} = False` traces it instead.)"
            )
        else:
            return  # a tensor read from a source is lifted out of the graph
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what}: under fullgraph=True this fails on torch 2.13 (`Unsupported`, "
                f"{gb}). {instead}"
            ),
            breaks=(
                f"{what}: Dynamo does not trace it on torch 2.13 ({gb}), so the graph ends "
                f"here and resumes after it. {instead}"
            ),
            certain_only=True,
        )

    def _breaks_on_constructor(self) -> bool:
        """``graph_break_on_nn_param_ctor`` is True (its default): no module-level setting
        other than True, and the file switches it off nowhere (assigned, or patched around a
        compiled call)."""
        return self.config.get(FLAG, True) is True and not self.enabled_anywhere(FLAG)


def _is_literal(expr: cst.BaseExpression) -> bool:
    """A number, string or ``None``: no tensor (``nn.Parameter(1.0)``)."""
    if isinstance(expr, cst.UnaryOperation):
        return _is_literal(expr.expression)
    if isinstance(expr, cst.Name):
        return expr.value in ("None", "True", "False")
    return isinstance(
        expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
    )
