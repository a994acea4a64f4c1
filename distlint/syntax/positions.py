"""Positions for the few nodes that are reported, not for the whole tree.

LibCST's PositionProvider records a range for every node (~1.3x a parse). We run the same
code generation with a state that records only the requested nodes (plus the child nodes
their syntactic range is hoisted from) and stops as soon as the last one is done, so a
file without findings pays nothing and a file with findings pays part of one codegen.
The ranges match PositionProvider's (whitespace excluded where syntax allows).

A file is often measured more than once (its findings, then lazily located nodes when
linking, then the findings of its second pass): :class:`Positions` remembers where each
top-level statement starts, so that a later measurement regenerates only the statements that
hold the nodes it wants.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass

import libcst as cst
from libcst._nodes.internal import CodegenState

from distlint.syntax.indentation import IndentColumns
from distlint.syntax.walker import descendants


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
    what the second pass reports and matches again), and each measurement notes where the
    top-level statements it went through start, so the next one generates only the
    statements that hold its new nodes."""

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
        with suppress(_Done):
            homes = self._homes(wanted)
            if homes is None:
                self._whole(state)
            else:
                for index in homes:
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

    def _homes(self, wanted: set[cst.CSTNode]) -> list[int] | None:
        """The top-level statements that hold ``wanted``, in order; None: measure the whole
        module (the first measurement, or a node outside every statement)."""
        if not self._starts:
            return None
        if self._home is None:
            self._home = {}
            for index, stmt in enumerate(self.module.body):
                for node in descendants(stmt):
                    self._home.setdefault(id(node), index)
        homes = {self._home.get(id(node)) for node in wanted}
        if None in homes:
            return None
        return sorted(homes)  # type: ignore[arg-type]  # None is not in it

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
        """Generate top-level statement ``index`` from where it starts (found by generating
        the statements before it from the last known start, measuring nothing, if need be)."""
        body = self.module.body
        starts = self._starts
        if len(starts) <= index:
            finder = _TrackingState(self.module, set())
            while len(starts) <= index:
                finder.line, finder.column = starts[-1]
                body[len(starts) - 1]._codegen(finder)
                starts.append((finder.line, finder.column))
        state.line, state.column = starts[index]
        body[index]._codegen(state)
        if len(starts) == index + 1 and index + 1 < len(body):
            starts.append((state.line, state.column))
