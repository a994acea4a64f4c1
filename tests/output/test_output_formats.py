"""``--output-format concise|full``, the headline of a message, ``--statistics``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distlint.output.headline import HEADLINE_MAX, headline
from tests.test_cli import DL203_SRC, DL502_SRC, cli

# Messages as rules write them (DL201's is ~85 words).
DL201 = (
    "`model(torch.randn(4, 8))` runs only on ranks where `master_process` is true (rank from "
    "`dist.get_rank()` at fixtures/DL201/bad.py:103); the other ranks never issue forward of the "
    "distributed-wrapped model `model` (parameter/buffer sync) here, so they block in their next "
    "collective until the process-group timeout (30 min by default) or pair it with a different "
    "collective and compute wrong values. Issue it on every rank, or move it out of the branch."
)
DL101 = (
    "`x.sum() > 0` is a tensor: branching on it graph-breaks on torch 2.13 (GB0170, "
    "data-dependent branching): the graph ends here and the rest runs eagerly until a new one "
    "starts. Use `torch.where(...)` or `torch.cond(...)` instead of the Python branch."
)
DL502 = (
    "Backend names are case-sensitive: torch.compile raises InvalidBackend (Invalid backend: "
    "'Inductor', see `torch._dynamo.list_backends()` for available backends.). Use 'inductor'."
)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (DL201, "`model(torch.randn(4, 8))` runs only on ranks where `master_process` is true"),
        (DL101, "`x.sum() > 0` is a tensor: branching on it graph-breaks on torch 2.13"),
        (DL502, "Backend names are case-sensitive: torch.compile raises InvalidBackend"),
        ("Short message.", "Short message"),
        ("Use a threshold, e.g. `x > 0.5`. Then more.", "Use a threshold, e.g. `x > 0.5`"),
        ("", ""),
    ],
)
def test_headline(message: str, expected: str) -> None:
    assert headline(message) == expected


def test_headline_never_splits_code_and_fits() -> None:
    word = "`" + "a" * 30 + " b`"
    message = " ".join([word] * 10) + "."
    short = headline(message)
    assert len(short) <= HEADLINE_MAX and short.endswith("…")
    assert short.count("`") % 2 == 0
    one_long_word = "x" * 300
    assert len(headline(one_long_word)) <= HEADLINE_MAX


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n")  # the messages quoted here
    (tmp_path / "a.py").write_text(DL203_SRC)
    (tmp_path / "b.py").write_text(DL502_SRC + 'h = torch.compile(print, backend="Eager")\n')
    return tmp_path


def test_concise_is_one_line_per_finding(project: Path) -> None:
    result = cli(["check", "--output-format", "concise", "a.py", "b.py"])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "a.py:7:5: DL203 `dist.all_gather_object` inside a compiled region crashes compilation, "
        "with or without…",
        "b.py:3:34: DL502 'nvfuser' is not a torch.compile backend in torch 2.13: "
        "torch.compile raises InvalidBackend",
        "b.py:4:34: DL502 Backend names are case-sensitive: torch.compile raises InvalidBackend",
        "1 fixable with `--fix`.",
        "3 findings (3 errors, 0 warnings) in 2 files (2 files checked).",
    ]
    for line in result.stdout.splitlines()[:3]:
        assert len(line.split(": DL", 1)[1].split(" ", 1)[1]) <= HEADLINE_MAX


def test_full_is_the_default(project: Path) -> None:
    full = cli(["check", "--output-format", "full", "b.py"]).stdout
    assert full == cli(["check", "b.py"]).stdout
    assert "see `torch._dynamo.list_backends()`" in full  # the whole message
    assert "  = fix (safe): Use backend 'eager'" in full


def test_unknown_output_format_is_a_usage_error(project: Path) -> None:
    result = cli(["check", "--output-format", "short", "a.py"])
    assert result.exit_code == 2
    assert "'short' is not one of 'full', 'concise'" in result.stderr


def test_statistics_most_frequent_first_with_fixable(project: Path) -> None:
    result = cli(["check", "--statistics", "a.py", "b.py"])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "count  code   fixable  rule",
        "    2  DL502        1  invalid-compile-option",
        "    1  DL203        0  object-collective-in-compiled-region",
        "",
        "1 fixable with `--fix`.",
        "3 findings (3 errors, 0 warnings) in 2 files (2 files checked).",
    ]


def test_statistics_as_json_rows_and_refused_for_other_formats(project: Path) -> None:
    result = cli(["check", "--statistics", "--format", "json", "a.py", "b.py"])
    assert result.exit_code == 1
    assert json.loads(result.stdout) == [
        {"code": "DL502", "name": "invalid-compile-option", "count": 2, "fixable": 1},
        {"code": "DL203", "name": "object-collective-in-compiled-region", "count": 1, "fixable": 0},
    ]
    refused = cli(["check", "--statistics", "--format", "sarif", "a.py"])
    assert refused.exit_code == 2
    assert "--statistics works with --format text or json" in refused.output


def test_json_and_sarif_keep_the_whole_message(project: Path) -> None:
    data = json.loads(cli(["check", "--format", "json", "b.py"]).stdout)
    assert data[1]["headline"] == headline(data[1]["message"])
    assert "see `torch._dynamo.list_backends()`" in data[1]["message"]
    sarif = json.loads(cli(["check", "--format", "sarif", "b.py"]).stdout)
    message = sarif["runs"][0]["results"][1]["message"]
    assert message["text"] == data[1]["message"]
    assert message["markdown"] == f"**{data[1]['headline']}**\n\n{data[1]['message']}"
