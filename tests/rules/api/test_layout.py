"""The DL5xx family's layout: one rule per module, the module named after its rule; helpers
shared within the family live in ``_``-prefixed modules."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import distlint.rules.api as family
from distlint.rules.base import Rule
from distlint.rules.registry import all_rules


def _rules_defined_in(module_name: str) -> list[type[Rule]]:
    module = importlib.import_module(module_name)
    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Rule) and obj.__module__ == module_name and getattr(obj, "code", None)
    ]


def test_each_rule_module_holds_one_rule_named_like_it() -> None:
    found = {}
    for info in pkgutil.iter_modules(family.__path__):
        rules = _rules_defined_in(f"{family.__name__}.{info.name}")
        if info.name.startswith("_"):
            assert rules == [], info.name  # helpers only
            continue
        assert len(rules) == 1, (info.name, [r.code for r in rules])
        assert info.name == rules[0].name.replace("-", "_"), info.name
        found[rules[0].code] = info.name
    assert found == {
        "DL501": "unknown_keyword_argument",
        "DL502": "invalid_compile_option",
        "DL503": "unknown_compiler_config",
        "DL504": "deprecated_torch_api",
        "DL505": "private_torch_module",
    }
    assert {code for code in all_rules() if code.startswith("DL5")} == set(found)
