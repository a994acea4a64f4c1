"""Editor-independent text helpers of the language server: no pygls, no lsprotocol.

Positions here are (0-based line, 0-based code-point column) pairs, the engine's units; the
server converts them to the client's negotiated encoding (UTF-16 by default, or UTF-8 /
UTF-32) with :func:`to_client_units` / :func:`from_client_units`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from distlint.syntax.lexing import tokens
from distlint.syntax.source import NEWLINES
from distlint.syntax.suppressions import DEFAULT_PREFIXES, parse_comment

# The engine's line breaks (and the LSP's): \r\n, \r and \n only, never \f or \u2028.


def split_lines(text: str) -> list[str]:
    """Lines without their terminators, split exactly as the engine and the LSP do."""
    return NEWLINES.split(text)


def to_client_units(line: str, column: int, encoding: str) -> int:
    """A 0-based code-point column of ``line`` as a column in ``encoding`` units."""
    if encoding == "utf-32":
        return column
    prefix = line[:column]
    if prefix.isascii():
        return column
    if encoding == "utf-8":
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def from_client_units(line: str, units: int, encoding: str) -> int:
    """A client column in ``encoding`` units as a 0-based code-point column of ``line``.

    A column inside a character (between the halves of a surrogate pair, in a UTF-8
    sequence) maps to the position after it; one past the end maps to the end of the line.
    """
    if encoding == "utf-32" or line.isascii():
        return max(0, min(units, len(line)))
    counted = 0
    for index, char in enumerate(line):
        if counted >= units:
            return index
        if encoding == "utf-8":
            counted += len(char.encode("utf-8", "surrogatepass"))
        else:
            counted += 2 if ord(char) > 0xFFFF else 1
    return len(line)


# -- suppression edits ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TextEdit:
    """Replace [start, end) by ``new_text``; positions are (0-based line, code-point column)."""

    start: tuple[int, int]
    end: tuple[int, int]
    new_text: str


class LineInfo:
    """Per-line facts for placing a noqa comment: each line's comment, and where a statement's
    physical line continues (inside a multi-line string or after a backslash).

    A linear scan of strings and comments (:mod:`distlint.syntax.lexing`, as for suppressions)
    rather than ``tokenize``: many times faster on large files, and it accepts any text.
    """

    def __init__(self, text: str, lines: Sequence[str]) -> None:
        self.lines = lines
        self.comments: dict[int, tuple[int, str]] = {}  # 0-based line -> (column, comment)
        self.moves: dict[int, int] = {}  # 0-based line -> the line a comment must go on
        starts = [0] + [match.end() for match in NEWLINES.finditer(text)]
        for kind, begin, end in tokens(text, structure=False):
            row = bisect_right(starts, begin) - 1
            if kind == "comment":
                self.comments[row] = (begin - starts[row], text[begin:end])
                continue
            last = bisect_right(starts, end - 1, lo=row) - 1
            for covered in range(row, last):  # a multi-line string: comments go after it
                self.moves[covered] = last

    def comment(self, row: int) -> tuple[int, str] | None:
        return self.comments.get(row)

    def target_row(self, row: int) -> int:
        """The physical line that a trailing comment for a statement at ``row`` must go on."""
        for _ in range(len(self.lines)):
            moved = self.moves.get(row)
            if moved is not None and moved != row:
                row = moved
                continue
            line = self.lines[row] if row < len(self.lines) else ""
            continued = self.comments.get(row) is None and line.rstrip().endswith("\\")
            if continued and row + 1 < len(self.lines):
                row += 1
                continue
            break
        return row


def noqa_edit(info: LineInfo, row: int, code: str) -> TextEdit | None:
    """The edit that silences ``code`` on the statement starting at 0-based ``row``.

    Appends ``  # noqa: CODE``, or adds the code to an existing ``# noqa: A, B`` /
    ``# distlint: ignore[A]`` list. None when a blanket suppression is already there (the
    finding would not be shown) or the code is already listed.
    """
    row = info.target_row(row)
    if row >= len(info.lines):
        return None
    line = info.lines[row]
    found = info.comment(row)
    if found is not None:
        column, comment = found
        parsed = parse_comment(comment, (*DEFAULT_PREFIXES, code.upper().rstrip("0123456789")))
        # A file-ignore list is not extended for one line's finding: a noqa goes after it.
        if parsed is not None and parsed.kind != "file-ignore":
            if parsed.covers(code) is not None:
                return None  # a blanket comment, or the code is listed already
            assert parsed.list_span is not None  # not blanket: there is a list
            start, end = parsed.list_span
            before = comment[start:end].rstrip()
            at = column + start + len(before)
            sep = ", " if before.strip() else ""
            return TextEdit((row, at), (row, at), f"{sep}{code}")
        # Another comment (`# type: ignore`, prose): add ours after it.
        end = len(line.rstrip())
        return TextEdit((row, end), (row, len(line)), f"  # noqa: {code}")
    end = len(line.rstrip())
    return TextEdit((row, end), (row, len(line)), f"  # noqa: {code}")


# -- fix-all --------------------------------------------------------------------------------------


def non_overlapping(fixes: Iterable[Sequence[TextEdit]]) -> list[TextEdit]:
    """Edits of as many fixes as possible, each fix whole or not at all, none overlapping.

    Fixes are taken in document order of their first edit; one that touches a region an
    earlier accepted fix already changed is left for the next run.
    """
    ordered = sorted((sorted(f, key=_order) for f in fixes if f), key=lambda f: _order(f[0]))
    taken: list[TextEdit] = []
    for fix in ordered:
        if any(_overlaps(edit, other) for edit in fix for other in taken):
            continue
        taken.extend(fix)
    return sorted(taken, key=_order)


def _order(edit: TextEdit) -> tuple[tuple[int, int], tuple[int, int]]:
    return edit.start, edit.end


def _overlaps(a: TextEdit, b: TextEdit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # two insertions at one place: their order would be arbitrary
    return a.start < b.end and b.start < a.end


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits to ``text`` (tests and tools; code-point positions)."""
    offsets = [0] + [match.end() for match in NEWLINES.finditer(text)]
    result = text
    for edit in sorted(edits, key=_order, reverse=True):
        start = offsets[min(edit.start[0], len(offsets) - 1)] + edit.start[1]
        end = offsets[min(edit.end[0], len(offsets) - 1)] + edit.end[1]
        result = result[:start] + edit.new_text + result[end:]
    return result


def code_at(comment: str, column: int) -> tuple[int, int, str] | None:
    """The rule code (or prefix) under ``column`` of a suppression comment, if any.

    Returns (start, end, code) with columns relative to the comment's start.
    """
    parsed = parse_comment(comment)
    if parsed is None:
        return None
    for start, end, code in parsed.code_spans:
        if start <= column <= end:
            return start, end, code
    return None
