"""DL107: varying shapes fed to a ``dynamic=False`` compiled callable (or one compiled while
``automatic_dynamic_shapes = False``) in a loop, or a module-global int rebound in a loop and
read in a compiled region: one recompile per value, then the recompile limit (8).

Observed on torch 2.13.0 (tests/proof/test_proof_dl107_109.py, fixtures/DL107): past the limit
the function silently runs eagerly; under ``fullgraph=True`` the call fails with
``FailOnRecompileLimitHit``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Location, Severity
from distlint.rules.compile._analysis import function_nodes
from distlint.rules.compile._bindings import Binding, compiled_bindings, file_functions
from distlint.rules.compile._region import _RegionRule
from distlint.rules.compile._script_flow import Event, Flow, flows, names_in
from distlint.rules.context import RuleContext
from distlint.semantic.regions import Resolver
from distlint.syntax.imports import scope_statements
from distlint.syntax.walker import descendants, nodes_with_parents

FACTORIES = frozenset(
    f"torch.{name}"
    for name in ("randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "tensor")
)
SHAPE_METHODS = frozenset(
    {"view", "reshape", "expand", "narrow", "new_zeros", "new_ones", "new_empty", "repeat"}
)
RECOMPILE_LIMIT = 8


def _loop_count(loop: cst.CSTNode) -> int | None:
    """How many values a for loop takes, when its iterable is a literal range/list/tuple."""
    if not isinstance(loop, cst.For):
        return None
    it = loop.iter
    if isinstance(it, (cst.List, cst.Tuple, cst.Set)):
        values = [cst.Module([]).code_for_node(e.value) for e in it.elements]
        return len(set(values))
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range":
        bounds = []
        for arg in it.args:
            value = arg.value
            if isinstance(value, cst.Integer):
                bounds.append(int(value.value, 0))
            else:
                return None
        if not bounds or len(bounds) > 3:
            return None
        return len(range(*bounds))
    return None


def _loop_targets(loop: cst.CSTNode) -> set[str]:
    if isinstance(loop, cst.For):
        return names_in(loop.target)
    return set()


class RecompileLimit(_RegionRule):
    code = "DL107"
    name = "recompile-limit"
    severity = Severity.WARNING
    summary = (
        "A compiled callable that recompiles for every new shape (dynamic=False) or every "
        "new value of a module-global int hits the recompile limit (8): eager fallback, "
        "fullgraph=True: FailOnRecompileLimitHit."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0039",)

    def visit_Module(self, node: cst.Module) -> None:
        self._globals = _rebound_global_ints(self.ctx)
        self._reported: set[tuple[int, str]] = set()
        bindings = compiled_bindings(self.ctx)
        if not bindings:
            return
        config = self.ctx.dynamo_config
        for flow in flows(self.ctx):
            for event in flow.of("call"):
                for binding in bindings.get(event.name, ()):
                    if self._static(binding, config):
                        self._check_call(flow, event, binding)
                        break

    def _static(self, binding: Binding, config: dict[str, object]) -> bool:
        if binding.root.dynamic is False:
            return True
        if binding.root.dynamic is True:
            return False
        flags = dict(config)
        if self.ctx.facts is not None:
            flags.update(self.ctx.facts.dynamo_flags_for(binding.root.target))
        return flags.get("automatic_dynamic_shapes") is False

    def _check_call(self, flow: Flow, event: Event, binding: Binding) -> None:
        call = event.node
        assert isinstance(call, cst.Call)
        for loop in reversed(event.loops):
            variables = _loop_targets(loop)
            if not variables:
                continue
            count = _loop_count(loop)
            if count is not None and count <= RECOMPILE_LIMIT:
                continue
            if any(m.loops and loop in m.loops for m in flow.of("mark")):
                return  # mark_dynamic in the loop: one dynamic graph
            local = _loop_assignments(loop)
            for arg in call.args:
                varying = _shape_varies(arg.value, variables, local, self.ctx.resolve)
                if varying is None:
                    continue
                info = binding.root
                fullgraph = info.fullgraph
                why = (
                    "dynamic=False"
                    if info.dynamic is False
                    else "`automatic_dynamic_shapes = False`"
                )
                if fullgraph:
                    effect = (
                        "after 8 shapes (`recompile_limit`) the next one fails with "
                        "`FailOnRecompileLimitHit: Hard failure due to fullgraph=True`"
                    )
                else:
                    effect = (
                        "after 8 shapes (`recompile_limit`) it silently runs eagerly "
                        "(only a log warning)"
                    )
                self.report(
                    arg.value,
                    f"`{binding.name}` is compiled with {why} and gets a shape that changes "
                    f"with `{varying}` in this loop: torch 2.13 recompiles for every new "
                    f"shape and {effect}. Drop `dynamic=False` (the default turns dynamic "
                    "after one recompile), mark the dimension with "
                    "`torch._dynamo.mark_dynamic(x, 0)`, or pad to a few fixed sizes.",
                    severity=Severity.ERROR if fullgraph else None,
                    related=self._related(binding),
                )
                return

    def _related(self, binding: Binding) -> tuple[Location, ...]:
        facts = self.ctx.facts
        region = facts.region_of(binding.root.target) if facts is not None else None
        return region.related if region is not None else ()

    # -- module-global ints read in a region --

    def visit_Name(self, node: cst.Name) -> None:
        if node.value not in getattr(self, "_globals", {}):
            return  # asked first: most files rebind no global int (the region is per name)
        region = self.ctx.region
        if region is None:
            return
        func = self.ctx.function
        if func is None or not _is_load(node, self.ctx.parents):
            return
        guess = self.guess()
        if node.value in guess.assigned or node.value in guess.params:
            return
        key = (id(func), node.value)
        if key in self._reported:
            return
        self._reported.add(key)
        rebinding = self._globals[node.value]
        if region.fullgraph:
            effect = (
                "the 9th value fails with `FailOnRecompileLimitHit: Hard failure due to "
                "fullgraph=True`"
            )
        else:
            effect = "from the 9th value on the function silently runs eagerly"
        self.report(
            node,
            f"`{node.value}` is a module-global int rebound in a loop and read in a compiled "
            "region: torch 2.13 guards on its value (`G['"
            f"{node.value}'] == ...`) and recompiles for every new value; {effect} "
            "(`recompile_limit` 8). Pass it as an argument (a Python int argument turns "
            "dynamic after one recompile) or keep it in a tensor.",
            severity=Severity.ERROR if region.fullgraph else None,
            related=region.related,
            related_nodes=((rebinding, "rebound here"),),
        )


def _is_load(node: cst.Name, parents: list[cst.CSTNode]) -> bool:
    parent = parents[-1] if parents else None
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, (cst.Arg, cst.Param)) and (
        getattr(parent, "keyword", None) is node or getattr(parent, "name", None) is node
    ):
        return False
    if isinstance(parent, (cst.AssignTarget, cst.NameItem, cst.ImportAlias, cst.FunctionDef)):
        return False
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node:
        return False
    return not isinstance(parent, (cst.For, cst.CompFor)) or parent.target is not node


def _int_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, cst.Integer)


def _rebound_global_ints(ctx: RuleContext) -> dict[str, cst.CSTNode]:
    """Module-level int names that some loop rebinds (module code, or a ``global`` function)."""
    ints: set[str] = set()
    for stmt in scope_statements(ctx.module.body):
        if isinstance(stmt, cst.Assign) and _int_literal(stmt.value):
            for assign_target in stmt.targets:
                if isinstance(assign_target.target, cst.Name):
                    ints.add(assign_target.target.value)
    if not ints:
        return {}
    found: dict[str, cst.CSTNode] = {}
    floats: set[str] = set()
    scopes: list[tuple[cst.CSTNode, set[str]]] = [(ctx.module, ints)]
    for func in file_functions(ctx).values():
        declared = {
            item.name.value
            for node, _ in function_nodes(func)
            if isinstance(node, cst.Global)
            for item in node.names
        }
        if declared & ints:
            scopes.append((func, declared & ints))
    for scope, names in scopes:
        nodes = (
            function_nodes(scope)
            if isinstance(scope, cst.FunctionDef)
            else nodes_with_parents(scope)
        )
        for node, parents in nodes:
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
                value: cst.BaseExpression | None = node.value
            elif isinstance(node, cst.AugAssign):
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if not isinstance(target, cst.Name) or target.value not in names:
                    continue
                if isinstance(value, cst.Float):
                    floats.add(target.value)  # a float global turns dynamic (2 compiles)
                if any(isinstance(p, (cst.For, cst.While)) for p in parents):
                    found.setdefault(target.value, node)
    return {name: node for name, node in found.items() if name not in floats}


def _loop_assignments(loop: cst.CSTNode) -> dict[str, cst.BaseExpression]:
    found: dict[str, cst.BaseExpression] = {}
    body = loop.body if isinstance(loop, (cst.For, cst.While)) else None
    if body is None:
        return found
    for node, _ in nodes_with_parents(body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                found[target.value] = node.value
    return found


def _shape_varies(
    expr: cst.BaseExpression,
    variables: set[str],
    local: dict[str, cst.BaseExpression],
    resolve: Resolver,
    depth: int = 0,
) -> str | None:
    """The loop variable that decides a size of ``expr`` (a factory size, a slice bound, a
    reshape), or None."""
    if depth > 3:
        return None
    if isinstance(expr, cst.Name):
        value = local.get(expr.value)
        if value is not None:
            return _shape_varies(value, variables, local, resolve, depth + 1)
        return None
    for node in descendants(expr):
        if isinstance(node, cst.Call):
            name = resolve(node.func)
            is_method = (
                name is None
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in SHAPE_METHODS
            )
            if name in FACTORIES or is_method:
                for arg in node.args:
                    if arg.keyword is not None and arg.keyword.value not in ("size",):
                        continue
                    hit = _variable_in(arg.value, variables, local)
                    if hit is not None:
                        return hit
        elif isinstance(node, cst.Slice):
            for bound in (node.lower, node.upper):
                if bound is not None:
                    hit = _variable_in(bound, variables, local)
                    if hit is not None:
                        return hit
    return None


SHAPE_READS = frozenset({"shape", "size", "numel", "dim", "ndim"})


def _size_names(expr: cst.BaseExpression) -> set[str]:
    """The names whose *value* ``expr`` uses, leaving out those it reads only for a shape
    (``p.shape[0]``, ``p.size(0)``, ``p.numel()``, ``len(p)``): a size taken from each element
    of a collection (a parameter list) takes as many values as the collection has distinct
    shapes, usually a handful; nanochat's fused AdamW step compiles once per parameter shape,
    well under the limit."""
    shape_reads: set[int] = set()  # id() of the Name nodes read only for their shape
    occurrences: list[cst.Name] = []
    for node in descendants(expr):
        if isinstance(node, cst.Name):
            occurrences.append(node)
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            if node.attr.value in SHAPE_READS:
                shape_reads.add(id(node.value))
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == "len"
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.Name)
        ):
            shape_reads.add(id(node.args[0].value))
    return {name.value for name in occurrences if id(name) not in shape_reads}


def _variable_in(
    expr: cst.BaseExpression, variables: set[str], local: dict[str, cst.BaseExpression]
) -> str | None:
    names = _size_names(expr)
    for name in sorted(names & variables):
        return name
    for name in sorted(names):
        value = local.get(name)
        if value is not None and _size_names(value) & variables:
            return sorted(_size_names(value) & variables)[0]
    return None
