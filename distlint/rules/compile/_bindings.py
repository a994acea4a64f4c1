"""Compiled callables bound to names in this file, and the functions they run: shared by the
rules that follow a compiled callable from where it is made to where it is called (DL107-DL110,
DL114).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from distlint.rules.context import RuleContext
from distlint.semantic.compile_sites import RootInfo
from distlint.syntax.imports import scope_statements, statements_in_order


@dataclass
class Binding:
    """A name that holds a compiled callable: calling it runs the compiled region."""

    name: str
    root: RootInfo
    origin: str | None = None  # ``m`` in ``c = torch.compile(m)``: the eager module it wraps
    node: cst.CSTNode | None = None


def compiled_bindings(ctx: RuleContext) -> dict[str, list[Binding]]:
    """Names bound to compiled callables, from the linked roots at this file's compile sites."""
    return ctx.memo(_compiled_bindings)


def _compiled_bindings(ctx: RuleContext) -> dict[str, list[Binding]]:
    found: dict[str, list[Binding]] = {}
    facts = ctx.facts
    roots = [r for r in facts.roots if r.path == ctx.path] if facts is not None else []
    if roots:
        # only candidates of a kind some root has can match one (each is measured)
        decorators = any(root.kind == "decorator" for root in roots)
        calls = any(root.kind != "decorator" for root in roots)
        candidates: list[tuple[cst.CSTNode, str, str | None, str]] = []
        # every candidate is a statement: the file's statements, not all its nodes
        for node in statements_in_order(ctx.module.body, into_scopes=True):
            if isinstance(node, cst.FunctionDef):
                if decorators:
                    for decorator in node.decorators:
                        candidates.append((decorator, node.name.value, None, "decorator"))
            elif not calls:
                continue
            elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                target = node.targets[0].target if len(node.targets) == 1 else None
                if isinstance(target, cst.Name):
                    first = first_positional(node.value)
                    origin = first.value if isinstance(first, cst.Name) else None
                    candidates.append((node.value, target.value, origin, "call"))
            elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
                func = node.value.func
                if (
                    isinstance(func, cst.Attribute)
                    and func.attr.value == "compile"
                    and isinstance(func.value, cst.Name)
                ):
                    candidates.append((node.value, func.value.value, None, "method"))
        ranges = ctx.positions.ranges([c[0] for c in candidates])
        by_line: dict[int, list[RootInfo]] = {}
        for root in roots:
            by_line.setdefault(root.span.start.line, []).append(root)
        for node, name, origin, kind in candidates:
            found_range = ranges.get(node)
            if found_range is None:
                continue
            for root in by_line.get(found_range.start_line, ()):
                if (kind == "decorator") != (root.kind == "decorator"):
                    continue
                found.setdefault(name, []).append(Binding(name, root, origin, node))
    return found


def first_positional(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def region_functions(ctx: RuleContext, root: RootInfo) -> dict[str, cst.FunctionDef]:
    """Functions of this file in ``root``'s compiled region, by id."""
    facts = ctx.facts
    if facts is None:
        return {}
    ids = {fid for fid, infos in facts.regions.items() if root in infos}
    return {fid: func for fid, func in file_functions(ctx).items() if fid in ids}


def file_functions(ctx: RuleContext) -> dict[str, cst.FunctionDef]:
    """Every function definition of the file by id (``module:qualname``)."""
    return ctx.memo(_file_functions)


def _file_functions(ctx: RuleContext) -> dict[str, cst.FunctionDef]:
    found: dict[str, cst.FunctionDef] = {}

    def walk(body: Iterable[cst.CSTNode], prefix: str) -> None:
        for stmt in scope_statements(body):
            if isinstance(stmt, cst.FunctionDef):
                qualname = prefix + stmt.name.value
                found[f"{ctx.module_key}:{qualname}"] = stmt
                if isinstance(stmt.body, cst.IndentedBlock):
                    walk(stmt.body.body, qualname + ".<locals>.")
            elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
                walk(stmt.body.body, prefix + stmt.name.value + ".")

    walk(ctx.module.body, "")
    return found


def positional_params(func: cst.FunctionDef) -> list[str]:
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    if params and params[0] in ("self", "cls") and not _is_staticmethod(func):
        params = params[1:]
    return params


def _is_staticmethod(func: cst.FunctionDef) -> bool:
    return any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
        for d in func.decorators
    )
