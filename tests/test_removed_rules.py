"""A removed rule's code (distlint/rules/removed.py) wherever a code can be named: a one-line
warning that names the removal and what replaces it, the code dropped, never an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.config.settings import ConfigResolver, load_config_file
from distlint.rules.registry import all_rules, get_rule
from distlint.rules.removed import REMOVED_RULES, removed_rule

# a collective that DL201 reports, and one that used to be DL209's (now only in explain-ranks)
SOURCE = """\
import os

import torch.distributed as dist


def evaluate():
    if dist.get_rank() == 0:
        dist.barrier()


def resume(ckpt_dir):
    rank = dist.get_rank()
    if not os.path.exists(os.path.join(ckpt_dir, f"rank{rank}.pt")):
        return None
    dist.barrier()
"""
NOTICE = "DL209 (possibly-rank-divergent-collective) was removed in distlint 0.2.0"


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(*args: str) -> tuple[int, list[str], list[dict]]:
    """Exit code, the warning lines, and the findings (JSON) of ``distlint check ARGS``."""
    result = CliRunner().invoke(main, ["check", "--format", "json", *args])
    out = result.stdout
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    return result.exit_code, warnings, json.loads(out) if out.strip() else []


def test_the_table_names_what_replaces_each_removed_code() -> None:
    for code, removed in REMOVED_RULES.items():
        assert removed.code == code and get_rule(code) is None and code not in all_rules()
        assert "explain-ranks" in removed.instead
        assert removed_rule(code.lower()) is removed
        assert "\n" not in removed.notice()


@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
def test_a_command_line_option_warns_and_drops_the_code(project: Path, option: str) -> None:
    code, warnings, found = _check(option, "DL201,dl209", "train.py")
    assert code == (0 if option == "--ignore" else 1), warnings
    [warning] = warnings
    assert warning.startswith(f"distlint: warning: {option}: {NOTICE} and is ignored")
    assert "`distlint explain-ranks`" in warning
    codes = [f["code"] for f in found]
    assert codes == ([] if option == "--ignore" else ["DL201"])  # DL201 is not default-off


def test_select_of_the_removed_code_alone_selects_nothing(project: Path) -> None:
    code, warnings, found = _check("--select", "DL209", "train.py")
    assert (code, found) == (0, [])
    assert len(warnings) == 1


def test_select_all_no_longer_includes_it(project: Path) -> None:
    _, warnings, found = _check("--select", "ALL", "train.py")
    assert warnings == []
    assert {f["code"] for f in found} == {"DL201"}  # the `return` in resume is not reported
    assert [f["range"]["start"]["line"] for f in found] == [8]


def test_config_lists_warn_and_drop_the_code(project: Path) -> None:
    (project / "distlint.toml").write_text(
        'select = ["DL201", "DL209"]\nextend-select = ["dl209"]\nignore = ["DL209"]\n'
        '[per-file-ignores]\n"train.py" = ["DL209"]\n',
        encoding="utf-8",
    )
    config = load_config_file(project / "distlint.toml")
    assert (config.select, config.extend_select, config.ignore) == (("DL201",), (), ())
    assert config.per_file_ignores == (("train.py", ()),)
    code, warnings, found = _check("train.py")
    assert code == 1 and [f["code"] for f in found] == ["DL201"]
    where = [w.split(": ")[3] for w in warnings]  # distlint: warning: FILE: WHERE: notice
    assert where == [
        "key 'select' in top level",
        "key 'extend-select' in top level",
        "key 'ignore' in top level",
        "key 'per-file-ignores' in top level, entry 'train.py'",
    ]
    assert all(NOTICE in w for w in warnings)


def test_each_config_warning_is_shown_once(project: Path) -> None:
    (project / "distlint.toml").write_text('ignore = ["DL209"]\n', encoding="utf-8")
    (project / "other.py").write_text("x = 1\n", encoding="utf-8")
    _, warnings, _ = _check(".")
    assert len(warnings) == 1
    resolver = ConfigResolver()
    resolver.for_path(project / "train.py")
    assert len(resolver.warnings()) == 1


def test_show_settings_warns_too(project: Path) -> None:
    (project / "distlint.toml").write_text('extend-select = ["DL209"]\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--show-settings", "train.py"])
    assert result.exit_code == 0
    assert "DL209" not in json.loads(result.stdout)["enabled-rules"]
    assert NOTICE in result.stderr


def test_explain_commands_show_the_config_warning(project: Path) -> None:
    (project / "distlint.toml").write_text('ignore = ["DL209"]\n', encoding="utf-8")
    for command in ("explain-ranks", "explain-regions"):
        result = CliRunner().invoke(main, [command, "."])
        assert result.exit_code == 0, result.output
        assert NOTICE in result.stderr


def test_a_suppression_of_the_removed_code_is_named_by_dl001(project: Path) -> None:
    (project / "train.py").write_text(
        SOURCE.replace("        return None", "        return None  # noqa: DL209"),
        encoding="utf-8",
    )
    code, _, found = _check("--extend-select", "DL001", "train.py")
    assert code == 1
    [unused] = [f for f in found if f["code"] == "DL001"]
    assert unused["range"]["start"]["line"] == 14
    assert unused["message"].startswith(
        "Unused suppression: `DL209` names a rule removed in distlint 0.2.0 "
        "(`distlint explain-ranks` lists"
    )
    _, _, default = _check("train.py")  # DL001 off: the comment is simply inert
    assert [f["code"] for f in default] == ["DL201"]


def test_rule_command_prints_the_removal_page(project: Path) -> None:
    result = CliRunner().invoke(main, ["rule", "dl209"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# DL209 possibly-rank-divergent-collective\n")
    assert "**Removed in distlint 0.2.0.**" in result.output
    assert "16 were right and 169 wrong (precision 0.09)" in result.output
    assert "distlint explain-ranks" in result.output


def test_settings_built_from_overrides_that_name_it_select_nothing_for_it(project: Path) -> None:
    """The library path (no command line to drop the code first): no error, nothing enabled."""
    from distlint.config.settings import CliOverrides, Config, settings_for

    settings = settings_for(
        Config(), CliOverrides(select=("DL201", "DL209"), ignore=("DL209",)), project / "t.py"
    )
    assert settings.enabled == {"DL000", "DL201"}
