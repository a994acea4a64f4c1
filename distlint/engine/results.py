"""What checking a file gives, apart from the checker that makes it (which imports LibCST):
a re-check answered from the cache unpickles results without importing it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from distlint.findings import Finding, ToolError

if TYPE_CHECKING:
    from distlint.findings import Span
    from distlint.semantic.model import ModuleSummary
    from distlint.syntax.suppressions import SuppressionIndex

PROJECT_TIMEOUT = 300.0  # seconds: the command line's default budget for the project stage
PROJECT = "(project)"  # where errors of the project stage are said to be


@dataclass(frozen=True)
class FileResult:
    """Everything one file produced; picklable, sent back from worker processes.

    ``summary`` and ``records`` are the first pass's input to linking, ``suppressions`` its
    input to :func:`~distlint.engine.checker.settle` (a pass's findings are not suppressed
    yet); they are dropped from final results.
    """

    path: str
    findings: tuple[Finding, ...] = ()
    errors: tuple[ToolError, ...] = ()
    suppressed: int = 0
    summary: ModuleSummary | None = None
    records: tuple[tuple[str, object], ...] = ()
    suppressions: SuppressionIndex | None = None
    # spans of lazily located nodes the first pass was asked to measure (``measure``), by
    # key: what the project stage's cached output measured in the file (``project_reuse``);
    # never cached
    measured: tuple[tuple[tuple, Span], ...] = ()

    def final(self) -> FileResult:
        return FileResult(self.path, self.findings, self.errors, self.suppressed)
