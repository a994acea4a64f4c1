"""bench/realworld/score.py: findings matched to labels by (repo, path, line, code), counted
per rule and, separately, for error-severity findings; the exit status follows the precision."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "realworld" / "score.py"


def _score_main():
    spec = importlib.util.spec_from_file_location("realworld_score", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


def _finding(path: str, line: int, code: str, severity: str) -> dict:
    return {
        "code": code,
        "severity": severity,
        "message": f"{code} at {path}:{line}",
        "path": path,
        "range": {"start": {"line": line, "column": 1}, "end": {"line": line, "column": 2}},
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "repos.txt").write_text("acme/train " + "0" * 40 + "\n")
    labels = [
        {"repo": "acme/train", "path": "a.py", "line": 3, "code": "DL201", "verdict": "TP"},
        {"repo": "acme/train", "path": "a.py", "line": 9, "code": "DL201", "verdict": "FP"},
        {"repo": "acme/train", "path": "b.py", "line": 4, "code": "DL201", "verdict": "TP"},
        {"repo": "acme/train", "path": "c.py", "line": 1, "code": "DL201", "verdict": "TP"},
    ]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(x) + "\n" for x in labels))
    results = tmp_path / "results"
    results.mkdir()
    findings = [
        _finding("a.py", 3, "DL201", "error"),
        _finding("a.py", 9, "DL201", "warning"),
        _finding("b.py", 4, "DL201", "error"),
        _finding("d.py", 7, "DL201", "error"),  # nobody reviewed it
    ]
    (results / "acme+train.json").write_text(json.dumps(findings))
    return tmp_path


def _run(corpus: Path, *extra: str) -> int:
    return _score_main()(
        [
            "--corpus", str(corpus), "--repos", str(corpus / "repos.txt"),
            "--labels", str(corpus / "labels.jsonl"), "--results", str(corpus / "results"),
            "--codes", "DL201", *extra,
        ]
    )  # fmt: skip


def test_counts_per_rule_and_for_error_severity(corpus: Path, capsys) -> None:
    assert _run(corpus, "--min-precision", "0.6") == 0
    out = capsys.readouterr().out
    assert (
        "DL201: 4 findings, 2 TP, 1 FP, 1 unreviewed; precision 0.67; "
        "errors 2 TP, 0 FP, 1 unreviewed"
    ) in out
    assert "error severity: 2 TP, 0 FP; precision 1.00" in out
    assert "acme/train d.py:7 DL201" in out  # listed for review
    assert "acme/train c.py:1 DL201" in out.split("no longer found:")[1]  # recall lost


def test_exit_status_follows_precision_and_strict(corpus: Path) -> None:
    assert _run(corpus, "--min-precision", "0.9") == 1
    assert _run(corpus, "--min-precision", "0.6", "--strict") == 1


def test_a_removed_rules_code_is_skipped_and_its_labels_kept(corpus: Path, capsys) -> None:
    """DL209's labels stay in labels.jsonl as history; scoring it reports nothing for it, not
    its 1-in-2 precision, and its true positives are not "no longer found"."""
    labels = corpus / "labels.jsonl"
    old = [
        {"repo": "acme/train", "path": "e.py", "line": 2, "code": "DL209", "verdict": "TP"},
        {"repo": "acme/train", "path": "e.py", "line": 5, "code": "DL209", "verdict": "FP"},
    ]
    labels.write_text(labels.read_text() + "".join(json.dumps(x) + "\n" for x in old))
    saved = corpus / "results" / "acme+train.json"
    findings = [*json.loads(saved.read_text()), _finding("e.py", 5, "DL209", "note")]
    saved.write_text(json.dumps(findings))
    assert _run(corpus, "--min-precision", "0.6", "--codes", "DL201,dl209") == 0
    captured = capsys.readouterr()
    assert "DL209" not in captured.out
    assert "DL201: 4 findings, 2 TP, 1 FP, 1 unreviewed" in captured.out
    assert "skipped: DL209 (possibly-rank-divergent-collective) was removed" in captured.err
