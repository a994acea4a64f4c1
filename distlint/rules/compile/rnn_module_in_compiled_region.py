"""DL122: an ``nn.RNN`` / ``nn.GRU`` / ``nn.LSTM`` module called inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL122): Dynamo does not
trace these modules unless ``torch._dynamo.config.allow_rnn`` is set: ``Attempted to wrap RNN,
GRU, or LSTM`` (GB0014), a graph break around the call, and under ``fullgraph=True`` a compile
error. The cells (``nn.LSTMCell``, ``nn.GRUCell``, ``nn.RNNCell``) are traced.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import bound_values, self_attribute_values
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import scope_statements, self_attribute

# what Dynamo refuses to wrap: torch.nn's recurrent modules (their cells are traced)
RECURRENT = {
    f"{prefix}.{name}": name
    for prefix in ("torch.nn", "torch.nn.modules.rnn")
    for name in ("RNN", "GRU", "LSTM")
}


class RnnModuleInCompiledRegion(_RegionRule):
    code = "DL122"
    name = "rnn-module-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "An nn.RNN / nn.GRU / nn.LSTM module called inside a compiled region: Dynamo does not "
        "trace it (graph break; fullgraph=True: compile error) unless allow_rnn is set."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0014",)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # a file that never names the classes builds none of them (aliases keep the name);
        # without this gate every ``self.x(...)`` in a region walked its class's assignments
        self.active = any(kind in ctx.source for kind in ("RNN", "GRU", "LSTM"))

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        if self.config.get("allow_rnn") is True:
            return
        kind = self._recurrent(node.func)
        if kind is None:
            return
        spelled = self.spell(node)
        what = f"`{spelled}` runs an `nn.{kind}` inside a compiled region"
        instead = (
            "Set `torch._dynamo.config.allow_rnn = True` (experimental support), or run the "
            "recurrent module outside the compiled function."
        )
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what}: under fullgraph=True this fails on torch 2.13 (`Unsupported: "
                f"Attempted to wrap RNN, GRU, or LSTM`, GB0014). {instead}"
            ),
            breaks=(
                f"{what}: Dynamo does not trace RNN, GRU or LSTM modules on torch 2.13 "
                f"(GB0014, `Attempted to wrap RNN, GRU, or LSTM`), so the graph breaks around "
                f"the call and the module runs eagerly. {instead}"
            ),
        )

    def _recurrent(self, func: cst.BaseExpression) -> str | None:
        """The recurrent classes ``func`` may hold (``"GRU` / `nn.RNN"``) when every value it
        is given is one of them or None: ``self.lstm`` assigned in the class, a local name,
        or the construction itself."""
        if isinstance(func, cst.Call):
            values: list[cst.BaseExpression | None] | None = [func]
        elif (attr := self_attribute(func)) is not None:
            values = self_attribute_values(self.ctx.parents, attr)
        elif isinstance(func, cst.Name) and self.ctx.function is not None:
            values = bound_values(scope_statements(self.ctx.function.body.body), func.value)
        else:
            return None
        kinds: set[str] = set()
        for value in values or ():
            built = self._constructed(value)
            if built is None:
                return None
            kinds |= built
        return "` / `nn.".join(sorted(kinds)) if kinds else None

    def _constructed(self, value: cst.BaseExpression | None) -> frozenset[str] | None:
        """{"LSTM"} for ``nn.LSTM(...)`` (the union of both sides of a conditional
        expression), the empty set for ``None``, None for anything else."""
        if isinstance(value, cst.Name) and value.value == "None":
            return frozenset()
        if isinstance(value, cst.IfExp):
            body, orelse = self._constructed(value.body), self._constructed(value.orelse)
            return None if body is None or orelse is None else body | orelse
        if isinstance(value, cst.Call):
            kind = RECURRENT.get(self.ctx.imports.resolve(value.func) or "")
            return frozenset({kind}) if kind is not None else None
        return None
