"""The analysis process's call after each reply (``Analyses(after=...)``): it runs once the
job's reply came back, in the same process, and neither its reply nor its CPU time is taken
for the next job's (each has the budget to itself)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from distlint.lsp.worker import Analyses, Outcome

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

LOG_VARIABLE = "DISTLINT_TEST_AFTER_LOG"


def _note(what: str) -> None:
    with open(os.environ[LOG_VARIABLE], "a", encoding="utf-8") as log:
        log.write(f"{os.getpid()} {what}\n")


def _spin(seconds: float) -> None:
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def job(value: int) -> int:
    _note(f"job {value}")
    _spin(0.6)
    return value * 10


def after() -> None:
    """Housekeeping that, with a job, takes longer (CPU) than a job's budget."""
    _note("after")
    _spin(0.6)


async def _two_jobs() -> list[Outcome]:
    analyses = Analyses(after=after)
    try:
        first = await analyses.submit("doc", job, (1,), 1.0)
        second = await analyses.submit("doc", job, (2,), 1.0)
        await asyncio.sleep(0.2)  # the second job's housekeeping starts
        return [first, second]
    finally:
        analyses.close()


def test_the_after_call_runs_behind_each_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log"
    monkeypatch.setenv(LOG_VARIABLE, str(log))
    first, second = asyncio.run(_two_jobs())
    assert (first.value, first.failure) == (10, None)
    assert (second.value, second.failure) == (20, None)  # not the after call's None
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["job 1", "after", "job 2", "after"]
    assert len({line.split(" ", 1)[0] for line in lines}) == 1  # one analysis process
