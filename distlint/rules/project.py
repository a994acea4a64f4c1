"""What project-scope rules see after every file's first pass: records, facts, native sources.

A project-scope rule (``scope = "project"``) keeps plain data per file with ``Rule.record``
during the first pass; :meth:`Rule.check_project` then reads every file's records here and
returns findings. Their positions come from ``ctx.locate(node)`` placeholders, filled in after
each file's walk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distlint.findings import Finding, Location, Severity, Span

if TYPE_CHECKING:
    from distlint.rules.context import ReportingRule
    from distlint.semantic.link import ProjectFacts


@dataclass(frozen=True)
class FileRecords:
    """One checked file's records: (rule code, data) pairs in walk order."""

    path: str
    module_key: str
    records: tuple[tuple[str, object], ...]


@dataclass
class Project:
    """Every checked file's records and the linked semantic facts."""

    files: Sequence[FileRecords]
    facts: ProjectFacts | None = None
    # (display path, text) of C/C++/CUDA sources found under the checked paths (DL408)
    native_sources: Sequence[tuple[str, str]] = field(default_factory=tuple)
    # what several project rules read, computed once for them all (by name)
    derived: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def records(self, code: str) -> Iterator[tuple[str, object]]:
        """(file path, data) of every record a rule kept, files in check order."""
        for file in self.files:
            for record_code, data in file.records:
                if record_code == code:
                    yield file.path, data

    @staticmethod
    def finding(
        rule: type[ReportingRule],
        path: str,
        span: Span,
        message: str,
        *,
        severity: Severity | None = None,
        related: tuple[Location, ...] = (),
    ) -> Finding:
        """A finding of ``rule`` at ``span`` in ``path`` (suppressions apply as usual)."""
        return Finding(
            code=rule.code,
            name=rule.name,
            severity=severity or rule.severity,
            message=message,
            path=path,
            span=span,
            related=related,
        )
