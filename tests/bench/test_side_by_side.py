"""bench/side_by_side.py: two versions and a bare parse timed in one round, and a folder
without distlint refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import side_by_side

ROOT = Path(__file__).resolve().parents[2]  # holds this checkout's distlint package


def test_a_round_times_both_versions_beside_the_parse(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.py").write_text(
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"
    )
    assert (
        side_by_side.main(
            ["--old", str(ROOT), "--new", str(ROOT), "--corpus", str(corpus), "--rounds", "1"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "corpus: corpus/ (1 files)" in out
    round_line = next(line for line in out.splitlines() if line.startswith("round 0:"))
    assert "old " in round_line and "new " in round_line and "new / old CPU" in round_line


def test_a_folder_without_distlint_is_refused(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        side_by_side.main(["--old", str(tmp_path), "--new", str(ROOT), "--corpus", str(ROOT)])
    assert exit_info.value.code == 2
    assert "holds no distlint package" in capsys.readouterr().err
