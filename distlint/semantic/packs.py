"""Framework knowledge packs: what Accelerate, Lightning, DeepSpeed... do, read from data.

``distlint/knowledge/data/frameworks.json`` holds one entry per documented fact of a library
(its kind,
the name it matches, the library version and one line of evidence). This module loads it once
and answers the questions the rank and collective analysis asks: is this attribute a rank,
is this method on this receiver a collective, does this call return a distributed model, does
this decorator run the function on one rank only. Generic conventions (``get_rank``, a
parameter named ``rank``, ``RANK``/``LOCAL_RANK``) and torch's own wrappers (DDP, FSDP,
``fully_shard``) stay in Python (:mod:`.ranks`, :mod:`.collectives`); a name is never in both.

The ``rank-predicates`` and ``collective-wrappers`` settings extend the packs per project:
a dotted predicate matches the resolved name, a bare one (``is_leader``) any attribute read or
call of that name, as a ``rank-attribute``/``rank-call`` entry would.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

import libcst as cst

from distlint.syntax.imports import dotted_name

KINDS = (
    "rank-attribute",
    "rank-call",
    "collective-method",
    "collective-module",
    "wrapper-call",
    "wrapper-method",
    "engine-call",
    "rank-only-decorator",
    "balanced-context",
    "buffered-module",
)
_RECEIVER_KINDS = frozenset(
    {"collective-method", "wrapper-method", "rank-only-decorator", "balanced-context"}
)
_QUALIFIED_KINDS = frozenset(
    {"collective-module", "wrapper-call", "engine-call", "rank-only-decorator", "buffered-module"}
)


class PackError(ValueError):
    """frameworks.json is malformed (a bug in distlint's data, caught by the tests)."""


@dataclass(frozen=True)
class Entry:
    id: str
    framework: str
    version: str
    kind: str
    name: str
    evidence: str
    receivers: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    collective: str = ""
    uniform_result: bool = False  # a collective method whose result every process shares
    in_place: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Knowledge:
    """The entries, indexed for the questions the analysis asks."""

    rank_attributes: frozenset[str] = frozenset()
    rank_calls: frozenset[str] = frozenset()
    collective_methods: dict[str, tuple[str, ...]] = field(default_factory=dict)
    uniform_methods: dict[str, tuple[str, ...]] = field(default_factory=dict)
    collective_modules: tuple[str, ...] = ()
    wrapper_calls: dict[str, bool] = field(default_factory=dict)  # name -> wraps in place
    wrapper_methods: dict[str, tuple[str, ...]] = field(default_factory=dict)
    engine_calls: frozenset[str] = frozenset()
    rank_only_decorators: frozenset[str] = frozenset()  # resolved names
    rank_only_methods: dict[str, tuple[str, ...]] = field(default_factory=dict)
    balanced_contexts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # constructors of models that always own buffers (a DDP forward broadcasts them)
    buffered_modules: frozenset[str] = frozenset()


def _load() -> tuple[Entry, ...]:
    text = resources.files("distlint.knowledge.data").joinpath("frameworks.json").read_text("utf-8")
    return parse(json.loads(text))


def parse(data: object) -> tuple[Entry, ...]:
    """Validate the JSON document and build its entries (raises :class:`PackError`)."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        raise PackError("frameworks.json: expected an object with an 'entries' list")
    found: list[Entry] = []
    seen: set[str] = set()
    for raw in data["entries"]:
        entry = _entry(raw)
        if entry.id in seen:
            raise PackError(f"frameworks.json: duplicate id {entry.id!r}")
        seen.add(entry.id)
        found.append(entry)
    return tuple(found)


def _entry(raw: object) -> Entry:
    if not isinstance(raw, dict):
        raise PackError(f"frameworks.json: entry {raw!r} is not an object")
    where = f"frameworks.json: entry {raw.get('id')!r}"
    allowed = {*Entry.__dataclass_fields__}
    unknown = set(raw) - allowed
    if unknown:
        raise PackError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("id", "framework", "version", "kind", "name", "evidence"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise PackError(f"{where}: '{key}' must be a non-empty string")
    kind = raw["kind"]
    if kind not in KINDS:
        raise PackError(f"{where}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
    receivers = tuple(raw.get("receivers", ()))
    aliases = tuple(raw.get("aliases", ()))
    if not all(isinstance(x, str) and x for x in (*receivers, *aliases)):
        raise PackError(f"{where}: receivers and aliases must be non-empty strings")
    qualified = "." in raw["name"]
    if kind == "rank-only-decorator" and not receivers and not qualified:
        raise PackError(f"{where}: a {kind} entry needs 'receivers' or a dotted name")
    if kind in _RECEIVER_KINDS - {"rank-only-decorator"} and (not receivers or qualified):
        raise PackError(f"{where}: a {kind} entry is a method name with 'receivers'")
    if kind in _QUALIFIED_KINDS - _RECEIVER_KINDS and not qualified:
        raise PackError(f"{where}: a {kind} entry needs a dotted (resolved) name")
    if raw.get("uniform_result") and kind != "collective-method":
        raise PackError(f"{where}: only a collective-method has a uniform result")
    if kind in ("rank-attribute", "rank-call") and (qualified or receivers):
        raise PackError(f"{where}: a {kind} entry is a bare name, without receivers")
    return Entry(
        id=raw["id"],
        framework=raw["framework"],
        version=raw["version"],
        kind=kind,
        name=raw["name"],
        evidence=raw["evidence"],
        receivers=tuple(r.lower() for r in receivers),
        aliases=aliases,
        collective=str(raw.get("collective", "")),
        uniform_result=bool(raw.get("uniform_result", False)),
        in_place=bool(raw.get("in_place", False)),
    )


@cache
def entries() -> tuple[Entry, ...]:
    """Every entry of the packs, in file order (loaded once)."""
    return _load()


@cache
def knowledge() -> Knowledge:
    """The packs indexed for lookups (built once; tests clear the cache to swap entries)."""
    return index(entries())


def index(items: Iterable[Entry]) -> Knowledge:
    rank_attributes: set[str] = set()
    rank_calls: set[str] = set()
    methods: dict[str, dict[str, tuple[str, ...]]] = {
        kind: {} for kind in (*_RECEIVER_KINDS, "uniform")
    }
    modules: list[str] = []
    wrapper_calls: dict[str, bool] = {}
    engines: set[str] = set()
    decorators: set[str] = set()
    buffered: set[str] = set()
    for entry in items:
        kind = entry.kind
        if kind == "rank-attribute":
            rank_attributes.add(entry.name)
        elif kind == "rank-call":
            rank_calls.add(entry.name)
        elif kind == "collective-module":
            modules.extend(entry.names)
        elif kind == "wrapper-call":
            for name in entry.names:
                wrapper_calls[name] = entry.in_place
        elif kind == "engine-call":
            engines.update(entry.names)
        elif kind == "rank-only-decorator" and "." in entry.name:
            decorators.update(entry.names)
        elif kind == "buffered-module":
            buffered.update(entry.names)
        if kind in _RECEIVER_KINDS and entry.receivers:
            for table in (methods[kind], methods["uniform"] if entry.uniform_result else {}):
                known = table.get(entry.name, ())
                table[entry.name] = tuple(dict.fromkeys((*known, *entry.receivers)))
    return Knowledge(
        rank_attributes=frozenset(rank_attributes),
        rank_calls=frozenset(rank_calls),
        collective_methods=methods["collective-method"],
        uniform_methods=methods["uniform"],
        collective_modules=tuple(modules),
        wrapper_calls=wrapper_calls,
        wrapper_methods=methods["wrapper-method"],
        engine_calls=frozenset(engines),
        rank_only_decorators=frozenset(decorators),
        rank_only_methods=methods["rank-only-decorator"],
        balanced_contexts=methods["balanced-context"],
        buffered_modules=frozenset(buffered),
    )


class Names(Collection[str]):
    """Fixed names plus those of one pack kind, looked up in the packs at each test, so that
    ``name in RANK_ATTRIBUTES`` stays a set test for the callers."""

    def __init__(self, fixed: Iterable[str], kind: str) -> None:
        self.fixed = frozenset(fixed)
        self.kind = kind

    def _pack(self) -> frozenset[str]:
        found = getattr(knowledge(), self.kind)
        assert isinstance(found, frozenset)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self.fixed or name in self._pack()

    def __iter__(self) -> Iterator[str]:
        return iter(self.fixed | self._pack())

    def __len__(self) -> int:
        return len(self.fixed | self._pack())


def receiver_word(receiver: cst.BaseExpression) -> str:
    """The last name of a method's receiver, lower-cased: ``self.accelerator`` ->
    ``accelerator``, ``PartialState()`` -> ``partialstate``, ``training_args`` as is."""
    if type(receiver) is cst.Call:
        receiver = receiver.func
    return (dotted_name(receiver) or "").rsplit(".", 1)[-1].lower()


def method_on_receiver(func: cst.BaseExpression, table: dict[str, tuple[str, ...]]) -> str | None:
    """``func``'s method name when ``func`` is ``<receiver>.<method>`` with the method in
    ``table`` and the receiver's last name containing one of its receiver words."""
    if type(func) is not cst.Attribute:
        return None
    method = func.attr.value
    hints = table.get(method)
    if not hints:
        return None
    word = receiver_word(func.value)
    return method if word and any(hint in word for hint in hints) else None


def source_words() -> tuple[str, ...]:
    """Names whose presence in a file means it may read a rank through a pack."""
    pack = knowledge()
    return tuple(sorted(pack.rank_attributes | pack.rank_calls))
