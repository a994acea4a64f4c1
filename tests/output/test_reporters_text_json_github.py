"""The text, JSON and GitHub reporters, on hand-built reports (no checking involved)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from distlint.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Location,
    Position,
    Severity,
    Span,
)
from distlint.output.github import annotation, escape_data, escape_property, render_github
from distlint.output.json_format import finding_to_dict, render_json
from distlint.output.render import render
from distlint.output.report import Report
from distlint.output.text import render_text, summary_line
from distlint.rules.registry import all_rules

SOURCE = 'import torch\n\ng = torch.compile(print, backend="nvfuser")\n'


def span(line: int, col: int, end_line: int | None = None, end_col: int | None = None) -> Span:
    end_line = line if end_line is None else end_line
    end_col = col if end_col is None else end_col
    return Span(Position(line, col, col), Position(end_line, end_col, end_col))


def finding(
    code: str = "DL502",
    path: str = "m.py",
    where: Span | None = None,
    message: str = "bad backend",
    severity: Severity = Severity.ERROR,
    **kwargs,
) -> Finding:
    return Finding(
        code=code,
        name=all_rules()[code].name if code in all_rules() else "some-rule",
        severity=severity,
        message=message,
        path=path,
        span=where or span(3, 33, 3, 42),
        **kwargs,
    )


def report(findings: list[Finding], files_checked: int = 1, sources=None) -> Report:
    sources = {"m.py": SOURCE} if sources is None else sources
    return Report(
        findings=findings,
        errors=[],
        files_checked=files_checked,
        rules=list(all_rules().values()),
        root=Path("/repo"),
        cwd=Path("/repo"),
        read_source=sources.get,
    )


# -- text ------------------------------------------------------------------------------------------


def test_text_headline_snippet_and_carets() -> None:
    out = render_text(report([finding()])).splitlines()
    assert out[0] == "m.py:3:33: DL502 [error] bad backend"
    assert out[1].strip() == "|"
    assert out[2] == '  3 | g = torch.compile(print, backend="nvfuser")'
    assert out[3] == "    | " + " " * 32 + "^" * 9
    assert out[4] == ""
    assert out[5] == "1 finding (1 error, 0 warnings) in 1 file (1 file checked)."


def test_text_gutter_width_follows_the_line_number() -> None:
    source = "\n" * 99 + "x = 1\n"
    out = render_text(report([finding(where=span(100, 1, 100, 2))], sources={"m.py": source}))
    lines = out.splitlines()
    assert lines[2] == "  100 | x = 1"
    assert lines[3] == "      | ^"


def test_text_multiline_span_carets_to_end_of_first_line() -> None:
    source = "x = f(\n    1,\n)\n"
    lines = render_text(report([finding(where=span(1, 5, 3, 2))], sources={"m.py": source}))
    assert lines.splitlines()[3] == "    |     " + "^" * 2


def test_text_empty_span_gets_one_caret() -> None:
    lines = render_text(report([finding(where=span(3, 1))])).splitlines()
    assert lines[3] == "    | ^"


def test_text_without_source_has_no_snippet() -> None:
    out = render_text(report([finding()], sources={})).splitlines()
    assert out == ["m.py:3:33: DL502 [error] bad backend", "", out[-1]]


def test_text_related_and_fix_lines() -> None:
    related = (Location("m.py", span(1, 1, 1, 13), "compiled"),)
    fix = Fix(
        "Use backend 'inductor'", (Edit(span(3, 33, 3, 42), '"inductor"'),), Applicability.SAFE
    )
    out = render_text(report([finding(related=related, fix=fix)]))
    assert "  = compiled at m.py:1:1" in out
    assert "  = fix (safe): Use backend 'inductor'" in out


def test_text_summary_lines() -> None:
    warn = finding(path="w.py", severity=Severity.WARNING)
    note = finding(path="w.py", severity=Severity.NOTE, where=span(4, 1))
    rep = report([finding(), finding(where=span(4, 1)), warn, note], files_checked=7)
    assert summary_line(rep) == (
        "4 findings (2 errors, 1 warning, 1 note) in 2 files (7 files checked)."
    )
    assert summary_line(report([], files_checked=3)) == "No findings (3 files checked)."
    assert summary_line(report([], files_checked=1)) == "No findings (1 file checked)."


def test_text_quiet_and_statistics() -> None:
    findings = [finding(), finding(where=span(4, 1)), finding("DL203", where=span(2, 1))]
    quiet = render_text(report(findings), quiet=True, show_source=False)
    assert "finding" not in quiet
    assert render_text(report([]), quiet=True) == ""
    stats = render_text(report(findings), statistics=True, show_source=False).splitlines()
    assert stats[:3] == [
        "count  code   fixable  rule",
        "    2  DL502        0  invalid-compile-option",
        "    1  DL203        0  object-collective-in-compiled-region",
    ]


def test_text_color() -> None:
    plain = render_text(report([finding()]), color=False)
    colored = render_text(report([finding()]), color=True)
    assert "\x1b[" not in plain
    assert "\x1b[" in colored
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


# -- json ------------------------------------------------------------------------------------------


def test_json_shape() -> None:
    related = (Location("m.py", span(1, 1, 1, 13), "compiled"),)
    fix = Fix(
        "Use backend 'inductor'", (Edit(span(3, 33, 3, 42), '"inductor"'),), Applicability.SAFE
    )
    data = json.loads(render_json(report([finding(related=related, fix=fix)])))
    assert data == [
        {
            "code": "DL502",
            "name": "invalid-compile-option",
            "severity": "error",
            "message": "bad backend",
            "headline": "bad backend",
            "path": "m.py",
            "range": {
                "start": {"line": 3, "column": 33, "column_utf16": 33},
                "end": {"line": 3, "column": 42, "column_utf16": 42},
            },
            "related": [
                {
                    "path": "m.py",
                    "range": {
                        "start": {"line": 1, "column": 1, "column_utf16": 1},
                        "end": {"line": 1, "column": 13, "column_utf16": 13},
                    },
                    "message": "compiled",
                }
            ],
            "fix": {
                "title": "Use backend 'inductor'",
                "applicability": "safe",
                "edits": [
                    {
                        "range": {
                            "start": {"line": 3, "column": 33, "column_utf16": 33},
                            "end": {"line": 3, "column": 42, "column_utf16": 42},
                        },
                        "content": '"inductor"',
                    }
                ],
            },
            "url": data[0]["url"],
        }
    ]
    assert data[0]["url"].startswith("https://") and data[0]["url"].endswith("DL502.md")


def test_json_keeps_utf16_columns_apart() -> None:
    where = Span(Position(1, 5, 6), Position(1, 9, 10))
    assert finding_to_dict(finding(where=where))["range"]["start"] == {
        "line": 1,
        "column": 5,
        "column_utf16": 6,
    }


def test_json_empty_report() -> None:
    assert json.loads(render(report([]), "json")) == []


def test_json_keeps_report_order() -> None:
    findings = [finding(path="a.py"), finding(path="b.py"), finding("DL203", path="b.py")]
    assert [f["path"] for f in json.loads(render_json(report(findings)))] == [
        "a.py",
        "b.py",
        "b.py",
    ]


# -- github ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("plain text", "plain text"),
        ("100%", "100%25"),
        ("a\nb", "a%0Ab"),
        ("a\r\nb", "a%0D%0Ab"),
        ("%0A", "%250A"),
        ("a:b,c", "a:b,c"),
    ],
)
def test_escape_data(raw: str, escaped: str) -> None:
    assert escape_data(raw) == escaped


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("dir/file.py", "dir/file.py"),
        ("a:b", "a%3Ab"),
        ("a,b", "a%2Cb"),
        ("50%,\r\n:", "50%25%2C%0D%0A%3A"),
        ("%3A", "%253A"),
    ],
)
def test_escape_property(raw: str, escaped: str) -> None:
    assert escape_property(raw) == escaped


def test_annotation_single_line() -> None:
    assert annotation(finding()) == (
        "::error file=m.py,line=3,col=33,endLine=3,endColumn=42,"
        "title=DL502 invalid-compile-option::bad backend"
    )


def test_annotation_multiline_span_drops_columns() -> None:
    assert annotation(finding(where=span(3, 5, 6, 2))) == (
        "::error file=m.py,line=3,endLine=6,title=DL502 invalid-compile-option::bad backend"
    )


def test_annotation_escapes_message_and_properties() -> None:
    line = annotation(finding(path="a:b,c.py", message="100% bad\r\nsee: x, y"))
    assert line == (
        "::error file=a%3Ab%2Cc.py,line=3,col=33,endLine=3,endColumn=42,"
        "title=DL502 invalid-compile-option::100%25 bad%0D%0Asee: x, y"
    )
    assert "\n" not in line and "\r" not in line


@pytest.mark.parametrize(
    ("severity", "command"),
    [(Severity.ERROR, "error"), (Severity.WARNING, "warning"), (Severity.NOTE, "notice")],
)
def test_annotation_command_per_severity(severity: Severity, command: str) -> None:
    assert annotation(finding(severity=severity)).startswith(f"::{command} file=")


def test_render_github_one_line_per_finding() -> None:
    findings = [finding(), finding("DL203", where=span(7, 5, 7, 38), message="x\ny")]
    out = render_github(report(findings))
    assert out.endswith("\n")
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("::error file=m.py,line=7,col=5,endLine=7,endColumn=38,title=DL203 ")
    assert render_github(report([])) == ""


def test_text_reads_and_splits_each_file_once_however_many_findings() -> None:
    """Snippets of many findings in one large file: the file was read and split into lines
    once per finding (342 findings in a 3,000-line file: a fifth of a second)."""
    reads: list[str] = []
    base = report([finding(where=span(3, 33, 3, 42)) for _ in range(50)])

    def read(path: str) -> str | None:
        reads.append(path)
        return SOURCE

    counted = Report(
        findings=base.findings,
        errors=[],
        files_checked=1,
        rules=base.rules,
        root=base.root,
        cwd=base.cwd,
        read_source=read,
    )
    text = render_text(counted)
    assert text.count('g = torch.compile(print, backend="nvfuser")') == 50
    assert reads == ["m.py"]
