"""Functions handed to higher-order operators (``torch.utils.checkpoint.checkpoint``,
``torch.cond``) from a compiled region: Dynamo traces them as subgraphs, so what breaks inside
them breaks the operator (observed on torch 2.13: tests/proof/test_proof_dl1xx.py).

The linker does not follow these callbacks (they are handed to torch, not called by the
project), so rules that care look them up here: a function of this file named by the argument,
``self.<method>`` of the enclosing class, or a ``def`` nested in an enclosing function.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.rules.compile._analysis import binds_locally
from distlint.semantic.regions import Resolver
from distlint.syntax.imports import scope_statements, self_attribute

CHECKPOINT = "torch.utils.checkpoint.checkpoint"
COND = "torch.cond"

# operator -> (position, keyword) of each argument that is a traced body
HOP_BODIES: dict[str, tuple[tuple[int, str], ...]] = {
    CHECKPOINT: ((0, "function"),),
    COND: ((1, "true_fn"), (2, "false_fn")),
    "torch._higher_order_ops.cond.cond": ((1, "true_fn"), (2, "false_fn")),
    "torch._higher_order_ops.cond": ((1, "true_fn"), (2, "false_fn")),
}
HOP_KIND = {
    CHECKPOINT: CHECKPOINT,
    COND: COND,
    "torch._higher_order_ops.cond.cond": COND,
    "torch._higher_order_ops.cond": COND,
}


@dataclass(frozen=True)
class HopBody:
    operator: str  # CHECKPOINT or COND
    body: cst.FunctionDef
    nested: bool  # defined inside an enclosing function (its free names are closures)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    if any(arg.star for arg in positional[: position + 1]):
        return None
    return positional[position].value if len(positional) > position else None


def hop_bodies(
    resolve: Resolver,
    module: cst.Module,
    parents: Sequence[cst.CSTNode],
    call: cst.Call,
) -> Iterator[HopBody]:
    """The functions of this file that ``call`` (a higher-order operator) traces."""
    name = resolve(call.func)
    spots = HOP_BODIES.get(name) if name is not None else None
    if name is None or not spots:
        return
    operator = HOP_KIND[name]
    for position, keyword in spots:
        value = _argument(call, position, keyword)
        if value is None:
            continue
        found = _function_named(value, module, parents)
        if found is not None:
            yield HopBody(operator, *found)


def _function_named(
    value: cst.BaseExpression, module: cst.Module, parents: Sequence[cst.CSTNode]
) -> tuple[cst.FunctionDef, bool] | None:
    if isinstance(value, cst.Name):
        name = value.value
        for parent in reversed(parents):
            if isinstance(parent, cst.FunctionDef):
                found = _def_in(parent.body.body, name)
                if found is not None:
                    return found, True
                if binds_locally(parent, name):
                    return None  # a parameter or local of that name: not the module's def
        found = _def_in(module.body, name)
        return (found, False) if found is not None else None
    attr = self_attribute(value)
    if attr is not None:
        for parent in reversed(parents):
            if isinstance(parent, cst.ClassDef):
                found = _def_in(parent.body.body, attr)
                return (found, False) if found is not None else None
    return None


def _def_in(body: Sequence[cst.CSTNode], name: str) -> cst.FunctionDef | None:
    found = [
        stmt
        for stmt in scope_statements(body)
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name
    ]
    return found[0] if len(found) == 1 else None  # defined twice: which one runs is unknown
