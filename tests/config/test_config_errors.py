"""Help at the point of use: every configuration problem of a run at once (file, key, closest
valid key), and a suggestion for every mistyped rule selector."""

from __future__ import annotations

from pathlib import Path

import pytest

from distlint.config.selection import suggest_code
from distlint.config.settings import ConfigError, load_config_file
from distlint.rules.registry import all_rules
from tests.test_cli import cli

KNOWN = tuple(all_rules())


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("DL230", "DL203"),  # swapped digits
        ("DL2011", "DL201"),  # one digit too many
        ("DL1O1", "DL101"),  # letter O for zero
        ("DL9999", "DL902"),  # nothing close: the nearest code of the family
        ("DL600", "DL601"),
        ("DL7", "DL6"),  # a prefix gets a prefix
    ],
)
def test_every_mistyped_selector_gets_a_suggestion(typed: str, meant: str) -> None:
    assert suggest_code(typed, KNOWN) == meant


def test_only_selectors_of_a_known_prefix_get_suggestions() -> None:
    assert suggest_code("E501", KNOWN) is None
    assert suggest_code("XYZ010", KNOWN) is None


def test_plugin_codes_get_suggestions_within_their_prefix() -> None:
    """A plugin's code in the catalog (XYZ001) is offered for its own prefix and does not break
    the suggestion for a DL code."""
    known = [*KNOWN, "XYZ001"]
    assert suggest_code("XYZ010", known) == "XYZ001"
    assert suggest_code("XYZ0001", known) == "XYZ001"
    assert suggest_code("DL9999", known) == "DL902"


def test_cli_selector_suggestion() -> None:
    result = cli(["check", "--select", "DL9999", "x.py"])
    assert result.exit_code == 2
    assert result.stderr == (
        "distlint: configuration error: --select: unknown rule selector 'DL9999'; "
        "did you mean DL902?\n"
    )
    assert result.stdout == ""


TABLE = """\
[tool.distlint]
selct = ["DL2"]
ignore = ["DL2O3"]
torch-version = 2
per-file-ignores = { "a.py" = ["DL230", "DL1"], "b.py" = "DL1" }
"""


def test_every_problem_of_a_file_in_one_error(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(TABLE)
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    where = f"{path}: "
    assert caught.value.problems == (
        f"{where}unknown key 'selct' in [tool.distlint]; did you mean 'select'? (valid keys: "
        "select, extend-select, ignore, exclude, extend-exclude, compile-wrappers, "
        "collective-wrappers, rank-predicates, per-file-ignores, torch-version, baseline, "
        "file-timeout, project-timeout, confirm, plugins)",
        f"{where}key 'torch-version' in [tool.distlint] must be a string such as \"2.13\", "
        "got int 2",
        f"{where}key 'per-file-ignores' in [tool.distlint], entry 'a.py': unknown rule selector "
        "'DL230'; did you mean 'DL203'?",
        f"{where}key 'per-file-ignores' in [tool.distlint], entry 'b.py', must be a list of "
        "strings, got str 'DL1'",
        f"{where}key 'ignore' in [tool.distlint]: unknown rule selector 'DL2O3'; did you mean "
        "'DL203'?",
    )


def test_every_broken_config_file_in_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.py").write_text("x = 1\n")
    (tmp_path / "a" / "pyproject.toml").write_text(TABLE)
    (tmp_path / "b" / "distlint.toml").write_text('extend-selct = ["DL1"]\n')
    result = cli(["check", "."])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 6
    assert all(line.startswith("distlint: configuration error: ") for line in lines)
    assert [line.split(": ")[2] for line in lines] == [
        str(tmp_path / "a" / "pyproject.toml")
    ] * 5 + [str(tmp_path / "b" / "distlint.toml")]
    assert "did you mean 'extend-select'?" in lines[-1]
    assert result.stdout == ""  # nothing was checked
    shown = cli(["check", "--show-settings", "a"])
    assert shown.exit_code == 2 and len(shown.stderr.splitlines()) == 5


def test_bad_command_line_selectors_reported_with_the_config_files_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("x = 1\n")
    (tmp_path / "distlint.toml").write_text('extend-selct = ["DL1"]\n')
    args = ["--select", "DL9999,DL1", "--ignore", "DL2O3", "--extend-select", "XX1"]
    for extra in ([], ["--show-settings"]):
        result = cli(["check", *args, *extra, "x.py"])
        assert result.exit_code == 2
        assert result.stdout == ""  # nothing was checked
        lines = result.stderr.splitlines()
        assert all(line.startswith("distlint: configuration error: ") for line in lines)
        # the config file's problems first, then the command line's, in option order
        assert [line.split(": ", 2)[2] for line in lines] == [
            f"{tmp_path / 'distlint.toml'}: unknown key 'extend-selct' in top level; did you mean "
            "'extend-select'? (valid keys: select, extend-select, ignore, exclude, "
            "extend-exclude, compile-wrappers, collective-wrappers, rank-predicates, "
            "per-file-ignores, torch-version, baseline, file-timeout, project-timeout, confirm, "
            "plugins)",
            "--select: unknown rule selector 'DL9999'; did you mean DL902?",
            "--extend-select: unknown rule selector 'XX1'",
            "--ignore: unknown rule selector 'DL2O3'; did you mean DL203?",
        ], result.stderr


def test_good_selectors_beside_a_bad_one_run_nothing(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("import torch\n")
    result = cli(["check", "--select", "DL5,DL9999", str(tmp_path / "x.py")])
    assert result.exit_code == 2
    assert result.stdout == ""
