"""Small questions about one node's shape, asked the same way by every rule and analysis:
is it the name ``True``/``False``/``None``, is a keyword argument literally ``True``, which
plain name does a statement bind to a given value."""

from __future__ import annotations

import libcst as cst

from distlint.syntax.walker import keyword_arg


def is_name(node: cst.CSTNode | None, name: str) -> bool:
    """Whether ``node`` is the bare name ``name`` (``True``, ``None``, ``x``...)."""
    return type(node) is cst.Name and node.value == name


def is_true(node: cst.CSTNode | None) -> bool:
    return is_name(node, "True")


def is_none(node: cst.CSTNode | None) -> bool:
    return is_name(node, "None")


def keyword_is_true(call: cst.Call, keyword: str) -> bool:
    """Whether ``call`` passes ``keyword=True`` (the literal; its first such argument)."""
    arg = keyword_arg(call, keyword)
    return arg is not None and is_true(arg.value)


def none_on_other_side(ifexp: cst.IfExp, node: cst.CSTNode) -> bool:
    """Whether the other side of ``... if ... else ...`` from ``node`` (one of its sides) is
    ``None``."""
    other = ifexp.orelse if ifexp.body is node else ifexp.body
    return is_none(other)


def assignment_targets(statement: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an ``=`` / annotated / augmented assignment writes (``a = b = v``: both); nothing
    for another node."""
    if type(statement) is cst.Assign:
        return [t.target for t in statement.targets]
    if isinstance(statement, (cst.AnnAssign, cst.AugAssign)):
        return [statement.target]
    return []


def assigned_name(statement: cst.CSTNode, value: cst.CSTNode) -> str | None:
    """``x`` for ``x = value`` / ``x: T = value`` (one plain name, ``value`` itself), else
    None."""
    if (
        type(statement) is cst.Assign
        and statement.value is value
        and len(statement.targets) == 1
        and type(statement.targets[0].target) is cst.Name
    ):
        return statement.targets[0].target.value
    if (
        type(statement) is cst.AnnAssign
        and statement.value is value
        and type(statement.target) is cst.Name
    ):
        return statement.target.value
    return None


def bound_names(target: cst.CSTNode) -> list[str]:
    """The plain names an assignment target binds (``a``, ``a, (b, *c)``); attributes and
    subscripts bind none."""
    if type(target) is cst.Name:
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in bound_names(element.value)]
    if type(target) is cst.StarredElement:
        return bound_names(target.value)
    return []
