"""Every registered rule has a docs page that agrees with its metadata, and vice versa."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.output.docs import REQUIRED_SECTIONS, docs_dir, parse_doc, render_page, rule_doc
from distlint.rules.base import Rule
from distlint.rules.registry import all_rules
from distlint.rules.removed import REMOVED_RULES

RULES_DIR = Path(__file__).resolve().parents[2] / "docs" / "rules"
RULES = all_rules()
CODES = sorted(RULES)
PAGES = sorted(RULES_DIR.glob("*.md"))
DEFAULT = {True: "enabled", False: "disabled"}


def _page(code: str) -> str:
    return (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")


def test_docs_are_read_from_the_repository_rules_folder() -> None:
    assert docs_dir().resolve() == RULES_DIR.resolve()


@pytest.mark.parametrize("code", CODES)
def test_rule_has_a_page(code: str) -> None:
    assert (RULES_DIR / f"{code}.md").is_file(), f"missing docs/rules/{code}.md"
    assert rule_doc(code) is not None


@pytest.mark.parametrize("code", CODES)
def test_title_names_the_rule(code: str) -> None:
    rule: type[Rule] = RULES[code]
    doc = parse_doc(_page(code))
    assert (doc.code, doc.name) == (rule.code, rule.name)
    assert _page(code).startswith(f"# {rule.code} {rule.name}\n")


@pytest.mark.parametrize("code", CODES)
def test_metadata_table_is_rendered_from_the_rule(code: str) -> None:
    rule = RULES[code]
    assert parse_doc(_page(code)).metadata == {}, "the page must not repeat the metadata"
    doc = rule_doc(code)
    assert doc is not None
    metadata = doc.metadata
    assert metadata.get("Severity") == rule.severity.value
    assert metadata.get("Default") == DEFAULT[rule.default_enabled]
    assert metadata.get("Fix") == rule.fix_availability.value
    family = metadata.get("Family", "")
    assert family.startswith(f"DL{code[2]} "), family


@pytest.mark.parametrize("code", CODES)
def test_all_sections_are_present_in_order_and_not_empty(code: str) -> None:
    doc = parse_doc(_page(code))
    present = [name for name in doc.sections if name in REQUIRED_SECTIONS]
    assert present == list(REQUIRED_SECTIONS)
    for name in REQUIRED_SECTIONS:
        assert doc.sections[name].strip(), f"{code}: section {name!r} is empty"


@pytest.mark.parametrize("code", CODES)
def test_example_sections_hold_code(code: str) -> None:
    doc = parse_doc(_page(code))
    assert "```" in doc.sections["Example"]
    assert doc.sections["Use instead"].strip()


@pytest.mark.parametrize("code", [c for c in CODES if c[2] in "123456"])
def test_torch_rule_evidence_names_the_torch_version(code: str) -> None:
    evidence = parse_doc(_page(code)).sections["Evidence"]
    assert "2.13" in evidence


@pytest.mark.parametrize("code", CODES)
def test_what_it_does_fits_sarif_full_description(code: str) -> None:
    doc = parse_doc(_page(code))
    assert 0 < len(doc.description) < 1024


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_every_page_belongs_to_a_registered_or_a_removed_rule(path: Path) -> None:
    doc = parse_doc(path.read_text(encoding="utf-8"))
    assert path.stem == doc.code
    assert doc.code in RULES or doc.code in REMOVED_RULES, f"{path.name}: an unknown rule"


@pytest.mark.parametrize("code", sorted(REMOVED_RULES))
def test_a_removed_rules_page_says_so_and_what_to_use_instead(code: str) -> None:
    removed = REMOVED_RULES[code]
    assert code not in RULES
    doc = parse_doc(_page(code))
    assert (doc.code, doc.name) == (code, removed.name)
    assert f"**Removed in distlint {removed.version}.**" in _page(code)
    assert list(doc.sections) == ["What it did", "Why it was removed", "Example", "Use instead"]
    assert "distlint explain-ranks" in doc.sections["Use instead"]
    assert rule_doc(code) is None  # not a rule's page: no metadata table to render


def test_codes_and_names_are_unique() -> None:
    codes = [parse_doc(p.read_text(encoding="utf-8")).code for p in PAGES]
    names = [rule.name for rule in RULES.values()]
    assert len(codes) == len(set(codes))
    assert len(names) == len(set(names))
    assert all(code == rule.code for code, rule in RULES.items())


def test_rule_command_prints_the_page() -> None:
    result = CliRunner().invoke(main, ["rule", "DL502"])
    assert result.exit_code == 0, result.output
    shown = render_page(RULES["DL502"], _page("DL502"))
    assert result.output.rstrip("\n") == shown.rstrip("\n")
    assert f"| Fix | {RULES['DL502'].fix_availability.value} |" in result.output


def test_rule_command_accepts_lowercase_codes() -> None:
    result = CliRunner().invoke(main, ["rule", "dl203"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# DL203 object-collective-in-compiled-region")


def test_rule_command_rejects_unknown_codes() -> None:
    result = CliRunner().invoke(main, ["rule", "DL9999"])
    assert result.exit_code != 0
    assert "unknown rule 'DL9999'" in result.output


def test_every_repository_path_a_page_cites_exists_and_ships_in_the_sdist() -> None:
    """A page's Evidence may cite our experiments or examples (``experiments/capture_calls.py``):
    such a path must exist and lie under a folder the source distribution includes."""
    import tomllib

    root = docs_dir().parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    cited = set()
    for page in sorted(docs_dir().glob("DL*.md")):
        text = page.read_text(encoding="utf-8")
        cited |= {(page.name, m) for m in re.findall(r"\b(?:experiments|examples)/[\w./-]*", text)}
    assert cited, "no page cites experiments/ or examples/ any more: drop this test"
    for page, path in sorted(cited):
        assert (root / path.rstrip(".")).exists(), f"{page}: cites {path}, which does not exist"
        assert path.split("/")[0] in shipped, f"{page}: cites {path}, not in the sdist"
