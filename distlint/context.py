"""What a rule can ask about the file it is checking while the walk is under way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from distlint.imports import ImportTable
from distlint.regions import CompileRoot, compile_root_of

if TYPE_CHECKING:
    from distlint.config import FileSettings
    from distlint.findings import Fix, Location, Severity
    from distlint.registry import Rule


@dataclass
class PendingReport:
    """A finding whose position is not known yet (positions are computed after the walk)."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    severity: Severity | None
    related: tuple[Location, ...]
    fix: Fix | None
    fix_nodes: tuple[tuple[cst.CSTNode, str], ...]
    related_nodes: tuple[tuple[cst.CSTNode, str], ...] = ()


class _FunctionScope:
    __slots__ = ("_table", "func", "root")

    def __init__(self, func: cst.FunctionDef, root: CompileRoot | None) -> None:
        self.func = func
        self.root = root
        self._table: ImportTable | None = None


class FileContext:
    """Per-file facts for rules: path, settings, name resolution, ancestors, compiled roots."""

    def __init__(
        self,
        path: str,
        source: str,
        module: cst.Module,
        settings: FileSettings,
        module_name: str | None = None,
        is_package: bool = False,
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.settings = settings
        self.module_name = module_name
        self.is_package = is_package
        self.imports = ImportTable.for_module(module, module_name, is_package)
        self.parents: list[cst.CSTNode] = []
        self.reports: list[PendingReport] = []
        self._functions: list[_FunctionScope] = []
        self._wrappers = frozenset(settings.compile_wrappers)

    # -- names ---------------------------------------------------------------------------------

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Canonical dotted name of ``expr`` (``dist.all_reduce`` -> ``torch.distributed...``)."""
        return self._table().resolve(expr)

    def _table(self) -> ImportTable:
        """The innermost scope's table, building function tables lazily (outermost first)."""
        table = self.imports
        for scope in self._functions:
            if scope._table is None:
                scope._table = table.for_function(scope.func, self.module_name, self.is_package)
            table = scope._table
        return table

    # -- functions and compiled regions ---------------------------------------------------------

    def enter_function(self, func: cst.FunctionDef) -> None:
        # Decorators are evaluated in the enclosing scope.
        root = compile_root_of(func, self.resolve, self._wrappers)
        self._functions.append(_FunctionScope(func, root))

    def leave_function(self, func: cst.FunctionDef) -> None:
        if self._functions and self._functions[-1].func is func:
            self._functions.pop()

    @property
    def function(self) -> cst.FunctionDef | None:
        """The innermost enclosing function definition."""
        return self._functions[-1].func if self._functions else None

    @property
    def compile_root(self) -> CompileRoot | None:
        """The compile root of the innermost enclosing function, if it is compiled itself.

        Regions are lexical here: a nested ``def`` inside a compiled function starts a scope
        of its own (the semantic layer extends regions through the call graph).
        """
        return self._functions[-1].root if self._functions else None

    # -- reporting -------------------------------------------------------------------------------

    def add_report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str,
        severity: Severity | None,
        related: tuple[Location, ...],
        fix: Fix | None,
        fix_nodes: tuple[tuple[cst.CSTNode, str], ...],
        related_nodes: tuple[tuple[cst.CSTNode, str], ...] = (),
    ) -> None:
        self.reports.append(
            PendingReport(
                type(rule), node, message, severity, related, fix, fix_nodes, related_nodes
            )
        )
