"""A light import/alias table: which dotted name does ``dist.all_reduce`` mean here?

LibCST's QualifiedNameProvider resolves every name in the tree and costs ~6x a parse. Rules
only ask about a handful of call sites, so we record what each scope binds (imports, simple
aliases such as ``ar = dist.all_reduce``, and names that shadow an import) by scanning its
statements, and resolve on demand.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

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
    if not qualified.startswith("torch."):
        return qualified  # every private home is under torch
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
        # the head is looked up before any text is joined: most chains (locals, ``self.x``)
        # resolve to nothing, and this is asked of every call and attribute
        attributes: list[str] = []
        while type(expr) is cst.Attribute:
            attributes.append(expr.attr.value)
            expr = expr.value
        if type(expr) is not cst.Name:
            return None
        target = self.resolve_name(expr.value)
        if target is None:
            return None
        if attributes:
            attributes.append(target)
            attributes.reverse()
            target = ".".join(attributes)
        return canonical_name(target)

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


def statements_in_order(
    body: Iterable[cst.CSTNode], *, into_scopes: bool = False
) -> Iterator[cst.CSTNode]:
    """Small statements and def/class heads of a scope, through if/try/with/loops/match, in
    source order (``scope_statements`` gives a ``try``'s ``else`` before its handlers); with
    ``into_scopes``, of every scope below too, a def or class before its body's. These are
    the statements that walking every node finds, in the same order, without walking the
    expressions (no statement sits inside an expression; a lambda's body is one)."""
    pending: list[cst.CSTNode] = list(body)
    pending.reverse()
    while pending:
        node = pending.pop()
        if type(node) is cst.SimpleStatementLine or type(node) is cst.SimpleStatementSuite:
            yield from node.body
        elif type(node) is cst.FunctionDef or type(node) is cst.ClassDef:
            yield node
            if into_scopes:
                pending.extend(reversed(suite_body(node.body)))
        elif isinstance(node, (cst.Try, cst.TryStar)):
            blocks = [node.body, *(h.body for h in node.handlers)]
            blocks += [part.body for part in (node.orelse, node.finalbody) if part is not None]
            for block in reversed(blocks):
                pending.extend(reversed(suite_body(block)))
        elif isinstance(node, cst.BaseCompoundStatement):
            for block in reversed(blocks_of(node)):
                pending.extend(reversed(suite_body(block)))
        elif isinstance(node, cst.BaseSmallStatement):
            yield node


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
