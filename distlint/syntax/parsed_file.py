"""One parsed file as the analysis reads it: text, tree, names, and the nodes it located.

The semantic layer (summaries, rank flow, rank taint) reads a file through this index. The
rule context (:class:`distlint.rules.context.RuleContext`) extends it with what exists only
while rules walk the file: the enclosing functions, the compiled region, pending reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass
from typing import TypeVar, cast

import libcst as cst

from distlint.file_settings import FileSettings
from distlint.syntax.imports import ImportTable
from distlint.syntax.indentation import IndentColumns
from distlint.syntax.positions import Positions
from distlint.syntax.spans import ORDINAL_TYPES, NodeSpan
from distlint.syntax.spelling import Spellings
from distlint.syntax.walker import subclasses_of, walk

FileT = TypeVar("FileT", bound="ParsedFile")
_STATEMENTS = subclasses_of(cst.BaseSmallStatement, cst.BaseCompoundStatement)
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})
T = TypeVar("T")


@dataclass(eq=False, repr=False)
class ParsedFile:
    """Per-file facts that do not depend on where a walk currently is.

    The fields are what a file is made of; the rest is derived from them. A subclass that
    adds state (the rule context) extends ``__post_init__`` and keeps this constructor.
    """

    path: str
    source: str
    module: cst.Module
    settings: FileSettings
    module_name: str | None = None
    is_package: bool = False
    # the tree's columns back to ``source``'s (rewritten indentation)
    columns: IndentColumns | None = None
    # what earlier measurements of this very tree learnt (a second pass)
    known_positions: InitVar[Positions | None] = None

    def __post_init__(self, known_positions: Positions | None) -> None:
        # its nodes' ranges, measured on demand
        self.positions = known_positions or Positions(self.module, self.columns)
        self.module_key = self.module_name or self.path
        self.imports = ImportTable.for_module(self.module, self.module_name, self.is_package)
        self.located: list[NodeSpan] = []
        self.statement_calls: dict[int, list[cst.Call]] = {}  # id(statement) -> its calls
        self._call_homes: dict[int, int | None] = {}  # id(call) -> id(its statement), see note_call
        # id(call of a bare name) -> the comprehensions around it, innermost first: their
        # ``for`` may bind the name (``[block(x) for block in self.blocks]``)
        self.comprehensions: dict[int, list[cst.CSTNode]] = {}
        self.seen: dict[type, list[cst.CSTNode]] = {kind: [] for kind in ORDINAL_TYPES}
        self.parents: list[cst.CSTNode] = []  # the walk's ancestors of the current node
        self.in_project = False  # checked with the project's linked facts (second pass)
        self._function_tables: dict[cst.FunctionDef, ImportTable] = {}
        # (id(node), id(table)) -> dotted name: a node asked about from another scope (a rule
        # scanning ahead from module level) must not fix what its own scope resolves it to
        self._resolved: dict[tuple[int, int], str | None] = {}
        self._memo: dict[Callable[..., object], object] = {}
        self.spellings = Spellings(self.module)  # short node texts for messages, linear in the file

    def note_call(self, call: cst.Call) -> None:
        """Remember ``call`` under its innermost statement (first pass; the summary reads it).

        Calls in a lambda body are not run where the lambda is written: they are skipped.
        """
        self.seen[cst.Call].append(call)
        home: int | None = None  # id of the innermost statement; None in a lambda
        named = type(call.func) is cst.Name
        for parent in reversed(self.parents):
            kind = type(parent)
            if kind is cst.Lambda:
                break
            if named and kind in _COMPREHENSIONS:
                self.comprehensions.setdefault(id(call), []).append(parent)
            if kind in _STATEMENTS:
                home = id(parent)
                break
            if kind is cst.Call:  # the enclosing call's answer holds (chains: linear time)
                home = self._call_homes.get(id(parent))
                break
        self._call_homes[id(call)] = home
        if home is not None:
            self.statement_calls.setdefault(home, []).append(call)

    def node_counter(self, kind: type) -> Callable[[cst.CSTNode], None]:
        """The walk's handler that counts the nodes of an ordinal type (first pass; see
        NodeSpan): the list's own ``append``, called for every such node."""
        return self.seen[kind].append

    def index(self) -> None:
        """Note every call and ordinal node in one walk of its own (the engine notes them
        during the rules' walk instead); for analyses run without rules."""
        on_visit: dict[type, list] = {cst.Call: [self.note_call]}
        for kind in ORDINAL_TYPES[1:]:
            on_visit[kind] = [self.node_counter(kind)]
        walk(self.module, on_visit, {}, self.parents)

    def memo(self: FileT, build: Callable[[FileT], T]) -> T:
        """``build(self)``, computed once per file: the typed home of per-file caches.

        Keyed by the builder (a module-level function or class), so two analyses never
        share an entry by accident and nothing outlives the file's check.
        """
        try:
            return cast(T, self._memo[build])
        except KeyError:
            value = self._memo[build] = build(self)
            return value

    def resolve_in(self, table: ImportTable, expr: cst.BaseExpression) -> str | None:
        """The dotted name of ``expr`` in an explicit scope table, memoised per node and table.

        Nodes of the tree (and the tables) live as long as the file's check, so their ids are
        stable.
        """
        key = (id(expr), id(table))
        cache = self._resolved
        if key in cache:
            return cache[key]
        value = cache[key] = table.resolve(expr)
        return value

    def table_for(self, func: cst.FunctionDef, parent: ImportTable) -> ImportTable:
        """The import table of ``func`` inside ``parent`` (built once, shared by all users)."""
        table = self._function_tables.get(func)
        if table is None:
            table = parent.for_function(func, self.module_name, self.is_package)
            self._function_tables[func] = table
        return table

    def locate(self, node: cst.CSTNode, *, lazy: bool = False, part: str | None = None) -> NodeSpan:
        """A placeholder for ``node``'s span (or its field ``part``'s), see NodeSpan."""
        located = NodeSpan(node, self.path, not lazy or type(node) not in self.seen, part)
        self.located.append(located)
        return located

    def settle_located(
        self, keyed: dict[tuple, cst.CSTNode] | None = None
    ) -> list[tuple[NodeSpan, cst.CSTNode]]:
        """Key the lazy placeholders; return the eager ones with the node to measure.
        ``keyed``: where to put each lazy key with the node its span measures (to measure
        them with the eager ones, their spans kept apart: see ``engine.checker``)."""
        eager: list[tuple[NodeSpan, cst.CSTNode]] = []
        indexes: dict[type, dict[int, int]] = {}
        for item in self.located:
            node = item.node
            if node is None:
                continue
            target = getattr(node, item.part) if item.part else node
            if item.eager:
                eager.append((item, target))
            else:
                kind = type(node)
                index = indexes.get(kind)
                if index is None:
                    index = indexes[kind] = {id(n): i for i, n in enumerate(self.seen[kind])}
                ordinal = index.get(id(node))
                if ordinal is None:  # not seen by the walk: measure it now
                    eager.append((item, target))
                else:
                    item.key = (kind.__name__, ordinal, item.part)
                    if keyed is not None:
                        keyed[item.key] = target
            item.node = None
        return eager
