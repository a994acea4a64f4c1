"""What one process holds while it checks many files (issue 15: peak memory per process).

A worker checks file after file, and the parent keeps every file's summary until linking:
nothing of a file's tree may outlive its check (caches keyed by nodes kept up to 64 blocks
and 4,096 statements of earlier files, whole modules among them, alive in a worker).
"""

from __future__ import annotations

import gc
from pathlib import Path

import libcst as cst

from distlint.config.settings import CliOverrides, ConfigResolver, settings_for
from distlint.engine.checker import check_bytes

ROOT = Path(__file__).resolve().parents[2]


def _nodes_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, cst.CSTNode))


def test_a_checked_file_leaves_no_node_behind() -> None:
    overrides = CliOverrides(select=("ALL",))
    settings = settings_for(ConfigResolver().for_path(Path("/")), overrides, Path("/f.py"))
    # the version-guard rules (DL501, DL503-DL505) and the rest, on files that guard
    paths = sorted((ROOT / "fixtures").glob("DL50[1-5]/*.py"))
    assert len(paths) >= 10
    check_bytes(paths[0].read_bytes(), "warm-up.py", settings)  # rule tables built once
    before = _nodes_alive()
    for path in paths:
        check_bytes(path.read_bytes(), path.name, settings)
    assert _nodes_alive() <= before
