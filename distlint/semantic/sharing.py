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

import dataclasses
from typing import Any

from distlint.semantic.model import (
    ClassSummary,
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

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.strings.setdefault(value, value)

    def value(self, value: Any) -> Any:
        """``value`` with its strings and plain tuples the ones met first (any object: what
        is not a string or a tuple is kept as it is)."""
        if type(value) is str:
            return self.strings.setdefault(value, value)
        if type(value) is not tuple:
            return value
        try:
            known = self.plain.get(value)
        except TypeError:  # holds something unhashable: its parts are still shared
            known = None
        if known is not None:
            return known
        parts = tuple([self.value(part) for part in value])
        if all(
            part is None or type(part) is str or (type(part) is tuple and self._is_plain(part))
            for part in parts
        ):
            self.plain[parts] = parts
        return parts

    def _is_plain(self, part: tuple) -> bool:
        return self.plain.get(part) is part

    def values(self, items: list) -> list:
        return [self.value(item) for item in items]

    def mapping(self, items: dict[str, Any]) -> dict[str, Any]:
        return {self.strings.setdefault(k, k): self.value(v) for k, v in items.items()}


def share_equal_parts(summary: ModuleSummary) -> None:
    """Make the equal strings and plain tuples of ``summary`` one object each (in place)."""
    shared = _Shared()
    summary.key = shared.text(summary.key)
    summary.path = shared.text(summary.path)
    summary.exports = shared.mapping(summary.exports)
    summary.functions = {shared.text(k): v for k, v in summary.functions.items()}
    for function in summary.functions.values():
        _function(function, shared)
    summary.classes = {shared.text(k): v for k, v in summary.classes.items()}
    for cls in summary.classes.values():
        _class(cls, shared)
    summary.compile_sites = [(shared.text(scope), site) for scope, site in summary.compile_sites]
    for _, site in summary.compile_sites:
        _fields(site, shared)
    summary.capture_sites = [
        (shared.text(scope), shared.value(callee), where)
        for scope, callee, where in summary.capture_sites
    ]
    summary.fields = {shared.text(k): shared.values(v) for k, v in summary.fields.items()}
    summary.attribute_writes = {shared.text(k): v for k, v in summary.attribute_writes.items()}


def _function(function: FunctionSummary, shared: _Shared) -> None:
    function.id = shared.text(function.id)
    function.name = shared.text(function.name)
    function.path = shared.text(function.path)
    function.class_id = shared.optional(function.class_id)
    function.params = shared.value(function.params)
    function.defaults = shared.value(function.defaults)
    function.decorators = shared.value(function.decorators)
    function.calls = shared.values(function.calls)
    function.returns = shared.values(function.returns)
    function.return_callees = shared.values(function.return_callees)
    function.passes = shared.values(function.passes)
    function.returns_ddp = shared.value(function.returns_ddp)
    function.ddp_models = shared.mapping(function.ddp_models)
    function.passed_members = shared.mapping(function.passed_members)
    function.compile_options = shared.value(function.compile_options)
    function.accepts = shared.value(function.accepts)
    for _, condition in function.param_tests:
        _condition(condition, shared)
    _effects(function.effects, shared)


def _class(cls: ClassSummary, shared: _Shared) -> None:
    cls.id = shared.text(cls.id)
    cls.name = shared.text(cls.name)
    cls.path = shared.text(cls.path)
    cls.bases = shared.value(cls.bases)
    cls.methods = shared.mapping(cls.methods)
    cls.attributes = shared.mapping(cls.attributes)
    cls.rank_attributes = shared.value(cls.rank_attributes)
    cls.submodules = shared.value(cls.submodules)
    cls.wrapped_attributes = shared.value(cls.wrapped_attributes)
    cls.ddp_attributes = shared.mapping(cls.ddp_attributes)
    cls.init_values = shared.mapping(cls.init_values)


def _effects(effects: tuple[Effect, ...], shared: _Shared) -> None:
    """Every effect below ``effects`` (nested as deep as the code: walked without recursion);
    effects are frozen, so their fields are replaced as their constructor sets them."""
    pending = list(effects)
    while pending:
        effect = pending.pop()
        _replace(effect, "kind", shared.text(effect.kind))
        _replace(effect, "name", shared.text(effect.name))
        _replace(effect, "text", shared.text(effect.text))
        _replace(effect, "group_param", shared.text(effect.group_param))
        _replace(effect, "callee", shared.value(effect.callee))
        _replace(effect, "arguments", shared.value(effect.arguments))
        _span(effect.span, shared)
        if effect.cond is not None:
            _condition(effect.cond, shared)
        pending += effect.body
        pending += effect.orelse


def _condition(condition: Condition, shared: _Shared) -> None:
    _fields(condition, shared)
    _span(condition.span, shared)
    _span(condition.why_span, shared)


def _fields(frozen: Any, shared: _Shared) -> None:
    """Every field of a frozen dataclass instance whose fields hold no effects."""
    for field in dataclasses.fields(frozen):
        _replace(frozen, field.name, shared.value(getattr(frozen, field.name)))


def _span(span: NodeSpan | None, shared: _Shared) -> None:
    if span is not None:
        span.path = shared.text(span.path)
        span.key = shared.value(span.key)


def _replace(frozen: object, name: str, value: object) -> None:
    """Set a field of a frozen dataclass instance that no one has read yet."""
    object.__setattr__(frozen, name, value)
