"""DL117: ``sorted(...)`` / ``list.sort()`` of tensors inside a compiled region, ordered by the
tensors themselves or by a key computed from their values.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL117): Dynamo can only
sort by keys it knows while tracing (numbers, shapes); a key that is a tensor, or a Python
number read from one (``.item()``), fails: ``sort with non-constant keys`` (GB0207), a graph
break, and under ``fullgraph=True`` a compile error. Sorting by ``t.numel()`` or
``t.shape[0]`` traces.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import (
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    IsBuiltin,
    _is_tensor_annotation,
    torch_call_returns_tensor,
)
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions import Resolver
from distlint.semantic.regions_model import Region
from distlint.syntax.walker import keyword_arg

_VALUE_METHODS = frozenset({"item", "tolist"})  # a Python value read from tensor data
_SEQUENCES = frozenset(
    {
        "list",
        "tuple",
        "typing.List",
        "typing.Tuple",
        "typing.Sequence",
        "typing.Iterable",
        "collections.abc.Sequence",
        "collections.abc.Iterable",
    }
)


class SortOfTensors(_RegionRule):
    code = "DL117"
    name = "sort-by-tensor-values"
    severity = Severity.WARNING
    summary = (
        "sorted()/list.sort() of tensors by their values (no key, or a key computed from tensor "
        "data) inside a compiled region graph-breaks (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0207",)

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        func = node.func
        if self.is_builtin(func, "sorted"):
            if not node.args or node.args[0].keyword is not None or node.args[0].star:
                return
            sequence = node.args[0].value
        elif (
            isinstance(func, cst.Attribute)
            and func.attr.value == "sort"
            and self.ctx.resolve(func) is None
        ):
            sequence = func.value
        else:
            return
        if not self._tensor_sequence(sequence):
            return
        given = keyword_arg(node, "key")
        key = given.value if given is not None else None
        if key is not None and not self._data_dependent_key(key):
            return
        what = (
            f"`{self.spell(node)}` orders tensors by their values"
            if key is None
            else f"`{self.spell(node)}` orders tensors by a key computed from their values"
        )
        advice = (
            "Sort by a value known while tracing (a shape, an index), or use `torch.sort` / "
            "`torch.argsort` on a stacked tensor"
        )
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what}: under fullgraph=True this fails on torch 2.13 (`Unsupported: sort "
                f"with non-constant keys`, GB0207). {advice}."
            ),
            breaks=(
                f"{what}: it graph-breaks on torch 2.13 (GB0207, `sort with non-constant "
                f"keys`). {advice}."
            ),
        )

    # -- the sequence -----------------------------------------------------------------------

    def _tensor_sequence(self, expr: cst.BaseExpression) -> bool:
        guess = self.guess()
        if isinstance(expr, (cst.List, cst.Tuple)):
            elements = [e for e in expr.elements if not isinstance(e, cst.StarredElement)]
            return (
                bool(elements)
                and len(elements) == len(expr.elements)
                and all(guess.is_tensor(e.value) for e in elements)
            )
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return guess.is_tensor(expr.elt)
        if not isinstance(expr, cst.Name):
            return False
        name = expr.value
        if name in guess.params:
            return name not in guess.assigned and self._tensor_sequence_param(guess.params[name])
        values = guess.assigned.get(name)
        if not values:
            return False
        return all(
            v is not None
            and isinstance(v, (cst.List, cst.Tuple, cst.ListComp))
            and self._tensor_sequence(v)
            for v in values
        )

    def _tensor_sequence_param(self, param: cst.Param) -> bool:
        """``xs: list[torch.Tensor]`` (``List``, ``Sequence``, ``tuple[Tensor, ...]``)."""
        if param.annotation is None:
            return False
        annotation = param.annotation.annotation
        if not isinstance(annotation, cst.Subscript):
            return False
        resolve = self.ctx.imports.resolve
        outer = resolve(annotation.value)
        if outer is None and isinstance(annotation.value, cst.Name):
            outer = annotation.value.value
        if outer not in _SEQUENCES or not annotation.slice:
            return False
        first = annotation.slice[0].slice
        return isinstance(first, cst.Index) and _is_tensor_annotation(first.value, resolve)

    # -- the key ----------------------------------------------------------------------------

    def _data_dependent_key(self, key: cst.BaseExpression) -> bool:
        if isinstance(key, cst.Lambda):
            params = key.params.params
            if len(params) != 1 or key.params.posonly_params:
                return False
            return _from_values(key.body, params[0].name.value, self.ctx.resolve, self.is_builtin)
        name = self.ctx.resolve(key)
        return name is not None and name.startswith("torch.") and torch_call_returns_tensor(name)


def _from_values(
    expr: cst.BaseExpression, param: str, resolve: Resolver, is_builtin: IsBuiltin
) -> bool:
    """Whether a key expression on the tensor ``param`` depends on the tensor's data."""
    if isinstance(expr, cst.Name):
        return expr.value == param
    if isinstance(expr, cst.Attribute):
        return False  # t.shape, t.dtype, t.T...: not read here as data
    if isinstance(expr, cst.Subscript):
        return _from_values(expr.value, param, resolve, is_builtin) and not _shape(expr.value)
    if isinstance(expr, cst.BinaryOperation):
        return any(
            _from_values(side, param, resolve, is_builtin) for side in (expr.left, expr.right)
        )
    if isinstance(expr, cst.UnaryOperation):
        return _from_values(expr.expression, param, resolve, is_builtin)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    name = resolve(func)
    if name is not None and name.startswith("torch."):
        if not torch_call_returns_tensor(name) or not expr.args:
            return False
        return _from_values(expr.args[0].value, param, resolve, is_builtin)
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method in _VALUE_METHODS:
            return _from_values(func.value, param, resolve, is_builtin)
        if method in NON_TENSOR_METHODS or method in NON_TENSOR_ATTRS:
            return False
        return _from_values(func.value, param, resolve, is_builtin)
    if any(is_builtin(func, b) for b in ("float", "int", "abs")) and expr.args:
        return _from_values(expr.args[0].value, param, resolve, is_builtin)
    return False


def _shape(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value in ("shape",)
