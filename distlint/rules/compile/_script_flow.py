"""The script flow of a file: the events of the module code and of each function body in
source order (process group created or destroyed, dynamo reset, ``mark_dynamic``, a compiled
callable called, a forward hook registered), where two events inside one loop may run in either
order. Shared by DL107-DL109, the rules about compiled code that keeps a state the rest of the
script changes under it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.knowledge.module_factories import builds_module, the_module
from distlint.rules.compile._bindings import (
    Binding,
    compiled_bindings,
    file_functions,
    first_positional,
)
from distlint.rules.context import RuleContext
from distlint.semantic.compile_sites import RootInfo
from distlint.semantic.regions import Resolver
from distlint.syntax.imports import statements_in_order
from distlint.syntax.walker import children, descendants

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
    scope: cst.Module | cst.FunctionDef | None = None  # whose code the events are of
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
    for of_scope in library_module_bindings(ctx).values():
        names |= set(of_scope)
    if not called_somewhere(ctx.source, names):
        # no compiled name is called: no flow has a call event, and every finding of
        # DL107-DL109 is about one (a compiled call in a loop, before an init, before a hook)
        return []
    return [_flow(ctx, scope, names) for scope in _scopes(ctx)]


# a name and what may stand between it and the ``(`` of a call of it: closing parentheses
# of ``(f)(x)``, whitespace and line continuations, comments (inside brackets). A comment
# runs to its line's end (the lookahead): a text splits into these parts one way only, so a
# failed match does not backtrack through the splits (a line of ``#`` took 20 s).
_CALLED = re.compile(r"\b([^\W\d]\w*)(?:[\s\\)]|#[^\n\r]*(?=[\n\r]))*\(")
_NAME = re.compile(r"[^\W\d]\w*")
_DEF_BEFORE = re.compile(r"\bdef\s+\Z")


def called_somewhere(source: str, names: set[str]) -> bool:
    """Whether the text may call one of ``names`` (a ``Call`` whose ``func`` is that
    ``Name``): such a call is written as the name, then only closing parentheses, whitespace,
    backslash continuations or comments, then ``(``, all of which the pattern allows. A name
    right after the ``def`` keyword is a definition (``def`` is no identifier; in a string
    the text is no call): the only text left out. Strings and comments only add matches."""
    if not names:
        return False
    if not all(_NAME.fullmatch(name) for name in names):
        return True  # an identifier with a character ``\w`` is not (``a·b``): not looked for
    for match in _CALLED.finditer(source):
        if match.group(1) in names:
            start = match.start()
            if not _DEF_BEFORE.search(source, max(0, start - 40), start):
                return True
    return False


def _scopes(ctx: RuleContext) -> list[cst.Module | cst.FunctionDef]:
    return [ctx.module, *file_functions(ctx).values()]


ScopeNodes = list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]]
_NOT_ENTERED = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})  # scopes of their own


def _list_scope_nodes(scope: cst.Module | cst.FunctionDef) -> ScopeNodes:
    """The nodes of a scope's own code (not nested functions, classes or lambdas) in source
    order, each with its enclosing for/while loops in the scope, outermost first."""
    body: Sequence[cst.CSTNode]
    if isinstance(scope, cst.FunctionDef):
        if not isinstance(scope.body, cst.IndentedBlock):
            return []
        body = scope.body.body
    else:
        body = scope.body
    found: ScopeNodes = []
    stack: ScopeNodes = [(stmt, ()) for stmt in reversed(list(body))]
    while stack:
        node, loops = stack.pop()
        kind = type(node)
        if kind in _NOT_ENTERED:
            continue
        found.append((node, loops))
        kids = children(node)
        if kind is cst.For:  # the iterable of a for loop runs once, before the loop
            assert isinstance(node, cst.For)
            inner = (*loops, node)
            stack.extend([(c, loops if c is node.iter else inner) for c in reversed(kids)])
        elif kind is cst.While:
            inner = (*loops, node)
            stack.extend([(c, inner) for c in reversed(kids)])
        else:
            stack.extend([(c, loops) for c in reversed(kids)])
    return found


def _flow(ctx: RuleContext, scope: cst.Module | cst.FunctionDef, names: set[str]) -> Flow:
    resolve = ctx.imports.resolve
    flow = Flow(scope=scope)
    for node, loops in _list_scope_nodes(scope):
        if type(node) is cst.Call:
            _note_call(flow, node, loops, names, resolve)
    return flow


def library_module_bindings(ctx: RuleContext) -> dict[int, dict[str, list[Binding]]]:
    """Compiled models built by a library (``compiled = torch.compile(model)`` where
    ``model = nn.Sequential(...)`` in the same scope), by ``id`` of that scope (a flow's
    ``scope``): they hold only there. The linker does not follow them (their class is not in
    the project), but they are modules (:mod:`distlint.knowledge.module_factories`). Names
    :func:`compiled_bindings` has are left to it. ``model.compile()`` is not taken: on a
    ``torch.nn`` class it compiles nothing on torch 2.13 (Dynamo skips the frame of a forward
    in torch.nn: 0 graphs, hooks fire)."""
    return ctx.memo(_library_module_bindings)


def _library_module_bindings(ctx: RuleContext) -> dict[int, dict[str, list[Binding]]]:
    by_scope: dict[int, dict[str, list[Binding]]] = {}
    if "compile" not in ctx.source:
        return by_scope
    known = compiled_bindings(ctx)
    for scope in _scopes(ctx):
        found = by_scope.setdefault(id(scope), {})
        table = ctx.imports
        if isinstance(scope, cst.FunctionDef):  # its own imports (``import torchvision``)
            table = ctx.table_for(scope, table)
        resolve = table.resolve
        built: set[str] = set()  # names assigned a library-built module in this scope
        for node in _scope_statements(scope):
            if not isinstance(node, cst.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0].target
            if not isinstance(target, cst.Name):
                continue
            value = node.value
            made = the_module(value)
            if isinstance(made, cst.Call) and builds_module(resolve(made.func)):
                built.add(target.value)
                continue
            built.discard(target.value)  # rebound to something else from here on
            if (
                isinstance(value, cst.Call)
                and ctx.compiles(resolve(value.func))
                and target.value not in known
            ):
                first = first_positional(value)
                first = the_module(first) if first is not None else None
                if isinstance(first, cst.Name) and first.value in built:
                    root = RootInfo(ctx.path, ctx.span_now(value), "", "module")
                    binding = Binding(target.value, root, first.value, value)
                    found.setdefault(target.value, []).append(binding)
    return by_scope


def _scope_statements(scope: cst.Module | cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """The statements of a scope's own code in source order: its assignments are those
    :func:`_list_scope_nodes` lists (an assignment is a statement, never inside an
    expression), found without walking its expressions (a one-line ``def`` is left out, as
    there)."""
    if isinstance(scope, cst.FunctionDef):
        if not isinstance(scope.body, cst.IndentedBlock):
            return iter(())
        return statements_in_order(scope.body.body)
    return statements_in_order(scope.body)


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
