"""``check --fix``, ``--unsafe-fixes``, ``--diff``, ``--fix-only``, ``--show-fixes``,
``--exit-non-zero-on-fix``: what is written, what is printed, and Ruff's exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from distlint.engine.fixes import applicable, parse_error
from tests.test_cli import cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

SAFE_ONLY = 'import torch\n\ng = torch.compile(print, backend="Inductor")\n'
SAFE_FIXED = 'import torch\n\ng = torch.compile(print, backend="inductor")\n'
# a safe fix (backend case), an unsafe one (a guessed keyword) and no fix (unknown backend)
MIXED = (
    "import torch\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
    'g = torch.compile(print, backend="Inductor")\n'
    "m = DDP(torch.nn.Linear(2, 2), find_unused_params=True)\n"
    'h = torch.compile(print, backend="nvfuser")\n'
)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mixed.py").write_text(MIXED)
    (tmp_path / "safe.py").write_text(SAFE_ONLY)
    return tmp_path


def test_fix_applies_safe_fixes_and_reports_the_rest(work: Path) -> None:
    result = cli(["check", "--fix", "--no-show-source", "mixed.py"])
    assert result.exit_code == 1  # findings are left
    text = (work / "mixed.py").read_text()
    assert 'backend="inductor"' in text
    assert "find_unused_params=True" in text  # unsafe: not applied
    lines = result.stdout.splitlines()
    assert not any("mixed.py:4:" in line for line in lines)
    assert any("mixed.py:5:" in line and "DL501" in line for line in lines)
    assert any("mixed.py:6:" in line and "DL502" in line for line in lines)
    assert "1 fixable with `--fix --unsafe-fixes` (unsafe fixes: review them)." in lines
    assert lines[-1] == "Fixed 1 finding in 1 file."


def test_fix_exits_0_when_everything_was_fixed(work: Path) -> None:
    result = cli(["check", "--fix", "safe.py"])
    assert result.exit_code == 0
    assert (work / "safe.py").read_text() == SAFE_FIXED
    assert result.stdout.splitlines()[-2:] == [
        "No findings (1 file checked).",
        "Fixed 1 finding in 1 file.",
    ]
    assert cli(["check", "--fix", "--exit-non-zero-on-fix", "safe.py"]).exit_code == 0  # no-op now
    (work / "safe.py").write_text(SAFE_ONLY)
    assert cli(["check", "--fix", "--exit-non-zero-on-fix", "safe.py"]).exit_code == 1


def test_unsafe_fixes_are_applied_when_asked(work: Path) -> None:
    result = cli(["check", "--fix", "--unsafe-fixes", "mixed.py"])
    assert result.exit_code == 1  # the unknown backend has no fix
    text = (work / "mixed.py").read_text()
    assert "find_unused_parameters=True" in text and 'backend="inductor"' in text
    assert parse_error(text) is None


def test_diff_prints_and_writes_nothing(work: Path) -> None:
    result = cli(["check", "--diff", "safe.py", "mixed.py"])
    assert result.exit_code == 1  # Ruff: --diff exits 1 when there is something to fix
    assert (work / "safe.py").read_text() == SAFE_ONLY
    assert (work / "mixed.py").read_text() == MIXED
    assert result.stdout == (
        "--- mixed.py\n+++ mixed.py\n@@ -1,6 +1,6 @@\n import torch\n"
        " from torch.nn.parallel import DistributedDataParallel as DDP\n \n"
        '-g = torch.compile(print, backend="Inductor")\n'
        '+g = torch.compile(print, backend="inductor")\n'
        " m = DDP(torch.nn.Linear(2, 2), find_unused_params=True)\n"
        ' h = torch.compile(print, backend="nvfuser")\n'
        "--- safe.py\n+++ safe.py\n@@ -1,3 +1,3 @@\n import torch\n \n"
        '-g = torch.compile(print, backend="Inductor")\n'
        '+g = torch.compile(print, backend="inductor")\n'
    )
    assert result.stderr == "Would fix 2 findings.\n"
    assert cli(["check", "--diff", "--exit-zero", "safe.py"]).exit_code == 0


def test_diff_with_nothing_to_fix_exits_0(work: Path) -> None:
    (work / "clean.py").write_text("x = 1\n")
    result = cli(["check", "--diff", "clean.py"])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "No fixes available.\n")


def test_fix_only_reports_what_was_fixed_and_exits_0(work: Path) -> None:
    result = cli(["check", "--fix-only", "--show-fixes", "mixed.py", "safe.py"])
    assert result.exit_code == 0  # findings are left, but --fix-only does not report them
    assert result.stdout == (
        "Fixed 2 findings in 2 files:\n"
        "- mixed.py:\n    1 × DL502 (invalid-compile-option)\n"
        "- safe.py:\n    1 × DL502 (invalid-compile-option)\n"
    )
    result = cli(["check", "--fix-only", "mixed.py"])
    assert (result.exit_code, result.stdout) == (0, "No fixes applied.\n")
    (work / "safe.py").write_text(SAFE_ONLY)
    assert cli(["check", "--fix-only", "--exit-non-zero-on-fix", "safe.py"]).exit_code == 1


def test_show_fixes_lists_fixes_before_the_summary(work: Path) -> None:
    result = cli(["check", "--fix", "--show-fixes", "--output-format", "concise", "safe.py"])
    assert result.stdout == (
        "Fixed 1 finding in 1 file:\n- safe.py:\n    1 × DL502 (invalid-compile-option)\n\n"
        "No findings (1 file checked).\n"
    )


def test_fix_with_json_reports_what_is_left(work: Path) -> None:
    result = cli(["check", "--fix", "--format", "json", "mixed.py"])
    assert [f["code"] for f in json.loads(result.stdout)] == ["DL501", "DL502"]


def test_fix_from_stdin_prints_the_fixed_source(work: Path) -> None:
    result = cli(["check", "--fix", "-"], input=SAFE_ONLY)
    assert result.exit_code == 0
    assert result.stdout == SAFE_FIXED
    assert "No findings" in result.stderr
    result = cli(["check", "--fix", "--stdin-filename", "x.py", "-"], input=MIXED)
    assert result.exit_code == 1
    assert result.stdout == MIXED.replace("Inductor", "inductor")
    assert "DL501" in result.stderr
    result = cli(["check", "--diff", "-"], input=SAFE_ONLY)
    assert result.exit_code == 1 and result.stdout.startswith("--- -\n+++ -\n")


def test_fix_keeps_encoding_bom_and_line_endings(work: Path) -> None:
    latin = "# -*- coding: latin-1 -*-\n# café\r\n" + SAFE_ONLY.replace("\n", "\r\n")
    (work / "latin.py").write_bytes(latin.encode("latin-1"))
    (work / "bom.py").write_bytes(b"\xef\xbb\xbf" + SAFE_ONLY.encode())
    assert cli(["check", "--fix", "latin.py", "bom.py"]).exit_code == 0
    assert (work / "latin.py").read_bytes() == latin.replace("Inductor", "inductor").encode(
        "latin-1"
    )
    assert (work / "bom.py").read_bytes() == b"\xef\xbb\xbf" + SAFE_FIXED.encode()


def test_a_fix_that_would_not_parse_is_rolled_back(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "distlint.engine.fixes.parse_error", lambda text: "syntax error at line 3: boom"
    )
    result = cli(["check", "--fix", "safe.py"])
    assert result.exit_code == 1  # the finding is still there
    assert (work / "safe.py").read_text() == SAFE_ONLY
    assert (
        "distlint: warning: safe.py: fixes for DL502 would not parse "
        "(syntax error at line 3: boom); left unfixed" in result.stderr
    )


def test_unwritable_file_is_an_error(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Path, data: bytes) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "write_bytes", refuse)
    result = cli(["check", "--fix", "safe.py"])
    assert result.exit_code == 2
    assert "safe.py: fixes not written: cannot write: Permission denied" in result.stderr


def test_fix_modes_refuse_add_noqa(work: Path) -> None:
    result = cli(["check", "--fix", "--add-noqa", "safe.py"])
    assert result.exit_code == 2
    assert "--add-noqa cannot be combined with --fix" in result.stderr


def test_fixable_hint_counts_safe_and_unsafe(work: Path) -> None:
    lines = cli(["check", "mixed.py"]).stdout.splitlines()
    assert "1 fixable with `--fix` (1 more with `--fix --unsafe-fixes`)." in lines
    lines = cli(["check", "--unsafe-fixes", "mixed.py"]).stdout.splitlines()
    assert "2 fixable with `--fix --unsafe-fixes`." in lines
    assert cli(["check", "--unsafe-fixes", "mixed.py"]).exit_code == 1


# -- the fixture tree: after --fix, only findings without a fix are left --------------------------

FIXED_FOLDERS = ("DL206", "DL207", "DL501", "DL502", "DL503", "DL504", "DL604")


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_fix_then_check_leaves_only_unfixable_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unsafe: bool
) -> None:
    for folder in FIXED_FOLDERS:
        shutil.copytree(FIXTURES / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    flags = ["--select", "ALL", "--jobs", "1"] + (["--unsafe-fixes"] if unsafe else [])
    before = json.loads(cli(["check", "--format", "json", *flags, "."]).stdout)
    fixable = [f for f in before if f["fix"] and (unsafe or f["fix"]["applicability"] == "safe")]
    assert fixable, "the fixture tree has fixable findings"
    result = cli(["check", "--fix", "--format", "json", *flags, "."])
    assert result.exit_code == 1
    after = json.loads(result.stdout)
    assert after == json.loads(cli(["check", "--format", "json", *flags, "."]).stdout)
    left = [f for f in after if f["fix"] and (unsafe or f["fix"]["applicability"] == "safe")]
    assert left == []
    assert len(after) == len(before) - len(fixable)
    for path in tmp_path.rglob("*.py"):
        assert parse_error(path.read_text(encoding="utf-8")) is None, path
    again = cli(["check", "--fix-only", *flags, "."])
    assert again.stdout == "No fixes applied.\n"


def test_applicable_matches_the_json_fix_field() -> None:
    assert not applicable(None, unsafe=True)


def test_fix_in_a_file_whose_indentation_libcst_cannot_read_as_written(work: Path) -> None:
    """A tab inside an indentation (valid Python, rewritten as spaces for LibCST): the fix
    edits the text as written, tabs included, and a suppression on such a line still holds."""
    source = (
        "import torch\n\n\n"
        "@torch.compile(fullgraph=True)\n"
        "def f(x, n: int):\n"
        "    for i in range(n):\n"
        '\t    print("hi", x)\n'
        '\t    torch.save(x, "f")  # distlint: ignore[DL104]\n'
        "    return x\n"
    )
    (work / "tabs.py").write_text(source)
    result = cli(["check", "--select", "DL104,DL001", "--format", "json", "tabs.py"])
    (finding,) = json.loads(result.stdout)
    assert (finding["code"], finding["range"]["start"]["column"]) == ("DL104", 6)
    assert cli(["check", "--select", "DL104", "--fix", "--unsafe-fixes", "tabs.py"]).exit_code == 0
    fixed = (work / "tabs.py").read_text()
    assert fixed == source.replace(
        '\t    print("hi", x)', '\t    if not torch.compiler.is_compiling(): print("hi", x)'
    )
    assert parse_error(fixed) is None
