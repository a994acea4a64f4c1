"""DL122: an ``nn.RNN`` / ``nn.GRU`` / ``nn.LSTM`` module called inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL122): Dynamo does not
trace these modules unless ``torch._dynamo.config.allow_rnn`` is set: ``Attempted to wrap RNN,
GRU, or LSTM`` (GB0014), a graph break around the call, and under ``fullgraph=True`` a compile
error. The break comes at the first use of the module, not only at its call: a method call
such as ``self.lstm.flatten_parameters()`` (the speech-model idiom) breaks the same way, and
after it Dynamo does not reach the module's call further down the same block (one GB0014, one
graph). The cells (``nn.LSTMCell``, ``nn.GRUCell``, ``nn.RNNCell``) are traced, their methods
too.
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
        "An nn.RNN / nn.GRU / nn.LSTM module called, or its method (flatten_parameters()) "
        "called, inside a compiled region: Dynamo does not trace it (graph break; "
        "fullgraph=True: compile error) unless allow_rnn is set."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0014",)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # a file that never names the classes builds none of them (aliases keep the name);
        # without this gate every ``self.x(...)`` in a region walked its class's assignments
        self.active = any(kind in ctx.source for kind in ("RNN", "GRU", "LSTM"))
        # reported method calls: (function, receiver as spelled) -> the (block, statement) each
        # stands in, unconditionally
        self._touches: dict[tuple[int, str], list[tuple[cst.CSTNode, cst.CSTNode]]] = {}

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        if self.config.get("allow_rnn") is True:
            return
        kind = self._recurrent(node.func)
        if kind is not None:
            if not self._touched_before(node.func):
                self._report(node, f"`{self.spell(node)}` runs an `nn.{kind}`", "the call", region)
            return
        func = node.func
        # a method call on ``self.lstm``: Dynamo breaks where the module is first used
        if not isinstance(func, cst.Attribute) or self_attribute(func.value) is None:
            return
        kind = self._recurrent(func.value)
        if kind is None:
            return
        self._report(
            node,
            f"`{self.spell(func.value)}.{func.attr.value}(...)` uses an `nn.{kind}`",
            "this first use of the module",
            region,
        )
        step = self._statement()
        if step is not None and self.ctx.function is not None:
            key = (id(self.ctx.function), self.spell(func.value))
            self._touches.setdefault(key, []).append(step)

    def _report(self, node: cst.Call, what: str, where: str, region: Region) -> None:
        what = f"{what} inside a compiled region"
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
                f"(GB0014, `Attempted to wrap RNN, GRU, or LSTM`), so the graph breaks at "
                f"{where} and the module runs eagerly. {instead}"
            ),
        )

    def _statement(self) -> tuple[cst.CSTNode, cst.CSTNode] | None:
        """The (block, statement) the visited node stands in when that statement is a simple
        line of the block (so runs whenever the block does)."""
        parents = self.ctx.parents
        for index in range(len(parents) - 1, 0, -1):
            if isinstance(parents[index], cst.SimpleStatementLine):
                block = parents[index - 1]
                return (block, parents[index]) if isinstance(block, cst.IndentedBlock) else None
            if isinstance(parents[index], (cst.BaseCompoundStatement, cst.Lambda)):
                return None
        return None

    def _touched_before(self, func: cst.BaseExpression) -> bool:
        """A reported use of the same module in an earlier statement of a block around this
        call, in the same function: Dynamo broke there and does not reach this call."""
        if self.ctx.function is None:
            return False
        touches = self._touches.get((id(self.ctx.function), self.spell(func)))
        if not touches:
            return False
        parents = self.ctx.parents
        for index in range(len(parents) - 1, 0, -1):
            block, statement = parents[index - 1], parents[index]
            if block is self.ctx.function:
                break
            if not isinstance(block, cst.IndentedBlock):
                continue
            body: list[cst.CSTNode] = list(block.body)
            for touched_block, touched in touches:
                if touched_block is block and body.index(touched) < body.index(statement):
                    return True
        return False

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
