"""DL405 custom-op-undeclared-mutation: see its docs page, docs/rules/DL405.md."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import Rule
from distlint.rules.custom_ops._autograd import (
    inplace_method,
    positional,
    strip_views,
)
from distlint.semantic.regions import Resolver, literal_value
from distlint.syntax.walker import keyword_arg

if TYPE_CHECKING:
    pass
from distlint.rules.custom_ops._custom_ops import CUSTOM_OP, declared_mutations


class CustomOpUndeclaredMutation(Rule):
    code = "DL405"
    name = "custom-op-undeclared-mutation"
    severity = Severity.ERROR
    summary = "A custom_op writes into an argument that mutates_args does not declare."
    tags = ("correctness", "torch.compile", "custom-ops")
    precision = "high"

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call) and self.ctx.resolve(call.func) in CUSTOM_OP:
                self._check(node, call)
                return

    def _check(self, func: cst.FunctionDef, call: cst.Call) -> None:
        if keyword_arg(call, "schema") is not None:
            return  # the schema says what is mutable
        first = positional(call, 0)
        qualname = literal_value(first.value) if first is not None else None
        arg = keyword_arg(call, "mutates_args")
        if arg is None:
            return  # a TypeError at import time already
        declared = declared_mutations(arg.value)
        if declared is None or declared == "unknown":
            return
        params = [
            p.name.value
            for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
        ]
        undeclared = {p for p in params if p not in declared}
        if not undeclared:
            return
        seen: set[str] = set()
        for node, param, how in _mutations(func.body, undeclared, self.ctx.resolve):
            if param in seen:
                continue
            seen.add(param)
            self.report(
                node,
                f"Custom op `{qualname}` writes into its argument `{param}` ({how}) but "
                f"`mutates_args` does not name it: `torch.library.opcheck` fails (`Argument "
                f"{param} is not defined as mutable but was mutated`), and compiled code may "
                f'reorder or drop the write. Add "{param}" to `mutates_args`, or write into '
                "a new tensor.",
                related_nodes=((call, "custom_op defined here"),),
            )


def _mutations(
    body: cst.BaseSuite, params: set[str], resolve: Resolver
) -> Iterator[tuple[cst.CSTNode, str, str]]:
    """(node, argument, how) for each in-place write into one of ``params`` (source order).

    Follows simple aliases (``y = x``, ``y = x.view(-1)``, ``y = x[0]``) and stops following a
    name once it is rebound to something else (``x = x.clone()``).
    """
    aliases = {p: p for p in params}

    def target_of(expr: cst.BaseExpression) -> str | None:
        base = strip_views(expr, through_data=True)
        if isinstance(base, cst.Name):
            return aliases.get(base.value)
        return None

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[tuple[cst.CSTNode, str, str]] = []

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False  # nested functions have their own arguments

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            name = resolve(func)
            if name is None and isinstance(func, cst.Attribute):
                if inplace_method(func.attr.value):
                    param = target_of(func.value)
                    if param is not None:
                        self.found.append((node, param, f"`.{func.attr.value}()`"))
            elif name is not None and name.startswith("torch."):
                out = keyword_arg(node, "out")
                if out is not None:
                    values = (
                        [e.value for e in out.value.elements]
                        if isinstance(out.value, (cst.Tuple, cst.List))
                        else [out.value]
                    )
                    for value in values:
                        param = target_of(value)
                        if param is not None:
                            self.found.append((node, param, "`out=`"))
                    return
                short = name.rsplit(".", 1)[-1]
                first = positional(node, 0)
                if inplace_method(short) and first is not None and "init" not in name:
                    param = target_of(first.value)
                    if param is not None:
                        self.found.append((node, param, f"`{short}`"))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            param = target_of(node.target)
            if param is not None:
                self.found.append((node, param, "augmented assignment"))

        def leave_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Subscript):
                    param = target_of(t)
                    if param is not None:
                        self.found.append((t, param, "item assignment"))
                elif isinstance(t, cst.Name):
                    source = target_of(node.value) if _is_view_expr(node.value) else None
                    if source is not None:
                        aliases[t.value] = source
                    else:
                        aliases.pop(t.value, None)

    finder = Finder()
    body.visit(finder)
    yield from finder.found


def _is_view_expr(expr: cst.BaseExpression) -> bool:
    base = strip_views(expr, through_data=True)
    return isinstance(base, cst.Name)
