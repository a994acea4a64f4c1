"""Every fixture produces exactly the findings its ``# expect:`` comments declare.

Runs all rules (``select ALL``) on each file under ``fixtures/``, so a rule that fires on
another rule's bad, good or traps file is caught too. Each top-level fixture folder is
checked as one project (cross-module fixtures live in packages inside it).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from distlint.config.discovery import NATIVE_SUFFIXES
from distlint.engine.results import FileResult
from distlint.engine.runner import NativeSource, Task, run
from distlint.file_settings import FileSettings
from distlint.rules.registry import all_rules
from distlint.testing import expected_findings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE_FILES = sorted(FIXTURES.rglob("*.py")) + sorted(
    p for p in FIXTURES.rglob("*") if p.name.endswith((".cpp", ".cc", ".cu", ".h"))
)
# The fixtures' expectations are torch 2.13's (the torch the proof tests run them under).
ALL = FileSettings(enabled=frozenset(all_rules()), torch_floor="2.13", torch_ceiling="2.13")


NATIVE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.name.endswith(NATIVE_SUFFIXES))


@cache
def _folder_results(folder: Path) -> dict[Path, FileResult]:
    files = sorted(folder.rglob("*.py"))
    native_files = [p for p in NATIVE_FILES if p.is_relative_to(folder)]
    native = [
        NativeSource(p.relative_to(FIXTURES).as_posix(), p.read_text(encoding="utf-8"), ALL.enabled)
        for p in native_files
    ]
    results = run([Task(path, path.name, ALL) for path in files], jobs=1, native=native)
    found = dict(zip(files, results, strict=False))
    by_display = {r.path: r for r in results[len(files) :]}
    for path in native_files:
        display = path.relative_to(FIXTURES).as_posix()
        found[path] = by_display.get(display, FileResult(display))
    return found


def check_fixture(path: Path) -> FileResult:
    folder = FIXTURES / path.relative_to(FIXTURES).parts[0]
    return _folder_results(folder)[path]


def test_fixture_tree_is_not_empty() -> None:
    assert len(FIXTURE_FILES) >= 6


@pytest.mark.parametrize(
    "path", FIXTURE_FILES, ids=[p.relative_to(FIXTURES).as_posix() for p in FIXTURE_FILES]
)
def test_fixture_findings_are_exactly_the_expected_ones(path: Path) -> None:
    result = check_fixture(path)
    assert result.errors == ()
    actual = {(f.code, f.span.start.line, f.span.start.column) for f in result.findings}
    assert actual == expected_findings(path)


@pytest.mark.parametrize("kind", ["good", "traps"])
def test_good_and_traps_fixtures_declare_no_findings(kind: str) -> None:
    for path in FIXTURES.glob(f"*/{kind}.py"):
        assert expected_findings(path) == set(), path


def test_every_rule_with_a_visitor_has_bad_good_and_traps_fixtures() -> None:
    for code, rule in all_rules().items():
        if not any(True for _ in rule.visitor_methods()):
            continue  # engine-produced (DL000, DL001): covered by engine tests
        folder = FIXTURES / code
        for kind in ("bad", "good", "traps"):
            assert (folder / f"{kind}.py").is_file(), f"{code}: missing fixtures/{code}/{kind}.py"
        bad = expected_findings(folder / "bad.py")
        for native in NATIVE_FILES:  # a rule about C++ sources expects findings there
            if native.is_relative_to(folder):
                bad |= expected_findings(native)
        assert bad and {c for c, _, _ in bad} == {code}, f"{code}: bad.py must expect {code} only"
