"""Baselines: ``check --baseline FILE`` writes today's findings; ``baseline = "FILE"`` in the
configuration reports only new ones, matched by fingerprint (moved code stays matched)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import cli

BAD = (
    "import torch\n\n"
    'a = torch.compile(print, backend="nvfuser")\n'
    'b = torch.compile(print, backend="nvfuser")\n'
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(BAD)
    return tmp_path


def _adopt(project: Path) -> None:
    result = cli(["check", "--baseline", "distlint-baseline.json", "pkg"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "Wrote 2 findings to the baseline distlint-baseline.json.\n"
    (project / "pyproject.toml").write_text(
        '[tool.distlint]\nbaseline = "distlint-baseline.json"\n'
    )


def test_baseline_file_is_deterministic_and_has_no_line_dependent_key(project: Path) -> None:
    _adopt(project)
    data = json.loads((project / "distlint-baseline.json").read_text())
    assert data["version"] == 1 and data["tool"] == "distlint"
    assert [(f["code"], f["path"], f["line"]) for f in data["findings"]] == [
        ("DL502", "pkg/train.py", 3),
        ("DL502", "pkg/train.py", 4),
    ]
    first = (project / "distlint-baseline.json").read_text()
    cli(["check", "--baseline", "distlint-baseline.json", "pkg"])
    assert (project / "distlint-baseline.json").read_text() == first


def test_only_new_findings_are_reported(project: Path) -> None:
    _adopt(project)
    result = cli(["check", "pkg"])
    assert result.exit_code == 0
    assert result.stdout == (
        "2 findings in the baseline not shown.\nNo findings (1 file checked).\n"
    )
    (project / "pkg" / "train.py").write_text(BAD + 'c = torch.compile(print, mode="fast")\n')
    result = cli(["check", "--output-format", "concise", "pkg"])
    assert result.exit_code == 1
    assert [line.split(": DL")[0] for line in result.stdout.splitlines()[:1]] == [
        "pkg/train.py:5:31"
    ]


def test_moved_code_stays_matched_and_changed_code_is_new(project: Path) -> None:
    _adopt(project)
    moved = BAD.replace("import torch\n", "import torch\n\n\ndef unrelated():\n    return 1\n")
    (project / "pkg" / "train.py").write_text(moved)
    assert cli(["check", "pkg"]).exit_code == 0
    (project / "pkg" / "train.py").write_text(BAD.replace("a = torch", "a2 = torch"))
    result = cli(["check", "--output-format", "concise", "pkg"])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("pkg/train.py:3:35: DL502")
    assert "1 finding in the baseline not shown." in result.stdout


def test_identical_lines_are_counted(project: Path) -> None:
    (project / "pkg" / "train.py").write_text(BAD.replace("b = ", "a = "))
    _adopt(project)
    (project / "pkg" / "train.py").write_text(
        BAD.replace("b = ", "a = ") + 'a = torch.compile(print, backend="nvfuser")\n'
    )
    result = cli(["check", "--output-format", "concise", "pkg"])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("pkg/train.py:5:")  # the third copy


def test_paths_are_relative_to_the_baseline_not_the_working_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _adopt(project)
    monkeypatch.chdir(project / "pkg")
    result = cli(["check", "train.py"])
    assert result.exit_code == 0, result.stdout


def test_sarif_marks_results_new(project: Path) -> None:
    _adopt(project)
    (project / "pkg" / "train.py").write_text(BAD + 'c = torch.compile(print, mode="fast")\n')
    sarif = json.loads(cli(["check", "--format", "sarif", "pkg"]).stdout)
    results = sarif["runs"][0]["results"]
    assert [r["baselineState"] for r in results] == ["new"]
    (project / "pyproject.toml").unlink()
    sarif = json.loads(cli(["check", "--format", "sarif", "pkg"]).stdout)
    assert all("baselineState" not in r for r in sarif["runs"][0]["results"])


def test_missing_or_broken_baseline_is_an_error(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.distlint]\nbaseline = "nope.json"\n')
    result = cli(["check", "pkg"])
    assert result.exit_code == 2
    assert "nope.json: baseline file not found (write it with `distlint check --baseline" in (
        result.stderr
    )
    assert "Traceback" not in result.output
    (project / "nope.json").write_text("[1, 2]")
    result = cli(["check", "pkg"])
    assert result.exit_code == 2 and "not a distlint baseline" in result.stderr
    (project / "nope.json").write_text("{")
    assert "invalid JSON" in cli(["check", "pkg"]).stderr


def test_baseline_key_must_be_a_string(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.distlint]\nbaseline = 3\n")
    result = cli(["check", "pkg"])
    assert result.exit_code == 2
    assert "key 'baseline' in [tool.distlint] must be a file name" in result.stderr


def test_baseline_refuses_fix_only_modes(project: Path) -> None:
    result = cli(["check", "--diff", "--baseline", "b.json", "pkg"])
    assert result.exit_code == 2
    assert "--baseline cannot be combined" in result.stderr
