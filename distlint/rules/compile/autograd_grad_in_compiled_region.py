"""DL127: ``torch.autograd.grad(...)`` inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl127.py, fixtures/DL127): at the default
``torch._dynamo.config.trace_autograd_ops = False`` Dynamo refuses the call (``using
torch.autograd.grad with torch._dynamo.config.trace_autograd_ops=False``, GB9186): a graph
break, and under ``fullgraph=True`` a compile error, whatever the arguments. With the setting
True the same calls are traced. ``loss.backward()`` is DL106.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region

AUTOGRAD_GRAD = "torch.autograd.grad"
TRACE_AUTOGRAD_OPS = "trace_autograd_ops"
_REFUSED = "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`"
_INSTEAD = (
    "Set `torch._dynamo.config.trace_autograd_ops = True` (Dynamo then traces it), or compute "
    "the gradient outside the compiled function."
)


class AutogradGradInCompiledRegion(_RegionRule):
    code = "DL127"
    name = "autograd-grad-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "torch.autograd.grad(...) inside a compiled region graph-breaks on torch 2.13 unless "
        "trace_autograd_ops is set (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB9186",)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self.active = "autograd" in ctx.source

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        if self.ctx.resolve(node.func) != AUTOGRAD_GRAD:
            return
        if self.enabled_anywhere(TRACE_AUTOGRAD_OPS):
            return
        what = f"`{self.spell(node.func)}(...)` inside a compiled region"
        self.report_break(
            node,
            region,
            fullgraph=(
                f'{what} fails under fullgraph=True on torch 2.13 (Unsupported: "{_REFUSED}", '
                f"GB9186). {_INSTEAD}"
            ),
            breaks=(
                f'{what} graph-breaks on torch 2.13 (GB9186, "{_REFUSED}"): the graph ends '
                f"at the call, the gradient is computed eagerly. {_INSTEAD}"
            ),
            certain_only=True,
        )
