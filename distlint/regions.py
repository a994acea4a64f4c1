"""Compile roots: which function definitions ``torch.compile`` compiles, and how.

This module knows the decorator forms (``@torch.compile``, ``@torch.compile(...)`` and
configured ``compile-wrappers``). The semantic layer adds the other root forms and extends
regions through the call graph.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import libcst as cst

COMPILE_FUNCTIONS = frozenset({"torch.compile"})
DISABLE_FUNCTIONS = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})

Resolver = Callable[[cst.BaseExpression], "str | None"]


@dataclass(frozen=True)
class CompileRoot:
    """Where a region is compiled and the literal options that change what rules report."""

    node: cst.CSTNode  # the decorator or call that compiles
    function: str  # the compiling callable's resolved name, e.g. "torch.compile"
    fullgraph: bool = False
    dynamic: bool | None = None
    mode: str | None = None
    backend: str | None = None


def compile_root_of(
    func: cst.FunctionDef, resolve: Resolver, wrappers: Collection[str] = ()
) -> CompileRoot | None:
    """The compile root if ``func`` is decorated with torch.compile or a configured wrapper."""
    for decorator in func.decorators:
        expr = decorator.decorator
        call = expr if isinstance(expr, cst.Call) else None
        target = call.func if call is not None else expr
        name = resolve(target)
        if name is None or (name not in COMPILE_FUNCTIONS and name not in wrappers):
            continue
        return _root_from_call(decorator, name, call)
    return None


def is_compile_disabled(func: cst.FunctionDef, resolve: Resolver) -> bool:
    """Whether ``func`` is cut out of compiled regions (``@torch.compiler.disable``)."""
    for decorator in func.decorators:
        expr = decorator.decorator
        target = expr.func if isinstance(expr, cst.Call) else expr
        if resolve(target) in DISABLE_FUNCTIONS:
            return True
    return False


def _root_from_call(node: cst.CSTNode, name: str, call: cst.Call | None) -> CompileRoot:
    options: dict[str, object] = {}
    if call is not None:
        for arg in call.args:
            if arg.keyword is not None:
                options[arg.keyword.value] = literal_value(arg.value)
    fullgraph = options.get("fullgraph")
    dynamic = options.get("dynamic")
    mode = options.get("mode")
    backend = options.get("backend")
    return CompileRoot(
        node=node,
        function=name,
        fullgraph=fullgraph is True,
        dynamic=dynamic if isinstance(dynamic, bool) else None,
        mode=mode if isinstance(mode, str) else None,
        backend=backend if isinstance(backend, str) else None,
    )


_NO_VALUE = object()


def literal_value(expr: cst.BaseExpression) -> object:
    """The Python value of a simple literal (str, number, bool, None), else a sentinel."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else _NO_VALUE
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value
    if isinstance(expr, cst.Float):
        return expr.evaluated_value
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = literal_value(expr.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return _NO_VALUE


def is_literal(value: object) -> bool:
    return value is not _NO_VALUE
