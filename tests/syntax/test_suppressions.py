"""Inline suppressions: ``# noqa``, ``# distlint: ignore[...]``, ``# distlint: file-ignore[...]``.

Also DL001 (unused-suppression, off by default): it reports suppressions that silenced nothing
and codes that are not distlint's, but never a blanket ``# noqa`` nor codes of disabled rules.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings

DEFAULT = FileSettings(enabled=frozenset({"DL000", "DL203", "DL502"}))
WITH_DL001 = FileSettings(enabled=frozenset({"DL000", "DL001", "DL203", "DL502"}))

HEAD = """\
import torch
import torch.distributed as dist


@torch.compile
def step(x):
"""
CALL = "    dist.all_gather_object([None], x)"  # DL203 at line 7
BAD_BACKEND = 'g = torch.compile(print, backend="nvfuser")'  # DL502


def src(call_line: str = CALL, *, before: str = "", after: str = "") -> str:
    """A file whose line 7 (plus ``before`` lines) is the DL203 call, then a DL502 line."""
    return HEAD + before + call_line + "\n    return x\n\n\n" + after + BAD_BACKEND + "\n"


def codes(source: str, settings: FileSettings = DEFAULT) -> list[str]:
    result = check_file(FileSource(source, "s.py"), settings)
    assert result.errors == ()
    return [f.code for f in result.findings]


def test_unsuppressed_baseline() -> None:
    assert codes(src()) == ["DL203", "DL502"]


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa",
        "#noqa",
        "# NOQA",
        "# noqa: DL203",
        "# noqa:DL203",
        "# noqa:DL203,DL502",
        "# noqa: DL203, DL502",
        "# noqa: DL502 DL203",
        "# noqa: DL2",
        "# noqa: DL20",
        "# noqa: DL",
        "# noqa: E501, DL203",
        "# distlint: ignore[DL203]",
        "# distlint: ignore[DL2]",
        "# distlint: ignore[DL502, DL203]",
        "# type: ignore  # noqa: DL203",
    ],
)
def test_same_line_suppression_silences_dl203(comment: str) -> None:
    source = src(CALL + "  " + comment)
    result = check_file(FileSource(source, "s.py"), DEFAULT)
    assert [f.code for f in result.findings] == ["DL502"]
    assert result.suppressed == 1


@pytest.mark.parametrize(
    "comment",
    [
        "# noqa: E501",
        "# noqa: E501,W291",
        "# noqa: DL502",
        "# noqa: DL5",
        "# noqa: DL2030",
        "# distlint: ignore[DL502]",
        "# distlint: file-ignore[DL5]",
        "# noqa-DL203",
        "# noqanything",
        "# not a noqa: DL",
    ],
)
def test_these_comments_do_not_silence_dl203(comment: str) -> None:
    expected = ["DL203"] if "file-ignore" in comment else ["DL203", "DL502"]
    assert codes(src(CALL + "  " + comment)) == expected


def test_noqa_with_other_tools_codes_only_does_not_suppress() -> None:
    result = check_file(FileSource(src(CALL + "  # noqa: E501"), "s.py"), DEFAULT)
    assert [f.code for f in result.findings] == ["DL203", "DL502"]
    assert result.suppressed == 0


def test_ignore_comment_on_the_line_directly_above() -> None:
    source = src(before="    # distlint: ignore[DL203]\n")
    assert codes(source) == ["DL502"]


def test_ignore_comment_two_lines_above_does_not_apply() -> None:
    for between in ("\n", "    y = 1\n", "    # unrelated comment\n"):
        source = src(before="    # distlint: ignore[DL203]\n" + between)
        assert codes(source) == ["DL203", "DL502"], repr(between)


def test_ignore_comment_trailing_the_previous_statement_does_not_apply() -> None:
    source = src(before="    y = 1  # distlint: ignore[DL203]\n")
    assert codes(source) == ["DL203", "DL502"]


def test_noqa_on_the_line_above_does_not_apply() -> None:
    assert codes(src(before="    # noqa: DL203\n")) == ["DL203", "DL502"]


def test_ignore_above_a_multiline_statement_covers_findings_inside_it() -> None:
    call = "    y = (\n        1,\n        dist.all_gather_object([None], x),\n    )"
    source = src(call, before="    # distlint: ignore[DL203]\n")
    assert codes(source) == ["DL502"]


def test_noqa_on_the_decorator_does_not_cover_the_body() -> None:
    source = src().replace("@torch.compile\n", "@torch.compile  # noqa\n")
    assert codes(source) == ["DL203", "DL502"]


@pytest.mark.parametrize("position", ["top", "middle", "bottom"])
def test_file_ignore_anywhere(position: str) -> None:
    comment = "# distlint: file-ignore[DL2]\n"
    source = src()
    if position == "top":
        source = comment + source
    elif position == "middle":
        source = src(before="    " + comment)
    else:
        source = source + comment
    assert codes(source) == ["DL502"]


def test_file_ignore_blanket_and_list() -> None:
    assert codes(src() + "# distlint: file-ignore[DL203, DL502]\n") == []
    assert codes(src() + "# distlint: file-ignore\n") == []


@pytest.mark.parametrize("noqa_line", [0, 1, 2, 3])
def test_noqa_on_any_line_of_a_multiline_call(noqa_line: int) -> None:
    lines = ["    dist.all_gather_object(", "        [None],", "        x,", "    )"]
    lines[noqa_line] += "  # noqa: DL203"
    source = src("\n".join(lines))
    assert codes(source) == ["DL502"]


def test_noqa_after_a_backslash_continuation() -> None:
    source = src("    dist.all_gather_object([None], \\\n        x)  # noqa: DL203")
    assert codes(source) == ["DL502"]


def test_noqa_on_the_last_line_of_a_multiline_dl502_call() -> None:
    source = src().replace(
        BAD_BACKEND, 'g = torch.compile(\n    print,\n    backend="nvfuser",\n)  # noqa: DL502'
    )
    assert codes(source) == ["DL203"]


def test_noqa_on_a_different_statement_of_a_multiline_string_neighbour() -> None:
    # The statement before ends with a multi-line string; its noqa must not leak downwards.
    source = src(before='    doc = """\n    text\n    """  # noqa\n')
    assert codes(source) == ["DL203", "DL502"]


@pytest.mark.parametrize(
    "call",
    [
        '    dist.all_gather_object(["# noqa"], x)',
        "    dist.all_gather_object(['# noqa: DL203'], x)",
        '    dist.all_gather_object([f"{x}# noqa"], x)',
        '    dist.all_gather_object(["# distlint: ignore[DL203]"], x)',
        '    dist.all_gather_object([r"\\" # noqa"], x)',
    ],
)
def test_noqa_inside_a_string_literal_is_not_a_suppression(call: str) -> None:
    assert codes(src(call)) == ["DL203", "DL502"]


def test_noqa_inside_a_triple_quoted_string_is_not_a_suppression() -> None:
    call = '    dist.all_gather_object(["""\n# noqa\n"""], x)'
    assert codes(src(call)) == ["DL203", "DL502"]


def test_file_ignore_inside_a_string_is_not_a_suppression() -> None:
    source = src() + 'DOC = """\n# distlint: file-ignore\n"""\n'
    assert codes(source) == ["DL203", "DL502"]


def test_hash_inside_a_string_before_a_real_noqa() -> None:
    assert codes(src('    s = "#"; dist.all_gather_object([s], x)  # noqa: DL203')) == ["DL502"]


def test_suppression_of_one_code_does_not_hide_another() -> None:
    source = src().replace(BAD_BACKEND, BAD_BACKEND + "  # noqa: DL203")
    assert codes(source) == ["DL203", "DL502"]


# -- DL001 unused-suppression --------------------------------------------------------------------


def dl001(source: str, settings: FileSettings = WITH_DL001) -> list[tuple[int, int, str]]:
    result = check_file(FileSource(source, "s.py"), settings)
    return [
        (f.span.start.line, f.span.start.column, f.message)
        for f in result.findings
        if f.code == "DL001"
    ]


def test_dl001_is_off_by_default() -> None:
    assert codes("x = 1  # noqa: DL203\n") == []


def test_dl001_reports_an_unused_code() -> None:
    found = dl001("x = 1  # noqa: DL203\n")
    assert len(found) == 1
    line, column, message = found[0]
    assert (line, column) == (1, 8)
    assert "DL203" in message


def test_dl001_reports_an_unknown_code() -> None:
    found = dl001("x = 1  # noqa: DL999\n")
    assert len(found) == 1
    assert "DL999" in found[0][2]


def test_dl001_is_silent_for_a_used_suppression() -> None:
    source = src(CALL + "  # noqa: DL203")
    result = check_file(FileSource(source, "s.py"), WITH_DL001)
    assert [f.code for f in result.findings] == ["DL502"]


def test_dl001_reports_only_the_unused_part_of_a_list() -> None:
    found = dl001(src(CALL + "  # noqa: DL203, DL502"))
    assert len(found) == 1
    assert "DL502" in found[0][2]
    assert "DL203" not in found[0][2]
    assert found[0][0] == 7


def test_dl001_does_not_report_a_blanket_noqa() -> None:
    assert dl001("x = 1  # noqa\n") == []
    assert dl001("x = 1  # distlint: ignore\n") == []


def test_dl001_does_not_report_codes_of_disabled_rules() -> None:
    settings = FileSettings(enabled=frozenset({"DL000", "DL001", "DL203"}))
    assert dl001("x = 1  # noqa: DL502\n", settings) == []
    assert dl001("x = 1  # noqa: DL5\n", settings) == []
    # ... but does report codes of enabled ones on the same file.
    assert len(dl001("x = 1  # noqa: DL203\n", settings)) == 1


def test_dl001_for_unused_distlint_ignore_and_file_ignore() -> None:
    assert len(dl001("x = 1  # distlint: ignore[DL203]\n")) == 1
    assert len(dl001("x = 1\n# distlint: file-ignore[DL502]\n")) == 1


def test_dl001_ignores_other_tools_codes() -> None:
    assert dl001("x = 1  # noqa: E501\n") == []


def test_dl001_through_the_cli(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.py").write_text("x = 1  # noqa: DL203\ny = 2  # noqa: DL999\n")
    env = {"NO_COLOR": None, "FORCE_COLOR": None}
    runner = CliRunner()
    clean = runner.invoke(main, ["check", "s.py"], env=env)
    assert clean.exit_code == 0, clean.output
    result = runner.invoke(
        main, ["check", "--extend-select", "DL001", "--format", "json", "s.py"], env=env
    )
    assert result.exit_code == 1, result.output
    found = json.loads(result.stdout)
    assert [(f["code"], f["range"]["start"]["line"]) for f in found] == [
        ("DL001", 1),
        ("DL001", 2),
    ]
    assert all(f["severity"] == "note" for f in found)


# -- one grammar: other tools' codes in a `# distlint:` list -------------------------------------


@pytest.mark.parametrize(
    "comment",
    ["# distlint: ignore[E501]", "# distlint: ignore[E501, W291]", "# distlint: ignore[dl]x"],
)
def test_a_distlint_ignore_of_only_other_codes_silences_nothing(comment: str) -> None:
    """It once read as a blanket ignore (a list without a DL code was taken for "all")."""
    result = check_file(FileSource(src(CALL + "  " + comment), "s.py"), DEFAULT)
    expected = ["DL502"] if comment.endswith("x") else ["DL203", "DL502"]
    assert [f.code for f in result.findings] == expected


def test_a_file_ignore_of_only_other_codes_silences_nothing() -> None:
    assert codes(src() + "# distlint: file-ignore[E501]\n") == ["DL203", "DL502"]


def test_dl001_reports_other_tools_codes_in_a_distlint_comment() -> None:
    found = dl001("x = 1\n# distlint: file-ignore[E501]\n")
    assert found == [(2, 1, "Unused suppression: `E501` is not a distlint rule code; remove it.")]
    mixed = dl001(src(CALL + "  # distlint: ignore[DL203, E501]"))
    assert [message for _, _, message in mixed] == [
        "Unused suppression: `E501` is not a distlint rule code; remove it."
    ]


def test_an_empty_distlint_list_is_a_blanket_ignore() -> None:
    assert codes(src(CALL + "  # distlint: ignore[]")) == ["DL502"]
