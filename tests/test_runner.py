"""The runner survives files that kill the parser's process (SIGSEGV), in any --jobs mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# 6,000 chained lambdas on one line overflowed LibCST's native parser on a thread's default
# stack (SIGSEGV from about 5,000, libcst 1.9); distlint now parses on a large stack.
LAMBDAS = "import torch\nx = " + "lambda: " * 6000 + "1\n"
FINDING = 'import torch\ntorch.compile(f, backend="nvfuser")\n'
# A parser that dies on files holding CRASH_ME (inherited by forked workers and by the
# isolated re-check), to exercise the recovery of a process killed by a native crash.
BOOT = """
import os, signal, sys
import distlint.engine as engine
real = engine.parse_module
def parse_module(text):
    if "CRASH_ME" in text:
        os.kill(os.getpid(), signal.SIGSEGV)
    return real(text)
engine.parse_module = parse_module
from distlint.cli import main
sys.argv = ["distlint", *sys.argv[1:]]
main()
"""
# One line over 5,000 characters: such files are parsed in a process of their own.
CRASHER = "import torch\nx = 'CRASH_ME'" + " + 'a'" * 1000 + "\n"


def _check_json(tmp_path: Path, jobs: str, boot: bool) -> tuple[int, list[dict], str]:
    prefix = [sys.executable, "-c", BOOT] if boot else [sys.executable, "-m", "distlint"]
    proc = subprocess.run(
        [*prefix, "check", "--format", "json", "--jobs", jobs, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parser_crash_is_a_dl000_and_other_files_are_still_checked(tmp_path: Path, jobs) -> None:
    (tmp_path / "crash.py").write_text(CRASHER)
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text(FINDING)
    code, findings, stderr = _check_json(tmp_path, jobs, boot=True)
    assert code == 1, stderr
    assert [(f["path"], f["code"]) for f in findings] == [("crash.py", "DL000")] + [
        (f"f{i}.py", "DL502") for i in range(5)
    ]
    assert "parser crashed" in findings[0]["message"]
    assert "Traceback" not in stderr


def test_chained_lambdas_that_once_crashed_the_parser_are_checked(tmp_path: Path) -> None:
    (tmp_path / "lambdas.py").write_text(LAMBDAS)
    (tmp_path / "f.py").write_text(FINDING)
    code, findings, stderr = _check_json(tmp_path, "1", boot=False)
    assert code == 1, stderr
    assert [(f["path"], f["code"]) for f in findings] == [("f.py", "DL502")]


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
_CHECK_ALL = (sys.executable, "-m", "distlint", "check", "--select=ALL", "--format=json")


def _check_parts(method: str, jobs: str) -> list[dict]:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [*_CHECK_ALL, "--exit-zero", "--jobs", jobs, *_PROJECT_PARTS],
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
