"""Positions for the few nodes that are reported, not for the whole tree.

LibCST's PositionProvider records a range for every node (~1.3x a parse). We run the same
code generation with a state that records only the requested nodes (plus the child nodes
their syntactic range is hoisted from) and stops as soon as the last one is done, so a
file without findings pays nothing and a file with findings pays part of one codegen.
The ranges match PositionProvider's (whitespace excluded where syntax allows).

Only the top-level statements that hold the wanted nodes are generated. Every top-level
statement starts at column 0 (the one before it ends with a line break), on the line after
the line breaks of the code before it, and those are counted from the tree's fields (strings,
whitespace, newlines: :func:`_line_breaks`) at about a third of the cost of generating the code
(measured on torch/distributed). A file is often measured more than once (its findings, then
lazily located nodes when linking, then the findings of its second pass): :class:`Positions`
remembers where each top-level statement starts, so that a later measurement counts no line
twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, fields
from typing import Any

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
    what the second pass reports and matches again), only the top-level statements that hold
    the nodes wanted are generated, and where the statements before them start is counted
    once (see the module docstring)."""

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
        homes = self._homes(wanted)
        if homes is None:
            with suppress(_Done):
                self._whole(state)
        else:
            for index, held in homes.items():
                state.pending = held  # the statement's generation stops after its last one
                with suppress(_Done):
                    self._statement(state, index)
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

    def _homes(self, wanted: set[cst.CSTNode]) -> dict[int, int] | None:
        """The top-level statements that hold ``wanted``, in order, their starts known, with
        how many of ``wanted`` each holds; None: measure the whole module (a node outside every
        statement: the module, its header or footer, a node of another tree)."""
        if self.module in wanted:
            return None
        if not self._starts:
            return self._first_homes({id(node) for node in wanted})
        if self._home is None:
            self._home = {}
            for index, stmt in enumerate(self.module.body):
                for node in descendants(stmt):
                    self._home.setdefault(id(node), index)
        homes: dict[int, int] = {}
        for node in wanted:
            home = self._home.get(id(node))
            if home is None:
                return None
            homes[home] = homes.get(home, 0) + 1
        return dict(sorted(homes.items()))

    def _first_homes(self, left: set[int]) -> dict[int, int] | None:
        """The first measurement's :meth:`_homes`: the statements are scanned in order for the
        nodes of ``left`` (ids, removed as they are found), counting their line breaks, until
        the last one is found; the starts of the statements scanned are noted."""
        module = self.module
        starts = self._starts
        line = 1
        for header in module.header:
            line += _line_breaks(header, set())
        homes: dict[int, int] = {}
        for index, stmt in enumerate(module.body):
            starts.append((line, 0))
            before = len(left)
            breaks = _line_breaks(stmt, left)
            if len(left) < before:
                homes[index] = before - len(left)
            if not left:
                return homes
            line += breaks
        return None  # a node outside every statement (the module's header or footer)

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

    def _statement(self, state: _TrackingState, index: int) -> None:
        """Generate top-level statement ``index`` from where it starts (found by counting the
        line breaks of the statements before it from the last known start, if need be)."""
        body = self.module.body
        starts = self._starts
        while len(starts) <= index:
            line, column = starts[-1]
            starts.append((line + _line_breaks(body[len(starts) - 1], set()), column))
        state.line, state.column = starts[index]
        state.indent_tokens.clear()  # what a generation stopped inside a block left behind
        body[index]._codegen(state)
        if len(starts) == index + 1 and index + 1 < len(body):
            starts.append((state.line, state.column))


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
