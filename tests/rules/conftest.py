"""Helpers shared by the rule tests (``tests/rules/<family>/test_dlNNN.py``): check a snippet
with some rules enabled, and say where the findings are. A family's own helpers are in its
``conftest.py``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Finding


def check(source: str, settings: FileSettings, module: str | None = None) -> list[Finding]:
    """The findings of ``source`` (dedented) checked as ``t.py``; it must raise no tool error."""
    result = check_file(FileSource(textwrap.dedent(source), "t.py", module), settings)
    assert result.errors == ()
    return list(result.findings)


def findings(source: str, *codes: str) -> list[Finding]:
    """The findings of ``source`` with only ``codes`` enabled."""
    return check(source, FileSettings(enabled=frozenset(codes)))


def rank_labels(source: str) -> list[tuple[str, int]]:
    """(label, line) of each place of the rank review listing (``distlint explain-ranks``) of
    ``source`` (dedented) as ``t.py``, sorted: DL201/DL208 for a proven place (the rule that
    reports it), "possible" for the others (what DL209 reported before it was removed)."""
    from distlint.engine.runner import Task, first_pass, link_results
    from distlint.rules.collectives.rank_review import rank_places

    data = textwrap.dedent(source).encode()
    tasks = [Task(Path("t.py"), "t.py", FileSettings(enabled=frozenset({"DL201"})), data=data)]
    results = first_pass(tasks, jobs=1)
    assert results[0].errors == ()
    return sorted((place.label, place.line) for place in rank_places(link_results(results, tasks)))


def run(source: str, *codes: str) -> list[Finding]:
    """:func:`findings`, sorted by line and column."""
    return sorted(findings(source, *codes), key=lambda f: (f.span.start.line, f.span.start.column))


def where(found: list[Finding]) -> list[tuple[str, int, int]]:
    """(code, line, column) of each finding."""
    return [(f.code, f.span.start.line, f.span.start.column) for f in found]


def positions(found: list[Finding]) -> list[tuple[int, int]]:
    """(line, column) of each finding."""
    return [(f.span.start.line, f.span.start.column) for f in found]
