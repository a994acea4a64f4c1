"""Rule selection with Ruff's semantics: select replaces, extend-select adds, ignore removes,
the more specific selector wins, ignore wins a tie, ALL, and DL000 is always on."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.config.selection import enabled_codes, is_valid_selector
from distlint.config.settings import CliOverrides, Config, settings_for
from distlint.rules.registry import all_rules

RULES = {
    "DL000": True,
    "DL001": False,
    "DL201": True,
    "DL203": True,
    "DL301": False,
    "DL502": True,
}
DEFAULT_ON = {"DL000", "DL201", "DL203", "DL502"}


def enabled(select=None, extend=(), ignore=()) -> set[str]:
    return set(enabled_codes(RULES, select, extend, ignore))


def test_default_set_excludes_off_by_default_rules() -> None:
    assert enabled() == DEFAULT_ON


def test_select_replaces_the_default_set() -> None:
    assert enabled(select=["DL5"]) == {"DL000", "DL502"}
    assert enabled(select=["DL203"]) == {"DL000", "DL203"}


def test_select_can_turn_on_off_by_default_rules() -> None:
    assert enabled(select=["DL0"]) == {"DL000", "DL001"}
    assert enabled(select=["DL3"]) == {"DL000", "DL301"}


def test_empty_select_turns_everything_off_but_dl000() -> None:
    assert enabled(select=[]) == {"DL000"}


def test_extend_select_adds_to_the_default_set() -> None:
    assert enabled(extend=["DL001"]) == DEFAULT_ON | {"DL001"}
    assert enabled(extend=["DL3"]) == DEFAULT_ON | {"DL301"}


def test_extend_select_adds_to_select() -> None:
    assert enabled(select=["DL5"], extend=["DL203"]) == {"DL000", "DL203", "DL502"}


def test_ignore_removes() -> None:
    assert enabled(ignore=["DL203"]) == DEFAULT_ON - {"DL203"}
    assert enabled(ignore=["DL2"]) == {"DL000", "DL502"}


def test_more_specific_extend_select_beats_ignore_prefix() -> None:
    assert enabled(extend=["DL203"], ignore=["DL2"]) == {"DL000", "DL203", "DL502"}


def test_more_specific_select_beats_ignore_prefix() -> None:
    assert enabled(select=["DL203"], ignore=["DL2"]) == {"DL000", "DL203"}


def test_more_specific_ignore_beats_select_prefix() -> None:
    assert enabled(select=["DL2"], ignore=["DL203"]) == {"DL000", "DL201"}
    assert enabled(select=["DL"], ignore=["DL20"]) == {"DL000", "DL001", "DL301", "DL502"}


def test_ignore_wins_a_tie() -> None:
    assert "DL203" not in enabled(select=["DL203"], ignore=["DL203"])
    assert enabled(extend=["DL2"], ignore=["DL2"]) == {"DL000", "DL502"}
    assert enabled(select=["ALL"], ignore=["ALL"]) == {"DL000"}


def test_all() -> None:
    assert enabled(select=["ALL"]) == set(RULES)
    assert enabled(extend=["ALL"]) == set(RULES)
    assert enabled(ignore=["ALL"]) == {"DL000"}
    assert enabled(select=["ALL"], ignore=["DL2"]) == {"DL000", "DL001", "DL301", "DL502"}


def test_specific_beats_all() -> None:
    assert enabled(ignore=["ALL"], extend=["DL502"]) == {"DL000", "DL502"}
    assert enabled(select=["ALL"], ignore=["DL001"]) == set(RULES) - {"DL001"}


@pytest.mark.parametrize(
    ("select", "ignore"),
    [(None, ["DL000"]), (None, ["DL0"]), (None, ["ALL"]), (["DL5"], []), (["ALL"], ["DL000"])],
)
def test_dl000_is_always_on(select, ignore) -> None:
    assert "DL000" in enabled(select=select, ignore=ignore)


def test_selectors_are_case_and_space_insensitive() -> None:
    assert enabled(select=[" dl5 "]) == {"DL000", "DL502"}


@pytest.mark.parametrize(
    ("selector", "valid"),
    [
        ("ALL", True),
        ("DL", True),
        ("DL2", True),
        ("DL20", True),
        ("DL203", True),
        ("DL8", False),
        ("DL2030", False),
        ("E501", False),
        ("", False),
        ("all", False),  # normalised to ALL before this check
    ],
)
def test_is_valid_selector(selector: str, valid: bool) -> None:
    assert is_valid_selector(selector, RULES) is valid


# -- the real registry through config and CLI ------------------------------------------------------


def test_real_default_set() -> None:
    settings = settings_for(Config(), CliOverrides(), Config().base / "m.py")
    assert "DL001" not in settings.enabled
    assert {"DL000", "DL203", "DL502"} <= settings.enabled
    expected = {code for code, rule in all_rules().items() if rule.default_enabled}
    assert settings.enabled == expected | {"DL000"}


def test_cli_select_replaces_the_configs_select() -> None:
    config = Config(select=("DL2",))
    settings = settings_for(config, CliOverrides(select=("DL502",)), config.base / "m.py")
    assert settings.enabled == {"DL000", "DL502"}


def test_cli_extend_select_beats_config_ignore_prefix() -> None:
    config = Config(ignore=("DL2",))
    settings = settings_for(config, CliOverrides(extend_select=("DL203",)), config.base / "m.py")
    assert "DL203" in settings.enabled


def test_cli_ignore_adds_to_config_ignore() -> None:
    config = Config(ignore=("DL203",))
    settings = settings_for(config, CliOverrides(ignore=("DL502",)), config.base / "m.py")
    assert not {"DL203", "DL502"} & settings.enabled


def enabled_via_cli(tmp_path, monkeypatch, config: str, *args: str) -> list[str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "distlint.toml").write_text(config)
    (tmp_path / "m.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["check", "--show-settings", *args, "m.py"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["enabled-rules"]


def test_cli_layering_end_to_end(tmp_path, monkeypatch) -> None:
    rules = enabled_via_cli(tmp_path, monkeypatch, 'ignore = ["DL2"]\n', "--extend-select", "DL203")
    assert "DL203" in rules
    rules = enabled_via_cli(tmp_path, monkeypatch, 'select = ["DL203"]\n', "--ignore", "DL2")
    assert "DL203" in rules
    rules = enabled_via_cli(tmp_path, monkeypatch, 'select = ["DL2"]\n', "--select", "ALL")
    assert set(rules) == set(all_rules())
    rules = enabled_via_cli(tmp_path, monkeypatch, "", "--ignore", "ALL")
    assert rules == ["DL000"]
