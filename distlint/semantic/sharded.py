"""Tests of whether a model is sharded (FSDP, FSDP2, DTensor parameters).

A checkpoint helper often synchronises only for sharded models (``if isinstance(model,
FSDP): dist.barrier()``, ``is_distributed = any(_is_distributed_model(m) for m in
models)``) and writes locally otherwise, so calling it on rank 0 alone is fine with a plain
or DDP model. Such a test is the same on every rank, but it is not a distributed-mode guard:
it says which *models* were passed, not whether the job is distributed. The effect analysis
takes its unsharded side unless a caller passes a model it knows to be wrapped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import libcst as cst

from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import descendants

# The types whose instances (or parameters) are sharded across ranks: FSDP1 (and its usual
# alias), FSDP2's ``fully_shard`` class, DTensor and PhysicsNeMo's ShardTensor.
SHARDED_TYPES = frozenset(
    {"FullyShardedDataParallel", "FSDP", "FSDPModule", "DTensor", "ShardTensor"}
)

# What a local name is assigned, as written (None: not a local of the scope)
Assigned = Callable[[str], Sequence[cst.CSTNode] | None]


def may_hold_sharded_test(source: str) -> bool:
    """Whether a file's text can hold a test that :func:`sharded_polarity` answers (False:
    it answers None for every test of the file, and the file has no sharded predicate).

    Every answer rests on a type test or a ``__name__`` comparison. A type test's types end
    with a name written in the file (as resolved, an import names it; as written, the test
    does). A ``__name__`` comparison holds a string whose value is a type's name: spelt out,
    or spelt with an escape, which takes a backslash."""
    return any(name in source for name in SHARDED_TYPES) or (
        "__name__" in source and "\\" in source
    )


def sharded_polarity(
    test: cst.BaseExpression,
    resolve: Callable[[cst.BaseExpression], str | None],
    predicates: Collection[str] = (),
    assigned: Assigned | None = None,
) -> bool | None:
    """True when ``test`` can hold only if a model is sharded; False when it can fail only
    then (``not is_fsdp``); None otherwise. ``predicates`` are functions of the file that
    return such a test; ``assigned`` gives a local flag's values. A test of ``self``'s
    attributes is left out: the class may be known to wrap them (see ``effects``)."""
    polarity = _Polarity(resolve, predicates, assigned).of(test, 0)
    if polarity is None:  # most tests: no need to look for ``self``
        return None
    if any(type(n) is cst.Name and n.value == "self" for n in descendants(test)):
        return None
    return polarity


class _Polarity:
    def __init__(
        self,
        resolve: Callable[[cst.BaseExpression], str | None],
        predicates: Collection[str],
        assigned: Assigned | None,
    ) -> None:
        self.resolve = resolve
        self.predicates = predicates
        self.assigned = assigned

    def of(self, node: cst.BaseExpression, depth: int) -> bool | None:
        if depth > 4:
            return None
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
            inner = self.of(node.expression, depth + 1)
            return None if inner is None else not inner
        if type(node) is cst.BooleanOperation:
            sides = [self.of(side, depth + 1) for side in (node.left, node.right)]
            if type(node.operator) is cst.And:  # true: both true; false: either false
                return True if True in sides else (False if sides == [False, False] else None)
            return False if False in sides else (True if sides == [True, True] else None)
        if type(node) is cst.Call:
            return True if self._sharded_call(node, depth) else None
        if type(node) is cst.Comparison:
            return True if _type_name_comparison(node) else None
        if type(node) is cst.Name and self.assigned is not None:
            values = self.assigned(node.value)
            if not values:
                return None
            kinds = [
                "literal" if _bool_literal(value) else self.of(value, depth + 1)
                for value in values
                if isinstance(value, cst.BaseExpression)
            ]
            if len(kinds) == len(values) and True in kinds and set(kinds) <= {True, "literal"}:
                return True
        return None

    def _sharded_call(self, call: cst.Call, depth: int) -> bool:
        func = call.func
        name = func.value if type(func) is cst.Name else None
        if name in ("isinstance", "issubclass") and len(call.args) == 2:
            return self._sharded_types(call.args[1].value)
        if name == "any" and len(call.args) == 1:
            inner = call.args[0].value
            if isinstance(inner, (cst.GeneratorExp, cst.ListComp)):
                return self.of(inner.elt, depth + 1) is True
        return name is not None and name in self.predicates

    def _sharded_types(self, types: cst.BaseExpression) -> bool:
        items = [e.value for e in types.elements] if type(types) is cst.Tuple else [types]
        for item in items:
            written = dotted_name(item)
            if written is None:
                return False
            resolved = self.resolve(item) or written
            if resolved.rsplit(".", 1)[-1] not in SHARDED_TYPES:
                return False
        return bool(items)


def sharded_predicates(
    functions: Sequence[tuple[str, Sequence[cst.BaseExpression]]],
    resolve: Callable[[cst.BaseExpression], str | None],
) -> frozenset[str]:
    """Module-level functions whose every ``return`` is a sharded test or a boolean literal
    (``_is_distributed_model(m)``: ``isinstance(m, (FSDP, FSDPModule))`` or any DTensor
    parameter), found again until no more are (one may call another). ``functions``: the
    name and returned values of each module-level function that returns a value on every
    ``return`` (in the order of the module), read once, not once per round."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in functions:
            if name in found:
                continue
            kinds = [
                "literal" if _bool_literal(v) else sharded_polarity(v, resolve, found)
                for v in values
            ]
            if True in kinds and set(kinds) <= {True, "literal"}:
                found.add(name)
                changed = True
    return frozenset(found)


def _bool_literal(node: cst.CSTNode) -> bool:
    return type(node) is cst.Name and node.value in ("True", "False")


def _type_name_comparison(node: cst.Comparison) -> bool:
    """``type(p).__name__ == "DTensor"`` / ``in ("DTensor", "ShardTensor")``."""
    if len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.In)):
        return False
    sides = (node.left, target.comparator)
    named = [s for s in sides if type(s) is cst.Attribute and s.attr.value == "__name__"]
    literal = [s for s in sides if s not in named]
    if len(named) != 1 or len(literal) != 1:
        return False
    value = literal[0]
    items = [e.value for e in value.elements] if type(value) is cst.Tuple else [value]
    return bool(items) and all(
        type(i) is cst.SimpleString and i.evaluated_value in SHARDED_TYPES for i in items
    )
