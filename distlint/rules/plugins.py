"""Plugins: rules from outside distlint, with their own code prefix (``XYZ001``).

Two kinds, both found once per process and then part of the catalog like built-in rules:

* local plugins, listed in the configuration (``plugins = ["tools/lint_rules"]`` in
  ``[tool.distlint]``, paths relative to the configuration file): a ``.py`` file or a package
  folder, imported with every module under it;
* installed plugins: entry points of the group ``distlint.plugins``, each naming a module or
  package, imported with every module under it.

Importing a plugin runs its ``Rule`` subclasses' registration (:class:`distlint.rules.base.Rule`).
Anything that goes wrong (an import error, malformed rule metadata, a ``DL`` code, a code that
is already taken) is a :class:`PluginError` naming the plugin.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ENTRY_POINT_GROUP = "distlint.plugins"

_loaded: dict[str, ModuleType] = {}  # plugin source (path or entry point) -> its module


class PluginError(Exception):
    """A plugin that cannot be loaded; the message names it."""


def load_local(paths: tuple[str, ...]) -> bool:
    """Import the local plugins at ``paths`` (absolute), each once per process; whether any
    was new."""
    new = False
    for raw in paths:
        if raw in _loaded:
            continue
        path = Path(raw)
        init = path / "__init__.py" if path.is_dir() else path
        if not init.is_file():
            raise PluginError(f"plugin {raw}: no such Python file or package folder")
        name = "distlint_plugin_" + re.sub(r"\W", "_", path.stem) + f"_{len(_loaded)}"
        locations = [str(path)] if path.is_dir() else None
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=locations
        )
        if spec is None or spec.loader is None:
            raise PluginError(f"plugin {raw}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        _loaded[raw] = _import(f"plugin {raw}", functools.partial(_exec, spec, module), module)
        new = True
    return new


def load_installed() -> None:
    """Import every installed plugin (entry points of ``distlint.plugins``), once."""
    for entry in sorted(
        importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name
    ):
        key = f"entry point {entry.name} = {entry.value}"
        if key not in _loaded:
            _loaded[key] = _import(
                f"installed plugin {entry.name!r} ({entry.value})",
                functools.partial(importlib.import_module, entry.module),
                None,
            )


def _exec(spec: importlib.machinery.ModuleSpec, module: ModuleType) -> ModuleType:
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _import(what: str, load: Callable[[], ModuleType], module: ModuleType | None) -> ModuleType:
    """Run ``load`` and import every submodule of the result; failures name ``what``."""
    try:
        loaded = load()
        for sub in pkgutil.walk_packages(getattr(loaded, "__path__", []), loaded.__name__ + "."):
            importlib.import_module(sub.name)
    except Exception as exc:  # a plugin may raise anything while it is imported
        if module is not None:
            sys.modules.pop(module.__name__, None)
        raise PluginError(f"{what}: {type(exc).__name__}: {exc}") from None
    return loaded
