"""Tree walks shared by the rules about ``DistributedDataParallel`` models (the class:
``semantic.collectives.DDP_CLASS``): DL204 and DL205 (``collectives/``) and DL303 (``wrapping/``).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from distlint.syntax.walker import children, keyword_arg

# Expression nodes without children: not worth a look.
LEAVES = frozenset(
    {
        cst.Name,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.FormattedStringText,
        cst.Ellipsis,
        cst.Pass,
    }
)


def first_arg(call: cst.Call, keyword: str = "module") -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and arg.star == "":
            return arg.value
    found = keyword_arg(call, keyword)
    return found.value if found is not None else None


def walk(node: cst.CSTNode, *, into_defs: bool = False) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, in source order, not entering nested defs by default."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if (
            not into_defs
            and current is not node
            and isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        ):
            continue
        kids = children(current)
        kids.reverse()
        stack.extend(kids)


def target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        found: set[str] = set()
        for element in target.elements:
            found |= target_names(element.value)
        return found
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()
