"""Check small multi-file projects written into a temporary directory."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

from distlint.engine.results import FileResult
from distlint.engine.runner import Task, first_pass, link_results, run
from distlint.file_settings import FileSettings
from distlint.rules.collectives.rank_review import RankPlace, rank_places
from distlint.rules.registry import all_rules
from distlint.semantic.link import ProjectFacts


def write_tree(root: Path, files: dict[str, str]) -> list[Path]:
    """Write ``{"pkg/mod.py": source}`` under ``root``; sources are dedented."""
    paths = []
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        paths.append(path)
    return sorted(paths)


def _tasks(root: Path, paths: list[Path], settings: FileSettings) -> list[Task]:
    return [Task(p, p.relative_to(root).as_posix(), settings) for p in paths]


def settings(enabled: Iterable[str] | None = None, **extra: object) -> FileSettings:
    codes = frozenset(enabled) if enabled is not None else frozenset(all_rules())
    return FileSettings(enabled=codes, **extra)  # type: ignore[arg-type]


def facts_of(root: Path, files: dict[str, str], **extra: object) -> ProjectFacts:
    """Linked facts of a project (first pass only)."""
    paths = write_tree(root, files)
    config = settings(**extra)
    results = first_pass(_tasks(root, paths, config), jobs=1)
    for result in results:
        assert result.errors == (), result.errors
    return link_results(results, _tasks(root, paths, config), config.compile_wrappers)


def check_sources(
    root: Path, files: dict[str, str], enabled: Iterable[str] | None = None, **extra: object
) -> dict[str, FileResult]:
    """Full check (both passes) of a project; results by relative path."""
    paths = write_tree(root, files)
    results = run(_tasks(root, paths, settings(enabled, **extra)), jobs=1)
    return {r.path: r for r in results}


def rank_review(root: Path, files: dict[str, str], **extra: object) -> dict[str, list[RankPlace]]:
    """The places of the rank review listing (``distlint explain-ranks``) of a project, by
    relative path, in line order."""
    found: dict[str, list[RankPlace]] = {}
    for place in rank_places(facts_of(root, files, **extra)):
        found.setdefault(place.path, []).append(place)
    return found


def rank_labels(root: Path, files: dict[str, str], **extra: object) -> dict[str, list[tuple]]:
    """(label, line) of each place of the rank review listing, by relative path, sorted: the
    label is the rule that reports a proven place (DL201, DL208), "possible" for the others
    (what DL209 reported before it was removed)."""
    return {
        path: sorted((place.label, place.line) for place in places)
        for path, places in rank_review(root, files, **extra).items()
    }
