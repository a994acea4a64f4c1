"""DL206 float-flag-equality: see its docs page, docs/rules/DL206.md."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.syntax.imports import dotted_name
from distlint.syntax.shapes import assignment_targets
from distlint.syntax.walker import evaluated, scope_nodes

_C10D = "torch.distributed."


_FUNCOL = "torch.distributed._functional_collectives."


# c10d calls whose first argument receives values from other ranks (tensor or list).
RECEIVING_COLLECTIVES = frozenset(
    _C10D + name
    for name in (
        "broadcast",
        "all_reduce",
        "reduce",
        "recv",
        "irecv",
        "scatter",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_single",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "reduce_scatter_single",
        "all_to_all",
        "all_to_all_single",
        "broadcast_object_list",
        "all_gather_object",
        "scatter_object_list",
    )
)


_INT_DTYPES = frozenset(
    "torch." + name
    for name in (
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "short",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    )
)


_INT_CASTS = frozenset({"long", "int", "short", "bool", "byte", "char"})


_TO_PYTHON = frozenset({"item", "tolist"})


@dataclass
class _Received:
    """Per scope: names that hold values received through a collective."""

    collective: dict[str, str] = field(default_factory=dict)  # name -> collective's spelling
    integer: set[str] = field(default_factory=set)  # names known to hold integer tensors


class FloatFlagEquality(Rule):
    code = "DL206"
    name = "float-flag-equality"
    severity = Severity.NOTE
    summary = (
        "Exact ==/!= between a float received through a collective and a float literal "
        "(hygiene: use an integer flag or a threshold)."
    )
    default_enabled = False
    fix_availability = FixAvailability.SOMETIMES
    tags = ("hygiene", "distributed")
    precision = "medium"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._scopes: dict[int, _Received] = {}

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            right = target.comparator
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                for value, literal in ((left, right), (right, left)):
                    if not _is_float_literal(literal):
                        continue
                    via = self._received_via(value)
                    if via is not None:
                        self._report(node, value, literal, via)
                        return
            left = right

    def _report(
        self,
        node: cst.Comparison,
        value: cst.BaseExpression,
        literal: cst.BaseExpression,
        via: str,
    ) -> None:
        code = self.ctx.module.code_for_node
        fix_nodes: tuple[tuple[cst.CSTNode, str], ...] = ()
        fix = None
        if len(node.comparisons) == 1:
            equal = isinstance(node.comparisons[0].operator, cst.Equal)
            fix_nodes = ((node, _tolerance_comparison(node, value, literal, equal)),)
            fix = Fix(
                f"Compare within {FLOAT_TOLERANCE} instead of exactly",
                (),
                Applicability.UNSAFE,
            )
        self.report(
            node,
            f"Exact `==`/`!=` between `{code(value)}` (a float received through `{via}`) "
            f"and `{code(literal)}`: it holds only while the sender sets exactly that value "
            "and nothing averages or rescales it (a hygiene note, not an observed failure). "
            "Use an integer tensor for flags, or a threshold such as `> 0.5`.",
            fix=fix,
            fix_nodes=fix_nodes,
        )

    def _received_via(self, expr: cst.BaseExpression) -> str | None:
        scope = self._scope()
        base = _received_base(expr)
        if base is None or base in scope.integer:
            return None
        return scope.collective.get(base)

    def _scope(self) -> _Received:
        func = self.ctx.function
        key = id(func) if func is not None else 0
        if key not in self._scopes:
            body = func.body if func is not None else self.ctx.module
            self._scopes[key] = self._scan(body)
        return self._scopes[key]

    def _scan(self, body: cst.CSTNode) -> _Received:
        found = _Received()
        assignments: list[tuple[str, cst.BaseExpression]] = []
        for node in scope_nodes(body):
            if isinstance(node, cst.Call):
                name = self.ctx.resolve(node.func)
                if name in RECEIVING_COLLECTIVES and node.args and node.args[0].keyword is None:
                    received = dotted_name(node.args[0].value)
                    if received is not None:
                        found.collective.setdefault(
                            received, self.ctx.module.code_for_node(node.func)
                        )
            elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                targets = assignment_targets(node)
                for target in targets:
                    key = dotted_name(target)
                    if key is not None:
                        assignments.append((key, node.value))
        for key, value in assignments:
            if self._is_integer_tensor(value):
                found.integer.add(key)
            if isinstance(value, cst.Call) and (self.ctx.resolve(value.func) or "").startswith(
                _FUNCOL
            ):
                found.collective.setdefault(key, self.ctx.module.code_for_node(value.func))
        # one level of derived values: `flag = stop.item()`, `lr = holder[0]`
        for key, value in assignments:
            base = _received_base(value)
            if base is not None and base in found.collective and key not in found.collective:
                found.collective[key] = found.collective[base]
                if base in found.integer:
                    found.integer.add(key)
        return found

    def _is_integer_tensor(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _INT_CASTS and not value.args:
            return True
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return self.ctx.resolve(arg.value) in _INT_DTYPES
        if self.ctx.resolve(func) == "torch.tensor" and value.args:
            return _all_int_literals(value.args[0].value)
        return False


FLOAT_TOLERANCE = "1e-6"


def _tolerance_comparison(
    node: cst.Comparison, value: cst.BaseExpression, literal: cst.BaseExpression, equal: bool
) -> str:
    """``abs(value - literal) < 1e-6`` (``>=`` for ``!=``).

    It holds whenever the exact comparison held (the difference is then 0), and also for a
    value that rounding moved by less than the tolerance. Works on Python floats and tensors
    alike (``abs`` of a tensor is a tensor).
    """
    difference = cst.Call(
        cst.Name("abs"),
        [
            cst.Arg(
                cst.BinaryOperation(
                    value.with_changes(lpar=(), rpar=()),
                    cst.Subtract(),
                    literal.with_changes(lpar=(), rpar=()),
                )
            )
        ],
    )
    operator = cst.LessThan() if equal else cst.GreaterThanEqual()
    replacement = node.with_changes(  # the node's range leaves its parentheses out
        lpar=(),
        rpar=(),
        left=difference,
        comparisons=[cst.ComparisonTarget(operator, cst.Float(FLOAT_TOLERANCE))],
    )
    return cst.Module([]).code_for_node(replacement)


def _received_base(expr: cst.BaseExpression) -> str | None:
    """``stop`` for ``stop``, ``stop[0]``, ``stop.item()``, ``float(stop)``, ``holder[0]``."""
    while True:
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _TO_PYTHON and not expr.args:
                expr = func.value
                continue
            if isinstance(func, cst.Name) and func.value == "float" and len(expr.args) == 1:
                expr = expr.args[0].value
                continue
            return None
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        return dotted_name(expr)


def _is_float_literal(expr: cst.BaseExpression) -> bool:
    """A non-zero float literal: a sum, mean or scaling of 0/1 flags is exactly ``0.0`` only
    when every flag is 0, so ``== 0.0`` is the robust "nobody raised it" test (HF generation's
    ``synced_gpus`` loop, divisor guards), not the fragile one."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, cst.Float) and evaluated(expr) != 0.0


def _all_int_literals(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(_all_int_literals(e.value) for e in expr.elements)
    return False
