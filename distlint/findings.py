"""The finding model shared by the engine, the reporters and (later) the LSP server.

Everything here is plain, frozen and picklable: findings cross process boundaries (``--jobs``)
and are cached, so they hold no CST nodes and no open files.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(str, enum.Enum):
    """How bad a finding is; the values are SARIF ``level`` names."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        """Sort key: most severe first."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.NOTE: 2}


class FixAvailability(str, enum.Enum):
    """Whether a rule can offer an automatic fix (Ruff's FixAvailability)."""

    NONE = "none"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


class Applicability(str, enum.Enum):
    """Whether applying a fix keeps the program's meaning (Ruff's fix safety)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    """A place in a file.

    ``line`` is 1-based. ``column`` is 1-based and counts code points; ``column_utf16`` is the
    same place in UTF-16 code units, which SARIF viewers and LSP clients expect.
    """

    line: int
    column: int
    column_utf16: int


@dataclass(frozen=True)
class Span:
    """A half-open range in one file: ``end`` is the position just after the last character."""

    start: Position
    end: Position


@dataclass(frozen=True)
class Location:
    """A span in a named file, with an optional short label (e.g. "compiled here")."""

    path: str
    span: Span
    message: str = ""


@dataclass(frozen=True)
class Edit:
    """Replace the text of ``span`` (in the finding's file) by ``content``."""

    span: Span
    content: str


@dataclass(frozen=True)
class Fix:
    """An automatic fix: a title for menus, the edits, and whether it is safe."""

    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability


@dataclass(frozen=True)
class Finding:
    """One diagnostic, with everything any output format needs."""

    code: str
    name: str
    severity: Severity
    message: str
    path: str
    span: Span
    related: tuple[Location, ...] = ()
    fix: Fix | None = None
    # Extra (key, value) facts for reporters, e.g. ("confirmation", "confirmed") and
    # ("gbId", "GB0170") from ``check --confirm``; values are JSON scalars.
    properties: tuple[tuple[str, object], ...] = ()

    @property
    def sort_key(self) -> tuple:
        """Deterministic output order: path, line, column, code, message."""
        start = self.span.start
        return (self.path, start.line, start.column, self.code, self.message)


@dataclass(frozen=True)
class ToolError:
    """A problem of distlint itself (a rule crashed), not of the checked code."""

    path: str
    message: str
    rule: str | None = None


def utf16_column(line_text: str, column0: int) -> int:
    """1-based UTF-16 column for a 0-based code-point column in ``line_text``."""
    prefix = line_text[:column0]
    if prefix.isascii():
        return column0 + 1
    return len(prefix.encode("utf-16-le")) // 2 + 1


def make_position(lines: list[str], line: int, column0: int) -> Position:
    """Build a Position from a 1-based line and a 0-based code-point column."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return Position(line, column0 + 1, utf16_column(text, column0))
