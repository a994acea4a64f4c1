"""Where a tensor in a compiled region comes from, as Dynamo sees it.

Dynamo treats a tensor it reads from a *source* (an argument of the compiled function, an
attribute of the module) differently from one the region computes (a factory's or an op's
result, which has no source): ``nn.Parameter(<sourced>)`` is lifted out of the graph while
``nn.Parameter(<computed>)`` graph-breaks (DL125), and an in-place resize of a sourced tensor
breaks with another id than one of a computed tensor (DL124). Shared by those rules.
"""

from __future__ import annotations

import re

import libcst as cst

from distlint.rules.compile._analysis import (
    NON_TENSOR_METHODS,
    TensorGuess,
    torch_call_returns_tensor,
)

# methods that return a new tensor whatever the receiver is (``buf.new().resize_(n)``)
_CREATING_METHODS = frozenset(
    {"new", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "clone"}
)
# ``torch.Tensor()``, ``torch.FloatTensor(...)``: the legacy constructors
_TENSOR_CLASS = re.compile(r"torch\.(?:[A-Z]\w*)?Tensor")


def computed_in_region(
    guess: TensorGuess, expr: cst.BaseExpression, seen: frozenset[str] = frozenset()
) -> bool:
    """``expr`` is a tensor the region computes (no source): a torch function's or legacy
    constructor's result, a tensor method's or operator's, or a local bound only to those."""
    if isinstance(expr, cst.Call):
        name = guess.resolve(expr.func)
        if name is not None:
            return torch_call_returns_tensor(name) or bool(_TENSOR_CLASS.fullmatch(name))
        func = expr.func
        if not isinstance(func, cst.Attribute) or func.attr.value in NON_TENSOR_METHODS:
            return False
        if func.attr.value.endswith("_"):  # an in-place method returns its receiver
            return computed_in_region(guess, func.value, seen)
        if func.attr.value in _CREATING_METHODS or guess.is_tensor(expr):
            return True
        return computed_in_region(guess, func.value, seen)  # ``torch.Tensor().to(device)``
    if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
        return guess.is_tensor(expr)
    if isinstance(expr, cst.Name):
        if expr.value in guess.params or expr.value in seen:
            return False
        values = guess.assigned.get(expr.value) or []
        inner = seen | {expr.value}
        return bool(values) and all(
            value is not None and computed_in_region(guess, value, inner) for value in values
        )
    return False


def read_from_source(guess: TensorGuess, expr: cst.BaseExpression) -> bool:
    """``expr`` is read from a source: an argument of the function that is never rebound, or
    an attribute reached from one (``self.cache``, ``self.bindings[name].data``), ``.data``
    and ``.detach_()`` (the same tensor) included. A trailing subscript (``self.w[0]``) may
    be a view the region computes, so it does not count."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "detach_"
        and not expr.args
    ):
        expr = expr.func.value
    if isinstance(expr, cst.Subscript):
        return False
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return (
        isinstance(expr, cst.Name)
        and expr.value in guess.params
        and expr.value not in guess.assigned
    )
