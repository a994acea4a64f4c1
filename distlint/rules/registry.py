"""The catalog: every rule, found by importing each module under :mod:`distlint.rules`, then
the installed plugins and the local ones a configuration names (:mod:`.plugins`).

Rules register themselves by subclassing :class:`~distlint.rules.base.Rule`; nothing here
lists them. What a check needs to know of every rule before it checks anything (codes,
default selection, scope) is also generated into ``catalog.json`` (:func:`rule_catalog`), so
that a re-check answered from the cache imports no rule module (nor LibCST, which they import).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from distlint.meta import rule_url
from distlint.rules import plugins
from distlint.rules.base import _REGISTRY, BUILTIN_PREFIX, Rule

CATALOG_FILE = Path(__file__).with_name("catalog.json")  # scripts/gen_rule_catalog.py writes it


@cache
def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule by code, in code order (imports all rule modules once)."""
    import distlint.rules as package

    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)
    plugins.load_installed()
    return dict(sorted(_REGISTRY.items()))


@dataclass(frozen=True)
class RuleInfo:
    """A rule's metadata that selecting rules and naming them needs, without its class."""

    code: str
    name: str
    default_enabled: bool
    scope: str
    url: str | None


def info_of(rule: type[Rule]) -> RuleInfo:
    return RuleInfo(rule.code, rule.name, rule.default_enabled, rule.scope, rule.url())


def catalog_data(rules: Mapping[str, type[Rule]]) -> dict[str, dict[str, object]]:
    """What ``catalog.json`` holds for the built-in ``rules``: each one's :class:`RuleInfo`
    fields but its code (the key) and its url (derived from the code)."""
    return {
        code: {
            key: value for key, value in asdict(info_of(rule)).items() if key not in ("code", "url")
        }
        for code, rule in rules.items()
        if code.startswith(BUILTIN_PREFIX)
    }


@cache
def rule_catalog() -> dict[str, RuleInfo]:
    """Every rule's :class:`RuleInfo` by code, in code order: the rules of :func:`all_rules`,
    the built-in ones read from ``catalog.json`` (a test checks it against their classes)
    instead of imported, the plugins' from their classes."""
    plugins.load_installed()
    data = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
    found = {code: RuleInfo(code, url=rule_url(code), **fields) for code, fields in data.items()}
    found.update(
        (code, info_of(rule))
        for code, rule in _REGISTRY.items()
        if not code.startswith(BUILTIN_PREFIX)
    )
    return dict(sorted(found.items()))


@cache
def graph_break_rules() -> dict[str, tuple[str, ...]]:
    """Graph-break id -> the codes of the rules that declare it (``Rule.graph_breaks``), in
    code order: the coverage map keeps only each id's judgment, never its rules."""
    found: dict[str, list[str]] = {}
    for code, rule in all_rules().items():
        for gb in rule.graph_breaks:
            found.setdefault(gb, []).append(code)
    return {gb: tuple(codes) for gb, codes in sorted(found.items())}


def add_local_plugins(paths: tuple[str, ...]) -> None:
    """Load local plugins (absolute paths) into the catalog; raises plugins.PluginError."""
    if plugins.load_local(paths):
        all_rules.cache_clear()
        rule_catalog.cache_clear()
        code_prefixes.cache_clear()
        graph_break_rules.cache_clear()


@cache
def code_prefixes() -> tuple[str, ...]:
    """The letter prefixes of every known code (``DL``, and each plugin's)."""
    return tuple(sorted({code.rstrip("0123456789") for code in all_rules()}))


def get_rule(code: str) -> type[Rule] | None:
    """The rule with this code, or None."""
    return all_rules().get(code.upper())


def docs_url(code: str) -> str | None:
    """The docs address of ``code``'s rule: distlint's page for its own codes, a plugin rule's
    ``docs_url`` (None if it has none), None for a code nobody registered."""
    rule = rule_catalog().get(code.upper())
    if rule is not None:
        return rule.url
    return rule_url(code) if code.startswith(BUILTIN_PREFIX) else None
