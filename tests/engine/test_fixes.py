"""Applying fixes (distlint/engine/fixes.py): edits in order, overlaps, rounds, roll-back,
encodings."""

from __future__ import annotations

import pytest

from distlint.engine.fixes import (
    apply_fixes,
    encode_like,
    fix_project,
    parse_error,
    unified_diff,
)
from distlint.findings import Applicability, Edit, Finding, Fix, Position, Severity, Span

# -- applying edits -------------------------------------------------------------------------------


def _span(line: int, col: int, end_line: int, end_col: int) -> Span:
    return Span(Position(line, col, col), Position(end_line, end_col, end_col))


def _finding(
    edits: list[tuple[Span, str]],
    applicability: Applicability = Applicability.SAFE,
    code: str = "DL502",
    line: int = 1,
) -> Finding:
    return Finding(
        code=code,
        name="x",
        severity=Severity.ERROR,
        message=f"m{line}",
        path="m.py",
        span=_span(line, 1, line, 1),
        fix=Fix("t", tuple(Edit(span, content) for span, content in edits), applicability),
    )


def test_apply_fixes_replaces_and_inserts() -> None:
    text = "a = 1\nb = 2\n"
    out = apply_fixes(
        text,
        [
            _finding([(_span(1, 5, 1, 6), "10")]),
            _finding([(_span(2, 6, 2, 6), " + 3")], line=2),
        ],
    )
    assert out.text == "a = 10\nb = 2 + 3\n"
    assert len(out.fixed) == 2


def test_overlapping_fixes_first_by_position_wins_and_the_other_waits() -> None:
    text = "value = 1\n"
    later = _finding([(_span(1, 3, 1, 6), "X")], code="DL206")
    first = _finding([(_span(1, 1, 1, 4), "Y")], code="DL503")
    for order in ([later, first], [first, later]):  # input order does not matter
        out = apply_fixes(text, order)
        assert out.text == "Yue = 1\n"
        assert [f.code for f in out.fixed] == ["DL503"]


def test_two_insertions_at_one_place_overlap() -> None:
    text = "x\n"
    out = apply_fixes(
        text,
        [_finding([(_span(1, 2, 1, 2), "a")]), _finding([(_span(1, 2, 1, 2), "b")], code="DL503")],
    )
    assert out.text == "xa\n"


def test_a_fix_is_taken_whole_or_not_at_all() -> None:
    text = "abc\n"
    blocker = _finding([(_span(1, 1, 1, 2), "A")], code="DL001")
    two_edits = _finding([(_span(1, 2, 1, 3), "B"), (_span(1, 1, 1, 2), "Z")], code="DL502")
    out = apply_fixes(text, [blocker, two_edits])
    assert out.text == "Abc\n"


def test_identical_fixes_are_applied_once_and_both_count() -> None:
    text = "x = 1\n"
    edit = [(_span(1, 1, 1, 2), "y")]
    out = apply_fixes(text, [_finding(edit), _finding(edit, code="DL503")])
    assert out.text == "y = 1\n"
    assert len(out.fixed) == 2


def test_unsafe_fixes_only_when_asked() -> None:
    text = "x = 1\n"
    unsafe = _finding([(_span(1, 1, 1, 2), "y")], Applicability.UNSAFE)
    assert apply_fixes(text, [unsafe]).text == text
    assert apply_fixes(text, [unsafe], unsafe=True).text == "y = 1\n"


def test_edits_outside_the_text_are_ignored() -> None:
    text = "x = 1\n"
    assert apply_fixes(text, [_finding([(_span(1, 40, 1, 41), "y")])]).text == text
    assert apply_fixes(text, [_finding([(_span(9, 1, 9, 2), "y")])]).text == text
    assert apply_fixes(text, [_finding([(_span(1, 3, 1, 1), "y")])]).text == text


def test_crlf_and_non_ascii_columns() -> None:
    text = "é = 1\r\nb = 2\r\n"
    out = apply_fixes(text, [_finding([(_span(2, 5, 2, 6), "3")], line=2)])
    assert out.text == "é = 1\r\nb = 3\r\n"


def test_parse_error() -> None:
    assert parse_error("x = 1\n") is None
    assert "syntax error" in (parse_error("x = (\n") or "")


def test_encode_like_keeps_bom_and_coding_cookie() -> None:
    assert encode_like(b"\xef\xbb\xbfx = 1\n", "y = 1\n") == b"\xef\xbb\xbfy = 1\n"
    latin = "# -*- coding: latin-1 -*-\ns = 'é'\n"
    assert encode_like(latin.encode("latin-1"), latin) == latin.encode("latin-1")
    with pytest.raises(UnicodeEncodeError):
        encode_like(latin.encode("latin-1"), latin + "# ☃\n")


def test_unified_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("m.py", "a\nb", "a\nc")
    assert diff.startswith("--- m.py\n+++ m.py\n")
    assert "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n" in diff


# -- rounds ---------------------------------------------------------------------------------------


def _counting_check(rule):  # type: ignore[no-untyped-def]
    """A check over one file "m.py" whose findings come from ``rule(text)``."""
    calls = []

    def check(texts: dict[str, str]) -> list[Finding]:
        text = texts.get("m.py", ORIGINAL)
        calls.append(text)
        return rule(text)

    return check, calls


ORIGINAL = "x = 1\n"


def test_rounds_continue_until_no_fix_applies() -> None:
    def rule(text: str) -> list[Finding]:  # each round's fix makes the next finding
        digit = text[4]
        if digit == "3":
            return []
        return [_finding([(_span(1, 5, 1, 6), str(int(digit) + 1))])]

    check, calls = _counting_check(rule)
    run = fix_project(check, lambda _: ORIGINAL)
    assert run.texts == {"m.py": "x = 3\n"}
    assert run.total == 2
    assert run.findings == []
    assert calls == ["x = 1\n", "x = 2\n", "x = 3\n"]


def test_a_fix_that_breaks_the_file_is_rolled_back() -> None:
    def rule(text: str) -> list[Finding]:
        return [_finding([(_span(1, 5, 1, 6), "(")], code="DL206")]

    check, _ = _counting_check(rule)
    run = fix_project(check, lambda _: ORIGINAL)
    assert run.texts == {}
    assert run.changed() == []
    assert "DL206" in run.rolled_back["m.py"] and "syntax error" in run.rolled_back["m.py"]
    assert run.total == 0
    assert len(run.findings) == 1  # still reported


def test_fixes_that_never_settle_stop_after_max_rounds() -> None:
    def rule(text: str) -> list[Finding]:
        return [_finding([(_span(1, 1, 1, 1), "#")])]  # always fires, always inserts

    check, _ = _counting_check(rule)
    run = fix_project(check, lambda _: ORIGINAL, max_rounds=3)
    assert run.texts["m.py"] == "###x = 1\n"
    assert run.unconverged == ["m.py"]
