"""What starts a CUDA graph capture (torch 2.13 spellings), shared by the capture rules and the
semantic layer that follows calls made under capture into other functions."""

from __future__ import annotations

import libcst as cst

# ``with torch.cuda.graph(g):`` captures its body.
GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})
# ``torch.cuda.make_graphed_callables(fn, args)`` captures ``fn`` (a callable, a module or a
# tuple of them).
GRAPHED_CALLABLES = frozenset(
    {"torch.cuda.make_graphed_callables", "torch.cuda.graphs.make_graphed_callables"}
)


def statement_method(stmt: cst.CSTNode) -> str | None:
    """``g.capture_begin()`` as a statement: the method's name (``capture_begin``), else None."""
    if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1:
        small = stmt.body[0]
        if (
            type(small) is cst.Expr
            and type(small.value) is cst.Call
            and type(small.value.func) is cst.Attribute
        ):
            return small.value.func.attr.value
    return None


def graphed_items(call: cst.Call) -> list[cst.BaseExpression]:
    """The callables a ``make_graphed_callables`` call captures (its first argument)."""
    if not call.args:
        return []
    first = call.args[0].value
    if isinstance(first, (cst.Tuple, cst.List)):
        return [element.value for element in first.elements]
    return [first]
