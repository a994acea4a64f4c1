"""The outcome of one check, as every reporter reads it (rendering: :mod:`.render`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity, ToolError
from distlint.rules.base import Rule
from distlint.syntax.regular_files import read_regular_file

if TYPE_CHECKING:
    from distlint.confirm.match import ConfirmRun


@dataclass
class Report:
    """The outcome of one ``distlint check`` run, in deterministic order."""

    findings: list[Finding]
    errors: list[ToolError]
    files_checked: int
    rules: list[type[Rule]]  # every rule enabled for at least one file, in code order
    root: Path  # SARIF %SRCROOT%: the repository root (or the working directory)
    cwd: Path
    read_source: Callable[[str], str | None]  # display path -> text, for snippets/fingerprints
    suppressed: int = 0
    notices: list[str] = field(default_factory=list)  # e.g. paths that do not exist
    confirm: ConfirmRun | None = None  # only with --confirm: the confirm run, for the reporters
    # with --fix / --fix-only: (path, code, name) -> how many findings were fixed
    fixed: Counter[tuple[str, str, str]] | None = None
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes count as applicable
    baselined: int | None = None  # with a configured baseline: the findings it held (not shown)
    # display path -> the file on disk, for names the display escapes (SARIF URIs use the real one)
    files: dict[str, Path] = field(default_factory=dict)

    def counts(self) -> dict[Severity, int]:
        tally = dict.fromkeys(Severity, 0)
        for finding in self.findings:
            tally[finding.severity] += 1
        return tally

    @property
    def files_with_findings(self) -> int:
        return len({finding.path for finding in self.findings})


def source_reader(paths: dict[str, Path], overrides: dict[str, str]) -> Callable[[str], str | None]:
    """A cached reader from display path to decoded text (stdin text comes via ``overrides``)."""
    from distlint.syntax.source import SourceError, decode_source

    cache: dict[str, str | None] = dict(overrides)

    def read(display: str) -> str | None:
        if display not in cache:
            path = paths.get(display)
            try:
                cache[display] = decode_source(read_regular_file(path)) if path else None
            except (OSError, SourceError):
                cache[display] = None
        return cache[display]

    return read
