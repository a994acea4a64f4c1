"""Equal strings and values of a summary made one object each, once the summary is built.

The parent of a check keeps every file's summary until linking (torch: 2,300 files), and a
summary is built from the tree's own strings (each ``Name`` holds its own ``"self"``) and from
tuples built per use, so equal parts are separate objects: in torch's summaries 1.0 M strings
(47% of their bytes repeats within their file) and 1.5 M tuples (51%). Pickling writes an
object that appears twice once, so made one, each is sent and unpickled once per file.

Only strings and tuples of strings, ``None`` and such tuples are merged: they are compared by
value wherever they are read. Tuples holding numbers are not (``1``, ``1.0`` and ``True`` are
equal, not the same), nor anything the linker tells apart by identity: effects, conditions,
located nodes keep their identity (only their fields' strings and values are replaced).
"""

from __future__ import annotations

from typing import Any

from distlint.semantic.model import (
    Condition,
    Effect,
    FunctionSummary,
    ModuleSummary,
)
from distlint.syntax.spans import NodeSpan


class _Shared:
    """The first of each equal string or plain tuple met in one summary."""

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.plain: dict[tuple, tuple] = {}  # tuples of strings, None and such tuples

    def text(self, value: str) -> str:
        return self.strings.setdefault(value, value)

    def value(self, value: Any) -> Any:
        """``value`` with its strings and plain tuples the ones met first (any object: what
        is not a string or a tuple is kept as it is)."""
        kind = type(value)
        if kind is str:
            return self.strings.setdefault(value, value)
        if kind is not tuple:
            return value
        plain = self.plain
        try:
            known = plain.get(value)
        except TypeError:  # holds something unhashable: its parts are still shared
            known = None
        if known is not None:
            return known
        strings = self.strings  # most parts are strings: shared here, without a call each
        parts = tuple(
            [
                strings.setdefault(part, part) if type(part) is str else self.value(part)
                for part in value
            ]
        )
        for part in parts:
            if not (
                part is None
                or type(part) is str
                or (type(part) is tuple and plain.get(part) is part)
            ):
                return parts
        plain[parts] = parts
        return parts

    def values(self, items: list) -> list:
        return [self.value(item) for item in items]

    def mapping(self, items: dict[str, Any]) -> dict[str, Any]:
        return {self.strings.setdefault(k, k): self.value(v) for k, v in items.items()}


def share_equal_parts(summary: ModuleSummary) -> None:
    """Make the equal strings and plain tuples of ``summary`` one object each (in place)."""
    shared = _Shared()
    _fields(summary, shared, _names(summary))
    for _, site in summary.compile_sites:
        _fields(site, shared, _names(site))
    for function in summary.functions.values():
        _fields(function, shared, _FUNCTION_FIELDS)
        for _, condition in function.param_tests:
            _condition(condition, shared)
        _effects(function.effects, shared)
    for cls in summary.classes.values():
        _fields(cls, shared, _names(cls))


def _names(instance: Any, skip: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The fields of a dataclass instance or class, in order (``dataclasses.fields``, without
    building it), but ``skip``: those that hold effects or conditions (kept, walked apart)."""
    return tuple(name for name in instance.__dataclass_fields__ if name not in skip)


_FUNCTION_FIELDS = _names(FunctionSummary, ("effects", "param_tests"))
_EFFECT_FIELDS = _names(Effect, ("span", "cond", "body", "orelse"))
_CONDITION_FIELDS = _names(Condition, ("span", "why_span"))


def _fields(instance: Any, shared: _Shared, names: tuple[str, ...]) -> None:
    """The fields ``names`` of a dataclass instance (frozen or not) that hold strings, values,
    lists and dicts of them (each set again only when its value was replaced)."""
    strings = shared.strings
    for name in names:
        value = getattr(instance, name)
        if not value:
            continue  # "", (), [], {}, None, False, 0: nothing to share (() is one object)
        kind = type(value)
        new: Any
        if kind is str:
            new = strings.setdefault(value, value)
        elif kind is tuple:
            new = shared.value(value)
        elif kind is list:
            new = shared.values(value)
        elif kind is dict:
            new = shared.mapping(value)
        else:
            continue  # a number, a flag, None, an object of its own
        if new is not value:
            object.__setattr__(instance, name, new)


def _effects(effects: tuple[Effect, ...], shared: _Shared) -> None:
    """Every effect below ``effects`` (nested as deep as the code: walked without recursion);
    effects are frozen, so their fields are replaced as their constructor sets them."""
    pending = list(effects)
    while pending:
        effect = pending.pop()
        _fields(effect, shared, _EFFECT_FIELDS)
        _span(effect.span, shared)
        if effect.cond is not None:
            _condition(effect.cond, shared)
        pending += effect.body
        pending += effect.orelse


def _condition(condition: Condition, shared: _Shared) -> None:
    _fields(condition, shared, _CONDITION_FIELDS)
    _span(condition.span, shared)
    _span(condition.why_span, shared)


def _span(span: NodeSpan | None, shared: _Shared) -> None:
    if span is not None:
        span.path = shared.text(span.path)
        span.key = shared.value(span.key)
