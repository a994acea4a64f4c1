"""The other files of the project that a check of some files needs, so that checking one file
(the pre-commit hook, ``distlint check train.py``) gives it the findings ``distlint check .``
gives it.

The project root is the nearest directory holding ``pyproject.toml`` or ``distlint.toml``,
else the git work tree; a file in neither has no project beyond the files named (its directory
may be a home folder or ``/tmp``, too big to walk for every check). Within it, the files the
named files import (transitively) and the files that import a named file are summarised and
linked with them; findings are reported for the named files only. Imports are read with a
regular expression (no parse): a file taken in needlessly costs time, never a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from distlint.config.gitignore import find_repo_root
from distlint.syntax.regular_files import read_regular_file
from distlint.syntax.source import SourceError, decode_source

ROOT_MARKERS = ("pyproject.toml", "distlint.toml")
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<source>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[\w., \t]+)"
    r"|import[ \t]+(?P<modules>[\w., \t]+))",
    re.MULTILINE,
)


def project_root(path: Path) -> Path | None:
    """Where the project of ``path`` (a file or a directory, absolute) starts, if anywhere."""
    start = path if path.is_dir() else path.parent
    for directory in (start, *start.parents):
        if any((directory / marker).is_file() for marker in ROOT_MARKERS):
            return directory
    return find_repo_root(start)


def related_files(
    named: Iterable[Path], candidates: Iterable[Path], contents: dict[Path, bytes] | None = None
) -> list[Path]:
    """The candidates (files of the project, absolute) that the named files import,
    transitively, or that import a named file; sorted, the named files left out.
    ``contents`` overrides what is on disk (an editor's buffer, stdin)."""
    named_set = {p for p in named}
    index = _ModuleIndex(candidates, contents or {})
    wanted: set[Path] = set()
    pending = list(named_set)
    while pending:
        current = pending.pop()
        for imported in index.imports_of(current):
            if imported not in wanted and imported not in named_set:
                wanted.add(imported)
                pending.append(imported)
    for candidate in index.files:
        if (
            candidate not in named_set
            and candidate not in wanted
            and any(target in named_set for target in index.imports_of(candidate))
        ):
            wanted.add(candidate)  # e.g. registers a fake for an op defined in a named file
    return sorted(wanted)


class _ModuleIndex:
    """Project files by the dotted names they may be imported under (any path suffix)."""

    def __init__(self, files: Iterable[Path], contents: dict[Path, bytes]) -> None:
        self.files = sorted(set(files))
        self._known = set(self.files)
        self._contents = contents
        self._by_suffix: dict[str, list[Path]] = {}
        for file in self.files:
            parts = list(file.with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            for start in range(max(0, len(parts) - 6), len(parts)):
                self._by_suffix.setdefault(".".join(parts[start:]), []).append(file)
        self._imports: dict[Path, list[Path]] = {}

    def imports_of(self, file: Path) -> list[Path]:
        cached = self._imports.get(file)
        if cached is not None:
            return cached
        found: list[Path] = []
        try:
            data = self._contents.get(file)
            text = decode_source(data if data is not None else read_regular_file(file))
        except (OSError, SourceError):
            text = ""
        absolute, relative = _imported_names(text, file)
        targets = [
            t
            for dotted, package in sorted(absolute)
            for t in self._by_suffix.get(dotted, ())
            if not package or t.name == "__init__.py"
        ]
        # a project file only: one the discovery left out (excluded, ignored) stays out
        targets += [t for t in sorted(relative) if t in self._known]
        for target in targets:
            if target != file and target not in found:
                found.append(target)
        self._imports[file] = found
        return found


def _imported_names(text: str, file: Path) -> tuple[set[tuple[str, bool]], set[Path]]:
    """Dotted names a file imports, each with whether only a package can be meant
    (``from a.b import c``: packages ``a`` and ``a.b``, or module ``a.b``, and ``a.b.c``), and
    the paths its relative imports may name (``from .b import c``: ``b.py``,
    ``b/__init__.py``, ``b/c.py``...)."""
    names: set[tuple[str, bool]] = set()
    paths: set[Path] = set()
    for match in _IMPORT.finditer(text):
        modules = match.group("modules")
        if modules is not None:
            for item in modules.split(","):
                dotted = item.split()[0] if item.split() else ""
                names.update(_prefixes(dotted))
                names.add((dotted, False))
            continue
        source = match.group("source") or ""
        imported = [
            n.split()[0]
            for n in match.group("names").strip("()").replace("\n", " ").split(",")
            if n.split()
        ]
        dots = len(source) - len(source.lstrip("."))
        base = source[dots:]
        if dots:
            directory = file.parent
            for _ in range(dots - 1):
                directory = directory.parent
            module = directory.joinpath(*base.split(".")) if base else directory
            for name in [*imported, ""]:
                target = module / name if name and name != "*" else module
                paths.update((target.with_name(target.name + ".py"), target / "__init__.py"))
            continue
        names.update(_prefixes(base))
        names.add((base, False))
        names.update((f"{base}.{name}", False) for name in imported if name != "*")
    return {n for n in names if n[0]}, paths


def _prefixes(dotted: str) -> list[tuple[str, bool]]:
    """The packages whose ``__init__`` importing ``dotted`` runs."""
    parts = dotted.split(".")
    return [(".".join(parts[: i + 1]), True) for i in range(len(parts) - 1) if parts[i]]
