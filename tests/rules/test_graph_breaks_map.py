"""docs/graph-breaks.md and the coverage map it is generated from (scripts/gen_graph_breaks.py).

The map (distlint/knowledge/data/graph_break_coverage.json) must list every graph-break id of the
installed torch's registry, each judged yes / partly / no. Which rules cover an id is said once,
by the rules (``Rule.graph_breaks``): an id judged "yes" must be declared by a rule; every id a
rule declares must be in the map, judged yes or partly, and linked from the rule's docs page
(``distlint rule DLxxx``); and the generated page must be up to date. Reading the registry never
imports torch.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from distlint.rules.registry import all_rules

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "gen_graph_breaks", ROOT / "scripts" / "gen_graph_breaks.py"
)
assert spec is not None and spec.loader is not None
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

COVERAGE = gen.load_map()
RULES_BY_GB = gen.load_rules()
TORCH = gen.torch_dir()
needs_torch = pytest.mark.skipif(TORCH is None, reason="needs torch's graph-break registry")


def test_every_entry_is_judged_with_a_reason() -> None:
    for gb, entry in COVERAGE.items():
        assert re.fullmatch(r"GB\d{4}", gb), gb
        assert entry["predictable"] in gen.VERDICTS, (gb, entry)
        assert entry["reason"].strip(), gb
        assert set(entry) == {"predictable", "reason"}, "the rules declare their ids, not the map"


def test_ids_marked_yes_name_a_rule() -> None:
    unruled = sorted(
        gb for gb, e in COVERAGE.items() if e["predictable"] == "yes" and not RULES_BY_GB.get(gb)
    )
    assert unruled == [], "ids judged statically predictable need a rule"


def test_every_declared_id_is_judged_predictable_and_linked_from_the_page() -> None:
    for code, rule in all_rules().items():
        for gb in rule.graph_breaks:
            assert gb in COVERAGE, f"{code} declares {gb}, which the map does not list"
            assert COVERAGE[gb]["predictable"] in ("yes", "partly"), (code, gb)
            page = (ROOT / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8")
            link = gen.GB_URL.format(gb[2:])
            assert link in page, f"docs/rules/{code}.md does not link {gb} ({link})"


@needs_torch
def test_the_map_lists_exactly_the_installed_registry() -> None:
    registry = gen.load_registry(TORCH)
    missing = sorted(set(registry) - set(COVERAGE))
    extra = sorted(set(COVERAGE) - set(registry))
    assert missing == [], "run scripts/gen_graph_breaks.py --add-missing and review them"
    assert extra == [], "ids no longer in the registry: remove them from the map"


@needs_torch
def test_the_page_is_up_to_date() -> None:
    registry = gen.load_registry(TORCH)
    text = gen.render(registry, COVERAGE, RULES_BY_GB, gen.torch_version(TORCH))
    shipped = gen.DOC_PATH.read_text(encoding="utf-8")
    assert shipped == text, "run python scripts/gen_graph_breaks.py"


@needs_torch
def test_the_page_states_the_totals() -> None:
    registry = gen.load_registry(TORCH)
    count = gen.totals(registry, COVERAGE, RULES_BY_GB)
    shipped = gen.DOC_PATH.read_text(encoding="utf-8")
    assert f"| graph-break ids in the registry | {count['ids']} |" in shipped
    assert f"| statically predictable: yes | {count['yes']} |" in shipped
    assert count["yes"] + count["partly"] + count["no"] == count["ids"]


ABSENT = "its message is not in torch 2.13's Dynamo sources"


@needs_torch
def test_ids_judged_absent_cannot_be_raised_by_the_installed_dynamo() -> None:
    """An id kept in the registry for history, whose ``gb_type`` no Dynamo source raises any
    more, is judged "no"; a torch that raises it again fails this test (the id needs a new
    look). Ids raised by the same sources stay out of this judgment."""
    registry = gen.load_registry(TORCH)
    raised = "\n".join(
        path.read_text(encoding="utf-8") for path in sorted((TORCH / "_dynamo").rglob("*.py"))
    )
    judged = sorted(gb for gb, e in COVERAGE.items() if e["reason"].startswith(ABSENT))
    assert judged, "no id judged absent"
    for gb in judged:
        assert COVERAGE[gb]["predictable"] == "no", gb
        for gb_type in gen.gb_types(registry[gb]):
            assert f'gb_type="{gb_type}"' not in raised, (gb, gb_type)
    # the check can see a raised id: a present one is found
    assert 'gb_type="Attempted to copy.deepcopy a tensor"' in raised


def test_render_marks_missing_judgments() -> None:
    registry = {"GB9999": [{"Gb_type": "a | b"}]}
    text = gen.render(registry, {}, {}, "0.0")
    assert "| ? |" in text
    assert "a \\| b" in text


def test_render_lists_the_declaring_rules_of_an_id() -> None:
    registry = {"GB9999": [{"Gb_type": "t"}]}
    judged = {"GB9999": {"predictable": "yes", "reason": "r"}}
    text = gen.render(registry, judged, {"GB9999": ("DL101", "DL102")}, "0.0")
    assert "| [DL101](rules/DL101.md), [DL102](rules/DL102.md) |" in text
    assert "| predictable (yes) and covered | 1 of 1 |" in text


def test_the_page_covers_only_builtin_rules() -> None:
    assert RULES_BY_GB["GB0811"] == ("DL114",)
    assert all(code.startswith("DL") for codes in RULES_BY_GB.values() for code in codes)


def test_a_malformed_graph_break_id_fails_at_class_definition() -> None:
    from distlint.findings import Severity
    from distlint.rules.base import Rule

    with pytest.raises(ValueError, match="GBnnnn"):

        class _Bad(Rule):  # a rule declaring "0033" instead of "GB0033"
            code = "XYZ999"
            name = "bad-ids"
            severity = Severity.WARNING
            summary = "s"
            graph_breaks = ("0033",)
