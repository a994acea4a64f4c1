"""A light import/alias table: which dotted name does ``dist.all_reduce`` mean here?

LibCST's QualifiedNameProvider resolves every name in the tree and costs ~6x a parse. Rules
only ask about a handful of call sites, so we record what each scope binds (imports, simple
aliases such as ``ar = dist.all_reduce``, and names that shadow an import) by scanning its
statements, and resolve on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import libcst as cst

from distlint.syntax.regular_files import resolved
from distlint.syntax.shapes import assignment_targets
from distlint.syntax.walker import blocks_of, parameters, suite_body

# Private homes of public torch APIs: report and match them under their public name.
_CANONICAL_PREFIXES = (
    ("torch.distributed.distributed_c10d.", "torch.distributed."),
    ("torch.distributed.c10d.", "torch.distributed."),
    ("torch._dynamo.eval_frame.", "torch._dynamo."),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
)


def canonical_name(qualified: str) -> str:
    """Map a name defined in a private torch module to its public spelling."""
    for private, public in _CANONICAL_PREFIXES:
        if qualified.startswith(private):
            return public + qualified[len(private) :]
    return qualified


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    # exact types (LibCST's node classes are ABCs: isinstance is slow, and this is asked of
    # every call and attribute; Name and Attribute have no subclasses)
    parts: list[str] = []
    while type(expr) is cst.Attribute:
        parts.append(expr.attr.value)
        expr = expr.value
    if type(expr) is not cst.Name:
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def self_attribute(expr: cst.BaseExpression) -> str | None:
    """``self.x`` -> "x"; None for anything else."""
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "self":
        return expr.attr.value
    return None


def module_name_for(path: Path, folders: PackageFolders | None = None) -> tuple[str | None, bool]:
    """The importable module name of a file from its package layout, and whether it is a package.

    Walks up while the directory holds an ``__init__.py``; a file outside any package is a
    top-level module named after its stem. ``folders``: kept by a caller that asks for many
    files, so that each folder is resolved and looked at once.
    """
    folders = folders if folders is not None else PackageFolders()
    known = folders.names.get(path)
    if known is None:
        known = folders.names[path] = _module_name(path, folders)
    return known


def _module_name(path: Path, folders: PackageFolders) -> tuple[str | None, bool]:
    path = folders.resolve(path) if path.is_absolute() else path
    is_package = path.stem == "__init__"
    parts = [] if is_package else [path.stem]
    parts += folders.packages(path.parent)
    if not parts:
        return None, is_package
    return ".".join(reversed(parts)), is_package


class PackageFolders:
    """What :func:`module_name_for` learns of folders: each one's real path, and the names
    of the packages it is in (itself first), so that the files of one folder share them."""

    def __init__(self) -> None:
        self._real: dict[Path, Path] = {}
        self._packages: dict[Path, list[str]] = {}
        self.names: dict[Path, tuple[str | None, bool]] = {}  # module_name_for's, by path

    def resolve(self, path: Path) -> Path:
        """``path.resolve()``, each folder's real path made once (:func:`resolved`)."""
        return resolved(path, self._real)

    def packages(self, directory: Path) -> list[str]:
        """The names of ``directory`` and of its parents up to the first that is no package
        (holds no ``__init__.py``), innermost first."""
        known = self._packages.get(directory)
        if known is None:
            known = []
            if (directory / "__init__.py").is_file():
                known.append(directory.name)
                if directory.parent != directory:
                    known += self.packages(directory.parent)
            self._packages[directory] = known
        return known


class ImportTable:
    """Names bound in one scope; a name bound to None shadows any outer binding."""

    __slots__ = ("_bindings", "_parent", "_several")

    def __init__(self, bindings: dict[str, str | None], parent: ImportTable | None = None):
        self._bindings = bindings
        self._parent = parent
        # names imported from different libraries on different paths (``try: from apex...
        # import DDP`` / ``except ImportError: from torch... import DDP``)
        self._several: set[str] = set()

    @classmethod
    def for_module(
        cls, module: cst.Module, module_name: str | None = None, is_package: bool = False
    ) -> ImportTable:
        """The module scope: imports and aliases from top-level code (not def/class bodies)."""
        table = cls({})
        table._scan(module.body, module_name, is_package)
        return table

    def for_function(
        self, func: cst.FunctionDef, module_name: str | None = None, is_package: bool = False
    ) -> ImportTable:
        """A function scope inside this one: parameters shadow, local imports bind."""
        table = ImportTable({}, parent=self)
        for param in parameters(func.params):
            table._bindings[param.name.value] = None
        table._scan(suite_body(func.body), module_name, is_package)
        return table

    def resolve_name(self, name: str) -> str | None:
        scope: ImportTable | None = self
        while scope is not None:
            if name in scope._bindings:
                return scope._bindings[name]
            scope = scope._parent
        return None

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Canonical dotted name of a Name/Attribute chain rooted at an import, else None."""
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = self.resolve_name(head)
        if target is None:
            return None
        return canonical_name(f"{target}.{rest}" if rest else target)

    def from_several_libraries(self, name: str) -> bool:
        """Whether ``name`` is bound to different objects on different paths (imported from
        another library, or assigned another API on another branch): which one runs is
        decided at run time, so the resolved one is only one of them."""
        scope: ImportTable | None = self
        while scope is not None:
            if name in scope._bindings:
                return name in scope._several
            scope = scope._parent
        return False

    def is_bound(self, name: str) -> bool:
        """Whether some scope binds (or shadows) this name."""
        scope: ImportTable | None = self
        while scope is not None:
            if name in scope._bindings:
                return True
            scope = scope._parent
        return False

    # -- building ------------------------------------------------------------------------------

    def _scan(self, body: Iterable[cst.CSTNode], module_name: str | None, is_package: bool) -> None:
        aliases: list[tuple[str, cst.BaseExpression | None, bool]] = []
        for stmt, nested in scope_statements_nested(body):
            if type(stmt) is cst.Import:  # exact types: isinstance on LibCST's ABCs is slow
                for alias in stmt.names:
                    full = dotted_name(alias.name)
                    if full is None:
                        continue
                    if alias.asname is not None:
                        self._bind_target(alias.asname.name, full)
                    else:
                        root = full.split(".", 1)[0]
                        self._bindings[root] = root
            elif type(stmt) is cst.ImportFrom:
                self._bind_from(stmt, module_name, is_package)
            elif type(stmt) is cst.Assign or type(stmt) is cst.AnnAssign:
                targets = assignment_targets(stmt)
                for target in targets:
                    if type(target) is cst.Name:
                        aliases.append((target.value, stmt.value, nested))
            elif (type(stmt) is cst.FunctionDef or type(stmt) is cst.ClassDef) and not (
                # ``except ImportError: def disable(fn): return fn``: a fallback for an import
                # of this scope, which is what the code means (as for assignments below)
                nested and self._bindings.get(stmt.name.value) is not None
            ):
                self._bindings[stmt.name.value] = None
        imported_here = {name for name, target in self._bindings.items() if target is not None}
        assigned: dict[str, str] = {}
        for name, value, nested in aliases:
            resolved = self.resolve(value) if value is not None else None
            if resolved is not None:
                earlier = assigned.get(name) or self._bindings.get(name)
                if earlier is not None and earlier != resolved:
                    # ``if apex: from apex... import DDP`` / ``else: DDP = torch...DDP``, or
                    # ``fn = torch.optim.SGD`` on one branch and ``AdamW`` on another
                    self._several.add(name)
                assigned[name] = resolved
                self._bindings[name] = resolved
            elif not (nested and name in imported_here):
                # Rebinding a name to something else shadows it, except a conditional rebinding
                # of an import of this scope: that is the optional-import idiom (`except
                # ImportError: dist = None`), where the import is what the code means.
                self._bindings[name] = None

    def _bind_target(self, target: cst.BaseExpression, full: str) -> None:
        if type(target) is cst.Name:
            earlier = self._bindings.get(target.value)
            if earlier is not None and earlier.split(".", 1)[0] != full.split(".", 1)[0]:
                self._several.add(target.value)
            self._bindings[target.value] = full

    def _bind_from(self, stmt: cst.ImportFrom, module_name: str | None, is_package: bool) -> None:
        base = dotted_name(stmt.module) if stmt.module is not None else ""
        if stmt.relative:
            base = _resolve_relative(len(stmt.relative), base or "", module_name, is_package)
            if base is None:
                return
        if isinstance(stmt.names, cst.ImportStar):
            return
        for alias in stmt.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            full = f"{base}.{name}" if base else name
            local = alias.asname.name if alias.asname is not None else alias.name
            self._bind_target(local, full)


def _resolve_relative(
    level: int, module: str, module_name: str | None, is_package: bool
) -> str | None:
    """``from ..x import y`` in package module ``a.b.c`` -> ``a.x``; None if it escapes."""
    if module_name is None:
        return None
    parts = module_name.split(".")
    if not is_package:
        parts = parts[:-1]
    drop = level - 1
    if drop >= len(parts):  # beyond the top-level package (ImportError in Python)
        return None
    base_parts = parts[: len(parts) - drop] if drop else parts
    if module:
        base_parts = [*base_parts, module]
    return ".".join(base_parts) or None


def scope_statements(body: Iterable[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Small statements and def/class heads of a scope, through if/try/with/loops."""
    for stmt, _ in scope_statements_nested(body):
        yield stmt


def scope_statements_nested(body: Iterable[cst.CSTNode]) -> Iterator[tuple[cst.CSTNode, bool]]:
    """Like scope_statements, with whether each statement sits inside a compound statement."""
    pending: list[tuple[cst.CSTNode, bool]] = [(node, False) for node in body]
    pending.reverse()
    while pending:
        node, nested = pending.pop()
        # exact types first: isinstance on LibCST's ABCs is slow
        if type(node) is cst.SimpleStatementLine or type(node) is cst.SimpleStatementSuite:
            for small in node.body:
                yield small, nested
        elif type(node) is cst.FunctionDef or type(node) is cst.ClassDef:
            yield node, nested
        elif isinstance(node, cst.BaseCompoundStatement):
            for block in reversed(blocks_of(node)):
                pending.extend((child, True) for child in reversed(suite_body(block)))
        elif isinstance(node, cst.BaseSmallStatement):
            yield node, nested
