"""DL120: ``with C(...):`` inside a compiled region where ``C`` is a class of this file that
neither defines nor inherits ``__enter__`` / ``__exit__``: not a context manager.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL120): ``Unsupported
context manager`` (GB0142) under ``fullgraph=True``; without it the frame falls back to eager,
which raises ``TypeError: '<class>' object does not support the context manager protocol``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _locally_bound, _RegionRule
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import scope_statements

_PROTOCOL = frozenset({"__enter__", "__exit__"})


class NotAContextManager(_RegionRule):
    code = "DL120"
    name = "not-a-context-manager"
    severity = Severity.ERROR
    summary = (
        "`with x:` in a compiled region where x is not a context manager: compile error "
        "(GB0142), and a TypeError in eager code."
    )
    tags = ("correctness", "torch.compile")
    precision = "very-high"
    graph_breaks = ("GB0142",)

    @in_region
    def visit_WithItem(self, node: cst.WithItem, region: Region) -> None:
        what = self._not_a_context_manager(node.item)
        if what is None:
            return
        self.report(
            node.item,
            f"`with {self.spell(node.item)}:` enters {what}, which is not a context manager "
            "(no `__enter__`/`__exit__`): torch 2.13 fails to compile it (`Unsupported: "
            "Unsupported context manager`, GB0142) and eager Python raises `TypeError: ... does "
            "not support the context manager protocol`. Give the class `__enter__` and "
            "`__exit__`, or drop the `with`.",
            related=region.related,
        )

    def _not_a_context_manager(self, item: cst.BaseExpression) -> str | None:
        if isinstance(item, cst.Call) and isinstance(item.func, cst.Name):
            cls = self._class(item.func.value)
            if cls is not None and self._lacks_protocol(cls, set()):
                return f"a `{cls.name.value}` object"
        return None

    def _class(self, name: str) -> cst.ClassDef | None:
        if _locally_bound(self.ctx, name):
            return None  # a local of the function shadows it
        found = [
            stmt
            for stmt in scope_statements(self.ctx.module.body)
            if _binds_module_name(stmt, name)
        ]
        if len(found) == 1 and isinstance(found[0], cst.ClassDef):
            return found[0]
        return None  # imported, assigned, or defined several times

    def _lacks_protocol(self, cls: cst.ClassDef, seen: set[str]) -> bool:
        """Neither the class nor a base of this file defines the protocol, and every base is
        a class of this file (or ``object``); no metaclass, no decorator."""
        if cls.name.value in seen or cls.decorators:
            return False
        seen.add(cls.name.value)
        for stmt in scope_statements(cls.body.body):
            if isinstance(stmt, (cst.FunctionDef, cst.Assign)) and _defines(stmt, _PROTOCOL):
                return False
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in (
                "__getattr__",
                "__getattribute__",
            ):
                return False
        for base in cls.bases:
            if base.keyword is not None or base.star:
                return False
            value = base.value
            if isinstance(value, cst.Name) and value.value == "object":
                continue
            if not isinstance(value, cst.Name):
                return False
            parent = self._class(value.value)
            if parent is None or not self._lacks_protocol(parent, seen):
                return False
        return True


def _defines(stmt: cst.FunctionDef | cst.Assign, names: frozenset[str]) -> bool:
    if isinstance(stmt, cst.FunctionDef):
        return stmt.name.value in names
    return any(isinstance(t.target, cst.Name) and t.target.value in names for t in stmt.targets)


def _binds_module_name(stmt: cst.CSTNode, name: str) -> bool:
    if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
        return stmt.name.value == name
    if isinstance(stmt, cst.Assign):
        return any(isinstance(t.target, cst.Name) and t.target.value == name for t in stmt.targets)
    if isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
        return isinstance(stmt.target, cst.Name) and stmt.target.value == name
    if isinstance(stmt, (cst.Import, cst.ImportFrom)) and isinstance(stmt.names, (list, tuple)):
        for alias in stmt.names:
            bound = alias.asname.name if alias.asname else alias.name
            if isinstance(bound, cst.Name) and bound.value == name:
                return True
            if isinstance(bound, cst.Attribute) and name == _head(bound):
                return True
    return False


def _head(expr: cst.BaseExpression) -> str:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else ""
