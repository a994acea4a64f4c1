"""One cheap pass over a LibCST tree that calls every rule's handlers (batched dispatch).

LibCST's own visitor rebuilds each node while walking and costs ~0.7x a parse; reading the
dataclass fields directly and skipping whitespace/punctuation fields costs ~0.05x (measured
on torch/distributed, see bench/). The walk is iterative, so deep trees cannot overflow the
Python stack, and it keeps the ancestor stack that rules read as ``ctx.parents``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import libcst as cst

Handler = Callable[[Any], Any]

# Fields that only hold whitespace, comments or punctuation tokens: never rule targets.
_SKIPPED_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "comma",
        "semicolon",
        "colon",
        "dot",
        "equal",
        "star",
        "lbrace",
        "rbrace",
        "lbracket",
        "rbracket",
        "first_colon",
        "second_colon",
        "trailing_whitespace",
        "leading_whitespace",
        "empty_lines",
        "newline",
        "operator",
        "asynchronous",
        "separator",
        "trailing_comma",
        "posonly_ind",
    }
)

# Field orders that differ from source order in LibCST's dataclasses.
_SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.TypeAlias: ("name", "type_parameters", "value"),
    cst.ImportFrom: ("relative", "module", "names"),
}

_child_fields_cache: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _child_fields_cache.get(cls)
    if fields is None:
        names = [
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        ]
        order = _SOURCE_ORDER.get(cls)
        if order is not None:
            names = [n for n in order if n in names] + [n for n in names if n not in order]
        fields = tuple(names)
        _child_fields_cache[cls] = fields
    return fields


def subclasses_of(*bases: type) -> frozenset[type]:
    """Every class derived from ``bases`` (and the bases): ``type(x) in`` beats ``isinstance``.

    LibCST's base classes are ABCs, and ``isinstance`` against an ABC costs a slow
    ``__instancecheck__``; membership of the exact type in a frozenset does not.
    """
    found: set[type] = set(bases)
    pending = list(bases)
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    return frozenset(found)


NODE_TYPES = subclasses_of(cst.CSTNode)
_SEQUENCES = (tuple, list)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's non-whitespace children in source order."""
    return _getters[type(node)](node)


class _Getters(dict[type, Any]):
    """Node class -> its children function (:func:`_make_getter`), made at first use."""

    def __missing__(self, cls: type) -> Any:
        getter = self[cls] = _make_getter(cls)
        return getter


_getters = _Getters()


def _has_no_children(cls: type) -> bool:
    """Whether no node of ``cls`` can have children: every field :func:`children` reads is
    declared a ``str`` (a name's, a number's, a string's value) or there is none (``pass``,
    an operator). A third of a tree's nodes are of such a class (names, mostly)."""
    if not dataclasses.is_dataclass(cls):
        return False
    read = set(_child_fields(cls))
    return all(f.type is str for f in dataclasses.fields(cls) if f.name in read)


class _WalkGetters(dict[type, Any]):
    """Node class -> its children function, or None for a class whose nodes never have
    children (:func:`_has_no_children`: the walk then calls nothing for them)."""

    def __missing__(self, cls: type) -> Any:
        getter = self[cls] = None if _has_no_children(cls) else _getters[cls]
        return getter


_walk_getters = _WalkGetters()


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it, in source order."""
    stack = [node]
    getters = _walk_getters
    while stack:
        current = stack.pop()
        yield current
        get = getters[type(current)]
        if get is not None:
            kids = get(current)  # children(current), inlined (as in walk)
            if kids:
                stack.extend(reversed(kids))


def mentions_name(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` is, or holds, a ``Name`` spelled ``name`` (read or bound alike)."""
    return any(type(n) is cst.Name and n.value == name for n in descendants(node))


def _make_getter(cls: type) -> Any:
    """A children function specialised for ``cls``: the field loop unrolled at first use.

    Reading ``node.<field>`` by name in generated code avoids a ``getattr`` and a loop per
    field; this is the walk's inner loop, run for every node of every file.
    """
    lines = ["def get(node, nodes=NODE_TYPES, seqs=_SEQUENCES):", "    found = []"]
    for name in _child_fields(cls):
        lines += [
            f"    value = node.{name}",
            "    kind = type(value)",
            "    if kind in nodes:",
            "        found.append(value)",
            "    elif kind in seqs:",
            "        found.extend([item for item in value if type(item) in nodes])",
        ]
    lines.append("    return found")
    namespace: dict[str, Any] = {"NODE_TYPES": NODE_TYPES, "_SEQUENCES": _SEQUENCES}
    exec("\n".join(lines), namespace)  # field names come from LibCST's dataclasses
    return namespace["get"]


def walk(
    root: cst.CSTNode,
    on_visit: Mapping[type, Sequence[Handler]],
    on_leave: Mapping[type, Sequence[Handler]],
    parents: list[cst.CSTNode],
) -> None:
    """Visit ``root`` depth-first in source order, calling the handlers per node type.

    ``parents`` is updated in place so that, inside a handler, it holds the node's ancestors
    (outermost first, the node itself excluded). A visit handler returning ``False`` skips
    the node's children.

    The stack holds, per level of the tree being visited, the nodes of that level still to
    visit (last first), and ``parents`` the node whose children they are: a node with
    children pushes a level and becomes a parent, and a level done pops both and leaves its
    parent. Nothing is allocated per node but the lists of children (a stack of (node,
    depth, event) tuples, each popped with ``parents`` cut to its depth, cost a third more).
    """
    del parents[:]
    get_visits = on_visit.get
    get_leaves = on_leave.get
    getters = _walk_getters
    levels: list[list[Any]] = []  # the pending nodes of the levels above
    pending: list[Any] = [root]  # the nodes of this level still to visit, last first
    while True:
        if pending:
            node = pending.pop()
            cls = type(node)
            enter = True
            handlers = get_visits(cls)
            if handlers:
                for handler in handlers:
                    if handler(node) is False:
                        enter = False
            get = getters[cls] if enter else None
            kids = get(node) if get is not None else None  # children(node), inlined
            if kids:
                parents.append(node)
                levels.append(pending)
                kids.reverse()
                pending = kids
                continue
            leaves = get_leaves(cls)  # no children (or not entered): left at once
        elif levels:
            pending = levels.pop()
            node = parents.pop()
            leaves = get_leaves(type(node))
        else:
            return
        if leaves:
            for handler in leaves:
                handler(node)


def suite_body(suite: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    """The statements of a block: an indented block's, or a one-line suite as its one."""
    return suite.body if isinstance(suite, cst.IndentedBlock) else (suite,)


def blocks_of(node: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    """The blocks of a compound statement: body, ``elif``/``else`` chain, handlers, ``finally``
    and ``match`` cases, in source order."""
    body = getattr(node, "body", None)  # `match` has cases instead
    blocks: list[cst.BaseSuite] = [body] if isinstance(body, cst.BaseSuite) else []
    orelse = getattr(node, "orelse", None)
    while orelse is not None:
        blocks.append(orelse.body)
        orelse = getattr(orelse, "orelse", None) if isinstance(orelse, cst.If) else None
    for handler in getattr(node, "handlers", ()):
        blocks.append(handler.body)
    finalbody = getattr(node, "finalbody", None)
    if finalbody is not None:
        blocks.append(finalbody.body)
    for case in getattr(node, "cases", ()):
        blocks.append(case.body)
    return blocks


def evaluated(node: cst.BaseExpression) -> object:
    """A literal's ``evaluated_value``, or None when Python itself would reject it (``"\\x"``,
    ``"\\N{NOPE}"``, an integer over the int-to-string digit limit): never raises, and never
    prints Python's warning on an invalid escape (``"\\#"``: a SyntaxWarning on stderr from
    CPython 3.12) — the code is the user's, the evaluation ours."""
    if type(node) is cst.SimpleString:
        text = node.value
        if text[0] in "'\"" and "\\" not in text and "\r" not in text:
            # no prefix, no escape, no newline Python would translate: the text between the
            # quotes is the value (``literal_eval`` parses a module to say so)
            quotes = 3 if text[:3] in ('"""', "'''") else 1
            return text[quotes:-quotes]
    try:
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)) or (
            isinstance(node, cst.SimpleString) and "\\" not in node.value
        ):
            return node.evaluated_value
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return node.evaluated_value  # type: ignore[attr-defined]
    except Exception:
        return None


def parameters(params: cst.Parameters) -> Iterator[cst.Param]:
    """Every parameter of a signature, ``*args`` and ``**kwargs`` included, in order."""
    yield from params.posonly_params
    yield from params.params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    yield from params.kwonly_params
    if isinstance(params.star_kwarg, cst.Param):
        yield params.star_kwarg


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    """The argument ``name=...`` of ``call``, if it is given."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def call_argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """What ``call`` passes for the parameter at ``position`` or named ``keyword``: None when
    it passes nothing for it, or when a ``*``/``**`` argument comes first (it may hold it)."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if positional == position:
                return arg.value
            positional += 1
        elif arg.keyword.value == keyword:
            return arg.value
    return None


# Nodes that open a scope of their own: a walk of one scope does not enter them.
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_SCOPE_TYPES = subclasses_of(*SCOPES)  # what ``isinstance(x, SCOPES)`` is true of (faster)


def nodes_with_parents(
    node: cst.CSTNode, *, into_scopes: bool = False
) -> Iterator[tuple[cst.CSTNode, Sequence[cst.CSTNode]]]:
    """``node`` and every node below it in source order, each with its ancestors from ``node``
    down (outermost first; none for ``node`` itself).

    Without ``into_scopes``, the functions, classes and lambdas below ``node`` are yielded but
    not entered: their bodies are scopes of their own (``node`` itself is always entered).
    Linear time: the walk keeps an explicit stack, and the ancestors are one list updated in
    place (a copy per node is quadratic on deep code), so read them before the next node and
    copy what you keep.
    """
    parents: list[cst.CSTNode] = []
    stack: list[tuple[cst.CSTNode, int]] = [(node, 0)]
    getters, scopes = _walk_getters, frozenset() if into_scopes else _SCOPE_TYPES
    while stack:
        current, depth = stack.pop()
        del parents[depth:]
        yield current, parents
        kind = type(current)
        if kind in scopes and current is not node:
            continue
        get = getters[kind]
        kids = get(current) if get is not None else None  # children(current), inlined
        if kids:
            parents.append(current)
            child_depth = depth + 1
            stack.extend([(child, child_depth) for child in reversed(kids)])


def scope_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below ``node`` in source order, leaving out nested functions, classes and
    lambdas whole (the nodes of one scope)."""
    getters, scopes = _walk_getters, _SCOPE_TYPES
    stack = list(children(node))
    stack.reverse()
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind in scopes:
            continue
        yield current
        get = getters[kind]
        kids = get(current) if get is not None else None  # children(current), inlined
        if kids:
            kids.reverse()
            stack += kids
