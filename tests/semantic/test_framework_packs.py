"""The framework knowledge packs (distlint/knowledge/data/frameworks.json), one test per entry.

Each entry has fixture lines of its own, tagged ``pack: <id>``: in
``fixtures/DL201/bad_frameworks.py`` a line whose ``# expect: DL201@COL`` finding the entry
makes (with the entry the finding is reported, without it, it is not: the entry is what
recognises it), and optionally in ``traps_frameworks.py`` a line of a function that must stay
silent. Adding an entry without such a fixture fails here. Also checked: the file's schema,
that no fact is both in the data and in Python's generic tables, and that the
``rank-predicates`` setting extends the packs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from distlint.engine.runner import Task, first_pass, link_results, run
from distlint.file_settings import FileSettings
from distlint.rules.collectives.rank_review import rank_places
from distlint.semantic import packs
from distlint.semantic.collectives import C10D_COLLECTIVES, FULLY_SHARD, WRAPPERS
from distlint.semantic.ranks import RANK_ATTRIBUTES, RANK_PREDICATE_NAMES, is_rank_call_name
from distlint.testing import expected_findings

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "DL201"
BAD = FOLDER / "bad_frameworks.py"
TRAPS = FOLDER / "traps_frameworks.py"
ONLY_DL201 = FileSettings(enabled=frozenset({"DL201"}))
_TAG = re.compile(r"\bpack:\s*(?P<id>[\w.\-]+)")
ENTRIES = packs.entries()

Finding = tuple[str, int, int]


def _tags(path: Path) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _TAG.search(line)
        if match is not None:
            found.setdefault(match.group("id"), []).append(number)
    return found


def _check(path: Path, settings: FileSettings = ONLY_DL201) -> set[Finding]:
    [result] = run([Task(path, path.name, settings)], jobs=1)
    assert result.errors == (), result.errors
    return {(f.code, f.span.start.line, f.span.start.column) for f in result.findings}


def _review(path: Path) -> set[Finding]:
    """(label, line, column) of each place of the rank review listing (``distlint
    explain-ranks``) of ``path``: DL201/DL208 when proven, "possible" for the others."""
    tasks = [Task(path, path.name, ONLY_DL201)]
    [result] = first_pass(tasks, jobs=1)
    assert result.errors == (), result.errors
    places = rank_places(link_results([result], tasks))
    return {(place.label, place.line, place.column) for place in places}


_WITH_ALL: dict[Path, set[Finding]] = {}


def _findings(path: Path) -> set[Finding]:
    if path not in _WITH_ALL:
        _WITH_ALL[path] = _check(path)
    return _WITH_ALL[path]


def _findings_without(path: Path, entry_id: str, monkeypatch: pytest.MonkeyPatch) -> set[Finding]:
    """The findings with every pack entry but ``entry_id``."""
    kept = tuple(e for e in ENTRIES if e.id != entry_id)
    monkeypatch.setattr(packs, "entries", lambda: kept)
    packs.knowledge.cache_clear()
    try:
        return _check(path)
    finally:
        monkeypatch.undo()
        packs.knowledge.cache_clear()


def _enclosing_function(path: Path, line: int) -> range:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            assert node.end_lineno is not None
            if first <= line <= node.end_lineno:
                return range(first, node.end_lineno + 1)
    raise AssertionError(f"{path.name}:{line} is not inside a function")


# -- the data ------------------------------------------------------------------------------


def test_pack_file_is_valid_and_uses_every_kind() -> None:
    assert len(ENTRIES) >= 30
    assert {e.kind for e in ENTRIES} == set(packs.KINDS)
    for entry in ENTRIES:
        assert re.fullmatch(r"\d+(\.\d+)*", entry.version), entry.id
        assert len(entry.evidence) >= 40 and "\n" not in entry.evidence, entry.id


def test_malformed_entries_are_rejected() -> None:
    good = {
        "id": "x.y",
        "framework": "x",
        "version": "1.0",
        "kind": "rank-call",
        "name": "is_x",
        "evidence": "documented",
    }
    assert packs.parse({"entries": [good]})[0].name == "is_x"
    for bad in (
        {**good, "kind": "rank-thing"},
        {**good, "name": "pkg.is_x"},  # a rank-call is a bare name
        {**good, "kind": "collective-method"},  # needs receivers
        {**good, "kind": "balanced-context", "name": "a.b", "receivers": ["x"]},  # a method
        {**good, "kind": "rank-only-decorator"},  # needs receivers or a dotted name
        {**good, "kind": "engine-call"},  # needs a dotted name
        {**good, "evidence": ""},
        {**good, "colour": "red"},
    ):
        with pytest.raises(packs.PackError):
            packs.parse({"entries": [bad]})
    with pytest.raises(packs.PackError, match="duplicate"):
        packs.parse({"entries": [good, good]})


def test_no_fact_is_both_in_the_data_and_in_code() -> None:
    pack = packs.knowledge()
    assert not pack.rank_attributes & RANK_ATTRIBUTES.fixed
    assert not pack.rank_calls & RANK_PREDICATE_NAMES.fixed
    # a rank call the generic ``*_rank`` suffix already recognises needs no entry
    assert not [name for name in pack.rank_calls if name.endswith("_rank")]
    assert not set(pack.wrapper_calls) & (WRAPPERS | FULLY_SHARD)
    assert not [m for m in pack.collective_modules if m.startswith("torch.distributed")]
    assert is_rank_call_name("is_world_process_zero")  # read through the packs


def test_every_tag_names_an_entry() -> None:
    ids = {e.id for e in ENTRIES}
    for path in (BAD, TRAPS):
        assert set(_tags(path)) <= ids, path.name


def test_deepspeed_comm_mirrors_the_c10d_collectives() -> None:
    from distlint.semantic.collectives import collective_kind

    for name in sorted(C10D_COLLECTIVES):
        assert collective_kind(f"deepspeed.comm.{name}") == name
    assert collective_kind("deepspeed.comm.get_rank") is None


# -- one test per entry ------------------------------------------------------------------------


def _ids(entries: tuple[packs.Entry, ...]) -> Iterator[str]:
    return (e.id for e in entries)


@pytest.mark.parametrize("entry", ENTRIES, ids=list(_ids(ENTRIES)))
def test_entry_has_a_bad_fixture_it_makes_a_finding(
    entry: packs.Entry, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _tags(BAD).get(entry.id, [])
    assert lines, f"{entry.id}: no line of {BAD.name} is tagged 'pack: {entry.id}'"
    declared = {f for f in expected_findings(BAD) if f[0] == "DL201" and f[1] in lines}
    assert {f[1] for f in declared} == set(lines), "every tagged line declares its finding"
    assert declared <= _findings(BAD)
    without = _findings_without(BAD, entry.id, monkeypatch)
    assert not declared & without, f"{entry.id}: found without the entry: {declared & without}"


@pytest.mark.parametrize("entry_id", sorted(_tags(TRAPS)), ids=sorted(_tags(TRAPS)))
def test_entry_trap_is_silent(entry_id: str) -> None:
    for line in _tags(TRAPS)[entry_id]:
        span = _enclosing_function(TRAPS, line)
        assert {f for f in _findings(TRAPS) if f[1] in span} == set(), (entry_id, line)


# -- settings extend the packs -------------------------------------------------------------


def test_bare_rank_predicate_setting_extends_the_packs(tmp_path: Path) -> None:
    source = tmp_path / "job.py"
    source.write_text(
        "import torch.distributed as dist\n"
        "\n"
        "\n"
        "def save(state, runner):\n"
        "    if state.is_leader:\n"
        "        dist.barrier()\n"
        "    if runner.is_coordinator():\n"
        "        dist.barrier()\n",
        encoding="utf-8",
    )
    assert _check(source) == set()
    configured = FileSettings(
        enabled=frozenset({"DL201"}), rank_predicates=("is_leader", "is_coordinator")
    )
    assert _check(source, configured) == {("DL201", 6, 9), ("DL201", 8, 9)}


def test_uniform_results_make_a_rank_decision_the_same_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``stop = accelerator.reduce(local)``: each process's ``local`` differs, ``stop`` does not
    (``uniform_result``), so leaving the loop on it is not a divergence. Without the flag the
    decision may differ between ranks (a possible place of the rank review listing)."""
    spans = [
        _enclosing_function(TRAPS, line)
        for entry_id in ("accelerate.reduce", "lightning.strategy.reduce_boolean_decision")
        for line in _tags(TRAPS)[entry_id]
    ]
    assert not {f for f in _review(TRAPS) if any(f[1] in span for span in spans)}
    flat = tuple(replace(e, uniform_result=False) for e in ENTRIES)
    monkeypatch.setattr(packs, "entries", lambda: flat)
    packs.knowledge.cache_clear()
    try:
        found = _review(TRAPS)
    finally:
        monkeypatch.undo()
        packs.knowledge.cache_clear()
    text = TRAPS.read_text(encoding="utf-8").splitlines()
    for span in spans:
        [(code, line, _)] = [f for f in found if f[1] in span]  # the rank-dependent ``break``
        assert code == "possible" and text[line - 1].strip() == "break"
