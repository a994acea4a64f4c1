"""The script flow of a file: the events of the module code and of each function body in
source order (process group created or destroyed, dynamo reset, ``mark_dynamic``, a compiled
callable called, a forward hook registered), where two events inside one loop may run in either
order. Shared by DL107-DL109, the rules about compiled code that keeps a state the rest of the
script changes under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.rules.compile._bindings import compiled_bindings, file_functions
from distlint.rules.context import RuleContext
from distlint.semantic.regions import Resolver
from distlint.syntax.walker import descendants

DIST = "torch.distributed."
RESETS = frozenset({"torch._dynamo.reset", "torch.compiler.reset"})
MARK_DYNAMIC = frozenset(
    {
        "torch._dynamo.mark_dynamic",
        "torch._dynamo.maybe_mark_dynamic",
        "torch._dynamo.decorators.mark_dynamic",
        "torch._dynamo.decorators.maybe_mark_dynamic",
    }
)
HOOK_METHODS = frozenset({"register_forward_hook", "register_forward_pre_hook"})


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


def _flow(ctx: RuleContext, scope: cst.Module | cst.FunctionDef, names: set[str]) -> Flow:
    resolve = ctx.imports.resolve
    flow = Flow()
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []
    from distlint.syntax.walker import children

    body: Sequence[cst.CSTNode]
    if isinstance(scope, cst.FunctionDef):
        if not isinstance(scope.body, cst.IndentedBlock):
            return flow
        body = scope.body.body
    else:
        body = scope.body
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


def _note_call(
    flow: Flow,
    node: cst.Call,
    loops: tuple[cst.CSTNode, ...],
    names: set[str],
    resolve: Resolver,
) -> None:
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


def names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}
