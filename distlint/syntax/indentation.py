"""Indentation that CPython reads and LibCST does not, rewritten with a column map back.

CPython measures an indentation in columns (a tab advances to the next multiple of 8) and
accepts a block whose lines are indented by different strings of the same width, as long as
tabs and spaces are not used inconsistently. LibCST keeps each block's indentation as text
and requires every line of a block to start with its parent's indentation string, so a file
such as ``if y:`` indented by four spaces followed by a line indented by ``"\\t    "`` is valid
Python that LibCST rejects. Such a file is parsed again with the indentation of each logical
line written as spaces of its width; :class:`IndentColumns` maps the columns measured on that
tree back to the file as written, so findings, fixes and suppressions point at the user's text.
"""

from __future__ import annotations

from bisect import bisect_right

from distlint.syntax.lexing import NEWLINES, tokens

_TAB_SIZE = 8  # CPython's tokenizer (TABSIZE)


class IndentColumns:
    """Per changed line (1-based): its indentation as written and the width it was given."""

    __slots__ = ("_changed",)

    def __init__(self, changed: dict[int, tuple[str, int]]) -> None:
        self._changed = changed

    def __getstate__(self) -> dict[int, tuple[str, int]]:
        return self._changed

    def __setstate__(self, state: dict[int, tuple[str, int]]) -> None:
        self._changed = state

    def original(self, line: int, column: int) -> int:
        """The column in the file as written of ``column`` on ``line`` of the rewritten text."""
        changed = self._changed.get(line)
        if changed is None:
            return column
        written, width = changed
        if column >= width:
            return column - width + len(written)
        for index, seen in enumerate(_widths(written)):
            if seen > column:
                return index
        return len(written)  # pragma: no cover - column < width is reached above


def _widths(whitespace: str) -> list[int]:
    """The column after each character of an indentation, as CPython counts them."""
    column = 0
    after = []
    for char in whitespace:
        if char == "\t":
            column = (column // _TAB_SIZE + 1) * _TAB_SIZE
        elif char == "\f":
            column = 0  # a form feed resets the count (CPython's tokenizer)
        else:
            column += 1
        after.append(column)
    return after


def expand_indentation(text: str) -> tuple[str, IndentColumns] | None:
    """``text`` with each tab-bearing indentation of a logical line written as spaces of its
    CPython width, and the map back; None when no indentation has a tab or form feed."""
    if "\t" not in text and "\f" not in text:
        return None
    starts = [0]
    depth = 0
    for token in tokens(text):
        if token.kind == "open":
            depth += 1
        elif token.kind == "close":
            depth = max(0, depth - 1)
        elif token.kind == "newline" and depth == 0:
            starts.append(token.end)
    pieces: list[str] = []
    changed: dict[int, tuple[str, int]] = {}
    cursor = 0
    line_starts = [0] + [found.end() for found in NEWLINES.finditer(text)]
    for start in starts:
        end = start
        while end < len(text) and text[end] in " \t\f":
            end += 1
        written = text[start:end]
        blank = text[end : end + 1] in ("#", "\r", "\n", "")
        if blank or ("\t" not in written and "\f" not in written):
            continue  # spaces only, or a blank or comment line (LibCST reads those as written)
        width = _widths(written)[-1]
        pieces.append(text[cursor:start])
        pieces.append(" " * width)
        cursor = end
        changed[bisect_right(line_starts, start)] = (written, width)
    if not changed:
        return None
    pieces.append(text[cursor:])
    return "".join(pieces), IndentColumns(changed)
