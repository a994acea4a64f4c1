"""Positions of an editor buffer's tree that reuse what was measured in its earlier trees.

After an edit, the tree of the new text shares its top-level statements with the last one
wherever the edit did not reach (:class:`~distlint.syntax.pieces.ReusedPieces`: the same
node objects). A node's range within a statement is a function of that statement alone
(LibCST's code generation, given the module's default indentation and newline); only the line
the statement starts on moves. So each statement measured once keeps how many lines it spans
and the ranges of its nodes measured so far, relative to its first line, and a measurement of
a later tree counts the line breaks of the statements that are new (to learn where the next
ones start) and generates only those holding nodes not measured yet. Measuring the findings
of a 3,000-line buffer cost about a fifth of each edit's check, most of it generating
statements the edit did not touch.

A statement object is kept only while the latest tree holds it (its id stays its own);
a tree with another default indentation or newline, or read with rewritten indentation (a
column map), starts afresh.
"""

from __future__ import annotations

from contextlib import suppress

import libcst as cst

from distlint.syntax.indentation import IndentColumns
from distlint.syntax.positions import (
    NodeRange,
    Positions,
    _Done,
    _line_breaks,
    _TrackingState,
)
from distlint.syntax.walker import descendants

_NEVER = 1 << 40  # more nodes than a tree has: a count of pending nodes that never ends at 0


class _Statement:
    """What is known of one top-level statement: how many lines it spans (None until it was
    generated whole), its nodes' ids, and ranges measured in it, from its first line (0)."""

    __slots__ = ("lines", "node", "nodes", "ranges")

    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node  # held, so that the ids below stay its nodes'
        self.lines: int | None = None
        self.nodes: tuple[int, ...] | None = None  # listed once: the ids of its nodes
        self.ranges: dict[int, tuple[cst.CSTNode, NodeRange]] = {}


class StatementPositions:
    """Per buffer, kept from one text to the next: what is known of the top-level statements
    of its latest tree (see the module docstring)."""

    def __init__(self) -> None:
        self._defaults: tuple[str, str] | None = None
        self._known: dict[int, _Statement] = {}  # id(statement) -> what is known of it
        # id(node) -> the known statement that holds it (those whose nodes were listed)
        self._homes: dict[int, _Statement] = {}

    def positions(self, module: cst.Module, columns: IndentColumns | None) -> Positions:
        """The positions of ``module``, reusing those of the statements it shares with the
        trees measured before."""
        defaults = (module.default_indent, module.default_newline)
        if columns is not None or defaults != self._defaults:
            self._defaults = defaults if columns is None else None
            self._known = {}
            self._homes = {}
            if columns is not None:
                return Positions(module, columns)
        known = self._known
        self._known = {id(stmt): known.get(id(stmt)) or _Statement(stmt) for stmt in module.body}
        for key, gone in known.items():
            if key not in self._known and gone.nodes is not None:
                for node in gone.nodes:
                    self._homes.pop(node, None)
        statements = [self._known[id(stmt)] for stmt in module.body]
        return _ReusingPositions(module, statements, self._homes)


class _ReusingPositions(Positions):
    """:class:`Positions` of one tree whose statements' measures outlive it."""

    def __init__(
        self, module: cst.Module, statements: list[_Statement], homes: dict[int, _Statement]
    ) -> None:
        super().__init__(module, None)
        self._statements = statements
        self._statement_of = homes
        self._first_lines: list[int] = []  # the line each statement starts on, so far
        self._index: dict[int, int] | None = None  # id(statement) -> its index, the first

    def _measure(self, wanted: set[cst.CSTNode]) -> dict[cst.CSTNode, NodeRange]:
        by_statement: dict[int, list[cst.CSTNode]] = {}
        index_of = self._indexes()
        homes = self._statement_of
        for node in wanted:
            home = homes.get(id(node))
            if home is None:  # the module or its header or footer: the usual way
                return super()._measure(wanted)
            by_statement.setdefault(index_of[id(home)], []).append(node)
        self._learn_first_lines(max(by_statement), by_statement)
        found: dict[cst.CSTNode, NodeRange] = {}
        for index, nodes in by_statement.items():
            statement = self._statements[index]
            missing = [node for node in nodes if id(node) not in statement.ranges]
            if missing:
                self._generate(index, missing, whole=False)
            first = self._first_lines[index]
            for node in nodes:
                found[node] = _moved(statement.ranges[id(node)][1], first)
        return found

    def _indexes(self) -> dict[int, int]:
        """Where each statement is in this tree (the first place of one that is there twice,
        as :class:`Positions` has it), once the nodes of every statement are listed."""
        if self._index is None:
            self._index = {}
            for index, statement in enumerate(self._statements):
                self._index.setdefault(id(statement), index)
                if statement.nodes is None:
                    statement.nodes = tuple(map(id, descendants(statement.node)))
                    self._statement_of.update(dict.fromkeys(statement.nodes, statement))
        return self._index

    def _learn_first_lines(self, last: int, wanted: dict[int, list[cst.CSTNode]]) -> None:
        """Where the statements up to ``last`` start: each one's lines, known, or learnt by
        generating it whole where nodes are wanted in it (measuring them on the way), else
        by counting its line breaks (as :class:`Positions` counts them)."""
        starts = self._first_lines
        if not starts:
            starts.append(1 + sum(_line_breaks(line, set()) for line in self.module.header))
        while len(starts) <= last:
            index = len(starts) - 1
            statement = self._statements[index]
            if statement.lines is None:
                if index in wanted:
                    self._generate(index, wanted[index], whole=True)
                else:
                    statement.lines = _line_breaks(statement.node, set())
            assert statement.lines is not None
            starts.append(starts[index] + statement.lines)

    def _generate(self, index: int, nodes: list[cst.CSTNode], whole: bool) -> None:
        """Generate statement ``index`` from its first line (0), noting the ranges of
        ``nodes`` in it; ``whole``: to its end, noting how many lines it spans."""
        statement = self._statements[index]
        state = _TrackingState(self.module, set(nodes))
        state.line = 0
        if whole:  # never all done: the generation goes to the statement's end
            state.pending -= _NEVER
        with suppress(_Done):
            statement.node._codegen(state)
        if whole:
            statement.lines = state.line
        for node in nodes:
            measured = state.ranges.get(node)
            if measured is not None:
                statement.ranges[id(node)] = (node, measured)


def _moved(measured: NodeRange, first_line: int) -> NodeRange:
    """A range measured from its statement's first line (0), on the statement's line."""
    return NodeRange(
        measured.start_line + first_line,
        measured.start_column,
        measured.end_line + first_line,
        measured.end_column,
    )
