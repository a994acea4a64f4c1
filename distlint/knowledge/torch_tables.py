"""Facts about torch releases, shipped as data (``distlint/knowledge/data/torch-tables.json``).

Rules use this instead of importing torch. The file is generated from real torch releases by
``scripts/gen_torch_tables.py``; see its docstring for what each table holds and how to add a
torch version. It holds every release's table in one merged form: list items grouped by the
versions that have them, and each value of a mapping stored once with the versions it holds
for (``"2.4-2.9,2.11"``), so that eleven releases cost about a sixth of eleven copies.
:func:`expand` gives one release's table back, exactly as the generator built it.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Any

__all__ = [
    "Signature",
    "TorchTable",
    "available_versions",
    "closest",
    "describe_versions",
    "expand",
    "load_table",
    "span",
    "tables_between",
    "version_advice",
    "version_key",
]

_PACKAGE = "distlint.knowledge.data"
_FILE = "torch-tables.json"
_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")
_DEFAULT_MODES = (None, "", "default")
# Python types behind the type names in "inductor_options" (torch checks isinstance).
_PY_TYPES: dict[str, type] = {
    t.__name__: t for t in (bool, int, float, str, type(None), list, tuple, dict, set)
}


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class Signature:
    """What a torch API accepts as keyword arguments (from the ``signatures`` table)."""

    name: str  # canonical dotted name, e.g. "torch.nn.parallel.DistributedDataParallel"
    error_name: str  # the name Python's TypeError uses, e.g. "DistributedDataParallel.__init__"
    kind: str  # "function" | "class"
    keywords: tuple[str, ...]
    positional_only: tuple[str, ...]
    var_positional: bool
    var_keyword: bool

    def accepts_keyword(self, keyword: str) -> bool:
        """Whether ``api(keyword=...)`` binds (``**kwargs`` accepts every name)."""
        return self.var_keyword or keyword in self.keywords

    def unexpected_keyword_message(self, keyword: str) -> str:
        """Python's TypeError text for an unknown keyword."""
        return f"{self.error_name}() got an unexpected keyword argument {keyword!r}"


@dataclass(frozen=True, eq=False, repr=False)
class TorchTable:
    """The tables for one torch ``major.minor`` release."""

    torch_version: str
    #: every in-tree string ``torch.compile(backend=...)`` accepts (incl. debug/test backends)
    backends: frozenset[str]
    #: the subset shown by the default ``torch._dynamo.list_backends()``
    listed_backends: frozenset[str]
    #: valid ``mode=`` strings -> the inductor options each one sets
    mode_options: Mapping[str, Mapping[str, Any]]
    #: ``options={...}`` key -> value type ("bool", "int", ..., "any", "never")
    inductor_options: Mapping[str, str]
    #: names that can be assigned on ``torch._dynamo.config`` (dotted for nested ones)
    dynamo_config: frozenset[str]
    #: names that can be assigned on ``torch._inductor.config`` (e.g. ``triton.cudagraphs``)
    inductor_config: frozenset[str]
    #: full dotted config name -> full dotted name it aliases
    config_aliases: Mapping[str, str]
    config_deprecated: frozenset[str]
    #: when/what torch raises; see ``compile_checks`` in the JSON
    compile_checks: Mapping[str, Any]
    #: canonical API name -> Signature (DL501)
    signatures: Mapping[str, Signature]
    #: other public spellings of an API -> its canonical name
    signature_aliases: Mapping[str, str]
    raw: Mapping[str, Any]
    #: public and private dotted names (from DL504's and DL505's tables) this release has
    api_names: frozenset[str] = frozenset()
    #: public names of the modules DL504's private paths point to (module -> names)
    module_exports: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: how ``options`` values are checked: "isinstance" (declared type) or "exact" (2.4's
    #: ``type(value) is type(default)``)
    option_check: str = "isinstance"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TorchTable:
        backends = data["compile_backends"]
        return cls(
            torch_version=data["torch_version"],
            backends=frozenset(backends),
            listed_backends=frozenset(n for n, b in backends.items() if not b["hidden"]),
            mode_options=_freeze(data["compile_modes"]),
            inductor_options=_freeze(data["inductor_options"]),
            dynamo_config=frozenset(data["dynamo_config"]),
            inductor_config=frozenset(data["inductor_config"]),
            config_aliases=_freeze(data["config_aliases"]),
            config_deprecated=frozenset(data["config_deprecated"]),
            compile_checks=_freeze(data["compile_checks"]),
            signatures=MappingProxyType(
                {
                    name: Signature(
                        name=name,
                        error_name=entry["error_name"],
                        kind=entry["kind"],
                        keywords=tuple(entry["keywords"]),
                        positional_only=tuple(entry["positional_only"]),
                        var_positional=entry["var_positional"],
                        var_keyword=entry["var_keyword"],
                    )
                    for name, entry in data.get("signatures", {}).items()
                }
            ),
            signature_aliases=_freeze(data.get("signature_aliases", {})),
            raw=_freeze(data),
            api_names=frozenset(data.get("api_names", ())),
            module_exports=_freeze(data.get("module_exports", {})),
            option_check=data.get("inductor_option_check", "isinstance"),
        )

    def __repr__(self) -> str:
        return f"TorchTable(torch_version={self.torch_version!r})"

    @property
    def modes(self) -> frozenset[str]:
        return frozenset(self.mode_options)

    def is_backend(self, name: str) -> bool:
        """True if torch resolves this backend string without a third-party registration."""
        return name in self.backends  # torch's lookup is an exact, case-sensitive dict lookup

    def is_mode(self, mode: str | None) -> bool:
        return mode in _DEFAULT_MODES or mode in self.mode_options

    def option_type(self, key: str) -> str | None:
        """Value type of an inductor ``options`` key, or None if torch rejects the key."""
        return self.inductor_options.get(key.replace("-", "_"))

    def option_value_ok(self, key: str, value: Any) -> bool | None:
        """Whether torch accepts ``value`` for option ``key``; None if the key is unknown.

        Mirrors torch's ``isinstance`` check: ``True`` passes for ``int``, ``1`` fails for
        ``float``. Types a static checker cannot judge count as accepted.
        """
        kind = self.option_type(key)
        if kind is None:
            return None
        if kind == "never":
            return False
        py_type = _PY_TYPES.get(kind)
        if py_type is None:
            return True
        if self.option_check == "exact":
            return type(value) is py_type
        return isinstance(value, py_type)

    @property
    def version(self) -> str:
        """``major.minor``, e.g. "2.13"."""
        return ".".join(self.torch_version.split(".")[:2])

    def has(self, name: str) -> bool:
        """Whether this release has the dotted ``name`` (only names listed in ``api_names``'s
        sources, see scripts/gen_torch_tables.py, are known; others are False)."""
        return name in self.api_names

    def signature(self, name: str | None) -> Signature | None:
        """The signature of a torch API by its canonical (or another public) dotted name."""
        if name is None:
            return None
        found = self.signatures.get(name)
        if found is None and name in self.signature_aliases:
            found = self.signatures.get(self.signature_aliases[name])
        return found

    def config_names(self, module: str) -> frozenset[str]:
        """Assignable names of ``torch._dynamo.config`` or ``torch._inductor.config``."""
        if module in ("torch._dynamo.config", "dynamo"):
            return self.dynamo_config
        if module in ("torch._inductor.config", "inductor"):
            return self.inductor_config
        raise ValueError(f"no config table for {module!r}")

    def message(self, error: str, **fields: Any) -> str:
        """torch's exact message for a compile_checks error kind, e.g.
        ``message("unknown_backend", name="nvfuser")``."""
        return self.compile_checks["errors"][error]["message"].format(**fields)


def version_key(version: str) -> tuple[int, int]:
    """``(major, minor)`` of "2.13", "2.13.0" or "2.13.0+cpu"."""
    m = _VERSION.match(str(version))
    if m is None:
        raise ValueError(f"not a torch version: {version!r}")
    return int(m[1]), int(m[2])


def span(versions: Iterable[str], known: Iterable[str]) -> str:
    """``versions`` (a subset of ``known``, both ``major.minor``) as runs over ``known``:
    "2.4-2.9,2.11"; the form the merged file stores and messages print."""
    order = sorted(known, key=version_key)
    wanted = set(versions)
    runs: list[list[str]] = []
    previous_in = False
    for version in order:
        if version in wanted:
            if previous_in:
                runs[-1].append(version)
            else:
                runs.append([version])
        previous_in = version in wanted
    return ",".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def describe_versions(versions: Iterable[str]) -> str:
    """Shipped releases for a message: "2.13", "2.4-2.9" or "2.4-2.6,2.9"."""
    return span(versions, _versions())


def version_advice(accepting: Iterable[str], rejecting: Iterable[str]) -> str:
    """What a project can do about something only some releases of its range accept."""
    ok, bad = sorted(accepting, key=version_key), sorted(rejecting, key=version_key)
    if version_key(bad[-1]) < version_key(ok[0]):
        return f"Guard it with a version check, or raise the project's lowest torch to {ok[0]}."
    if version_key(bad[0]) > version_key(ok[-1]):
        return f"Guard it with a version check, or keep the project's torch below {bad[0]}."
    return "Guard it with a version check."


def _unspan(text: str, order: list[str]) -> frozenset[str]:
    found: set[str] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        i, j = order.index(first), order.index(last or first)
        found.update(order[i : j + 1])
    return frozenset(found)


def expand(merged: Mapping[str, Any], version: str) -> dict[str, Any]:
    """One release's table (``major.minor``) from the merged file, as the generator built it."""
    order = sorted(merged["versions"], key=version_key)
    if version not in order:
        raise ValueError(f"no table for torch {version}")
    table: dict[str, Any] = {"torch_version": merged["versions"][version]}
    holds = functools.lru_cache(maxsize=None)(lambda text: version in _unspan(text, order))
    for section, groups in merged["lists"].items():
        table[section] = sorted(
            item for where, items in groups.items() if holds(where) for item in items
        )
    for section, entries in merged["maps"].items():
        table[section] = {
            key: value
            for key, variants in entries.items()
            for where, value in variants
            if holds(where)
        }
    for section, variants in merged["values"].items():
        for where, value in variants:
            if holds(where):
                table[section] = value
    return table


@functools.lru_cache(maxsize=1)
def _merged() -> dict[str, Any]:
    text = resources.files(_PACKAGE).joinpath(_FILE).read_text(encoding="utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[str, ...]:
    return tuple(sorted(_merged()["versions"], key=version_key))


def available_versions() -> list[str]:
    """``major.minor`` versions with shipped tables, oldest first."""
    return list(_versions())


def load_table(torch_version: str | None = None) -> TorchTable:
    """The table for a torch version ("2.13", "2.13.0", "2.13.0+cu126"); None = newest."""
    versions = _versions()
    if torch_version is None:
        if not versions:
            raise ValueError(f"no torch tables are shipped in {_PACKAGE}")
        return _load(versions[-1])
    m = _VERSION.match(str(torch_version))
    key = f"{int(m[1])}.{int(m[2])}" if m else str(torch_version)
    if key not in versions:
        raise ValueError(
            f"no torch tables for torch {torch_version!r}; "
            f"available: {', '.join(versions) or 'none'}"
        )
    return _load(key)


def tables_between(lowest: str | None, highest: str | None = None) -> tuple[TorchTable, ...]:
    """The tables of the shipped releases a project supporting ``lowest``..``highest`` runs on,
    oldest first. ``lowest`` None (not known): the newest one up to ``highest`` only. A bound
    outside the shipped releases is clamped to them (a project on 2.1 is judged on 2.4 and up,
    the oldest known)."""
    versions = _versions()
    high = version_key(highest) if highest is not None else version_key(versions[-1])
    if lowest is None:
        below = [v for v in versions if version_key(v) <= high]
        return (_load(below[-1] if below else versions[0]),)
    low = version_key(lowest)
    chosen = [v for v in versions if low <= version_key(v) <= high]
    if not chosen:  # the whole range lies above (or below) the shipped releases
        below = [v for v in versions if version_key(v) <= low]
        chosen = [below[-1] if below else versions[0]]
    return tuple(_load(v) for v in chosen)


@functools.lru_cache(maxsize=32)
def _load(version: str) -> TorchTable:
    return TorchTable.from_json(expand(_merged(), version))


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """Best "did you mean" suggestion: a case-insensitive exact match first, then difflib."""
    pool = sorted(set(candidates))
    folded = name.casefold()
    for candidate in pool:
        if candidate.casefold() == folded:
            return candidate
    matches = difflib.get_close_matches(name, pool, n=1)
    return matches[0] if matches else None
