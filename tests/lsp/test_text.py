"""Unit tests of distlint.syntax.text: encodings, noqa placement, fix-all merging, hover codes."""

from __future__ import annotations

import pytest

from distlint.syntax.text import (
    LineInfo,
    TextEdit,
    apply_edits,
    code_at,
    from_client_units,
    non_overlapping,
    noqa_edit,
    split_lines,
    to_client_units,
)

LINE = 'x = "🚀ü"; y'  # the emoji is 2 UTF-16 units / 4 UTF-8 bytes, ü 1 unit / 2 bytes


@pytest.mark.parametrize(("encoding", "expected"), [("utf-32", 10), ("utf-16", 11), ("utf-8", 14)])
def test_client_units_round_trip(encoding, expected):
    column = LINE.index("y")
    assert to_client_units(LINE, column, encoding) == expected
    assert from_client_units(LINE, expected, encoding) == column
    assert to_client_units("plain", 3, encoding) == 3
    assert from_client_units(LINE, 10_000, encoding) == len(LINE)


def test_units_inside_a_character_map_to_that_character():
    start = LINE.index("🚀")
    assert from_client_units(LINE, start + 1, "utf-16") == start + 1  # after the low surrogate
    assert from_client_units(LINE, start + 2, "utf-8") == start + 1


def test_split_lines_uses_only_lsp_line_breaks():
    assert split_lines("a\r\nb\rc\nd\x0ce\u2028f") == ["a", "b", "c", "d\x0ce\u2028f"]


def _noqa(source: str, row: int, code: str = "DL502") -> str | None:
    edit = noqa_edit(LineInfo(source, split_lines(source)), row, code)
    return None if edit is None else apply_edits(source, [edit])


@pytest.mark.parametrize(
    ("source", "row", "expected"),
    [
        ("f(1)\n", 0, "f(1)  # noqa: DL502\n"),
        ("f(1)   \n", 0, "f(1)  # noqa: DL502\n"),  # trailing blanks replaced
        ("f(1)  # noqa: E501\n", 0, "f(1)  # noqa: E501, DL502\n"),
        ("f(1)  # noqa:DL101,DL203\n", 0, "f(1)  # noqa:DL101,DL203, DL502\n"),
        ("f(1)  # distlint: ignore[DL101]\n", 0, "f(1)  # distlint: ignore[DL101, DL502]\n"),
        ("f(1)  # type: ignore\n", 0, "f(1)  # type: ignore  # noqa: DL502\n"),
        ('s = "# not a comment"\n', 0, 's = "# not a comment"  # noqa: DL502\n'),
        ('x = f("""a\nb""")\n', 0, 'x = f("""a\nb""")  # noqa: DL502\n'),
        ("x = f(1) + \\\n    2\n", 0, "x = f(1) + \\\n    2  # noqa: DL502\n"),
        ("x = 1\r\ny = f(1)\r\n", 1, "x = 1\r\ny = f(1)  # noqa: DL502\r\n"),
    ],
)
def test_noqa_edit(source, row, expected):
    assert _noqa(source, row) == expected


@pytest.mark.parametrize(
    "source",
    [
        "f(1)  # noqa\n",
        "f(1)  # noqa: DL5\n",
        "f(1)  # distlint: ignore\n",
        "f(1)  # NOQA: dl502\n",
    ],
)
def test_no_noqa_edit_when_already_covered(source):
    assert _noqa(source, 0) is None


def test_non_overlapping_takes_whole_fixes_in_order():
    a = [TextEdit((0, 0), (0, 3), "A")]
    b = [TextEdit((0, 2), (0, 5), "B")]  # overlaps a: left for the next run
    c = [TextEdit((1, 0), (1, 1), "C"), TextEdit((2, 0), (2, 1), "C")]
    d = [TextEdit((2, 0), (2, 1), "D"), TextEdit((3, 0), (3, 1), "D")]  # half overlaps c
    assert non_overlapping([d, c, b, a]) == [*a, *c]
    insert = [TextEdit((0, 3), (0, 3), "!")]  # touching, not overlapping
    assert non_overlapping([a, insert]) == [*a, *insert]


def test_code_at():
    comment = "# noqa: E501, DL502"
    assert code_at(comment, comment.index("DL502") + 2) == (14, 19, "DL502")
    assert code_at(comment, 2) is None  # on "noqa"
    ignore = "# distlint: ignore[DL2]"
    assert code_at(ignore, ignore.index("DL2")) == (19, 22, "DL2")
