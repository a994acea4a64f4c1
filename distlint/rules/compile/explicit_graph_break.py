"""DL111: an explicit ``torch._dynamo.graph_break()`` (or ``skip_frame()`` /
``step_unsupported()``) that a compiled region reaches.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL111): the call ends the
graph (GB0025), or drops the whole frame to eager (``skip_frame`` GB4297, ``step_unsupported``
GB4636); under ``fullgraph=True`` compilation fails (GB0025, GB4297, GB0284). Inside a body
handed to ``torch.utils.checkpoint.checkpoint`` the checkpoint is not compiled; inside a
``torch.cond`` branch compilation fails even without ``fullgraph``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._hop_bodies import CHECKPOINT, COND, hop_bodies
from distlint.rules.compile._region import _locally_bound, _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import Resolver
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import scope_statements
from distlint.syntax.shapes import is_name
from distlint.syntax.walker import nodes_with_parents

# name -> (GB id without fullgraph, GB id under fullgraph, what happens without fullgraph)
EXPLICIT_BREAKS = {
    "torch._dynamo.graph_break": (
        "0025",
        "0025",
        "the graph ends here and a new one starts after it",
    ),
    "torch._dynamo.skip_frame": (
        "4297",
        "4297",
        "Dynamo skips the whole function: none of it is compiled",
    ),
    "torch._dynamo.step_unsupported": (
        "4636",
        "0284",
        "Dynamo skips the whole function: none of it is compiled",
    ),
}
_ALIASES = {f"torch._dynamo.decorators.{name.rpartition('.')[2]}": name for name in EXPLICIT_BREAKS}


def explicit_break(resolve: Resolver, node: cst.Call) -> str | None:
    """The canonical name when ``node`` calls one of Dynamo's explicit break functions."""
    name = resolve(node.func)
    if name is None:
        return None
    name = _ALIASES.get(name, name)
    return name if name in EXPLICIT_BREAKS else None


class ExplicitGraphBreak(_RegionRule):
    code = "DL111"
    name = "explicit-graph-break"
    severity = Severity.WARNING
    summary = (
        "torch._dynamo.graph_break() (or skip_frame() / step_unsupported()) reached from a "
        "compiled region breaks the graph (fullgraph=True, torch.cond: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "very-high"
    graph_breaks = ("GB0025", "GB0284", "GB4297", "GB4636")

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()
        self._assigned: dict[str, list[cst.BaseExpression]] | None = None

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        name = explicit_break(self.ctx.resolve, node)
        if name is not None:
            self._report(node, name, region, None)
            return
        for hop in hop_bodies(self.ctx.resolve, self.ctx.module, self.ctx.parents, node):
            for inner, _ in nodes_with_parents(hop.body):
                if isinstance(inner, cst.Call):
                    found = explicit_break(self.ctx.imports.resolve, inner)
                    if found is not None:
                        self._report(inner, found, region, hop.operator)

    @in_region
    def visit_Attribute(self, node: cst.Attribute, region: Region) -> None:
        """``obj.prop`` / ``obj.x = v`` where ``obj``'s class (of this file) runs a break in its
        property getter or its ``__setattr__``: Dynamo inlines those too."""
        parents = self.ctx.parents
        parent = parents[-1] if parents else None
        if isinstance(parent, cst.Call) and parent.func is node:
            return  # a method call: followed by the call graph
        cls = self._class_of(node.value)
        if cls is None:
            return
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            hook = _method(cls, "__setattr__", self.ctx.module, set())
            via = "__setattr__"
        else:
            hook = _method(cls, node.attr.value, self.ctx.module, set(), getter=True)
            via = "property"
        if hook is None:
            return
        for inner, _ in nodes_with_parents(hook):
            if isinstance(inner, cst.Call):
                found = explicit_break(self.ctx.imports.resolve, inner)
                if found is not None:
                    self._report(inner, found, region, via)

    def _class_of(self, receiver: cst.BaseExpression) -> cst.ClassDef | None:
        """The class of ``self`` (the enclosing class), or of a module-level ``NAME = C()``."""
        if not isinstance(receiver, cst.Name):
            return None
        if receiver.value == "self":
            for parent in reversed(self.ctx.parents):
                if isinstance(parent, cst.ClassDef):
                    return parent
            return None
        if _locally_bound(self.ctx, receiver.value):
            return None
        values = self._module_assignments().get(receiver.value, [])
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return None
        func = values[0].func
        return _module_class(self.ctx.module, func.value) if isinstance(func, cst.Name) else None

    def _module_assignments(self) -> dict[str, list[cst.BaseExpression]]:
        """Module-level ``NAME = value`` values by name, read once per file (a scan of the
        module per call was quadratic: a file of 800 ``lib.define(...)`` calls)."""
        if self._assigned is None:
            self._assigned = {}
            for stmt in scope_statements(self.ctx.module.body):
                if isinstance(stmt, cst.Assign):
                    names = {t.target.value for t in stmt.targets if isinstance(t.target, cst.Name)}
                    for name in names:
                        self._assigned.setdefault(name, []).append(stmt.value)
        return self._assigned

    def _report(self, node: cst.Call, name: str, region: Region, operator: str | None) -> None:
        if id(node) in self._reported:
            return
        self._reported.add(id(node))
        gb, gb_fullgraph, effect = EXPLICIT_BREAKS[name]
        spelled = f"`{self.spell(node.func)}()`"
        if operator in ("property", "__setattr__"):
            where = (
                "in a property getter read" if operator == "property" else "in `__setattr__`, run"
            )
            self.report_break(
                node,
                region,
                fullgraph=(
                    f"{spelled} {where} from a fullgraph=True region fails to compile on torch "
                    f"2.13 (`Unsupported`, GB{gb_fullgraph}): Dynamo inlines it. Remove it, or "
                    "drop fullgraph=True for this region."
                ),
                breaks=(
                    f"{spelled} {where} from a compiled region graph-breaks on torch 2.13 "
                    f"(GB{gb}): Dynamo inlines it, and {effect}. Remove it unless the break is "
                    "intended."
                ),
            )
            return
        if operator == COND:
            message = (
                f"{spelled} in a `torch.cond` branch of a compiled region fails on torch 2.13 "
                f"even without fullgraph=True: `UncapturedHigherOrderOpError` (GB{gb}, "
                "`torch.cond` must be captured completely). Remove the call from the branch."
            )
            self.report(node, message, severity=Severity.ERROR, related=region.related)
            return
        if operator == CHECKPOINT:
            where = (
                "in a function checkpointed (`torch.utils.checkpoint.checkpoint`) by a "
                "fullgraph=True region"
            )
            breaks = (
                f"{spelled} in a function checkpointed (`torch.utils.checkpoint.checkpoint`) by "
                f"a compiled region graph-breaks on torch 2.13 (GB{gb}): the checkpoint is not "
                "compiled and runs eagerly. Remove the call."
            )
        else:
            where = "reached from a fullgraph=True region"
            breaks = (
                f"{spelled} reached from a compiled region graph-breaks on torch 2.13 "
                f"(GB{gb}): {effect}. Remove it unless the break is intended."
            )
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{spelled} {where} fails to compile on torch 2.13 (`Unsupported`, "
                f"GB{gb_fullgraph}). Remove it, or drop fullgraph=True for this region."
            ),
            breaks=breaks,
        )


def _module_class(module: cst.Module, name: str) -> cst.ClassDef | None:
    found = [s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == name]
    return found[0] if len(found) == 1 else None


def _chain(cls: cst.ClassDef, module: cst.Module, seen: set[str]) -> list[cst.ClassDef]:
    """The class and its bases of this file, in lookup order (bases by name)."""
    if cls.name.value in seen:
        return []
    seen.add(cls.name.value)
    order = [cls]
    for base in cls.bases:
        if base.keyword is None and isinstance(base.value, cst.Name):
            parent = _module_class(module, base.value.value)
            if parent is not None:
                order += _chain(parent, module, seen)
    return order


def _method(
    cls: cst.ClassDef, name: str, module: cst.Module, seen: set[str], *, getter: bool = False
) -> cst.FunctionDef | None:
    """The first method ``name`` in the class's lookup order (with ``getter``: the first one
    that is a ``@property``)."""
    for owner in _chain(cls, module, seen):
        for stmt in owner.body.body:
            if (
                isinstance(stmt, cst.FunctionDef)
                and stmt.name.value == name
                and (not getter or any(is_name(d.decorator, "property") for d in stmt.decorators))
            ):
                return stmt
    return None
