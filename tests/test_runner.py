"""The runner survives files that kill LibCST's native parser (SIGSEGV), in any --jobs mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# 6,000 chained lambdas parse in CPython but overflow LibCST's parser stack (measured on
# libcst 1.9: the process dies with SIGSEGV from about 5,000).
CRASHER = "import torch\nx = " + "lambda: " * 6000 + "1\n"
FINDING = 'import torch\ntorch.compile(f, backend="nvfuser")\n'


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parser_crash_is_a_dl000_and_other_files_are_still_checked(tmp_path: Path, jobs) -> None:
    (tmp_path / "crash.py").write_text(CRASHER)
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text(FINDING)
    proc = subprocess.run(
        [sys.executable, "-m", "distlint", "check", "--format", "json", "--jobs", jobs, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)
    assert [(f["path"], f["code"]) for f in findings] == [("crash.py", "DL000")] + [
        (f"f{i}.py", "DL502") for i in range(5)
    ]
    assert "parser crashed" in findings[0]["message"]
    assert "Traceback" not in proc.stderr


def test_a_file_that_stalls_the_parser_is_reported_after_the_timeout(tmp_path: Path) -> None:
    from distlint.config import FileSettings
    from distlint.runner import Task, _check_isolated

    # LibCST needs minutes for a 5,000-link attribute chain (CPython rejects it outright).
    path = tmp_path / "stall.py"
    path.write_text("x = a" + ".b" * 5000 + "\n")
    task = Task(path, "stall.py", FileSettings(enabled=frozenset({"DL000", "DL502"})))
    result = _check_isolated(task, timeout=1.0)
    assert [f.code for f in result.findings] == ["DL000"]
    assert "did not finish within 1 s" in result.findings[0].message


# A project whose findings need the second pass in several files (compiled regions reached
# across modules, a project-scope DL201), spread over more files than are checked in-process.
_PROJECT_PARTS = ("fixtures/DL201/project", "fixtures/DL104", "fixtures/DL601", "fixtures/DL102")


def _check_parts(method: str, jobs: str) -> list[dict]:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-m", "distlint", "check", "--select", "ALL", "--format", "json"]
        + ["--exit-zero", "--jobs", jobs, *_PROJECT_PARTS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "DISTLINT_START_METHOD": method},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_fork_spawn_and_job_counts_give_the_same_findings() -> None:
    """The second pass's facts reach spawned workers too (they were once silently dropped)."""
    reference = _check_parts("fork", "1")
    codes = {f["code"] for f in reference}
    assert {"DL201", "DL104", "DL601", "DL102"} <= codes  # project- and region-scope findings
    for method, jobs in (("fork", "3"), ("spawn", "3"), ("spawn", "1")):
        assert _check_parts(method, jobs) == reference, (method, jobs)
