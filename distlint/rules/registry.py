"""The catalog: every rule, found by importing each module under :mod:`distlint.rules`.

Rules register themselves by subclassing :class:`~distlint.rules.base.Rule`; nothing here
lists them.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from distlint.rules.base import _REGISTRY, Rule


@cache
def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule by code, in code order (imports all rule modules once)."""
    import distlint.rules as package

    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)
    return dict(sorted(_REGISTRY.items()))


def get_rule(code: str) -> type[Rule] | None:
    """The rule with this code, or None."""
    return all_rules().get(code.upper())
