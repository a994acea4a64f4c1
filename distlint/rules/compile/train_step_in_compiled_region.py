"""DL106: ``loss.backward()``, ``optimizer.step()`` or ``optimizer.zero_grad()`` inside a
compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL106): each graph-breaks
(GB0123, GB0025, GB0008) and fails under ``fullgraph=True``. A file that sets
``torch._dynamo.config.trace_autograd_ops = True`` has ``loss.backward()`` traced
(tests/proof/test_proof_dl127.py, which also proves DL127's ``torch.autograd.grad`` there).
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region

_OPTIMIZER_HINTS = ("optim", "opt")


class TrainStepInCompiledRegion(_RegionRule):
    code = "DL106"
    name = "train-step-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "loss.backward(), optimizer.step() or zero_grad() inside a compiled region "
        "graph-break (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0007", "GB0008", "GB0025", "GB0123")

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._optimizers: frozenset[str] | None = None  # a walk of the file: when needed

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        func = node.func
        name = self.ctx.resolve(func)
        if name == "torch.autograd.backward":
            self._report(node, "autograd.backward", region)
            return
        if name is not None or not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method == "backward":
            if not self.enabled_anywhere("trace_autograd_ops"):  # else traced (as by DL127)
                self._report(node, "backward", region)
        elif method in ("step", "zero_grad") and self._is_optimizer(func.value):
            self._report(node, method, region)

    def _is_optimizer(self, receiver: cst.BaseExpression) -> bool:
        if isinstance(receiver, cst.Name):
            last = receiver.value
        elif isinstance(receiver, cst.Attribute):
            last = receiver.attr.value
        else:
            return False
        lowered = last.lower().lstrip("_")
        if lowered.startswith(_OPTIMIZER_HINTS) or lowered.endswith(("optimizer", "optim")):
            return True
        if self._optimizers is None:
            self._optimizers = _optimizer_names(self.ctx)
        return last in self._optimizers

    def _report(self, node: cst.Call, what: str, region: Region) -> None:
        spelled = self.spell(node)
        if what == "backward":
            effect = "GB0123, `Unsupported Tensor.backward() call`"
        elif what == "autograd.backward":
            effect = "GB0007, `Attempted to call function marked as skipped`"
        elif what == "step":
            effect = "GB0025: the optimizer step calls `torch._dynamo.graph_break()`"
        else:
            effect = "GB0008, `Attempted to inline function marked as skipped`"
        self.report_break(
            node,
            region,
            fullgraph=(
                f"`{spelled}` inside a compiled region fails under fullgraph=True on torch "
                f"2.13 ({effect}). Compile the model or the loss function only and run "
                "backward and the optimizer step outside it (or use compiled autograd)."
            ),
            breaks=(
                f"`{spelled}` inside a compiled region graph-breaks on torch 2.13 ({effect}). "
                "Compile the model or the loss function only and run backward and the "
                "optimizer step outside it (or use compiled autograd)."
            ),
        )


def _optimizer_names(ctx: RuleContext) -> frozenset[str]:
    """Names and ``self.`` attributes assigned from ``torch.optim.X(...)`` anywhere in the file."""
    from distlint.syntax.walker import children

    names: set[str] = set()
    stack: list[cst.CSTNode] = [ctx.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            name = ctx.imports.resolve(node.value.func) or ""
            if name.startswith("torch.optim.") and name.rpartition(".")[2][:1].isupper():
                for target in node.targets:
                    t = target.target
                    if isinstance(t, cst.Name):
                        names.add(t.value)
                    elif isinstance(t, cst.Attribute):
                        names.add(t.attr.value)
        stack.extend(children(node))
    return frozenset(names)
