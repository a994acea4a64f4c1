"""Facts about torch releases, shipped as data
(``distlint/knowledge/data/torch-<major.minor>.json``).

Rules use this instead of importing torch. The JSON files are generated from a real torch by
``scripts/gen_torch_tables.py``; see its docstring for what each table holds and how to add a
torch version.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

__all__ = ["Signature", "TorchTable", "available_versions", "closest", "load_table"]

_PACKAGE = "distlint.knowledge.data"
_FILE = re.compile(r"^torch-(\d+)\.(\d+)\.json$")
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
        return True if py_type is None else isinstance(value, py_type)

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


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[str, ...]:
    found = []
    for entry in resources.files(_PACKAGE).iterdir():
        m = _FILE.match(entry.name)
        if m:
            found.append((int(m[1]), int(m[2])))
    return tuple(f"{major}.{minor}" for major, minor in sorted(found))


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


@functools.lru_cache(maxsize=16)
def _load(version: str) -> TorchTable:
    text = resources.files(_PACKAGE).joinpath(f"torch-{version}.json").read_text(encoding="utf-8")
    return TorchTable.from_json(json.loads(text))


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """Best "did you mean" suggestion: a case-insensitive exact match first, then difflib."""
    pool = sorted(set(candidates))
    folded = name.casefold()
    for candidate in pool:
        if candidate.casefold() == folded:
            return candidate
    matches = difflib.get_close_matches(name, pool, n=1)
    return matches[0] if matches else None
