"""The confirm command-line layer on a stand-in ``check`` (no torch needed)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from distlint.confirm import cli as confirm_cli


def _group() -> tuple[click.Group, list[object]]:
    seen: list[object] = []

    @click.group()
    def main() -> None: ...

    @main.command()
    @click.argument("paths", nargs=-1)
    @click.option("--format", "fmt", default="text")
    @click.option("--config", "config_file", default=None)
    @confirm_cli.confirm_options
    def check(paths: tuple[str, ...], fmt: str, config_file: str | None, confirm: object) -> None:
        seen.append(confirm)

    confirm_cli.register(main, check)
    return main, seen


def test_without_torch_confirm_exits_2_with_an_install_hint(monkeypatch) -> None:
    monkeypatch.setattr(confirm_cli, "torch_available", lambda: False)
    main, _ = _group()
    result = CliRunner().invoke(main, ["check", "--confirm", "--confirm-entry", "a:b"])
    assert result.exit_code == 2
    assert "pip install '.[confirm]'" in result.output


def test_check_without_confirm_passes_none() -> None:
    main, seen = _group()
    assert CliRunner().invoke(main, ["check", "x.py"]).exit_code == 0
    assert seen == [None]


def test_confirm_needs_a_target(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(confirm_cli, "torch_available", lambda: True)
    monkeypatch.chdir(tmp_path)
    main, _ = _group()
    result = CliRunner().invoke(main, ["check", "--confirm"])
    assert result.exit_code == 2 and "nothing to run" in result.output


def test_confirm_script_passes_its_arguments(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(confirm_cli, "torch_available", lambda: True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.distlint.confirm]\nentries = ["pkg.mod:make"]\ntimeout = 7\n'
    )
    (tmp_path / "train.py").write_text("print('hi')\n")
    main, seen = _group()
    args = ["confirm", "train.py", "--world-size", "4", "--", "--lr", "0.1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (request,) = seen
    assert [t.kind for t in request.targets] == ["script"]  # config entries are not run
    assert request.targets[0].argv == ("--lr", "0.1")
    assert (request.settings.world_size, request.settings.timeout) == (4, 7.0)


def test_bad_confirm_table_exits_2(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(confirm_cli, "torch_available", lambda: True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.distlint.confirm]\nentries = 3\n")
    main, _ = _group()
    result = CliRunner().invoke(main, ["check", "--confirm"])
    assert result.exit_code == 2 and "must be a list of strings" in result.output


@pytest.mark.parametrize("entry", ["nocolon", ""])
def test_bad_entry_is_a_usage_error(monkeypatch, tmp_path: Path, entry: str) -> None:
    monkeypatch.setattr(confirm_cli, "torch_available", lambda: True)
    monkeypatch.chdir(tmp_path)
    main, _ = _group()
    result = CliRunner().invoke(main, ["check", "--confirm", "--confirm-entry", entry])
    assert result.exit_code == 2
