"""``check --add-noqa``: a ``# noqa: CODE`` for every current finding, idempotent, keeping the
comments already there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import cli

SOURCE = '''\
import torch
import torch.distributed as dist


@torch.compile
def step(x):
    dist.all_gather_object([None], x)  # gather the stats
    dist.broadcast_object_list([x])  # noqa: E501
    dist.all_gather_object(
        [None], x
    )
    return x


g = torch.compile(print, backend="nvfuser")  # distlint: ignore[DL101]
h = torch.compile(print, backend="""nvfuser
""")
k = torch.compile(print, backend="nvfuser", mode="fast")
'''

EXPECTED = '''\
import torch
import torch.distributed as dist


@torch.compile
def step(x):
    dist.all_gather_object([None], x)  # gather the stats  # noqa: DL203
    dist.broadcast_object_list([x])  # noqa: E501, DL203
    dist.all_gather_object(  # noqa: DL203
        [None], x
    )
    return x


g = torch.compile(print, backend="nvfuser")  # distlint: ignore[DL101, DL502]
h = torch.compile(print, backend="""nvfuser
""")  # noqa: DL502
k = torch.compile(print, backend="nvfuser", mode="fast")  # noqa: DL502
'''


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


def test_add_noqa_silences_every_finding_and_keeps_comments(work: Path) -> None:
    assert cli(["check", "train.py"]).exit_code == 1
    result = cli(["check", "--add-noqa", "train.py"])
    assert result.exit_code == 0
    assert result.stderr == "Added 6 noqa directives.\n"
    assert result.stdout == ""
    assert (work / "train.py").read_text() == EXPECTED
    after = cli(["check", "train.py"])
    assert (after.exit_code, after.stdout) == (0, "No findings (1 file checked).\n")


def test_add_noqa_is_idempotent(work: Path) -> None:
    cli(["check", "--add-noqa", "train.py"])
    again = cli(["check", "--add-noqa", "train.py"])
    assert (again.exit_code, again.stderr) == (0, "Added 0 noqa directives.\n")
    assert (work / "train.py").read_text() == EXPECTED


def test_add_noqa_respects_the_selection(work: Path) -> None:
    cli(["check", "--add-noqa", "--select", "DL502", "train.py"])
    text = (work / "train.py").read_text()
    assert "DL203" not in text and text.count("DL502") == 3


def test_add_noqa_from_stdin_prints_the_source(work: Path) -> None:
    result = cli(["check", "--add-noqa", "-"], input=SOURCE)
    assert result.exit_code == 0
    assert result.stdout == EXPECTED
    clean = cli(["check", "--add-noqa", "-"], input="x = 1\n")
    assert (clean.stdout, clean.stderr) == ("x = 1\n", "Added 0 noqa directives.\n")


def test_add_noqa_leaves_unparsable_files_alone(work: Path) -> None:
    (work / "broken.py").write_text("def f(:\n")
    result = cli(["check", "--add-noqa", "broken.py"])
    assert result.exit_code == 0
    assert (work / "broken.py").read_text() == "def f(:\n"  # DL000 cannot be suppressed
