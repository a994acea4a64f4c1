"""What a rule can ask about the file it is checking while the walk is under way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import libcst as cst

from distlint.semantic.compile_sites import TreeSite, compiles, decorator_site
from distlint.semantic.regions import (
    BlockExits,
    OwnCompile,
    Sides,
    compile_assigned,
    eager_only,
    ends_in_exit,
    module_compile_receiver,
    own_compile,
    runs_whenever_called,
)
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import ImportTable
from distlint.syntax.lexing import NEWLINES
from distlint.syntax.parsed_file import ParsedFile
from distlint.syntax.positions import Positions
from distlint.syntax.walker import walk

if TYPE_CHECKING:
    from distlint.findings import Fix, Location, Severity, Span
    from distlint.semantic.link import ProjectFacts


class ReportingRule(Protocol):
    """What a pending report needs of its rule (every :class:`~distlint.rules.base.Rule`)."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]


@dataclass
class PendingReport:
    """A finding whose position is not known yet (positions are computed after the walk)."""

    rule: type[ReportingRule]
    node: cst.CSTNode
    message: str
    severity: Severity | None
    related: tuple[Location, ...]
    fix: Fix | None
    fix_nodes: tuple[tuple[cst.CSTNode, str], ...]
    related_nodes: tuple[tuple[cst.CSTNode, str], ...] = ()


class _FunctionScope:
    __slots__ = ("_region", "_region_known", "_table", "func", "qualname", "root")

    def __init__(self, func: cst.FunctionDef, root: TreeSite | None, qualname: str) -> None:
        self.func = func
        self.root = root
        self.qualname = qualname
        self._table: ImportTable | None = None
        self._region: Region | None = None
        self._region_known = False


class RuleContext(ParsedFile):
    """Per-file facts for rules: path, settings, name resolution, ancestors, compiled roots."""

    def __post_init__(self, known_positions: Positions | None) -> None:
        """The walk's own state, on top of the file's (the constructor is ParsedFile's)."""
        super().__post_init__(known_positions)
        # cheap gate, settled on first use: without the word or the name of a project function
        # testing it, no code of the file is guarded by is_compiling()
        self._compiling_guards: bool | None = None
        self.reports: list[PendingReport] = []
        self.records: list[tuple[str, object]] = []
        self._facts: ProjectFacts | None = None
        self._functions: list[_FunctionScope] = []
        self._scopes: list[str] = []  # qualname parts of enclosing classes and functions
        self._wrappers = frozenset(self.settings.compile_wrappers)
        self._own_compile: OwnCompile | None = None
        # the scope table at the first ``x.compile(...)``, where own_compile resolves names
        self._own_compile_table: ImportTable | None = None
        self._taken_sides: dict[int, bool] | None = None  # id(if) -> the side compiled calls take
        self._after_exit: set[int] = set()  # statements after an ``if`` whose taken side exits
        self._compiled_locals_of: dict[int, frozenset[str]] = {}
        self._block_exits: BlockExits = {}

    @property
    def facts(self) -> ProjectFacts | None:
        """The project's linked facts, set when the file is checked with the project."""
        return self._facts

    @facts.setter
    def facts(self, value: ProjectFacts | None) -> None:
        self._facts = value
        self.in_project = value is not None
        self._compiling_guards = None

    # -- names ---------------------------------------------------------------------------------

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Canonical dotted name of ``expr`` (``dist.all_reduce`` -> ``torch.distributed...``).

        Read in the scope the walk is in now; memoised per node and scope table (many rules ask
        about the same call), so a rule that looks ahead from another scope does not change
        what the node resolves to for the rest of the file.
        """
        return self.resolve_in(self.scope_table(), expr)

    def bound_several_ways(self, name: str) -> bool:
        """Whether ``name`` is bound to different objects on different paths in the current
        scope (see ``ImportTable.from_several_libraries``)."""
        return self.scope_table().from_several_libraries(name)

    def scope_table(self) -> ImportTable:
        """The innermost scope's table, building function tables lazily (outermost first)."""
        functions = self._functions
        if not functions:
            return self.imports
        innermost = functions[-1]._table
        if innermost is not None:
            return innermost  # built with all of its outer ones (asked at most nodes)
        table = self.imports
        for scope in functions:
            if scope._table is None:
                scope._table = self.table_for(scope.func, table)
            table = scope._table
        return table

    # -- functions and compiled regions ---------------------------------------------------------

    def enter_function(self, func: cst.FunctionDef) -> None:
        # Decorators are evaluated in the enclosing scope.
        root = decorator_site(func, self.resolve, self._wrappers)
        qualname = ".".join((*self._scopes, func.name.value))
        self._functions.append(_FunctionScope(func, root, qualname))
        self._scopes += [func.name.value, "<locals>"]

    def leave_function(self, func: cst.FunctionDef) -> None:
        if self._functions and self._functions[-1].func is func:
            self._functions.pop()
            del self._scopes[-2:]

    def enter_class(self, node: cst.ClassDef) -> None:
        self._scopes.append(node.name.value)

    def leave_class(self, node: cst.ClassDef) -> None:
        if self._scopes and self._scopes[-1] == node.name.value:
            self._scopes.pop()

    @property
    def function_id(self) -> str | None:
        """``module:qualname`` of the innermost function (the id summaries and facts use)."""
        if not self._functions:
            return None
        return f"{self.module_key}:{self._functions[-1].qualname}"

    @property
    def region(self) -> Region | None:
        """The compiled region the innermost enclosing function belongs to, if any.

        With project facts (the normal case) this covers every root form and every module:
        decorators, ``torch.compile(f)``, compiled modules' ``forward``, and functions reached
        from those by calls. Without facts it falls back to this function's own decorator.
        """
        if not self._functions:
            return None
        scope = self._functions[-1]
        if not scope._region_known:
            scope._region = self._compute_region(scope)
            scope._region_known = True
        region = scope._region
        if region is not None and not self.traced(self.parents):
            return None
        return region

    def certain(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` (being visited) runs every time a fullgraph=True root of its region
        runs: its function always runs then (``Region.certain``) and nothing in the function
        makes the node conditional. A break there certainly fails that compile."""
        region = self.region
        return (
            region is not None
            and region.certain
            and runs_whenever_called(self.parents, node, self._block_exits)
        )

    def always(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` (being visited) runs every time some root of its region runs,
        fullgraph or not (``Region.always``, and nothing in the function makes it
        conditional)."""
        region = self.region
        return (
            region is not None
            and region.always
            and runs_whenever_called(self.parents, node, self._block_exits)
        )

    def traced(self, ancestors: Sequence[cst.CSTNode]) -> bool:
        """Whether Dynamo may trace the node under ``ancestors`` (outermost first) when its
        function is compiled: not on the eager side of ``is_compiling()``, nor on a side of a
        parameter test that no compiled call takes (``if use_cpu:``, never passed True)."""
        if self._compiling_guards is None:
            facts = self.facts
            names = facts.predicate_names() if facts is not None else ()
            self._compiling_guards = "compiling" in self.source or any(
                name in self.source for name in names
            )
        if self._compiling_guards and eager_only(
            ancestors, self.resolve, self._compiled_locals, self._predicates
        ):
            return False
        return not self._on_untaken_side(ancestors)

    def _predicates(self, dotted: str) -> Sides | None:
        return self.facts.compiling_sides_of(dotted) if self.facts is not None else None

    def _compiled_locals(self, function: cst.FunctionDef) -> frozenset[str]:
        found = self._compiled_locals_of.get(id(function))
        if found is None:
            found = self._compiled_locals_of[id(function)] = compile_assigned(
                function, self.resolve
            )
        return found

    def _on_untaken_side(self, parents: Sequence[cst.CSTNode]) -> bool:
        """``ProjectFacts.decided_branches``, keyed by the ``if``'s walk-order ordinal; also
        what follows an ``if`` whose taken side returns or raises."""
        if self._taken_sides is None:
            self._settle_taken_sides()
        taken_sides = self._taken_sides or {}
        if not taken_sides and not self._after_exit:
            return False
        for index in range(len(parents) - 1):
            parent, child = parents[index], parents[index + 1]
            if id(child) in self._after_exit:
                return True
            taken = taken_sides.get(id(parent))
            if taken is None or not isinstance(parent, cst.If):
                continue
            if child is (parent.orelse if taken else parent.body):
                return True
        return False

    def _settle_taken_sides(self) -> None:
        decided = self.facts.decided_branches.get(self.path) if self.facts else None
        self._taken_sides, self._after_exit = {}, set()
        if not decided:
            return
        ifs: list[tuple[cst.If, cst.CSTNode | None]] = []
        stack: list[cst.CSTNode] = []
        walk(
            self.module,
            {cst.If: [lambda n: ifs.append((n, stack[-1] if stack else None))]},
            {},
            stack,
        )
        for ordinal, taken in decided.items():
            if ordinal >= len(ifs):
                continue
            branch, block = ifs[ordinal]
            self._taken_sides[id(branch)] = taken
            side = branch.body if taken else branch.orelse
            if isinstance(side, cst.Else):
                side = side.body
            # an ``elif`` side (an If, not a block) is not known to exit
            if (
                isinstance(block, cst.IndentedBlock)
                and isinstance(side, cst.BaseSuite)
                and ends_in_exit(side)
            ):
                later = block.body[block.body.index(branch) + 1 :]
                self._after_exit.update(id(stmt) for stmt in later)

    def _compute_region(self, scope: _FunctionScope) -> Region | None:
        if self.facts is not None:
            return self.facts.region_of(f"{self.module_key}:{scope.qualname}")
        if scope.root is None:
            return None
        site = scope.root
        root = site.root(self.path, self.span_now(site.node), f"{self.module_key}:{scope.qualname}")
        return Region((root,), direct=True, certain=site.options.fullgraph, always=True)

    def span_now(self, node: cst.CSTNode) -> Span:
        """The span of ``node``, computed now (one partial codegen; use sparingly)."""
        from distlint.syntax.spans import range_span

        found = self.positions.ranges([node]).get(node)
        return range_span(found, NEWLINES.split(self.source))

    @property
    def dynamo_config(self) -> dict[str, object]:
        """This file's module-level ``torch._dynamo.config.X = value`` settings, by ``X``."""
        from distlint.semantic.collect import file_dynamo_config

        return self.memo(file_dynamo_config)

    def compiles(self, name: str | None) -> bool:
        """Whether the callable named ``name`` (resolved) certainly compiles what it is given:
        ``torch.compile`` or one of the configured ``compile-wrappers``, as the compile roots
        are found (:func:`distlint.semantic.compile_sites.compiles`)."""
        return name is not None and compiles(name, self._wrappers)

    def module_compile_receiver(self, call: cst.Call) -> cst.BaseExpression | None:
        """The receiver of ``x.compile(...)`` if it may be ``nn.Module.compile``, else None."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "compile"):
            return None  # most calls: the file's own compile methods are looked up only here
        if self._own_compile is None:
            # Computed when first needed, with the names of the scope of the first such call
            # (as it was when computed at that call): a receiver that resolves (``re``) or a
            # file that does not bind torch is not one, whatever the file's classes define.
            if self._own_compile_table is None:
                self._own_compile_table = self.scope_table()
            if not self.imports.is_bound("torch") or self.resolve(func) is not None:
                return None
            table = self._own_compile_table
            self._own_compile = own_compile(self.module, lambda e: self.resolve_in(table, e))
        return module_compile_receiver(
            call, self.resolve, self.imports.is_bound("torch"), self._own_compile
        )

    # -- rank taint ------------------------------------------------------------------------------

    def rank_dependent(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` may differ between ranks (rank taint, see semantic.taint)."""
        from distlint.semantic.taint import expression_is_rank_dependent

        return expression_is_rank_dependent(self, expr)

    # -- project-wide records ------------------------------------------------------------------

    @property
    def function(self) -> cst.FunctionDef | None:
        """The innermost enclosing function definition."""
        return self._functions[-1].func if self._functions else None

    @property
    def compile_root(self) -> TreeSite | None:
        """The compile site decorating the innermost enclosing function, if it is a root itself.

        Regions are lexical here: a nested ``def`` inside a compiled function starts a scope
        of its own (the semantic layer extends regions through the call graph).
        """
        return self._functions[-1].root if self._functions else None

    # -- reporting -------------------------------------------------------------------------------

    def add_report(
        self,
        rule: ReportingRule,
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
