"""Configuration: ``[tool.distlint]`` / ``distlint.toml``, nearest-config discovery, validation
(exit 2 naming file and key), per-file-ignores, ``--config`` and ``--show-settings``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.config.settings import (
    CliOverrides,
    Config,
    ConfigError,
    ConfigResolver,
    FolderMemo,
    load_config_file,
    settings_for,
)
from distlint.knowledge.torch_tables import available_versions

BOTH_SRC = """\
import torch
import torch.distributed as dist


@torch.compile
def step(x):
    dist.all_gather_object([None], x)
    return x


g = torch.compile(print, backend="nvfuser")
"""


def cli(args: list[str], **kwargs):
    env = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
    return CliRunner().invoke(main, args, env=env, **kwargs)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def found(args: list[str]) -> set[tuple[str, str]]:
    """(path, code) pairs reported by ``distlint check --format json ARGS``."""
    result = cli(["check", "--jobs", "1", "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return {(f["path"], f["code"]) for f in json.loads(result.stdout)}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- where settings come from ----------------------------------------------------------------------


def test_no_config_uses_defaults(project: Path) -> None:
    write(project / "a.py", BOTH_SRC)
    assert found(["a.py"]) == {("a.py", "DL203"), ("a.py", "DL502")}


def test_pyproject_tool_distlint_table(project: Path) -> None:
    write(
        project / "pyproject.toml", '[project]\nname = "x"\n\n[tool.distlint]\nignore = ["DL203"]\n'
    )
    write(project / "a.py", BOTH_SRC)
    assert found(["a.py"]) == {("a.py", "DL502")}


def test_distlint_toml_top_level_keys(project: Path) -> None:
    write(project / "distlint.toml", 'ignore = ["DL502"]\n')
    write(project / "a.py", BOTH_SRC)
    assert found(["a.py"]) == {("a.py", "DL203")}


def test_distlint_toml_wins_over_pyproject_in_the_same_directory(project: Path) -> None:
    write(project / "pyproject.toml", '[tool.distlint]\nignore = ["DL502"]\n')
    write(project / "distlint.toml", 'ignore = ["DL203"]\n')
    write(project / "a.py", BOTH_SRC)
    assert found(["a.py"]) == {("a.py", "DL502")}


def test_nearest_config_per_file_in_one_run(project: Path) -> None:
    write(project / "distlint.toml", 'select = ["DL0"]\n')
    write(project / "one" / "pyproject.toml", '[tool.distlint]\nignore = ["DL203"]\n')
    write(project / "two" / "distlint.toml", 'ignore = ["DL502"]\n')
    for folder in ("one", "two", "one/deep/er", "three"):
        write(project / folder / "m.py", BOTH_SRC)
    assert found(["."]) == {
        ("one/m.py", "DL502"),
        ("one/deep/er/m.py", "DL502"),
        ("two/m.py", "DL203"),
    }


def test_pyproject_without_the_table_is_skipped(project: Path) -> None:
    write(project / "distlint.toml", 'ignore = ["DL203"]\n')
    write(project / "sub" / "pyproject.toml", '[project]\nname = "sub"\n')
    write(project / "sub" / "m.py", BOTH_SRC)
    assert found(["sub/m.py"]) == {("sub/m.py", "DL502")}


def test_pyproject_without_the_table_does_not_hide_distlint_toml_beside_it(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.ruff]\nline-length = 80\n")
    write(project / "distlint.toml", 'ignore = ["DL203"]\n')
    write(project / "m.py", BOTH_SRC)
    assert found(["m.py"]) == {("m.py", "DL502")}


def test_config_file_option_applies_to_every_path(project: Path) -> None:
    write(project / "shared" / "strict.toml", 'select = ["DL203"]\n')
    write(project / "one" / "distlint.toml", 'ignore = ["DL203"]\n')
    write(project / "two" / "pyproject.toml", '[tool.distlint]\nselect = ["DL5"]\n')
    write(project / "one" / "m.py", BOTH_SRC)
    write(project / "two" / "m.py", BOTH_SRC)
    assert found(["--config", "shared/strict.toml", "one", "two"]) == {
        ("one/m.py", "DL203"),
        ("two/m.py", "DL203"),
    }


def test_config_file_option_accepts_a_pyproject(project: Path) -> None:
    write(project / "cfg" / "pyproject.toml", '[tool.distlint]\nignore = ["DL502"]\n')
    write(project / "m.py", BOTH_SRC)
    assert found(["--config", "cfg/pyproject.toml", "m.py"]) == {("m.py", "DL203")}


def test_missing_config_file_option_is_exit_2(project: Path) -> None:
    write(project / "m.py", BOTH_SRC)
    result = cli(["check", "--config", "nope.toml", "m.py"])
    assert result.exit_code == 2
    assert "nope.toml" in result.stderr
    assert "Traceback" not in result.output


# -- validation ------------------------------------------------------------------------------------


def config_error(project: Path, name: str, text: str) -> str:
    """Run the CLI with this config; assert exit 2 and return stderr."""
    write(project / name, text)
    write(project / "m.py", BOTH_SRC)
    result = cli(["check", "m.py"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.stdout == ""
    return result.stderr


def test_unknown_key_names_file_key_and_suggestion(project: Path) -> None:
    err = config_error(project, "pyproject.toml", '[tool.distlint]\nselct = ["DL2"]\n')
    assert str(project / "pyproject.toml") in err
    assert "selct" in err
    assert "did you mean 'select'" in err


def test_unknown_key_in_distlint_toml(project: Path) -> None:
    err = config_error(project, "distlint.toml", 'extend-ignore = ["DL2"]\n')
    assert "distlint.toml" in err
    assert "extend-ignore" in err


def test_unknown_key_in_an_unrelated_subproject_is_not_reported(project: Path) -> None:
    write(project / "other" / "distlint.toml", "bogus = 1\n")
    write(project / "m.py", BOTH_SRC)
    assert cli(["check", "m.py"]).exit_code == 1


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('select = "DL2"\n', "select"),
        ("ignore = [203]\n", "ignore"),
        ("extend-select = {DL2 = true}\n", "extend-select"),
        ('per-file-ignores = ["DL2"]\n', "per-file-ignores"),
        ('per-file-ignores = {"tests/**" = "DL2"}\n', "per-file-ignores"),
        ("torch-version = 2.13\n", "torch-version"),
        ('exclude = "build"\n', "exclude"),
    ],
)
def test_wrong_types_name_file_and_key(project: Path, text: str, key: str) -> None:
    err = config_error(project, "distlint.toml", text)
    assert "distlint.toml" in err
    assert f"'{key}'" in err


def test_wrong_type_in_pyproject(project: Path) -> None:
    err = config_error(project, "pyproject.toml", '[tool.distlint]\nselect = "DL2"\n')
    assert "pyproject.toml" in err
    assert "'select'" in err
    assert "list of strings" in err


def test_tool_distlint_that_is_not_a_table(project: Path) -> None:
    err = config_error(project, "pyproject.toml", '[tool]\ndistlint = "on"\n')
    assert "pyproject.toml" in err


@pytest.mark.parametrize("selector", ["DL8", "DL999", "XYZ", "E501", "DL2030"])
def test_unknown_selector_in_config(project: Path, selector: str) -> None:
    err = config_error(project, "distlint.toml", f'ignore = ["{selector}"]\n')
    assert "distlint.toml" in err
    assert selector in err


def test_unknown_selector_in_per_file_ignores(project: Path) -> None:
    err = config_error(project, "distlint.toml", '[per-file-ignores]\n"tests/**" = ["DL77"]\n')
    assert "DL77" in err
    assert "tests/**" in err


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_selector_on_the_cli(project: Path, option: str) -> None:
    write(project / "m.py", BOTH_SRC)
    result = cli(["check", option, "DL8", "m.py"])
    assert result.exit_code == 2
    assert "DL8" in result.output
    assert "Traceback" not in result.output


def test_close_selector_gets_a_suggestion(project: Path) -> None:
    err = config_error(project, "distlint.toml", 'ignore = ["DL230"]\n')
    assert "DL203" in err


def test_invalid_toml_names_the_file(project: Path) -> None:
    err = config_error(project, "pyproject.toml", "[tool.distlint\nselect = [\n")
    assert str(project / "pyproject.toml") in err
    assert "TOML" in err


def test_config_that_is_not_utf8(project: Path) -> None:
    (project / "distlint.toml").write_bytes(b'ignore = ["DL2\xff"]\n')
    write(project / "m.py", BOTH_SRC)
    result = cli(["check", "m.py"])
    assert result.exit_code == 2
    assert "distlint.toml" in result.stderr


def test_unknown_torch_version_lists_supported_versions(project: Path) -> None:
    err = config_error(project, "distlint.toml", 'torch-version = "9.9"\n')
    assert "distlint.toml" in err
    assert "torch-version" in err
    assert "9.9" in err
    versions = available_versions()
    assert versions
    for version in versions:
        assert version in err


def test_known_torch_version_is_accepted(project: Path) -> None:
    version = available_versions()[-1]
    write(project / "distlint.toml", f'torch-version = "{version}"\n')
    write(project / "m.py", BOTH_SRC)
    assert found(["m.py"]) == {("m.py", "DL203"), ("m.py", "DL502")}


def test_config_errors_raise_config_error_in_the_api(tmp_path: Path) -> None:
    path = write(tmp_path / "distlint.toml", 'selct = ["DL2"]\n')
    with pytest.raises(ConfigError, match="did you mean 'select'"):
        load_config_file(path)


# -- per-file-ignores ------------------------------------------------------------------------------


def test_per_file_ignores_globs(project: Path) -> None:
    write(
        project / "pyproject.toml",
        '[tool.distlint.per-file-ignores]\n"tests/**" = ["DL2"]\n"*_gen.py" = ["ALL"]\n',
    )
    for name in ("tests/test_a.py", "tests/deep/test_b.py", "src/m.py", "src/m_gen.py", "x_gen.py"):
        write(project / name, BOTH_SRC)
    assert found(["."]) == {
        ("tests/test_a.py", "DL502"),
        ("tests/deep/test_b.py", "DL502"),
        ("src/m.py", "DL203"),
        ("src/m.py", "DL502"),
    }


def test_per_file_ignores_are_anchored_at_the_config_directory(project: Path) -> None:
    write(project / "sub" / "distlint.toml", '[per-file-ignores]\n"tests/**" = ["DL5"]\n')
    write(project / "sub" / "tests" / "t.py", BOTH_SRC)
    write(project / "tests" / "t.py", BOTH_SRC)
    assert found(["."]) == {
        ("sub/tests/t.py", "DL203"),
        ("tests/t.py", "DL203"),
        ("tests/t.py", "DL502"),
    }


def test_per_file_ignores_all_keeps_dl000(project: Path) -> None:
    write(project / "distlint.toml", '[per-file-ignores]\n"*_gen.py" = ["ALL"]\n')
    write(project / "broken_gen.py", "def f(:\n")
    assert found(["."]) == {("broken_gen.py", "DL000")}


# -- show-settings and the API ---------------------------------------------------------------------


def test_show_settings_prints_resolved_settings_as_json(project: Path) -> None:
    write(
        project / "pyproject.toml",
        '[tool.distlint]\nignore = ["DL203"]\nextend-select = ["DL001"]\n'
        'extend-exclude = ["gen"]\n',
    )
    write(project / "m.py", BOTH_SRC)
    result = cli(["check", "--show-settings", "m.py"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["config-file"] == str(project / "pyproject.toml")
    assert shown["ignore"] == ["DL203"]
    assert shown["extend-select"] == ["DL001"]
    assert shown["extend-exclude"] == ["gen"]
    assert "DL203" not in shown["enabled-rules"]
    assert {"DL000", "DL001", "DL502"} <= set(shown["enabled-rules"])


def test_show_settings_includes_cli_overrides(project: Path) -> None:
    write(project / "m.py", BOTH_SRC)
    result = cli(["check", "--show-settings", "--select", "DL502", "m.py"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["enabled-rules"] == ["DL000", "DL502"]


def test_show_settings_without_config(project: Path) -> None:
    write(project / "m.py", BOTH_SRC)
    shown = json.loads(cli(["check", "--show-settings", "m.py"]).stdout)
    assert shown["config-file"] is None
    assert "DL001" not in shown["enabled-rules"]
    assert {"DL000", "DL203", "DL502"} <= set(shown["enabled-rules"])


def test_settings_for_combines_config_cli_and_per_file_ignores(tmp_path: Path) -> None:
    write(tmp_path / "distlint.toml", 'ignore = ["DL5"]\n[per-file-ignores]\n"t_*.py" = ["DL2"]\n')
    config = ConfigResolver().for_path(tmp_path / "t_x.py")
    assert config.path == tmp_path / "distlint.toml"
    plain = settings_for(config, CliOverrides(), tmp_path / "m.py")
    assert "DL203" in plain.enabled and "DL502" not in plain.enabled
    ignored = settings_for(config, CliOverrides(), tmp_path / "t_x.py")
    assert {"DL000", "DL101"} <= ignored.enabled
    assert not [code for code in ignored.enabled if code.startswith(("DL2", "DL5"))]
    cli_on = settings_for(config, CliOverrides(extend_select=("DL502",)), tmp_path / "m.py")
    assert "DL502" in cli_on.enabled


def test_default_config_has_no_path() -> None:
    assert Config().path is None


def test_settings_for_a_configuration_read_elsewhere_loads_its_plugins(tmp_path: Path) -> None:
    """An LSP analysis process gets configurations the server already read: the plugin's codes
    must be in the catalog before ``extend-select = ["XYZ"]`` is resolved, or XYZ001 is off."""
    from dataclasses import replace

    from distlint.config.settings import CliOverrides, Config, settings_for
    from distlint.rules.registry import all_rules

    plugin = Path(__file__).resolve().parents[2] / "examples" / "plugin" / "lint_rules"
    assert "XYZ001" not in all_rules()
    config = replace(Config(), plugins=(str(plugin),), extend_select=("XYZ",))
    settings = settings_for(config, CliOverrides(), tmp_path / "train.py")
    assert "XYZ001" in settings.enabled


# -- settings shared by the files of a folder ------------------------------------------------------


def _settings_tree(root: Path) -> list[Path]:
    (root / "pyproject.toml").write_text(
        "[tool.distlint]\nextend-select = ['DL901']\n"
        "[tool.distlint.per-file-ignores]\n'pkg/m.py' = ['DL1']\n'*_test.py' = ['DL2', 'DL5']\n"
        "'sub/**' = ['DL4']\n"
    )
    (root / "sub").mkdir()
    (root / "sub/distlint.toml").write_text(
        "ignore = ['DL3']\n[per-file-ignores]\n'x.py' = ['ALL']\n"
    )
    (root / "sub/torch").mkdir()
    files = []
    for name in ["pkg/m.py", "pkg/n.py", "pkg/a_test.py", "pkg/b_test.py", "top.py", "sub/x.py"]:
        files.append(root / name)
        files.append(root / name.replace(".py", "2.pyi"))
    files += [root / "sub/y.py", root / "sub/torch", root / "sub/deep/x.py", root / "sub/deep/z.py"]
    return files


def test_settings_shared_per_folder_are_each_files_own(tmp_path: Path) -> None:
    """A FolderMemo shares settings between files of one folder only where the per-file-ignores
    that match them are the same; each file gets what it gets asked alone."""
    files = _settings_tree(tmp_path)
    memo = FolderMemo()
    shared = [ConfigResolver().file_settings(p, CliOverrides(), memo) for p in files]
    alone = [ConfigResolver().file_settings(p, CliOverrides()) for p in files]
    assert shared == alone
    m, n = shared[0], shared[2]
    assert "DL101" not in m.enabled and "DL101" in n.enabled  # same folder, m.py ignores DL1
    assert shared[4] == shared[6] and "DL201" not in shared[4].enabled  # a_test.py, b_test.py
    assert len({id(s) for s in shared[2::2][:3]}) == 2  # n.py shares nothing with the tests


def test_settings_shared_per_folder_see_a_plugin_loaded_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings made before a plugin joined the catalog are not handed out after it."""
    import distlint.rules.registry as registry

    files = _settings_tree(tmp_path)
    memo = FolderMemo()
    resolver = ConfigResolver()
    before = resolver.file_settings(files[2], CliOverrides(), memo)
    catalog = dict(registry.rule_catalog())
    catalog["DL998"] = registry.RuleInfo("DL998", "new-rule", True, "file", None)
    monkeypatch.setattr(registry, "rule_catalog", lambda: catalog)
    after = resolver.file_settings(files[3], CliOverrides(), memo)  # pkg/n2.pyi, same folder
    assert "DL998" not in before.enabled and "DL998" in after.enabled


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('exclude = ["[z-a]"]\n', "exclude"),
        ('extend-exclude = ["build/[9-0]*"]\n', "extend-exclude"),
        ('[per-file-ignores]\n"a[z-a].py" = ["DL101"]\n', "per-file-ignores"),
    ],
)
def test_an_invalid_glob_is_a_configuration_error(project: Path, text: str, key: str) -> None:
    """A bracket range the pattern language refuses ended the run as an internal error."""
    err = config_error(project, "distlint.toml", text)
    assert f"key '{key}'" in err and "invalid pattern" in err and "bad character range" in err
