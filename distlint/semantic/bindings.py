"""What a call site binds to a function's parameters, and which branches that decides.

Shared by the rank analysis (which side of ``if use_barrier:`` a call with
``use_barrier=False`` runs) and the compiled regions (a helper called only under ``if
use_cpu:`` is not compiled when no compiled caller passes ``use_cpu=True``). Argument values
are the literal ones a summary records (see ``collect._call_arguments``).
"""

from __future__ import annotations

from typing import TypeGuard

from distlint.semantic.model import MEMBER_ARGUMENT, Condition, FunctionSummary
from distlint.semantic.values import Options

# an argument key: the call also unpacks ``*args``/``**kwargs``, so any parameter may be passed
STARRED = "**"
# the literal values a summary keeps for arguments and compared constants
LITERAL_TYPES = (bool, int, float, str)


def bind(
    summary: FunctionSummary, arguments: Options, *, strict: bool = False
) -> dict[str, object]:
    """Parameter values known at a call site: literal arguments over literal defaults. With
    ``strict``, a call that also unpacks ``*args``/``**kwargs`` (``STARRED``) may pass any
    parameter: its defaults are not assumed."""
    starred = any(key == STARRED for key, _ in arguments)
    bound: dict[str, object] = {} if strict and starred else dict(summary.defaults)
    params = summary.params
    offset = 1 if summary.class_id is not None and params and params[0] in ("self", "cls") else 0
    for key, value in arguments:
        if key == STARRED:
            continue
        if key.startswith("#"):
            position = int(key[1:]) + offset
            if position < len(params):
                bound[params[position]] = value
        else:
            bound[key] = value
    return bound


def forward_arguments(
    arguments: Options, bound: dict[str, object], *, members: bool = True
) -> Options:
    """A call's arguments with the caller's parameters replaced by what the caller was given
    (``torch_distributed_zero_first(rank)`` inside ``create_dataloader(..., rank=-1)``). With
    ``members`` False, an object's attribute passed (``MEMBER_ARGUMENT`` + its text, kept for
    the rank analysis, which tells whether it is a wrapped model) is an expression whose value
    is not known: not the literal its text spells."""
    if not members and any(is_member_argument(value) for _, value in arguments):
        arguments = tuple((k, "<expr>" if is_member_argument(v) else v) for k, v in arguments)
    if not any(isinstance(value, tuple) for _, value in arguments):
        return arguments
    return tuple(
        (key, bound.get(value[1], "<expr>") if isinstance(value, tuple) else value)
        for key, value in arguments
    )


def is_member_argument(value: object) -> TypeGuard[str]:
    """An object's attribute passed (``MEMBER_ARGUMENT`` + its text, see ``collect``)."""
    return isinstance(value, str) and value.startswith(MEMBER_ARGUMENT)


def decided_side(cond: Condition | None, bound: dict[str, object]) -> bool | None:
    """Which side a parameter test takes given the known argument, if it is known: a bare
    flag (``if use_barrier:``) or a comparison with literals (``if rank not in (-1, 0):``)."""
    if cond is None:
        return None
    if cond.junction:
        sides = [_decided_part(part, bound) for part in cond.parts]
        wanted = cond.junction == "or"  # one True decides an ``or``, one False an ``and``
        if wanted in sides:
            outcome: bool | None = wanted
        elif None in sides:
            return None
        else:
            outcome = not wanted
        return outcome if not cond.negated else not outcome
    if cond.compare is not None:
        param, operator, values = cond.compare
        if param not in bound:
            return None
        value = bound[param]
        if value == "<expr>" and operator in ("is", "is not") and values == (None,):
            outcome = operator == "is not"  # an expression passed is a value
        elif value == "<expr>" or not (value is None or isinstance(value, LITERAL_TYPES)):
            return None
        else:
            outcome = compare_literals(value, operator, values)
        return outcome if outcome is None or not cond.negated else not outcome
    if cond.param is None or cond.param not in bound:
        return None
    value = bound[cond.param]
    if not isinstance(value, bool) and value is not None:
        return None
    truth = bool(value)
    return (not truth) if cond.negated else truth


def _decided_part(
    part: tuple[str, str, tuple[object, ...]], bound: dict[str, object]
) -> bool | None:
    param, operator, _ = part
    if operator == "truthy":
        value = bound.get(param, "<unbound>")
        if value is None or isinstance(value, bool):
            return bool(value)
        return None
    return decided_side(Condition(0, compare=part), bound)


def compare_literals(value: object, operator: str, values: tuple[object, ...]) -> bool | None:
    try:
        if operator == "in":
            return value in values
        if operator == "not in":
            return value not in values
        other = values[0]
        if operator == "is":
            return value is other
        if operator == "is not":
            return value is not other
        if operator == "==":
            return value == other
        if operator == "!=":
            return value != other
        if isinstance(value, (int, float)) and isinstance(other, (int, float)):
            return {
                "<": value < other,
                "<=": value <= other,
                ">": value > other,
                ">=": value >= other,
            }.get(operator)
    except (TypeError, IndexError):
        return None
    return None
