"""Rank facts of one file: scope scans shared by the summary, and the rank lattice.

:class:`FileTaint` scans each scope once (assignments, returns, nested defs) for the
summary, and runs the flow-sensitive rank lattice (:mod:`.rankflow`) over the file when it
may hold a rank source at all. Rules ask through ``RuleContext.rank_dependent``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from distlint.semantic.packs import source_words
from distlint.semantic.rankflow import RANK, UNKNOWN_KIND, Kind, RankFlow, Why
from distlint.syntax.walker import children, subclasses_of, suite_body

if TYPE_CHECKING:
    from distlint.syntax.parsed_file import ParsedFile

_EXPRESSIONS = subclasses_of(cst.BaseExpression)

# Words that every generic rank source contains (the framework packs add their names): a
# file without any of them has no local rank value.
_SOURCE_WORDS = (
    "rank",
    "RANK",
    "is_main",
    "main_process",
    "master",
    "local_zero",
    "PROCID",
    "LOCALID",
)


# -- scanning scopes ---------------------------------------------------------------------------


Assignment = tuple[cst.BaseExpression, cst.CSTNode, bool]  # (target, value, is_loop)


@dataclass
class ScopeScan:
    """A scope's assignments and returned expressions (nested defs/classes excluded)."""

    assignments: list[Assignment]
    returns: list[cst.BaseExpression]
    functions: list[cst.FunctionDef]  # defs directly in this scope (also inside blocks)
    classes: list[cst.ClassDef]
    declared_global: set[str] = field(default_factory=set)  # ``global f``: not locals
    bare_return: bool = False  # a ``return`` without a value (not in ``returns``)


def scan_scope(body: Iterable[cst.CSTNode]) -> ScopeScan:
    """One pass over a scope's statements (``for`` targets count as loop assignments)."""
    scan = ScopeScan([], [], [], [])
    stack = list(body)
    stack.reverse()
    expressions = _EXPRESSIONS
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in expressions:
            continue  # expressions hold no statements (walrus targets are not tracked)
        if type(node) is cst.FunctionDef:
            scan.functions.append(node)
            continue
        if type(node) is cst.ClassDef:
            scan.classes.append(node)
            continue
        if type(node) is cst.Assign:
            for target in node.targets:
                scan.assignments.append((target.target, node.value, False))
            continue
        if type(node) is cst.AnnAssign or type(node) is cst.AugAssign:
            if node.value is not None:
                scan.assignments.append((node.target, node.value, False))
            continue
        if type(node) is cst.Return:
            if node.value is not None:
                scan.returns.append(node.value)
            else:
                scan.bare_return = True
            continue
        if type(node) is cst.Global:
            scan.declared_global.update(item.name.value for item in node.names)
            continue
        if kind in _SKIP_SMALL:
            continue
        if type(node) is cst.For:
            scan.assignments.append((node.target, node.iter, True))
        elif type(node) is cst.WithItem and node.asname is not None:
            scan.assignments.append((node.asname.name, node.item, False))
        kids = children(node)
        kids.reverse()
        stack.extend(kids)
    return scan


# Small statements that bind nothing and hold no statements.
_SKIP_SMALL = frozenset(
    {
        cst.Expr,
        cst.Pass,
        cst.Break,
        cst.Continue,
        cst.Raise,
        cst.Assert,
        cst.Del,
        cst.Global,
        cst.Nonlocal,
        cst.Import,
        cst.ImportFrom,
    }
)


# -- the per-file analysis (rules ask through RuleContext.rank_dependent) ---------------------


class FileTaint:
    """One file's scope scans, and its rank lattice when the file may hold a rank source."""

    def __init__(self, ctx: ParsedFile) -> None:
        self.predicates = frozenset(ctx.settings.rank_predicates)
        self.scans: dict[cst.CSTNode, ScopeScan] = {}
        self.active = _may_hold_sources(ctx.source, self.predicates) or ctx.in_project
        self.flow: RankFlow | None = None
        if self.active:
            try:
                self.flow = RankFlow(ctx, self.predicates)
            except RecursionError:  # absurdly deep expressions: no rank facts for this file
                self.flow = None
                self.active = False

    def scan(self, node: cst.Module | cst.FunctionDef | cst.ClassDef) -> ScopeScan:
        """The scan of a module, function or class body (computed once)."""
        found = self.scans.get(node)
        if found is None:
            body = node.body if isinstance(node, cst.Module) else suite_body(node.body)
            found = self.scans[node] = scan_scope(body)
        return found

    def test_kind(self, test: cst.BaseExpression) -> Kind:
        """The lattice kind of an ``if``/``while``/ternary test."""
        return self.flow.test_kind(test) if self.flow is not None else UNKNOWN_KIND

    def describe(self, why: Why) -> str:
        return self.flow.describe(why) if self.flow is not None else why.text

    def return_kind(self, node: cst.FunctionDef) -> Kind:
        return self.flow.return_kind(node) if self.flow is not None else UNKNOWN_KIND

    def class_attributes(self, class_name: str) -> frozenset[str]:
        """``self.<name>`` attributes a class of this file assigns."""
        if self.flow is None:
            return frozenset()
        return frozenset(self.flow.class_attributes(class_name))

    def rank_attributes(self, class_name: str) -> tuple[str, ...]:
        """``self.<name>`` attributes of a class that hold a rank value."""
        if self.flow is None:
            return ()
        table = self.flow.class_attributes(class_name)
        return tuple(sorted(name for name, kind in table.items() if kind.level == RANK))


def _may_hold_sources(source: str, predicates: frozenset[str]) -> bool:
    if any(word in source for word in _SOURCE_WORDS) or any(
        word in source for word in source_words()
    ):
        return True
    return any(p.rsplit(".", 1)[-1] in source for p in predicates)


def file_taint(ctx: ParsedFile) -> FileTaint:
    """The file's taint analysis, built once per file."""
    return ctx.memo(FileTaint)


def expression_is_rank_dependent(ctx: ParsedFile, expr: cst.BaseExpression) -> bool:
    """Whether an ``if``/``while`` test is proven to differ between ranks."""
    taint = file_taint(ctx)
    return taint.active and taint.test_kind(expr).level == RANK
