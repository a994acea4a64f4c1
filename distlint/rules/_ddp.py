"""Tree walks shared by the rules about ``DistributedDataParallel`` models (the class:
``semantic.collectives.DDP_CLASS``): DL204 and DL205 (``collectives/``) and DL303 (``wrapping/``).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from distlint.syntax.walker import keyword_arg, nodes_with_parents

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


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, in source order, not entering nested defs."""
    for current, _ in nodes_with_parents(node):
        yield current
