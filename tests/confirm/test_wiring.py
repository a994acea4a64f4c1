"""Confirm mode wired into the real CLI, config and reporters (``distlint check --confirm``).

The torch tests run the fixtures' entry factories once: ``collect`` (the part that starts the
child processes) is memoized for the module, so the text, JSON and SARIF runs below each go
through the whole CLI but share one confirm run.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.confirm import run as confirm_run
from distlint.confirm import torch_available
from tests.sarif_validation import assert_valid_sarif

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "fixtures/confirm/entries.py:make_examples"
CHECKED = "fixtures/confirm/entries.py"
ENV = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
INSTALL = "pip install '.[confirm]'"


def cli(args: list[str]):
    return CliRunner().invoke(main, args, env=ENV)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- check --confirm end to end (torch) -----------------------------------------------------------

_COLLECTED: dict[tuple[str, ...], confirm_run.Collected] = {}


@pytest.fixture
def confirm_check(monkeypatch: pytest.MonkeyPatch):
    """``distlint check --confirm --confirm-entry ENTRY fixtures/confirm/entries.py ARGS``."""
    real_collect = confirm_run.collect

    def collect_once(targets, settings, **kwargs):
        key = tuple(t.name for t in targets)
        if key not in _COLLECTED:
            _COLLECTED[key] = real_collect(targets, settings, **kwargs)
        return _COLLECTED[key]

    monkeypatch.setattr(confirm_run, "collect", collect_once)
    monkeypatch.chdir(ROOT)

    def invoke(*args: str):
        base = ["check", "--jobs", "1", "--confirm", "--confirm-entry", ENTRY, CHECKED]
        return cli([*base, *args])

    return invoke


@pytest.mark.torch
@pytest.mark.skipif(not torch_available(), reason="needs torch")
def test_check_confirm_tags_text_output(confirm_check) -> None:
    result = confirm_check("--no-show-source")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    branch = next(line for line in lines if line.startswith(f"{CHECKED}:13:8: DL101"))
    assert "[warning] [confirmed]" in branch
    assert any(
        line.startswith(f"{CHECKED}:21:20: DL102") and "[not-reached]" in line for line in lines
    )
    assert any(f"{CHECKED}:27:" in line and " DL901 " in line for line in lines)
    assert any(f"{CHECKED}:41:" in line and " DL902 " in line for line in lines)
    (summary,) = [line for line in lines if line.startswith("Confirm: ")]
    for part in ("1 target", "roots compiled", "graphs", "breaks", "confirmed", "not observed"):
        assert part in summary
    assert "not reached" in summary


@pytest.mark.torch
@pytest.mark.skipif(not torch_available(), reason="needs torch")
def test_check_confirm_json_carries_properties(confirm_check) -> None:
    result = confirm_check("--format", "json")
    assert result.exit_code == 1, result.output
    rows = json.loads(result.stdout)
    found = {(r["code"], r["range"]["start"]["line"]): r for r in rows}
    branch = found[("DL101", 13)]["properties"]
    assert branch["confirmation"] == "confirmed"
    assert branch["gbId"] == "GB0170"
    assert found[("DL102", 21)]["properties"]["confirmation"] == "not-reached"
    assert found[("DL901", 27)]["properties"]["gbId"] == "GB0811"
    assert found[("DL902", 41)]["properties"]["confirmation"] == "confirmed"


@pytest.mark.torch
@pytest.mark.skipif(not torch_available(), reason="needs torch")
def test_check_confirm_sarif_is_valid_with_two_invocations(confirm_check, tmp_path) -> None:
    sarif_path = tmp_path / "out.sarif"
    result = confirm_check("--format", "sarif", "--sarif-output", str(sarif_path))
    assert result.exit_code == 1, result.output
    assert sarif_path.read_text(encoding="utf-8") == result.stdout
    assert_valid_sarif(result.stdout)
    (run,) = json.loads(result.stdout)["runs"]
    static, confirm = run["invocations"]
    assert static["executionSuccessful"] is True
    assert confirm["executionSuccessful"] is True
    stats = confirm["properties"]["confirm"]
    assert stats["confirmed"] >= 2 and stats["notReached"] >= 1 and stats["observedOnly"] == 2
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    results = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]): r
        for r in run["results"]
    }
    assert {"DL901", "DL902"} <= set(rules)
    branch = results[("DL101", 13)]
    assert branch["properties"]["confirmation"] == "confirmed"
    assert branch["properties"]["gbId"] == "GB0170"
    assert rules[branch["ruleIndex"]] == "DL101"
    assert results[("DL901", 27)]["properties"]["gbId"] == "GB0811"


def test_check_without_confirm_runs_nothing(monkeypatch, tmp_path) -> None:
    """Confirm mode is never on by default: no child, no properties, no summary, one invocation."""

    def boom(*args, **kwargs):
        raise AssertionError("confirm ran without --confirm")

    monkeypatch.setattr(confirm_run, "collect", boom)
    monkeypatch.chdir(ROOT)
    result = cli(["check", "--jobs", "1", "--format", "json", CHECKED])
    assert result.exit_code == 1, result.output
    assert all("properties" not in row for row in json.loads(result.stdout))
    text = cli(["check", "--jobs", "1", CHECKED])
    assert "Confirm:" not in text.stdout and "[confirmed]" not in text.stdout
    sarif = cli(["check", "--jobs", "1", "--format", "sarif", CHECKED])
    assert_valid_sarif(sarif.stdout)
    assert len(json.loads(sarif.stdout)["runs"][0]["invocations"]) == 1


def test_pre_commit_hook_and_language_server_never_confirm() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "distlint check" in hooks and "confirm" not in hooks
    for path in (ROOT / "distlint" / "lsp").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "distlint.confirm" not in source and "--confirm" not in source, path


# -- [tool.distlint.confirm] validation ------------------------------------------------------------


BAD_TABLES = [
    ('[tool.distlint.confirm]\ntimeout = "fast"\n', "timeout", "must be a number"),
    ("[tool.distlint.confirm]\nentries = 3\n", "entries", "must be a list of strings"),
    ('[tool.distlint.confirm]\nentries = ["no_colon"]\n', "entries", "must look like"),
    ('[tool.distlint.confirm]\nentries = [":make"]\n', "entries", "must look like"),
    ("[tool.distlint.confirm]\nmemory-limit = 1.5\n", "memory-limit", "must be an integer"),
    ("[tool.distlint.confirm]\ntimeout = 0\n", "timeout", "must be positive"),
    ("[tool.distlint.confirm]\nmap-cuda-to-cpu = 1\n", "map-cuda-to-cpu", "must be a bool"),
    ("[tool.distlint.confirm]\ntimeuot = 5\n", "timeuot", "did you mean 'timeout'?"),
    ("[tool.distlint]\nconfirm = 3\n", None, "[tool.distlint.confirm] must be a table"),
]


@pytest.mark.parametrize(("toml", "key", "says"), BAD_TABLES)
@pytest.mark.parametrize("confirm", [False, True], ids=["check", "check--confirm"])
def test_bad_confirm_table_exits_2_naming_file_and_key(
    monkeypatch, tmp_path: Path, toml: str, key: str | None, says: str, confirm: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    config = write(tmp_path / "pyproject.toml", toml)
    write(tmp_path / "m.py", "x = 1\n")
    extra = ["--confirm", "--confirm-entry", "m:make"] if confirm else []
    result = cli(["check", "--jobs", "1", *extra, "m.py"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""  # nothing checked, nothing run
    assert result.stderr.startswith("distlint: configuration error: ")
    assert str(config) in result.stderr
    if key is not None:
        assert f"'{key}' in [tool.distlint.confirm]" in result.stderr
    assert says in result.stderr


def test_bad_confirm_table_in_distlint_toml(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    config = write(tmp_path / "distlint.toml", '[confirm]\nbackend = ["eager"]\n')
    write(tmp_path / "m.py", "x = 1\n")
    result = cli(["check", "m.py"])
    assert result.exit_code == 2
    assert f"{config}: key 'backend' in [confirm] must be a str" in result.stderr


def test_good_confirm_table_is_shown_and_does_not_run(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path / "pyproject.toml",
        '[tool.distlint.confirm]\nentries = ["pkg.mod:make", "src/x.py:make"]\ntimeout = 30\n',
    )
    write(tmp_path / "m.py", "x = 1\n")
    assert cli(["check", "m.py"]).exit_code == 0
    shown = json.loads(cli(["check", "--show-settings", "m.py"]).stdout)
    assert shown["confirm"] == {"entries": ["pkg.mod:make", "src/x.py:make"], "timeout": 30}


# -- without torch ---------------------------------------------------------------------------------


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide torch from ``importlib.util.find_spec`` (what the availability check asks)."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert not torch_available()


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--confirm", "--confirm-entry", "pkg.mod:make", "m.py"],
        ["check", "--confirm", "--format", "sarif", "m.py"],
        ["confirm", "train.py", "--", "--lr", "0.1"],
    ],
    ids=["check--confirm", "sarif", "confirm-script"],
)
def test_confirm_without_torch_exits_2_with_install_hint(
    no_torch, monkeypatch, tmp_path: Path, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "m.py", "x = 1\n")
    write(tmp_path / "train.py", "print('train')\n")
    result = cli(args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "needs torch" in result.stderr and INSTALL in result.stderr


def test_check_without_confirm_needs_no_torch(no_torch, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "m.py", "x = 1\n")
    result = cli(["check", "m.py"])
    assert result.exit_code == 0, result.output
    assert INSTALL not in result.output


# -- a target that fails -----------------------------------------------------------------------


def test_failed_target_exits_2_and_is_a_sarif_notification(monkeypatch, tmp_path: Path) -> None:
    """No child is started: ``collect`` reports a target that timed out."""
    from distlint.confirm import cli as confirm_cli
    from distlint.confirm.match import ConfirmRun, TargetOutcome

    def timed_out(targets, settings, **kwargs):
        outcome = TargetOutcome(
            name=targets[0].name, seconds=5.0, status="timeout", message="killed after 5 s"
        )
        return confirm_run.Collected(run=ConfirmRun(targets=[outcome]))

    monkeypatch.setattr(confirm_cli, "torch_available", lambda: True)
    monkeypatch.setattr(confirm_run, "collect", timed_out)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "m.py", "x = 1\n")
    result = cli(["check", "--confirm", "--confirm-entry", "pkg.mod:make", "-q", "m.py"])
    assert result.exit_code == 2, result.output
    assert "confirm target pkg.mod:make: timeout: killed after 5 s" in result.stderr
    sarif = cli(["check", "--confirm", "--confirm-entry", "pkg.mod:make", "--format", "sarif"])
    assert sarif.exit_code == 2
    assert_valid_sarif(sarif.stdout)
    static, confirm = json.loads(sarif.stdout)["runs"][0]["invocations"]
    assert static["executionSuccessful"] is True
    assert confirm["executionSuccessful"] is False
    (note,) = confirm["toolExecutionNotifications"]
    assert "pkg.mod:make" in note["message"]["text"]
    text = cli(["check", "--confirm", "--confirm-entry", "pkg.mod:make", "m.py"])
    assert "Confirm: 1 target, 0 roots compiled" in text.stdout
