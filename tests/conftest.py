"""Shared fixtures and markers for the whole suite.

* Every test under ``tests/proof/`` runs the real torch: it is marked ``torch`` here, so that
  ``pytest -m "not torch"`` (the fast loop) leaves all of them out even if a module forgets its
  ``pytestmark``. Elsewhere, tests that need torch carry ``@pytest.mark.torch`` themselves.
* A test that is not marked ``torch`` but imports torch in the test process fails: it would
  make ``-m "not torch"`` pay for ``import torch``.
* ``hook_repo``, ``pre_commit_dir`` and ``target`` (tests/precommit_util.py) are available to
  every module.
* The rule catalog is the same for every test: a test whose run walked into a folder whose
  configuration names a local plugin (examples/plugin) loads it into the process's catalog,
  which is undone after each test (``_catalog_restored``: back to the catalog taken when the
  session starts, before any module fixture can run a check).
* The first-pass cache is off (``DISTLINT_NO_CACHE``): a test that swaps a rule in the test
  process would otherwise read results cached by another test; tests/engine/test_cache.py
  turns it on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

from tests.precommit_util import hook_repo, pre_commit_dir, target

__all__ = ["hook_repo", "pre_commit_dir", "target"]

PROOF = Path(__file__).resolve().parent / "proof"
os.environ["DISTLINT_NO_CACHE"] = "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if PROOF in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.torch)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    had_torch = "torch" in sys.modules
    result = yield
    if not had_torch and "torch" in sys.modules and item.get_closest_marker("torch") is None:
        raise AssertionError(
            f"{item.nodeid} imported torch but is not marked torch: add @pytest.mark.torch "
            "(pytest -m 'not torch' must not import torch)"
        )
    return result


_SESSION_CATALOG: list[tuple[dict, dict]] = []  # (rules by code, loaded plugins) at the start


def pytest_sessionstart(session: pytest.Session) -> None:
    from distlint.rules import plugins, registry
    from distlint.rules.base import _REGISTRY

    registry.all_rules()
    _SESSION_CATALOG.append((dict(_REGISTRY), dict(plugins._loaded)))


@pytest.fixture(autouse=True)
def _catalog_restored() -> Generator[None, None, None]:
    from distlint.rules import plugins, registry
    from distlint.rules.base import _REGISTRY

    yield
    rules, loaded = _SESSION_CATALOG[0]
    if rules != _REGISTRY or loaded != plugins._loaded:
        _REGISTRY.clear()
        _REGISTRY.update(rules)
        plugins._loaded.clear()
        plugins._loaded.update(loaded)
        for name in [name for name in sys.modules if name.startswith("distlint_plugin_")]:
            if name.split(".")[0] not in {module.__name__ for module in loaded.values()}:
                del sys.modules[name]  # a later load imports the plugin's rule modules anew
        registry.all_rules.cache_clear()
        registry.rule_catalog.cache_clear()
        registry.code_prefixes.cache_clear()
