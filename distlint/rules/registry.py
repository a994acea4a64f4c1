"""The catalog: every rule, found by importing each module under :mod:`distlint.rules`, then
the installed plugins and the local ones a configuration names (:mod:`.plugins`).

Rules register themselves by subclassing :class:`~distlint.rules.base.Rule`; nothing here
lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from distlint.meta import rule_url
from distlint.rules import plugins
from distlint.rules.base import _REGISTRY, BUILTIN_PREFIX, Rule


@cache
def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule by code, in code order (imports all rule modules once)."""
    import distlint.rules as package

    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)
    plugins.load_installed()
    return dict(sorted(_REGISTRY.items()))


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
    rule = get_rule(code)
    if rule is not None:
        return rule.url()
    return rule_url(code) if code.startswith(BUILTIN_PREFIX) else None
