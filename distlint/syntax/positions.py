"""Positions for the few nodes that are reported, not for the whole tree.

LibCST's PositionProvider records a range for every node (~1.3x a parse). We run the same
code generation with a state that records only the requested nodes (plus the child nodes
their syntactic range is hoisted from) and stops as soon as the last one is done, so a
file without findings pays nothing and a file with findings pays part of one codegen.
The ranges match PositionProvider's (whitespace excluded where syntax allows).

Only the innermost statements that hold the wanted nodes are generated (a node deep in a
large class costs its own statement, not the class: :class:`_Descent`). Every statement starts
at column 0 (the code before it ends with a line break), on the line after the line breaks of
the code before it, and those are counted from the tree's fields (strings, whitespace,
newlines: :func:`_line_breaks`) at about a third of the cost of generating the code (measured
on torch/distributed). A file is often measured more than once (its findings, then lazily
located nodes when linking, then the findings of its second pass): :class:`Positions`
remembers where each top-level statement starts, so that a later measurement counts no line
twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, fields
from typing import Any, NamedTuple, cast

import libcst as cst
from libcst._nodes.internal import CodegenState

from distlint.syntax.indentation import IndentColumns
from distlint.syntax.walker import NODE_TYPES, descendants


@dataclass(frozen=True)
class NodeRange:
    """1-based line, 0-based code-point column, end exclusive (LibCST's convention)."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int


class _Done(Exception):
    """Raised inside codegen once every requested node has its range."""


class _TrackingState(CodegenState):
    """CodegenState that tracks the cursor and records ranges of wanted nodes only.

    Codegen calls the hooks below for every node of the file, so they are kept cheap: wanted
    nodes are looked up by ``id`` (a CST node's own ``__hash__`` is a Python call), and an
    unwanted node's syntactic position is one shared do-nothing context manager instead of a
    generator-based one (together about a third of a measuring pass)."""

    def __init__(self, module: cst.Module, wanted: set[cst.CSTNode]) -> None:
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        self.line = 1
        self.column = 0
        self.wanted = {id(node): node for node in wanted}
        self.pending = len(self.wanted)
        self.starts: dict[int, tuple[int, int]] = {}
        self.ranges: dict[cst.CSTNode, NodeRange] = {}

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        normalized = value.replace("\r\n", "\n").replace("\r", "\n")
        self.line += normalized.count("\n")
        self.column = len(normalized) - normalized.rfind("\n") - 1

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self._advance(value)

    def pop_trailing_newline(self) -> None:
        pass  # we keep no tokens, and the trailing newline comes after every node

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.starts[id(node)] = (self.line, self.column)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) not in self.wanted:
            return
        start = self.starts.pop(id(node))
        if node not in self.ranges:
            self.ranges[node] = NodeRange(start[0], start[1], self.line, self.column)
        self.pending -= 1
        if self.pending == 0:
            raise _Done

    def record_syntactic_position(  # type: ignore[override]  # codegen only enters it
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> AbstractContextManager[None]:
        if id(node) not in self.wanted:
            return _NOTHING
        return self._record(node, start_node, end_node)

    @contextmanager
    def _record(
        self, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> Iterator[None]:
        # The range may be hoisted from children: make sure theirs get recorded too.
        for helper in (start_node, end_node):
            if helper is not None and id(helper) not in self.wanted:
                self.wanted[id(helper)] = helper
                self.pending += 1
        start = (self.line, self.column)
        try:
            yield
        finally:
            end = (self.line, self.column)
            if start_node is not None and start_node in self.ranges:
                hoisted = self.ranges[start_node]
                start = (hoisted.start_line, hoisted.start_column)
            if end_node is not None and end_node in self.ranges:
                hoisted = self.ranges[end_node]
                end = (hoisted.end_line, hoisted.end_column)
            self.ranges[node] = NodeRange(start[0], start[1], end[0], end[1])


_NOTHING = nullcontext()


def node_ranges(
    module: cst.Module, nodes: Iterable[cst.CSTNode], columns: IndentColumns | None = None
) -> dict[cst.CSTNode, NodeRange]:
    """Ranges of ``nodes`` (which must belong to ``module``), computed in one partial codegen;
    with ``columns``, in the file as written of a tree parsed from rewritten indentation."""
    return Positions(module, columns).ranges(nodes)


class Positions:
    """Ranges of one tree's nodes, measured on demand (:func:`node_ranges`), for as long as the
    tree is checked: a node is measured once (the first pass's findings and compile sites are
    what the second pass reports and matches again), only the innermost statements that hold
    the nodes wanted are generated, and where the top-level statements before them start is
    counted once (see the module docstring)."""

    def __init__(self, module: cst.Module, columns: IndentColumns | None = None) -> None:
        self.module = module
        self.columns = columns
        self._starts: list[tuple[int, int]] = []  # cursor where body[i] starts, i < len
        self._home: dict[int, int] | None = None  # id(node) -> its top-level statement
        self._known: dict[int, tuple[cst.CSTNode, NodeRange]] = {}  # id(node) -> its range

    def ranges(self, nodes: Iterable[cst.CSTNode]) -> dict[cst.CSTNode, NodeRange]:
        """Ranges of ``nodes`` (of this tree), in the file as written."""
        known = self._known
        found: dict[cst.CSTNode, NodeRange] = {}
        wanted = set()
        for node in nodes:
            hit = known.get(id(node))
            if hit is not None:
                found[node] = hit[1]
            else:
                wanted.add(node)
        if wanted:
            for node, measured in self._measure(wanted).items():
                known[id(node)] = (node, measured)
                found[node] = measured
        return found

    def _measure(self, wanted: set[cst.CSTNode]) -> dict[cst.CSTNode, NodeRange]:
        state = _TrackingState(self.module, set(wanted))
        groups = self._groups(wanted)
        if groups is None:
            with suppress(_Done):
                self._whole(state)
        else:
            for stmt, line, indents, held in groups:
                state.pending = held  # the statement's generation stops after its last one
                state.line, state.column = line, 0
                state.indent_tokens[:] = indents
                with suppress(_Done):
                    stmt._codegen(state)
        found = {node: state.ranges[node] for node in wanted if node in state.ranges}
        columns = self.columns
        if columns is None:
            return found
        return {
            node: NodeRange(
                found_range.start_line,
                columns.original(found_range.start_line, found_range.start_column),
                found_range.end_line,
                columns.original(found_range.end_line, found_range.end_column),
            )
            for node, found_range in found.items()
        }

    def _groups(self, wanted: set[cst.CSTNode]) -> list[_Group] | None:
        """The innermost statements that hold ``wanted``, each with the state codegen starts it
        from (see :class:`_Descent`); None: measure the whole module (a node outside every
        statement: the module, its header or footer, a node of another tree)."""
        if self.module in wanted:
            return None
        body = self.module.body
        starts = self._starts
        descent = _Descent(self.module.default_indent)
        if not starts:  # the first measurement: the statements in order, their starts noted
            left = descent.left = {id(node) for node in wanted}
            line = 1
            for header in self.module.header:
                line += _line_breaks(header, set())
            for stmt in body:
                starts.append((line, 0))
                breaks = descent.statement(stmt, line, ())
                if not left:
                    return descent.groups
                line += breaks
            return None
        if self._home is None:
            self._home = {}
            for index, stmt in enumerate(body):
                for node in descendants(stmt):
                    self._home.setdefault(id(node), index)
        homes: dict[int, set[int]] = {}
        for node in wanted:
            home = self._home.get(id(node))
            if home is None:
                return None
            homes.setdefault(home, set()).add(id(node))
        for index in sorted(homes):
            while len(starts) <= index:  # count the statements before it from the last start
                line, column = starts[-1]
                starts.append((line + _line_breaks(body[len(starts) - 1], set()), column))
            descent.left = homes[index]
            descent.statement(body[index], starts[index][0], ())
        return descent.groups

    def _whole(self, state: _TrackingState) -> None:
        """``Module._codegen`` (LibCST's), noting where each top-level statement starts."""
        module = self.module
        state.before_codegen(module)
        for header in module.header:
            header._codegen(state)
        starts = self._starts
        for index, stmt in enumerate(module.body):
            if index == len(starts):
                starts.append((state.line, state.column))
            stmt._codegen(state)
        for footer in module.footer:
            footer._codegen(state)
        if module.has_trailing_newline:
            state.add_token(state.default_newline)  # the state keeps no tokens
        state.after_codegen(module)


# -- finding the innermost statements that hold the nodes ----------------------------------------


class _Group(NamedTuple):
    """A statement to generate, where codegen starts it (its line; the column is 0: the code
    before a statement ends with a line break), the indentation of the blocks around it, and
    how many wanted nodes it holds (its generation stops after the last)."""

    stmt: cst.BaseStatement
    line: int
    indents: tuple[str, ...]
    held: int


# What a compound statement (or one of its clauses) generates after its own fields: its
# suites, in order (LibCST's ``_codegen_impl``: every other field comes before them, and the
# keywords and colons it adds itself hold no line break).
_SUITES: dict[type, tuple[str, ...]] = {
    cst.If: ("body", "orelse"),
    cst.For: ("body", "orelse"),
    cst.While: ("body", "orelse"),
    cst.With: ("body",),
    cst.FunctionDef: ("body",),
    cst.ClassDef: ("body",),
    cst.Try: ("body", "handlers", "orelse", "finalbody"),
    cst.TryStar: ("body", "handlers", "orelse", "finalbody"),
    cst.Match: ("cases", "footer"),
    cst.Else: ("body",),
    cst.Finally: ("body",),
    cst.ExceptHandler: ("body",),
    cst.ExceptStarHandler: ("body",),
    cst.MatchCase: ("body",),
}
# The other fields of each, in any order (only their line breaks are counted).
_HEADS = {
    cls: tuple(f.name for f in fields(cls) if f.name not in suites)
    for cls, suites in _SUITES.items()
}


class _Descent:
    """Finds, for the wanted node ids of :attr:`left`, the innermost statements that hold
    them and where codegen starts each, counting line breaks instead of generating the code
    before them. A statement in an indented block starts at column 0 (what comes before it,
    the block's header or the statement before, ends with a line break), on the line after
    the line breaks of everything generated before it, with the indentation of the blocks
    around it (``IndentedBlock.indent``, ``Match.indent``, else the module's): generated
    from that state, its code and so its ranges are what the whole module's codegen gives.
    A statement holding a wanted node outside its inner statements (in its header, a suite
    itself, a footer, a one-line suite ``if x: f()``, an ``elif``) is generated whole, with
    every wanted node below it."""

    def __init__(self, default_indent: str) -> None:
        self.default_indent = default_indent
        self.left: set[int] = set()
        self.groups: list[_Group] = []

    def statement(self, stmt: cst.CSTNode, line: int, indents: tuple[str, ...]) -> int:
        """The line breaks of ``stmt`` (incomplete once :attr:`left` is empty), noting the
        groups of the wanted nodes below it."""
        left = self.left
        before = len(left)
        if type(stmt) not in _SUITES or id(stmt) in left:
            breaks = _line_breaks(stmt, left)
            stray = before - len(left)
        else:
            mark = len(self.groups)
            breaks, stray = self._clause(stmt, line, indents)
            if stray:
                del self.groups[mark:]  # generated whole, its inner statements with it
                stray = before - len(left)
        if stray:
            self.groups.append(_Group(cast(cst.BaseStatement, stmt), line, indents, stray))
        return breaks

    def _clause(self, node: cst.CSTNode, line: int, indents: tuple[str, ...]) -> tuple[int, int]:
        """The line breaks of a compound statement or clause (``else``, ``except``, ``case``,
        ``elif``), and how many wanted nodes it holds outside its inner statements."""
        left = self.left
        before = len(left)
        if id(node) in left:
            return _line_breaks(node, left), before - len(left)
        breaks = 0
        for name in _HEADS[type(node)]:
            breaks += _breaks_in(getattr(node, name), left)
            if not left:
                return breaks, before - len(left)
        stray = before - len(left)
        if type(node) is cst.Match:
            indent = node.indent
            indents = (*indents, self.default_indent if indent is None else indent)
        for name in _SUITES[type(node)]:
            value = getattr(node, name)
            for part in value if type(value) is tuple or type(value) is list else (value,):
                if type(part) is cst.IndentedBlock:
                    more, found = self._block(part, line + breaks, indents)
                elif type(part) in _SUITES:
                    more, found = self._clause(part, line + breaks, indents)
                else:  # a one-line suite, a footer line, an absent clause
                    count = len(left)
                    more = _breaks_in(part, left)
                    found = count - len(left)
                breaks += more
                stray += found
                if not left:
                    return breaks, stray
        return breaks, stray

    def _block(
        self, block: cst.IndentedBlock, line: int, indents: tuple[str, ...]
    ) -> tuple[int, int]:
        left = self.left
        before = len(left)
        if id(block) in left or not block.body:
            return _line_breaks(block, left), before - len(left)
        breaks = _line_breaks(block.header, left)
        stray = before - len(left)
        if not left:
            return breaks, stray
        indent = block.indent
        inner = (*indents, self.default_indent if indent is None else indent)
        for stmt in block.body:
            breaks += self.statement(stmt, line + breaks, inner)
            if not left:
                return breaks, stray
        count = len(left)
        for line_ in block.footer:
            breaks += _line_breaks(line_, left)
        return breaks, stray + count - len(left)


# -- counting line breaks ------------------------------------------------------------------------


def _line_breaks(node: cst.CSTNode, left: set[int]) -> int:
    """The line breaks in the code of ``node``, as :class:`_TrackingState` counts them (per
    token: ``\\r\\n``, ``\\r`` and ``\\n`` are one each), without generating it: every
    token that can hold one is a string field of a node below it (a string, whitespace, a
    comment), or a ``Newline`` without a value (the module's default newline), or the line an
    empty indented block is written with (``pass``). The ids of ``left`` found below ``node``
    are removed from it; once it is empty, the count stops (it is then incomplete)."""
    stack = [node]
    push, extend, pop = stack.append, stack.extend, stack.pop
    counters = _counters
    breaks = 0
    while stack:
        current = pop()
        if id(current) in left:
            left.discard(id(current))
            if not left:
                break
        breaks += counters[type(current)](current, push, extend, left)
    return breaks


def _counter(cls: type) -> Callable[..., int]:
    """The line breaks of a ``cls`` node's own string fields; its child nodes go to ``push``
    and ``extend`` (:func:`_line_breaks`). Generated at first use, the field loop unrolled
    (this runs for every node of the code before a measured one); the two most common nodes
    (whitespace, a name without parentheses) are counted in their parent's function instead
    of being pushed, unless they are wanted."""
    count = "n += v.count('\\n') + v.count('\\r') - v.count('\\r\\n')"
    lines = [
        "def count(node, push, extend, left, nodes=NODE_TYPES, SPACE=SPACE, NAME=NAME):",
        "    n = 0",
    ]
    if cls is cst.IndentedBlock:
        lines.append("    n += not node.body")  # written as an indented ``pass`` line
    for field in fields(cls):
        lines += [f"    v = node.{field.name}", "    kind = type(v)"]
        if cls is cst.Newline and field.name == "value":
            lines += ["    if v is None:", "        n += 1", "    else:", f"        {count}"]
            continue
        lines += [
            "    if (kind is SPACE or kind is NAME and not v.lpar and not v.rpar) and (",
            "        id(v) not in left",
            "    ):",
            "        v = v.value",
            "        if '\\n' in v or '\\r' in v:",
            f"            {count}",
            "    elif kind is str:",
            "        if '\\n' in v or '\\r' in v:",
            f"            {count}",
            "    elif kind in nodes:",
            "        push(v)",
            "    elif kind is tuple or kind is list:",
            "        extend(v)",
        ]
    lines.append("    return n")
    namespace: dict[str, Any] = {
        "NODE_TYPES": NODE_TYPES,
        "SPACE": cst.SimpleWhitespace,
        "NAME": cst.Name,
    }
    exec("\n".join(lines), namespace)  # field names come from LibCST's dataclasses
    return namespace["count"]  # type: ignore[no-any-return]


class _Counters(dict[type, Callable[..., int]]):
    """Node class -> its :func:`_counter`, made at first use."""

    def __missing__(self, cls: type) -> Callable[..., int]:
        counter = self[cls] = _counter(cls)
        return counter


_counters = _Counters()


def _breaks_in(value: object, left: set[int]) -> int:
    """:func:`_line_breaks` of a field's value: a node, a sequence of nodes, a string, or
    nothing (None, a sentinel)."""
    if type(value) in NODE_TYPES:
        return _line_breaks(cast(cst.CSTNode, value), left)
    if type(value) is tuple or type(value) is list:
        breaks = 0
        for item in cast("Sequence[cst.CSTNode]", value):
            breaks += _line_breaks(item, left)
            if not left:
                break
        return breaks
    if type(value) is str:
        return value.count("\n") + value.count("\r") - value.count("\r\n")
    return 0
