"""DL107-DL109: compiled code that keeps a state the rest of the script changes under it.

* DL107: varying shapes fed to a ``dynamic=False`` callable, or a module-global int rebound
  in a loop and read in the region: one recompile per value, then the recompile limit (8).
* DL108: ``dist.get_rank()`` / ``get_world_size()`` / ``is_initialized()`` folded into a region
  that runs before ``init_process_group`` (or before the group is re-created): no guard, stale.
* DL109: a forward hook registered, after the first compiled call, on a module that runs
  inside the compiled frame: it never fires.

Every fact was observed on torch 2.13.0+cpu and is re-observed by
tests/proof/test_proof_dl107_109.py; see the rules' pages for the exact messages. These rules
follow the file's script flow: the statements of the module (and of each function) in source
order, where two events inside one loop may run in either order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Severity
from distlint.rules.compile._analysis import function_nodes, own_nodes
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.link import Root
from distlint.syntax.imports import scope_statements
from distlint.syntax.positions import node_ranges
from distlint.syntax.walker import descendants

DIST = "torch.distributed."
DIST_CONSTANTS = {
    "torch.distributed.get_rank": "dist.get_rank()",
    "torch.distributed.get_world_size": "dist.get_world_size()",
    "torch.distributed.is_initialized": "dist.is_initialized()",
}
RESETS = frozenset({"torch._dynamo.reset", "torch.compiler.reset"})
MARK_DYNAMIC = frozenset(
    {
        "torch._dynamo.mark_dynamic",
        "torch._dynamo.maybe_mark_dynamic",
        "torch._dynamo.decorators.mark_dynamic",
        "torch._dynamo.decorators.maybe_mark_dynamic",
    }
)
FACTORIES = frozenset(
    f"torch.{name}"
    for name in ("randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "tensor")
)
SHAPE_METHODS = frozenset(
    {"view", "reshape", "expand", "narrow", "new_zeros", "new_ones", "new_empty", "repeat"}
)
MODULE_ITERATORS = frozenset({"modules", "named_modules", "children", "named_children"})
HOOK_METHODS = frozenset({"register_forward_hook", "register_forward_pre_hook"})
RECOMPILE_LIMIT = 8


# -- compiled callables bound to names in this file ------------------------------------------------


@dataclass
class Binding:
    """A name that holds a compiled callable: calling it runs the compiled region."""

    name: str
    root: Root
    origin: str | None = None  # ``m`` in ``c = torch.compile(m)``: the eager module it wraps
    node: cst.CSTNode | None = None


def compiled_bindings(ctx: RuleContext) -> dict[str, list[Binding]]:
    """Names bound to compiled callables, from the linked roots at this file's compile sites."""
    return ctx.memo(_compiled_bindings)


def _compiled_bindings(ctx: RuleContext) -> dict[str, list[Binding]]:
    found: dict[str, list[Binding]] = {}
    facts = ctx.facts
    roots = [r for r in facts.roots if r.info.path == ctx.path] if facts is not None else []
    if roots:
        candidates: list[tuple[cst.CSTNode, str, str | None, str]] = []
        for node in descendants(ctx.module):
            if isinstance(node, cst.FunctionDef):
                for decorator in node.decorators:
                    candidates.append((decorator, node.name.value, None, "decorator"))
            elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                target = node.targets[0].target if len(node.targets) == 1 else None
                if isinstance(target, cst.Name):
                    first = _first_positional(node.value)
                    origin = first.value if isinstance(first, cst.Name) else None
                    candidates.append((node.value, target.value, origin, "call"))
            elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
                func = node.value.func
                if (
                    isinstance(func, cst.Attribute)
                    and func.attr.value == "compile"
                    and isinstance(func.value, cst.Name)
                ):
                    candidates.append((node.value, func.value.value, None, "method"))
        ranges = node_ranges(ctx.module, [c[0] for c in candidates])
        by_line: dict[int, list[Root]] = {}
        for root in roots:
            by_line.setdefault(root.info.span.start.line, []).append(root)
        for node, name, origin, kind in candidates:
            found_range = ranges.get(node)
            if found_range is None:
                continue
            for root in by_line.get(found_range.start_line, ()):
                if (kind == "decorator") != (root.info.kind == "decorator"):
                    continue
                found.setdefault(name, []).append(Binding(name, root, origin, node))
    return found


def _first_positional(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def region_functions(ctx: RuleContext, root: Root) -> dict[str, cst.FunctionDef]:
    """Functions of this file in ``root``'s compiled region, by id."""
    facts = ctx.facts
    if facts is None:
        return {}
    ids = {fid for fid, infos in facts.regions.items() if root.info in infos}
    return {fid: func for fid, func in file_functions(ctx).items() if fid in ids}


def file_functions(ctx: RuleContext) -> dict[str, cst.FunctionDef]:
    """Every function definition of the file by id (``module:qualname``)."""
    return ctx.memo(_file_functions)


def _file_functions(ctx: RuleContext) -> dict[str, cst.FunctionDef]:
    found: dict[str, cst.FunctionDef] = {}

    def walk(body: object, prefix: str) -> None:
        for stmt in scope_statements(body):  # type: ignore[arg-type]
            if isinstance(stmt, cst.FunctionDef):
                qualname = prefix + stmt.name.value
                found[f"{ctx.module_key}:{qualname}"] = stmt
                if isinstance(stmt.body, cst.IndentedBlock):
                    walk(stmt.body.body, qualname + ".<locals>.")
            elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
                walk(stmt.body.body, prefix + stmt.name.value + ".")

    walk(ctx.module.body, "")
    return found


# -- script flow ---------------------------------------------------------------------------------


@dataclass
class Event:
    kind: str  # call | init | destroy | reset | hook | assign | mark
    node: cst.CSTNode
    index: int
    loops: tuple[cst.CSTNode, ...]  # enclosing for/while loops of the flow, outermost first
    name: str = ""  # call: the binding name called; hook: the receiver's root name
    receiver: cst.BaseExpression | None = None


@dataclass
class Flow:
    """The events of one scope (module code or one function body) in source order."""

    events: list[Event] = field(default_factory=list)
    loop_bindings: dict[int, dict[str, cst.BaseExpression]] = field(default_factory=dict)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]


def may_precede(a: Event, b: Event) -> bool:
    """``a`` may run before ``b``: earlier in source, or both repeated by one loop."""
    return a.index < b.index or any(loop in b.loops for loop in a.loops)


def flows(ctx: RuleContext) -> list[Flow]:
    return ctx.memo(_flows)


def _flows(ctx: RuleContext) -> list[Flow]:
    names = set(compiled_bindings(ctx))
    result = [_flow(ctx, ctx.module, names)]
    for func in file_functions(ctx).values():
        result.append(_flow(ctx, func, names))
    return result


def _flow(ctx: RuleContext, scope: cst.CSTNode, names: set[str]) -> Flow:
    resolve = ctx.imports.resolve
    flow = Flow()
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []
    from distlint.syntax.walker import children

    body = scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body  # type: ignore[union-attr]
    if isinstance(scope, cst.FunctionDef) and not isinstance(scope.body, cst.IndentedBlock):
        return flow
    for stmt in reversed(list(body)):
        stack.append((stmt, ()))
    while stack:
        node, loops = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            _note_call(flow, node, loops, names, resolve)
        inner = (*loops, node) if isinstance(node, (cst.For, cst.While)) else loops
        for child in reversed(children(node)):
            # the iterable of a for loop runs once, before the loop
            child_loops = loops if isinstance(node, cst.For) and child is node.iter else inner
            stack.append((child, child_loops))
    return flow


def _note_call(flow, node: cst.Call, loops, names: set[str], resolve) -> None:  # type: ignore[no-untyped-def]
    def add(kind: str, name: str = "", receiver: cst.BaseExpression | None = None) -> None:
        flow.events.append(Event(kind, node, len(flow.events), loops, name, receiver))

    func = node.func
    resolved = resolve(func)
    if resolved == DIST + "init_process_group":
        add("init")
    elif resolved == DIST + "destroy_process_group":
        add("destroy")
    elif resolved in RESETS:
        add("reset")
    elif resolved in MARK_DYNAMIC:
        add("mark")
    elif isinstance(func, cst.Name) and func.value in names:
        add("call", func.value)
    elif isinstance(func, cst.Attribute) and func.attr.value in HOOK_METHODS:
        add("hook", "", func.value)


# -- DL107 --------------------------------------------------------------------------------------


def _names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}


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
        return _names_in(loop.target)
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
        if binding.root.info.dynamic is False:
            return True
        if binding.root.info.dynamic is True:
            return False
        flags = dict(config)
        if self.ctx.facts is not None:
            flags.update(self.ctx.facts.dynamo_flags_for(binding.root.function))
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
                info = binding.root.info
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

    def _related(self, binding: Binding):  # type: ignore[no-untyped-def]
        facts = self.ctx.facts
        region = facts.region_of(binding.root.function) if facts is not None else None
        return region.related if region is not None else ()

    # -- module-global ints read in a region --

    def visit_Name(self, node: cst.Name) -> None:
        region = self.ctx.region
        if region is None or node.value not in getattr(self, "_globals", {}):
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
            for target in stmt.targets:
                if isinstance(target.target, cst.Name):
                    ints.add(target.target.value)
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
        nodes = function_nodes(scope) if isinstance(scope, cst.FunctionDef) else own_nodes(scope)
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
    for node, _ in own_nodes(body):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                found[target.value] = node.value
    return found


def _shape_varies(
    expr: cst.BaseExpression,
    variables: set[str],
    local: dict[str, cst.BaseExpression],
    resolve,  # type: ignore[no-untyped-def]
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


def _variable_in(
    expr: cst.BaseExpression, variables: set[str], local: dict[str, cst.BaseExpression]
) -> str | None:
    names = _names_in(expr)
    for name in sorted(names & variables):
        return name
    for name in sorted(names):
        value = local.get(name)
        if value is not None and _names_in(value) & variables:
            return sorted(_names_in(value) & variables)[0]
    return None


# -- DL108 --------------------------------------------------------------------------------------


def dist_reads(ctx: RuleContext, root: Root) -> list[tuple[cst.Call, str]]:
    """Calls of the folded ``torch.distributed`` getters in the root's region (this file)."""
    found = []
    for func in region_functions(ctx, root).values():
        for node, _ in function_nodes(func):
            if isinstance(node, cst.Call):
                name = ctx.imports.resolve(node.func)
                if name in DIST_CONSTANTS:
                    found.append((node, name))
    return found


class StaleDistConstant(_RegionRule):
    code = "DL108"
    name = "stale-dist-constant"
    severity = Severity.WARNING
    summary = (
        "A compiled region reads dist.get_rank()/get_world_size()/is_initialized() and runs "
        "before init_process_group (or before the group is re-created): the folded value is "
        "not guarded and stays stale."
    )
    tags = ("correctness", "distributed", "torch.compile")
    precision = "high"

    def visit_Module(self, node: cst.Module) -> None:
        bindings = compiled_bindings(self.ctx)
        for flow in flows(self.ctx):
            if flow.of("reset"):
                continue  # torch._dynamo.reset() drops the stale graphs
            inits = flow.of("init")
            destroys = flow.of("destroy")
            if not inits:
                continue
            for name, items in bindings.items():
                calls = [e for e in flow.of("call") if e.name == name]
                if not calls:
                    continue
                reads = [r for b in items for r in dist_reads(self.ctx, b.root)]
                if not reads:
                    continue
                checks_init = any(n == DIST + "is_initialized" for _, n in reads)
                self._check(name, calls, inits, destroys, reads, checks_init)

    def _check(self, name, calls, inits, destroys, reads, checks_init) -> bool:  # type: ignore[no-untyped-def]
        for first in calls:
            for init in inits:
                if not may_precede(first, init):
                    continue
                if not any(may_precede(init, later) for later in calls):
                    continue
                recreated = any(may_precede(first, d) and may_precede(d, init) for d in destroys)
                if not (recreated or checks_init):
                    continue  # get_rank() with no group raises: not a stale value
                read, resolved = reads[0]
                folded = DIST_CONSTANTS[resolved]
                when = (
                    "before the process group is re-created"
                    if recreated
                    else "before `init_process_group`"
                )
                related_nodes = [(init.node, "process group created here")]
                related_nodes.append((read, "folded into the compiled graph here"))
                self.report(
                    first.node,
                    f"`{name}` runs its compiled region here, {when}: `{folded}` in it is "
                    "folded into the graph as a constant without a guard, so later calls keep "
                    "the stale value on torch 2.13 (no recompile). Create the process group "
                    "before the first compiled call, or call `torch._dynamo.reset()` after "
                    "(re)creating it.",
                    related_nodes=tuple(related_nodes),
                )
                return True
        return False


# -- DL109 --------------------------------------------------------------------------------------


class HookAfterCompile(_RegionRule):
    code = "DL109"
    name = "hook-after-compile"
    severity = Severity.WARNING
    summary = (
        "A forward hook registered after the first compiled call on a module that runs inside "
        "the compiled frame (a submodule of a compiled model) never fires."
    )
    tags = ("correctness", "torch.compile")
    precision = "high"

    def visit_Module(self, node: cst.Module) -> None:
        bindings = compiled_bindings(self.ctx)
        if not bindings:
            return
        for flow in flows(self.ctx):
            if flow.of("reset"):
                continue
            loop_modules = _module_loop_vars(flow, self.ctx)
            for hook in flow.of("hook"):
                assert hook.receiver is not None
                for name, items in bindings.items():
                    inside = self._runs_inside(hook.receiver, name, items, loop_modules)
                    if inside is None:
                        continue
                    first = [e for e in flow.of("call") if e.name == name and may_precede(e, hook)]
                    if not first:
                        continue
                    call = hook.node
                    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    method = call.func.attr.value
                    self.report(
                        call,
                        f"`{self.spell(hook.receiver)}.{method}(...)` comes after the first "
                        f"call of the compiled `{name}`, and {inside} runs inside the compiled "
                        "frame: torch 2.13 does not guard on its hooks "
                        "(`skip_nnmodule_hook_guards`), so this hook never fires. Register "
                        "hooks before the first compiled call, or call "
                        "`torch._dynamo.reset()` after registering.",
                        related_nodes=((first[0].node, "first compiled call"),),
                    )
                    break

    def _runs_inside(self, receiver, name, items, loop_modules) -> str | None:  # type: ignore[no-untyped-def]
        """How ``receiver`` is a module run inside the compiled frame of ``name``, or None."""
        modules: set[str] = set()
        for binding in items:
            if binding.root.info.kind in ("module", "method"):
                modules.add(binding.name)
                if binding.origin is not None:
                    modules.add(binding.origin)
        called: set[str] = set()
        for binding in items:
            if binding.root.info.kind in ("decorator", "call"):
                called |= _modules_called(self.ctx, binding.root)
        base, depth = _chain_base(receiver)
        if base is None:
            return None
        if base in loop_modules and loop_modules[base] in modules | called:
            return f"`{base}` (a submodule of `{loop_modules[base]}`)"
        if base in modules and depth >= 1:
            return "this submodule"
        if base in called:
            return f"`{self.spell(receiver)}`" if depth == 0 else "this submodule"
        return None


def _chain_base(expr: cst.BaseExpression) -> tuple[str | None, int]:
    """``m`` and the number of steps for ``m.a.b[0]`` / ``m.get_submodule("a")``."""
    depth = 0
    while True:
        if isinstance(expr, cst.Name):
            return expr.value, depth
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr, depth = expr.value, depth + 1
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in ("get_submodule", "__getitem__")
        ):
            expr, depth = expr.func.value, depth + 1
        else:
            return None, depth


def _module_loop_vars(flow: Flow, ctx: RuleContext) -> dict[str, str]:
    """``mod`` -> ``m`` for ``for mod in m.modules()`` / ``for name, mod in
    m.named_modules()`` / ``for blk in m.layers`` loops of the flow's events."""
    found: dict[str, str] = {}
    seen: set[int] = set()
    for event in flow.events:
        for loop in event.loops:
            if id(loop) in seen or not isinstance(loop, cst.For):
                continue
            seen.add(id(loop))
            it = loop.iter
            target = loop.target
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute):
                method = it.func.attr.value
                if method not in MODULE_ITERATORS:
                    continue
                base, _ = _chain_base(it.func.value)
                if method.startswith("named_") and isinstance(target, cst.Tuple):
                    target = target.elements[-1].value
            else:
                base, depth = _chain_base(it)
                if depth < 1:
                    continue
            if base is not None and isinstance(target, cst.Name):
                found[target.value] = base
    return found


def _modules_called(ctx: RuleContext, root: Root) -> set[str]:
    """Module-global names called inside the root's region functions of this file."""
    names: set[str] = set()
    for func in region_functions(ctx, root).values():
        local = {p.name.value for p in func.params.params}
        for node, _ in function_nodes(func):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        local.add(target.target.value)
        for node, _ in function_nodes(func):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Name)
                and node.func.value not in local
            ):
                names.add(node.func.value)
    return names


# -- DL105 addition: FSDP2-sharded children looped over in a compiled root ---------------------


def fully_sharded_attributes(ctx: RuleContext) -> frozenset[str]:
    """Attribute names whose elements the file passes to FSDP2's ``fully_shard``:
    ``for blk in model.layers: fully_shard(blk)`` or ``fully_shard(model.layers[i])``."""
    return ctx.memo(_fully_sharded_attributes)


def _fully_sharded_attributes(ctx: RuleContext) -> frozenset[str]:
    found: set[str] = set()
    loops: dict[str, str] = {}  # loop variable -> attribute iterated
    for node in descendants(ctx.module):
        if isinstance(node, cst.For) and isinstance(node.target, cst.Name):
            it = node.iter
            if isinstance(it, cst.Attribute):
                loops[node.target.value] = it.attr.value
            elif isinstance(it, cst.Subscript) and isinstance(it.value, cst.Attribute):
                loops[node.target.value] = it.value.attr.value
    for node in descendants(ctx.module):
        if not isinstance(node, cst.Call):
            continue
        name = ctx.imports.resolve(node.func) or ""
        if not (name.startswith(DIST) and name.endswith(".fully_shard")):
            continue
        arg = _first_positional(node)
        if isinstance(arg, cst.Name) and arg.value in loops:
            found.add(loops[arg.value])
        elif isinstance(arg, cst.Subscript) and isinstance(arg.value, cst.Attribute):
            found.add(arg.value.attr.value)
    result = frozenset(found)
    return result


def sharded_children_loop(ctx: RuleContext, loop: cst.For | cst.While) -> str | None:
    """``self.layers`` when ``loop`` runs ``for blk in self.layers: blk(...)`` in a function
    that a whole-module compile root compiles, and the file fully_shards those children."""
    region = ctx.region
    if region is None or not isinstance(loop, cst.For):
        return None
    if not any(r.kind in ("module", "method") for r in region.roots) or not region.direct:
        return None
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate":
        first = _first_positional(it)
        it = first if first is not None else it
    if not (
        isinstance(it, cst.Attribute)
        and isinstance(it.value, cst.Name)
        and it.value.value == "self"
        and it.attr.value in fully_sharded_attributes(ctx)
    ):
        return None
    variables = _names_in(loop.target)
    for node, _ in own_nodes(loop.body):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value in variables
        ):
            return f"self.{it.attr.value}"
    return None
