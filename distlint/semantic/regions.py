"""What a file's tree says about compiled regions, read without the project.

The names that compile, cut code out of a region (``@torch.compiler.disable``) or keep it
untraced; the code that runs only in eager mode (the sides of ``is_compiling()`` tests); what
runs every time its function runs; which ``x.compile(...)`` calls may be
``nn.Module.compile``; literal values. The compile sites themselves are
:mod:`.compile_sites`; the semantic layer extends regions through the call graph.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.syntax.imports import self_attribute
from distlint.syntax.shapes import bound_names
from distlint.syntax.walker import children, descendants, evaluated, suite_body

DISABLE_FUNCTIONS = frozenset(
    {
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch._dynamo.eval_frame.disable",
        "torch._disable_dynamo",  # torch's own lazy spelling (TransformerEngine's checkpoint)
    }
)
# Bodies Dynamo never traces, without a break (so they are not part of the region): a custom
# op's Python body is one node of the graph; an ``assume_constant_result`` function runs at trace
# time and its result is baked in as a constant (torch 2.13: a ``warnings.warn`` inside one
# compiles under fullgraph=True).
UNTRACED_DECORATORS = frozenset(
    {
        "torch.library.custom_op",
        "torch._library.custom_ops.custom_op",
        "torch.library.triton_op",
        "torch.compiler.assume_constant_result",
        "torch._dynamo.assume_constant_result",
    }
)

Resolver = Callable[[cst.BaseExpression], "str | None"]


def is_compile_disabled(func: cst.FunctionDef, resolve: Resolver) -> bool:
    """Whether ``func`` is cut out of compiled regions (``@torch.compiler.disable``)."""
    for decorator in func.decorators:
        expr = decorator.decorator
        target = expr.func if type(expr) is cst.Call else expr
        if resolve(target) in DISABLE_FUNCTIONS:
            return True
    return False


# Factories whose results have a ``compile`` method of their own (not nn.Module.compile):
# ``deepspeed.initialize`` returns a DeepSpeedEngine whose ``compile(backend=...,
# compile_kwargs=...)`` compiles the wrapped module with its own keywords (DeepSpeed >= 0.14).
# ``torch.compiler.is_compiling()`` and its aliases: true while Dynamo traces, false in eager.
IS_COMPILING = frozenset(
    {
        "torch.compiler.is_compiling",
        "torch.compiler.is_dynamo_compiling",
        "torch._dynamo.is_compiling",
        "torch._dynamo.external_utils.is_compiling",
        "torch._utils.is_compiling",
    }
)
_IS_COMPILING_NAMES = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"})


def is_compiling_test(expr: cst.BaseExpression, resolve: Resolver) -> bool | None:
    """True for ``is_compiling()`` (also a project or library wrapper of that name), False for
    ``not is_compiling()``, None for any other test."""
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
        inner = is_compiling_test(expr.expression, resolve)
        return None if inner is None else not inner
    if type(expr) is not cst.Call or expr.args:
        return None
    func = expr.func
    last = func.attr.value if type(func) is cst.Attribute else getattr(func, "value", None)
    if resolve(func) in IS_COMPILING or last in _IS_COMPILING_NAMES:
        return True
    return None


Sides = tuple["bool | None", "bool | None"]
# a project function's sides (see ``predicate_sides``) by the dotted name a call resolves to;
# None: not such a function
Predicates = Callable[[str], "Sides | None"]


def compiling_sides(
    expr: cst.BaseExpression, resolve: Resolver, predicates: Predicates | None = None
) -> Sides:
    """What ``is_compiling()`` is known to be where ``expr`` holds and where it does not
    (None: unknown). ``not is_compiling() and x`` holds only in eager mode; ``is_compiling()
    or x`` fails only in eager mode. With ``predicates``, a call of a project function that
    returns such a test (``def is_exporting(): return not is_compiling() and ...``) counts
    as that test."""
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
        holds, fails = compiling_sides(expr.expression, resolve, predicates)
        return fails, holds
    if type(expr) is cst.BooleanOperation:
        left = compiling_sides(expr.left, resolve, predicates)
        right = compiling_sides(expr.right, resolve, predicates)
        side = 0 if type(expr.operator) is cst.And else 1  # the side every operand shares
        known = left[side] if left[side] is not None else right[side]
        return (known, None) if side == 0 else (None, known)
    test = is_compiling_test(expr, resolve)
    if test is None and predicates is not None and type(expr) is cst.Call and not expr.args:
        name = resolve(expr.func)
        found = predicates(name) if name is not None else None
        return found if found is not None else (None, None)
    return (None, None) if test is None else (test, not test)


def predicate_sides(function: cst.FunctionDef, resolve: Resolver) -> Sides | None:
    """What a call of ``function`` tells of ``is_compiling()`` (see ``compiling_sides``), when
    its body is one ``return`` of such a test. None when it returns a constant: such a def
    contradicts no other def of the name (torchrec defines its export check as ``return
    False`` when torch lacks ``torch.compiler``; see ``merge_sides``)."""
    body = list(suite_body(function.body))
    if len(body) > 2:
        return (None, None)  # one statement at most once a docstring is dropped: not one
    if function.get_docstring(clean=False) is not None:
        body = body[1:]
    if len(body) != 1 or type(body[0]) is not cst.SimpleStatementLine:
        return (None, None)
    statement = body[0].body[0] if len(body[0].body) == 1 else None
    if type(statement) is not cst.Return or statement.value is None:
        return (None, None)
    value = statement.value
    if type(value) is cst.Name and value.value in ("True", "False"):
        return None
    return compiling_sides(value, resolve)


def merge_sides(first: Sides | None, second: Sides | None) -> Sides | None:
    """The sides of a name defined twice (``try``/``except`` variants): what both say."""
    if first is None or second is None:
        return second if first is None else first
    return (
        first[0] if first[0] == second[0] else None,
        first[1] if first[1] == second[1] else None,
    )


def eager_only(
    ancestors: Sequence[cst.CSTNode],
    resolve: Resolver,
    compiled_locals: Callable[[cst.FunctionDef], frozenset[str]] | None = None,
    predicates: Predicates | None = None,
) -> bool:
    """Whether the node under ``ancestors`` (outermost first) runs only in eager mode: on the
    ``not is_compiling()`` side of an ``if`` or conditional expression (also ``not
    is_compiling() and x``), or after an ``if is_compiling(): return`` in its function.
    Dynamo traces the other side only. With ``compiled_locals`` (see ``compile_assigned``), a
    side of an ``if`` testing a local set differently under compile also counts: whether Dynamo
    takes it is not known, so nothing under it is claimed."""
    diverged: frozenset[str] = frozenset()
    if compiled_locals is not None:
        function = next((a for a in reversed(ancestors) if type(a) is cst.FunctionDef), None)
        diverged = compiled_locals(function) if function is not None else frozenset()
    for index in range(len(ancestors) - 1, -1, -1):
        parent = ancestors[index]
        child = ancestors[index + 1] if index + 1 < len(ancestors) else None
        kind = type(parent)
        if kind is cst.FunctionDef or kind is cst.Lambda:
            return False
        if type(parent) is cst.If or type(parent) is cst.IfExp:
            if child is None or child is parent.test:
                continue
            holds, fails = compiling_sides(parent.test, resolve, predicates)
            if (holds if child is parent.body else fails) is False:
                return True
            if kind is cst.If and holds is None and reads_any(parent.test, diverged):
                return True
        elif type(parent) is cst.IndentedBlock and child is not None:
            for earlier in parent.body:
                if earlier is child:
                    break
                if type(earlier) is cst.If and exits_when_compiling(earlier, resolve, predicates):
                    return True
    return False


def compile_assigned(function: cst.FunctionDef, resolve: Resolver) -> frozenset[str]:
    """Locals a function assigns on the compiled side of an ``is_compiling()`` test: their value
    under compile differs from eager, so a later test of them (``if layout == "packed":``
    after an ``is_compiling()`` branch sets ``layout``) is one the analysis cannot decide."""
    names: set[str] = set()
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) is cst.If:
            holds, fails = compiling_sides(node.test, resolve)
            side = node.body if holds else node.orelse if fails else None
            if side is not None:
                names.update(_assigned_in(side))
        stack.extend(child for child in children(node) if type(child) not in _NESTED_SCOPES)
    return frozenset(names)


_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_BINDING_NODES = (cst.AssignTarget, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)


def _assigned_in(block: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    stack: list[cst.CSTNode] = [block]
    while stack:
        node = stack.pop()
        if isinstance(node, _BINDING_NODES):  # LibCST does not subclass these
            names.update(bound_names(node.target))
        stack.extend(child for child in children(node) if type(child) not in _NESTED_SCOPES)
    return names


def reads_any(expr: cst.BaseExpression, names: Collection[str]) -> bool:
    """Whether ``expr`` reads one of ``names`` (a plain name, not an attribute of another)."""
    if not names:
        return False
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if type(node) is cst.Name:
            if node.value in names:
                return True
        elif type(node) is cst.Attribute:
            stack.append(node.value)
        elif kind not in _NESTED_SCOPES:
            stack.extend(children(node))
    return False


# per block (by id): the position of each statement, and of the first that may leave it
BlockExits = dict[int, tuple[dict[int, int], int]]


def runs_whenever_called(
    ancestors: Sequence[cst.CSTNode], node: cst.CSTNode, exits: BlockExits | None = None
) -> bool:
    """Whether ``node``, under ``ancestors`` (outermost first), runs every time its function
    runs: not under an ``if``/conditional expression/``match`` case/``except``/``while``, not
    the right operand of ``and``/``or``, and not after an earlier statement of its block that
    may ``return``, ``raise``, ``break`` or ``continue``. Loop and ``with`` bodies count.
    ``exits`` keeps what was learned of each block, for the next node of the same file."""
    if exits is None:
        exits = {}
    chain = [*ancestors, node]
    for index in range(len(chain) - 1, 0, -1):
        parent, child = chain[index - 1], chain[index]
        kind = type(parent)
        if kind is cst.FunctionDef or kind is cst.Lambda:
            return True
        if type(parent) is cst.If or type(parent) is cst.IfExp or type(parent) is cst.While:
            if child is not parent.test:
                return False
        elif kind in _CONDITIONAL_PARTS:
            return False
        elif type(parent) is cst.BooleanOperation:
            if child is parent.right:
                return False
        elif type(parent) is cst.IndentedBlock or type(parent) is cst.Module:
            known = exits.get(id(parent))
            if known is None:
                body = parent.body
                first = next((i for i, stmt in enumerate(body) if _may_leave(stmt)), len(body))
                known = exits[id(parent)] = ({id(stmt): i for i, stmt in enumerate(body)}, first)
            positions, first = known
            if positions.get(id(child), 0) > first:
                return False
    return True


_CONDITIONAL_PARTS = (cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchCase, cst.CompIf, cst.Else)
_LEAVING = (cst.Return, cst.Raise, cst.Break, cst.Continue)


def _may_leave(statement: cst.CSTNode) -> bool:
    """Whether a statement may end its block early (outside nested functions and classes)."""
    if type(statement) is cst.SimpleStatementLine:
        return any(isinstance(small, _LEAVING) for small in statement.body)
    stack: list[tuple[cst.CSTNode, bool]] = [(statement, False)]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, (cst.Return, cst.Raise)) or (
            not in_loop and isinstance(node, (cst.Break, cst.Continue))
        ):
            return True
        in_loop = in_loop or isinstance(node, (cst.For, cst.While))
        stack.extend(
            (child, in_loop) for child in children(node) if type(child) not in _NESTED_SCOPES
        )
    return False


def eager_operands(expr: cst.CSTNode, resolve: Resolver) -> list[cst.BaseExpression]:
    """Operands that run only in eager mode by short-circuit: ``b`` of ``not is_compiling()
    and b`` and of ``is_compiling() or b`` (torchrl: ``if not is_compiling() and not
    safe_is_current_stream_capturing():`` calls its helper only in eager mode)."""
    found = []
    for node in descendants(expr):
        if type(node) is cst.BooleanOperation:
            holds, fails = compiling_sides(node.left, resolve)
            if (holds if type(node.operator) is cst.And else fails) is False:
                found.append(node.right)
    return found


def exits_when_compiling(
    node: cst.If, resolve: Resolver, predicates: Predicates | None = None
) -> bool:
    """``if is_compiling(): return`` (or ``if is_compiling() or x:``): what follows is eager."""
    return compiling_sides(node.test, resolve, predicates)[1] is False and ends_in_exit(node.body)


def ends_in_exit(suite: cst.BaseSuite) -> bool:
    """Whether a block ends in ``return`` or ``raise`` (an early exit)."""
    body = suite_body(suite)
    last = body[-1] if body else None
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and last.body:
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return False


OWN_COMPILE_FACTORIES = frozenset({"deepspeed.initialize", "deepspeed.init_inference"})


@dataclass(frozen=True)
class OwnCompile:
    """What in a file calls a ``compile`` that is not ``nn.Module.compile``."""

    names: frozenset[str]  # names bound to instances of such classes or factories
    self_calls: frozenset[int]  # ids of ``self.compile(...)`` calls in classes defining compile


def own_compile(module: cst.Module, resolve: Resolver) -> OwnCompile:
    """Classes of this file that define ``compile`` (or may inherit one: a base imported from
    outside torch, open_clip's ``TrainingTask.compile(target=...)``), and the names bound to
    their instances."""
    classes: dict[str, cst.ClassDef] = {}
    defined = [node for node in descendants(module) if type(node) is cst.ClassDef]
    for node in defined:
        if any(
            type(item) is cst.FunctionDef and item.name.value == "compile"
            for item in node.body.body
        ) or any(_foreign_base(arg.value, resolve) for arg in node.bases if arg.keyword is None):
            classes[node.name.value] = node
    grown = True
    while grown:  # subclasses of those, in this file
        grown = False
        for node in defined:
            if node.name.value not in classes and any(
                type(arg.value) is cst.Name and arg.value.value in classes for arg in node.bases
            ):
                classes[node.name.value] = node
                grown = True
    self_calls: set[int] = set()
    for cls in classes.values():
        for descendant in descendants(cls):
            if type(descendant) is cst.Call and self_attribute(descendant.func) == "compile":
                self_calls.add(id(descendant))
    names: set[str] = set()
    for statement in descendants(module):
        if not (type(statement) is cst.Assign and type(statement.value) is cst.Call):
            continue
        func = statement.value.func
        if not (
            (type(func) is cst.Name and func.value in classes)
            or resolve(func) in OWN_COMPILE_FACTORIES
        ):
            continue
        for target in statement.targets:
            inner = target.target
            elements = inner.elements if isinstance(inner, (cst.Tuple, cst.List)) else ()
            for item in (inner, *(e.value for e in elements)):
                if type(item) is cst.Name:
                    names.add(item.value)
    return OwnCompile(frozenset(names), frozenset(self_calls))


def _foreign_base(base: cst.BaseExpression, resolve: Resolver) -> bool:
    """A base class imported from another package or module than torch: it may define its
    own ``compile``."""
    name = resolve(base)
    return name is not None and name != "object" and not name.startswith("torch.")


def module_compile_receiver(
    call: cst.Call, resolve: Resolver, torch_bound: bool, own: OwnCompile
) -> cst.BaseExpression | None:
    """The receiver of ``x.compile(...)`` when it may be ``nn.Module.compile``, else None.

    Not one: a receiver that is an import (``re.compile``), a file without torch, an instance of
    a class defining its own ``compile`` or of a factory in ``OWN_COMPILE_FACTORIES``."""
    func = call.func
    if not (type(func) is cst.Attribute and func.attr.value == "compile" and torch_bound):
        return None
    if resolve(func) is not None or id(call) in own.self_calls:
        return None
    receiver = func.value
    if type(receiver) is cst.Name and receiver.value in own.names:
        return None
    return receiver


_NO_VALUE = object()


def literal_value(expr: cst.BaseExpression) -> object:
    """The Python value of a simple literal (str, number, bool, None), else a sentinel."""
    if type(expr) is cst.Name and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = evaluated(expr)
        return value if isinstance(value, str) else _NO_VALUE
    if isinstance(expr, (cst.Integer, cst.Float)):
        value = evaluated(expr)
        return value if isinstance(value, (int, float)) else _NO_VALUE
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus:
        inner = literal_value(expr.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return _NO_VALUE


def is_literal(value: object) -> bool:
    return value is not _NO_VALUE
