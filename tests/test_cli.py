"""The ``distlint`` command line: exit codes, options, output formats, stdin, ``rules``/``rule``,
and that checking never imports torch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.output.docs import docs_dir, render_page
from distlint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

DL203_SRC = """\
import torch
import torch.distributed as dist


@torch.compile
def step(x):
    dist.all_gather_object([None], x)
    return x
"""
DL502_LINE = 'g = torch.compile(print, backend="nvfuser")'
DL502_SRC = "import torch\n\n" + DL502_LINE + "\n"
DL502_COL = DL502_LINE.index('"nvfuser"') + 1
DL502_END = DL502_COL + len('"nvfuser"')
CLEAN_SRC = "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n"


def cli(args: list[str], env: dict | None = None, **kwargs):
    base = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
    return CliRunner().invoke(main, args, env=base | (env or {}), **kwargs)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """a.py: DL203 at 7:5; b.py: DL502; clean.py: nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(DL203_SRC)
    (tmp_path / "b.py").write_text(DL502_SRC)
    (tmp_path / "clean.py").write_text(CLEAN_SRC)
    return tmp_path


def json_codes(result) -> list[tuple[str, str]]:
    return [(f["path"], f["code"]) for f in json.loads(result.stdout)]


# -- exit codes ------------------------------------------------------------------------------------


def test_exit_0_when_clean(project: Path) -> None:
    result = cli(["check", "clean.py"])
    assert result.exit_code == 0
    assert result.stdout == "No findings (1 file checked).\n"


def test_exit_1_with_findings(project: Path) -> None:
    assert cli(["check", "a.py"]).exit_code == 1


def test_exit_zero(project: Path) -> None:
    result = cli(["check", "--exit-zero", "a.py"])
    assert result.exit_code == 0
    assert "DL203" in result.stdout


def test_exit_2_for_a_missing_path(project: Path) -> None:
    result = cli(["check", "missing.py"])
    assert result.exit_code == 2
    assert "missing.py" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--format", "xml", "a.py"],
        ["check", "--jobs", "0", "a.py"],
        ["check", "--no-such-option"],
        ["frobnicate"],
        ["check", "--select", "NOPE", "a.py"],
    ],
)
def test_exit_2_for_usage_errors(project: Path, args: list[str]) -> None:
    result = cli(args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_default_path_is_the_current_directory(project: Path) -> None:
    result = cli(["check", "--format", "json"])
    assert result.exit_code == 1
    assert json_codes(result) == [("a.py", "DL203"), ("b.py", "DL502")]


def test_version() -> None:
    result = cli(["--version"])
    assert result.exit_code == 0
    assert "distlint" in result.stdout


# -- selection options -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--select", "DL203,DL502"],
        ["--select", "DL203", "--select", "DL502"],
        ["--select", "DL203, DL502"],
        ["--select", "DL2,", "--select", ",DL5"],
    ],
)
def test_select_accepts_comma_lists_and_repeats(project: Path, args: list[str]) -> None:
    result = cli(["check", "--format", "json", *args, "a.py", "b.py"])
    assert json_codes(result) == [("a.py", "DL203"), ("b.py", "DL502")]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--select", "DL203"], [("a.py", "DL203")]),
        (["--ignore", "DL203,DL502"], []),
        (["--ignore", "DL203", "--ignore", "DL502"], []),
        (["--ignore", "DL5"], [("a.py", "DL203")]),
        (["--select", "DL5", "--extend-select", "DL203"], [("a.py", "DL203"), ("b.py", "DL502")]),
        (["--ignore", "DL2", "--extend-select", "DL203"], [("a.py", "DL203"), ("b.py", "DL502")]),
        (["--select", "DL203", "--ignore", "DL2"], [("a.py", "DL203")]),
        (["--select", "ALL", "--ignore", "DL2,DL0"], [("b.py", "DL502")]),
    ],
)
def test_selection_options(project: Path, args: list[str], expected: list) -> None:
    result = cli(["check", "--format", "json", *args, "a.py", "b.py"])
    assert result.exit_code == (1 if expected else 0), result.output
    assert json_codes(result) == expected


def test_extend_select_turns_on_dl001(project: Path) -> None:
    (project / "n.py").write_text("x = 1  # noqa: DL203\n")
    assert json_codes(cli(["check", "--format", "json", "n.py"])) == []
    result = cli(["check", "--format", "json", "--extend-select", "DL001,DL5", "n.py"])
    assert json_codes(result) == [("n.py", "DL001")]


def test_unknown_selector_on_the_cli_suggests(project: Path) -> None:
    result = cli(["check", "--ignore", "DL230", "a.py"])
    assert result.exit_code == 2
    assert "DL230" in result.output
    assert "DL203" in result.output


# -- json ------------------------------------------------------------------------------------------

POSITION_KEYS = {"line", "column", "column_utf16"}


def test_json_format(project: Path) -> None:
    result = cli(["check", "--format", "json", "a.py", "b.py"])
    assert result.exit_code == 1
    findings = json.loads(result.stdout)
    assert isinstance(findings, list) and len(findings) == 2
    for finding in findings:
        assert set(finding) == {
            "code",
            "name",
            "severity",
            "message",
            "headline",
            "path",
            "range",
            "related",
            "fix",
            "url",
        }
        assert set(finding["range"]) == {"start", "end"}
        assert set(finding["range"]["start"]) == POSITION_KEYS
        assert set(finding["range"]["end"]) == POSITION_KEYS
        assert isinstance(finding["related"], list)
        assert finding["url"].startswith("https://")
        assert finding["code"] in finding["url"]
    dl203, dl502 = findings
    assert dl203["code"] == "DL203"
    assert dl203["name"] == "object-collective-in-compiled-region"
    assert dl203["severity"] == "error"
    assert dl203["path"] == "a.py"
    assert dl203["range"] == {
        "start": {"line": 7, "column": 5, "column_utf16": 5},
        "end": {"line": 7, "column": 38, "column_utf16": 38},
    }
    assert dl203["fix"] is None
    assert [r["range"]["start"]["line"] for r in dl203["related"]] == [5]
    assert dl502["range"]["start"] == {"line": 3, "column": DL502_COL, "column_utf16": DL502_COL}
    assert dl502["range"]["end"]["column"] == DL502_END


def test_json_fix_object(project: Path) -> None:
    (project / "fix.py").write_text(
        'import torch\n\ng = torch.compile(print, backend="Inductor")\n'
    )
    findings = json.loads(cli(["check", "--format", "json", "fix.py"]).stdout)
    assert len(findings) == 1
    fix = findings[0]["fix"]
    assert set(fix) == {"title", "applicability", "edits"}
    assert fix["applicability"] in {"safe", "unsafe"}
    assert fix["edits"]
    assert set(fix["edits"][0]) == {"range", "content"}
    assert fix["edits"][0]["content"] == '"inductor"'


def test_json_for_no_findings_is_an_empty_list(project: Path) -> None:
    result = cli(["check", "--format", "json", "clean.py"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


# -- github ----------------------------------------------------------------------------------------


def test_github_format(project: Path) -> None:
    result = cli(["check", "--format", "github", "b.py"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    prefix = (
        f"::error file=b.py,line=3,col={DL502_COL},endLine=3,endColumn={DL502_END},"
        "title=DL502 invalid-compile-option::"
    )
    assert lines[0].startswith(prefix)
    assert "nvfuser" in lines[0]


def test_github_format_of_a_multiline_span_has_no_columns(project: Path) -> None:
    source = DL203_SRC.replace(
        "    dist.all_gather_object([None], x)",
        "    dist.all_gather_object(\n        [None], x\n    )",
    )
    (project / "multi.py").write_text(source)
    line = cli(["check", "--format", "github", "multi.py"]).stdout.strip()
    assert line.startswith("::error file=multi.py,line=7,endLine=9,title=DL203 ")
    assert "col=" not in line and "endColumn=" not in line


def test_github_format_escapes_properties_in_paths(project: Path) -> None:
    folder = project / "we,ird:dir"
    folder.mkdir()
    (folder / "m.py").write_text(DL502_SRC)
    line = cli(["check", "--format", "github", "we,ird:dir/m.py"]).stdout.strip()
    assert line.startswith("::error file=we%2Cird%3Adir/m.py,line=3,")


# -- text ------------------------------------------------------------------------------------------


def test_text_format_headline_snippet_and_carets(project: Path) -> None:
    result = cli(["check", "b.py"])
    lines = result.stdout.splitlines()
    assert re.fullmatch(rf"b\.py:3:{DL502_COL}: DL502 \[error\] .*nvfuser.*", lines[0])
    assert DL502_LINE in lines[2]
    caret_line = lines[3]
    gutter = lines[2].index(DL502_LINE)
    assert caret_line[gutter:].rstrip() == " " * (DL502_COL - 1) + "^" * len('"nvfuser"')


def test_text_summary_line(project: Path) -> None:
    (project / "c.py").write_text(DL203_SRC + "\n\n" + DL502_LINE + "\n")
    result = cli(["check", "a.py", "b.py", "c.py", "clean.py"])
    assert result.exit_code == 1
    assert (
        result.stdout.splitlines()[-1]
        == "4 findings (4 errors, 0 warnings) in 3 files (4 files checked)."
    )


def test_text_summary_counts_notes(project: Path) -> None:
    (project / "n.py").write_text("x = 1  # noqa: DL203\n")
    result = cli(["check", "--extend-select", "DL001", "n.py", "b.py"])
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith("2 findings (1 error, 0 warnings, 1 note) in 2 files")


def test_quiet_omits_the_summary(project: Path) -> None:
    result = cli(["check", "--quiet", "a.py"])
    assert result.exit_code == 1
    assert "a.py:7:5: DL203" in result.stdout
    assert "finding" not in result.stdout.splitlines()[-1]
    assert cli(["check", "--quiet", "clean.py"]).stdout == ""


def test_no_show_source(project: Path) -> None:
    result = cli(["check", "--no-show-source", "a.py"])
    assert "dist.all_gather_object([None], x)" not in result.stdout
    assert "a.py:7:5: DL203" in result.stdout


def test_statistics_counts_per_rule(project: Path) -> None:
    (project / "c.py").write_text(DL502_SRC + 'h = torch.compile(print, backend="nvfuser2")\n')
    result = cli(["check", "--statistics", "a.py", "b.py", "c.py"])
    stats = [line.split() for line in result.stdout.splitlines() if re.match(r"\s+\d+\s+DL", line)]
    assert stats == [  # most frequent first, with how many --fix would fix
        ["3", "DL502", "0", "invalid-compile-option"],
        ["1", "DL203", "0", "object-collective-in-compiled-region"],
    ]
    assert "dist.all_gather_object" not in result.stdout  # the table replaces the findings


def test_no_ansi_when_not_a_tty(project: Path) -> None:
    assert not ANSI.search(cli(["check", "a.py"]).stdout)
    assert not ANSI.search(cli(["check", "a.py"], env={"NO_COLOR": "1"}).stdout)


def test_force_color_gives_ansi(project: Path) -> None:
    result = cli(["check", "a.py"], env={"FORCE_COLOR": "1"})
    assert ANSI.search(result.stdout)
    assert ANSI.sub("", result.stdout) == cli(["check", "a.py"]).stdout


def test_force_color_does_not_apply_to_json_or_files(project: Path) -> None:
    result = cli(["check", "--format", "json", "a.py"], env={"FORCE_COLOR": "1"})
    assert not ANSI.search(result.stdout)
    cli(["check", "--output", "out.txt", "a.py"], env={"FORCE_COLOR": "1"})
    assert not ANSI.search((project / "out.txt").read_text())


def _run_on_a_tty(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    import pty

    leader, follower = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k not in {"NO_COLOR", "FORCE_COLOR"}}
    full_env |= env | {"PYTHONPATH": str(ROOT)}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "distlint", *args],
            cwd=cwd,
            env=full_env,
            stdout=follower,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert proc.returncode == 1
    return b"".join(chunks).decode()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_tty_gets_color_unless_no_color(project: Path) -> None:
    assert ANSI.search(_run_on_a_tty(["check", "a.py"], project, {}))
    assert not ANSI.search(_run_on_a_tty(["check", "a.py"], project, {"NO_COLOR": "1"}))


# -- output files ----------------------------------------------------------------------------------


def test_output_file(project: Path) -> None:
    result = cli(["check", "--output", "report.txt", "a.py"])
    assert result.exit_code == 1
    assert result.stdout == ""
    text = (project / "report.txt").read_text()
    assert "a.py:7:5: DL203" in text
    assert text.splitlines()[-1].endswith("(1 file checked).")


def test_output_file_json(project: Path) -> None:
    result = cli(["check", "--format", "json", "-o", "report.json", "a.py", "b.py"])
    assert result.exit_code == 1
    assert [f["code"] for f in json.loads((project / "report.json").read_text())] == [
        "DL203",
        "DL502",
    ]


def test_sarif_output_alongside_text(project: Path) -> None:
    from tests.sarif_validation import assert_valid_sarif

    result = cli(["check", "--sarif-output", "out.sarif", "a.py", "b.py"])
    assert result.exit_code == 1
    assert "a.py:7:5: DL203" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("2 findings")
    log = assert_valid_sarif((project / "out.sarif").read_text())
    results = log["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["DL203", "DL502"]


def test_sarif_format_to_stdout_validates(project: Path) -> None:
    from tests.sarif_validation import assert_valid_sarif

    result = cli(["check", "--format", "sarif", "a.py", "clean.py"])
    assert result.exit_code == 1
    assert_valid_sarif(result.stdout)


# -- stdin -----------------------------------------------------------------------------------------


def test_stdin_with_a_filename(project: Path) -> None:
    result = cli(["check", "--stdin-filename", "pkg/mod.py", "-"], input=DL203_SRC)
    assert result.exit_code == 1
    assert "pkg/mod.py:7:5: DL203" in result.stdout
    assert "dist.all_gather_object([None], x)" in result.stdout
    assert "1 file checked" in result.stdout


def test_stdin_without_a_filename(project: Path) -> None:
    result = cli(["check", "--format", "json", "-"], input=DL502_SRC)
    assert result.exit_code == 1
    assert json_codes(result) == [("-", "DL502")]


def test_stdin_applies_config_and_per_file_ignores_by_name(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.distlint.per-file-ignores]\n"tests/**" = ["DL2"]\n'
    )
    sub = project / "sub"
    sub.mkdir()
    (sub / "distlint.toml").write_text('ignore = ["DL502"]\n')
    both = DL203_SRC + "\n\n" + DL502_LINE + "\n"
    for name, expected in [
        ("tests/test_x.py", [("tests/test_x.py", "DL502")]),
        ("sub/m.py", [("sub/m.py", "DL203")]),
        ("other.py", [("other.py", "DL203"), ("other.py", "DL502")]),
    ]:
        result = cli(["check", "--format", "json", "--stdin-filename", name, "-"], input=both)
        assert json_codes(result) == expected, name


def test_stdin_syntax_error_and_bad_bytes(project: Path) -> None:
    result = cli(["check", "--format", "json", "-"], input="def f(:\n")
    assert json_codes(result) == [("-", "DL000")]
    result = cli(["check", "--format", "json", "-"], input=b"x = '\xff'\n")
    assert json_codes(result) == [("-", "DL000")]


# -- rules and rule --------------------------------------------------------------------------------


def test_rules_lists_every_rule(project: Path) -> None:
    result = cli(["rules"])
    assert result.exit_code == 0
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert set(rows) == set(all_rules())
    assert rows["DL000"][1:] == ["syntax-error", "error", "on", "none"]
    assert rows["DL001"][1:] == ["unused-suppression", "note", "off", "none"]
    assert rows["DL203"][2:4] == ["error", "on"]
    assert rows["DL502"][1:] == ["invalid-compile-option", "error", "on", "sometimes"]


def test_rules_json(project: Path) -> None:
    result = cli(["rules", "--format", "json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [row["code"] for row in rows] == sorted(all_rules())
    by_code = {row["code"]: row for row in rows}
    assert {"code", "name", "severity", "default", "fix"} <= set(by_code["DL203"])
    assert by_code["DL001"]["default"] == "off"
    assert by_code["DL502"]["fix"] == "sometimes"


@pytest.mark.parametrize("spelling", ["DL203", "dl203", "Dl203"])
def test_rule_prints_the_docs_page(project: Path, spelling: str) -> None:
    result = cli(["rule", spelling])
    assert result.exit_code == 0
    assert "DL203" in result.stdout
    assert "object-collective-in-compiled-region" in result.stdout
    page = (docs_dir() / "DL203.md").read_text(encoding="utf-8")
    shown = render_page(all_rules()["DL203"], page)  # the page with its metadata table
    assert "| Severity | error |" in shown
    assert result.stdout.rstrip("\n") == shown.rstrip("\n")


def test_unknown_rule_is_exit_2_with_a_suggestion(project: Path) -> None:
    result = cli(["rule", "DL230"])
    assert result.exit_code == 2
    assert "DL230" in result.stderr
    assert "DL203" in result.stderr
    result = cli(["rule", "nonsense"])
    assert result.exit_code == 2
    assert "nonsense" in result.stderr


# -- torch-free ------------------------------------------------------------------------------------

_BLOCK_TORCH = textwrap.dedent(
    """
    import importlib.abc
    import sys

    class BlockTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError(f"distlint must not import {name}")
            return None

    sys.meta_path.insert(0, BlockTorch())
    from distlint.cli import main

    try:
        main(["check", "--jobs", "1", "--format", "json", *sys.argv[1:]])
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    print("TORCH-LOADED" if "torch" in sys.modules else "TORCH-FREE", file=sys.stderr)
    sys.exit(code)
    """
)


def test_checking_never_imports_torch(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(DL203_SRC)
    (tmp_path / "b.py").write_text(DL502_SRC)
    (tmp_path / "c.py").write_text('import torch\ntorch.compile(print, mode="fast")\n')
    env = {k: v for k, v in os.environ.items() if k != "DISTLINT_DEBUG"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", _BLOCK_TORCH, "a.py", "b.py", "c.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "TORCH-FREE", proc.stderr
    found = [(f["path"], f["code"]) for f in json.loads(proc.stdout)]
    assert found == [("a.py", "DL203"), ("b.py", "DL502"), ("c.py", "DL502")]
