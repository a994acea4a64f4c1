"""``distlint explain-ranks``: the review listing of rank-dependent decisions around collectives
(proven: DL201/DL208; possible: what DL209 reported before it was removed), and its fixtures."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.engine.runner import Task, first_pass, link_results
from distlint.file_settings import FileSettings
from distlint.rules.collectives.rank_review import rank_places
from distlint.rules.registry import all_rules
from distlint.testing import expected_findings
from tests.project_util import write_tree

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/comm.py": """
    import torch.distributed as dist

    def sync():
        dist.barrier()
    """,
    "train.py": """
    import os

    import torch.distributed as dist
    from pkg.comm import sync

    def evaluate():
        if dist.get_rank() == 0:
            sync()

    def resume(ckpt_dir):
        rank = dist.get_rank()
        if not os.path.exists(os.path.join(ckpt_dir, f"rank{rank}.pt")):
            return None
        dist.barrier()
    """,
}


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_tree(tmp_path, PROJECT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_text_lists_the_proven_and_the_possible_place_with_where_the_rank_enters(
    project: Path,
) -> None:
    result = CliRunner().invoke(main, ["explain-ranks", "."])
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith(
        "Rank-dependent decisions around collectives: 1 proven, 1 possible (a review listing, "
        "not findings)."
    )
    proven = text.index("train.py:9:9 in evaluate [DL201]")
    possible = text.index("train.py:14:9 in resume [possible, condition]")
    assert proven < possible  # file and line order
    assert "proven: reported as DL201" in text[proven:possible]
    assert "  - pkg/comm.py:5: issues barrier" in text[proven:possible]
    tail = text[possible:]
    assert "through code the analysis cannot see through" in tail
    assert "  - train.py:12: the rank comes from here" in tail
    assert str(project) not in text  # repository-relative paths only


def test_json_has_the_same_places(project: Path) -> None:
    result = CliRunner().invoke(main, ["explain-ranks", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["proven"], data["possible"]) == (1, 1)
    shown = [
        (p["path"], p["line"], p["column"], p["function"], p["kind"], p["reported_as"], p["doubt"])
        for p in data["places"]
    ]
    assert shown == [
        ("train.py", 9, 9, "evaluate", "proven", "DL201", ""),
        ("train.py", 14, 9, "resume", "possible", None, "condition"),
    ]
    related = data["places"][1]["related"]
    assert {"path": "train.py", "line": 12, "label": "the rank comes from here"} in related


def test_only_the_files_named_are_listed_and_the_output_is_deterministic(project: Path) -> None:
    first = CliRunner().invoke(main, ["explain-ranks", "--format", "json", "pkg"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.output)["places"] == []
    runs = {CliRunner().invoke(main, ["explain-ranks", "."]).output for _ in range(2)}
    assert len(runs) == 1


def test_a_bad_path_exits_2_without_a_traceback(project: Path) -> None:
    result = CliRunner().invoke(main, ["explain-ranks", "missing.py"])
    assert result.exit_code == 2
    assert "missing.py" in result.output
    assert "Traceback" not in result.output


def test_a_bad_config_file_exits_2(project: Path) -> None:
    (project / "bad.toml").write_text("select = [\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["explain-ranks", "--config", "bad.toml", "."])
    assert result.exit_code == 2
    assert "invalid TOML" in result.output


# -- the fixtures: the possible places are declared, the proven ones are the rules' findings --

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_REVIEW = re.compile(r"#\s*review:\s*possible@(\d+)")
_ALL = FileSettings(enabled=frozenset(all_rules()), torch_floor="2.13", torch_ceiling="2.13")


@cache
def _listed(folder: Path) -> dict[Path, set[tuple[str, int, int]]]:
    """(kind, line, column) of the listing's places in each file of a fixture folder, checked
    as one project (as tests/test_fixtures.py checks it)."""
    files = sorted(folder.rglob("*.py"))
    tasks = [Task(path, path.relative_to(FIXTURES).as_posix(), _ALL) for path in files]
    results = first_pass(tasks, jobs=1)
    found: dict[Path, set[tuple[str, int, int]]] = {path: set() for path in files}
    for place in rank_places(link_results(results, tasks)):
        found[FIXTURES / place.path].add((place.kind, place.line, place.column))
    return found


def _declared(path: Path) -> set[tuple[str, int, int]]:
    possible = {
        ("possible", number, int(match.group(1)))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for match in _REVIEW.finditer(line)
    }
    proven = {
        ("proven", line, column)
        for code, line, column in expected_findings(path)
        if code in ("DL201", "DL208")
    }
    return possible | proven


FOLDERS = sorted(path for path in FIXTURES.iterdir() if path.is_dir())


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_fixture_places_are_exactly_the_declared_ones(folder: Path) -> None:
    """``# review: possible@COL`` declares a possible place (DL209's ``# expect:`` before it was
    removed); a proven place is a DL201 or DL208 finding the fixture expects."""
    for path, places in _listed(folder).items():
        assert places == _declared(path), path.relative_to(FIXTURES)


def test_the_places_dl209_expected_are_still_declared() -> None:
    """fixtures/DL201 holds 5 of the 7 places DL209 expected there (the other 2, a helper that
    synchronises only for sharded models called with an unsharded one, are no longer even
    possible); fixtures/explain_ranks/bad.py holds 2 more."""
    declared = {
        (path.relative_to(FIXTURES).as_posix(), line)
        for path in FIXTURES.rglob("*.py")
        for kind, line, _ in _declared(path)
        if kind == "possible"
    }
    by_folder = sorted(path.split("/")[0] for path, _ in declared)
    assert by_folder == ["DL201"] * 5 + ["explain_ranks"] * 2
    assert ("DL201/project/train_traps.py", 53) in declared
