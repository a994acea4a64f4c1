"""DL118: a function handed to ``torch.utils.checkpoint.checkpoint`` or ``torch.cond`` from a
compiled region mutates state that outlives it: a module-level or enclosing-scope container
(``.append``, ``.update``, item writes...), a ``self.<attr>`` container, or a ``global`` /
``nonlocal`` name.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL118): Dynamo traces
such bodies as subgraphs that must be free of side effects: ``HOP: Unsafe side effect``
(GB0067). In a checkpoint body that is a graph break (the checkpoint is not compiled) and under
``fullgraph=True`` a compile error; in a ``torch.cond`` branch it fails even without
``fullgraph``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import bound_values, self_attribute_values
from distlint.rules.compile._hop_bodies import COND, HopBody, hop_bodies
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import scope_statements, self_attribute
from distlint.syntax.walker import nodes_with_parents, parameters

MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "appendleft",
        "extendleft",
    }
)
CONTAINER_CALLS = frozenset(
    {
        "list",
        "dict",
        "set",
        "collections.deque",
        "collections.defaultdict",
        "collections.OrderedDict",
        "collections.Counter",
    }
)


class HopBodySideEffect(_RegionRule):
    code = "DL118"
    name = "side-effect-in-checkpoint-body"
    severity = Severity.WARNING
    summary = (
        "A function given to torch.utils.checkpoint.checkpoint / torch.cond from a compiled "
        "region mutates outside state: the operator is not compiled (fullgraph=True, "
        "torch.cond: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0067",)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        for hop in hop_bodies(self.ctx.resolve, self.ctx.module, self.ctx.parents, node):
            for effect, what in self._effects(hop):
                if id(effect) not in self._reported:
                    self._reported.add(id(effect))
                    self._report(effect, what, hop, region)

    # -- what the body changes --------------------------------------------------------------

    def _effects(self, hop: HopBody) -> list[tuple[cst.CSTNode, str]]:
        body = hop.body
        local = _locals(body)
        declared: set[str] = set()
        found: list[tuple[cst.CSTNode, str]] = []
        for node, _ in nodes_with_parents(body):
            if node is body:
                continue
            if isinstance(node, (cst.Global, cst.Nonlocal)):
                declared |= {item.name.value for item in node.names}
        for node, _ in nodes_with_parents(body):
            if node is body:
                continue
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                method = node.func.attr.value
                if method in MUTATORS:
                    owner = self._outside_container(node.func.value, hop, local)
                    if owner is not None:
                        found.append((node, f"`{owner}.{method}(...)`"))
            elif isinstance(node, (cst.Assign, cst.AugAssign, cst.Del)):
                for target in _targets(node):
                    if isinstance(target, cst.Subscript):
                        owner = self._outside_container(target.value, hop, local)
                        if owner is not None:
                            found.append((target, f"the item write to `{owner}`"))
                    elif isinstance(target, cst.Name) and target.value in declared:
                        found.append((target, f"the write to the outer name `{target.value}`"))
        return found

    def _outside_container(
        self, expr: cst.BaseExpression, hop: HopBody, local: set[str]
    ) -> str | None:
        """The spelling of ``expr`` when it is a container that outlives the body."""
        if isinstance(expr, cst.Name):
            name = expr.value
            if name in local:
                return None
            if hop.nested and self._enclosing_container(name):
                return name
            if self._module_container(name):
                return name
            return None
        attr = self_attribute(expr)
        if attr is not None and "self" in _param_names(hop.body) and self._self_container(attr):
            return f"self.{attr}"
        return None

    def _is_container(self, value: cst.BaseExpression | None) -> bool:
        if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp)):
            return True
        if isinstance(value, cst.Call):
            name = self.ctx.imports.resolve(value.func)
            if name in CONTAINER_CALLS:
                return True
            return isinstance(value.func, cst.Name) and value.func.value in ("list", "dict", "set")
        return False

    def _only_containers(self, values: list[cst.BaseExpression | None]) -> bool:
        return bool(values) and all(self._is_container(v) for v in values)

    def _module_container(self, name: str) -> bool:
        return self._only_containers(bound_values(scope_statements(self.ctx.module.body), name))

    def _enclosing_container(self, name: str) -> bool:
        for parent in reversed(self.ctx.parents):
            if isinstance(parent, cst.FunctionDef):
                values = bound_values(scope_statements(parent.body.body), name)
                if values:
                    return self._only_containers(values)
        return False

    def _self_container(self, attr: str) -> bool:
        values = self_attribute_values(self.ctx.parents, attr)
        return False if values is None else self._only_containers(values)

    # -- the finding ------------------------------------------------------------------------

    def _report(self, node: cst.CSTNode, what: str, hop: HopBody, region: Region) -> None:
        body = hop.body.name.value
        if hop.operator == COND:
            message = (
                f"{what} in `{body}`, a `torch.cond` branch of a compiled region, mutates state "
                "outside the branch: torch 2.13 fails even without fullgraph=True "
                "(`UncapturedHigherOrderOpError`, `HOP: Unsafe side effect`, GB0067). Return "
                "the value from the branch instead."
            )
            self.report(node, message, severity=Severity.ERROR, related=region.related)
            return
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what} in `{body}`, checkpointed (`torch.utils.checkpoint.checkpoint`) by a "
                "fullgraph=True region, mutates state outside the checkpoint: torch 2.13 fails "
                "(`Unsupported: HOP: Unsafe side effect`, GB0067). Return the value from the "
                "checkpointed function instead (it also runs again during backward)."
            ),
            breaks=(
                f"{what} in `{body}`, checkpointed (`torch.utils.checkpoint.checkpoint`) by a "
                "compiled region, mutates state outside the checkpoint: torch 2.13 graph-breaks "
                "(GB0067, `HOP: Unsafe side effect`) and does not compile the checkpoint. "
                "Return the value from the checkpointed function instead (it also runs again "
                "during backward)."
            ),
        )


def _targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, cst.AugAssign):
        return [node.target]
    if isinstance(node, cst.Del):
        target = node.target
        if isinstance(target, cst.Tuple):
            return [e.value for e in target.elements]
        return [target]
    return []


def _param_names(func: cst.FunctionDef) -> set[str]:
    return {p.name.value for p in parameters(func.params)}


def _locals(func: cst.FunctionDef) -> set[str]:
    """Parameters and names the body binds itself (not declared global/nonlocal)."""
    names = _param_names(func)
    declared: set[str] = set()
    for node, _ in nodes_with_parents(func):
        if isinstance(node, (cst.Global, cst.Nonlocal)):
            declared |= {item.name.value for item in node.names}
        elif isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            for target in targets:
                if isinstance(target.target, cst.Name):
                    names.add(target.target.value)
        elif isinstance(node, (cst.For, cst.CompFor)) and isinstance(node.target, cst.Name):
            names.add(node.target.value)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            if isinstance(node.asname.name, cst.Name):
                names.add(node.asname.name.value)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not func:
            names.add(node.name.value)
    return names - declared
