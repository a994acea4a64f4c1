"""Confirm mode end to end: fixtures under fixtures/confirm run in real child processes.

The children are started once per module (they dominate the time: each imports torch); the
tests then match the observations against findings built here, so they do not depend on the
DL101/DL102 rules. ``test_engine_findings_*`` use the real rules when they are registered.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from distlint.confirm import torch_available
from distlint.confirm.match import CONFIRMED, NOT_OBSERVED, NOT_REACHED, normalize
from distlint.confirm.run import Collected, apply, collect
from distlint.confirm.sandbox import ForkServer
from distlint.confirm.targets import ConfirmSettings, Target, script_target
from distlint.findings import Finding, Severity, Span, make_position
from tests.confirm.server_util import shared_server

__all__ = ["shared_server"]  # one warm server for the module's collect() runs

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not torch_available(), reason="needs torch"),
]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "confirm"
ENTRIES = FIXTURES / "entries.py"
SCALARS = FIXTURES / "scalars.py"
SCRIPT = FIXTURES / "train_ddp.py"


def _settings(**values: object) -> ConfirmSettings:
    return ConfirmSettings(base=ROOT, **values)  # type: ignore[arg-type]


def _entry(name: str) -> Target:
    return Target(kind="entry", name=name, entry=name)


def _preferred() -> set[str]:
    return {str(p) for p in FIXTURES.glob("*.py")}


@pytest.fixture(scope="module")
def entries() -> Collected:
    targets = [
        _entry("fixtures/confirm/entries.py:make_examples"),
        _entry("fixtures/confirm/scalars.py:make_captured"),
    ]
    return collect(targets, _settings(timeout=120), preferred=_preferred())


def _finding(path: Path, code: str, line: int) -> Finding:
    lines = path.read_text(encoding="utf-8").splitlines()
    text = lines[line - 1]
    start = len(text) - len(text.lstrip())
    span = Span(make_position(lines, line, start), make_position(lines, line, len(text)))
    return Finding(code, "x", Severity.WARNING, "m", str(path.relative_to(ROOT)), span)


def _status(finding: Finding) -> str | None:
    return dict(finding.properties).get("confirmation")  # type: ignore[return-value]


def test_targets_run_to_the_end(entries: Collected) -> None:
    assert [t.status for t in entries.run.targets] == ["ok", "ok"], entries.run.targets
    assert entries.run.graphs == 4  # branch: 2 (before and after the break), item: 1, scalars: 1
    assert entries.run.roots_compiled == 6  # the five functions of make_examples, scale_by_sum
    assert entries.run.notes == []  # the warm server ran both


def test_data_dependent_branch_is_confirmed(entries: Collected) -> None:  # (a)
    findings, _run = apply([_finding(ENTRIES, "DL101", 13)], entries, cwd=ROOT)
    ((branch,),) = [[f for f in findings if f.code == "DL101"]]
    assert _status(branch) == CONFIRMED
    assert dict(branch.properties)["gbId"] == "GB0170"


def test_captured_scalar_is_not_observed(entries: Collected) -> None:  # (b)
    findings, _ = apply([_finding(SCALARS, "DL102", 8)], entries, cwd=ROOT)
    assert _status(next(f for f in findings if f.code == "DL102")) == NOT_OBSERVED


def test_branch_not_taken_is_not_reached(entries: Collected) -> None:  # (c)
    findings, _ = apply([_finding(ENTRIES, "DL102", 21)], entries, cwd=ROOT)
    assert _status(next(f for f in findings if f.code == "DL102")) == NOT_REACHED


def test_unpredicted_zip_break_becomes_dl901(entries: Collected) -> None:  # (d)
    predicted = [_finding(ENTRIES, "DL101", 13), _finding(ENTRIES, "DL101", 34)]
    findings, _run = apply(predicted, entries, cwd=ROOT)
    dl901 = [f for f in findings if f.code == "DL901"]
    assert [(f.path, f.span.start.line) for f in dl901] == [("fixtures/confirm/entries.py", 27)]
    props = dict(dl901[0].properties)
    assert props["gbId"] == "GB0811"  # torch 2.13: `missing tp_iter`, not GB0156
    assert props["observed"] == "missing tp_iter"
    assert "fell back to eager" in dl901[0].message
    assert "UserDefinedObjectVariable(zip)" in dl901[0].message


def test_fullgraph_failures_are_confirmed_or_dl902(entries: Collected) -> None:  # (e)
    findings, run = apply([_finding(ENTRIES, "DL101", 34)], entries, cwd=ROOT)
    strict = next(f for f in findings if f.code == "DL101")
    assert _status(strict) == CONFIRMED and dict(strict.properties)["gbId"] == "GB0170"
    dl902 = [f for f in findings if f.code == "DL902"]
    assert [(f.span.start.line, dict(f.properties)["gbId"]) for f in dl902] == [(41, "GB0811")]
    assert dl902[0].severity is Severity.ERROR
    assert "Unsupported: missing tp_iter" in dl902[0].message
    assert run.compile_errors == 2


def test_engine_findings_get_statuses(entries: Collected) -> None:
    from distlint.engine.checker import FileSource, check_file
    from distlint.file_settings import FileSettings
    from distlint.rules.registry import all_rules

    if not {"DL101", "DL102"} <= set(all_rules()):
        pytest.skip("DL101/DL102 are not registered yet")
    enabled = FileSettings(enabled=frozenset(all_rules()))
    findings = []
    for path in (ENTRIES, SCALARS):
        findings += check_file(
            FileSource.on_disk(path, str(path.relative_to(ROOT))), enabled
        ).findings
    out, _run = apply(findings, entries, cwd=ROOT)
    statuses = {(f.code, f.span.start.line): _status(f) for f in out}
    assert statuses[("DL101", 13)] == CONFIRMED
    assert statuses[("DL101", 34)] == CONFIRMED
    assert statuses[("DL102", 21)] == NOT_REACHED
    assert statuses[("DL102", 8)] == NOT_OBSERVED
    assert {c for c, _ in statuses if c.startswith("DL90")} == {"DL901", "DL902"}


def test_hanging_target_is_killed_and_reported(tmp_path: Path) -> None:  # (g)
    started = time.monotonic()
    collected = collect(
        [_entry("fixtures/confirm/hang.py:make_hang")],
        _settings(timeout=4.0),
        preferred=set(),
    )
    elapsed = time.monotonic() - started
    (outcome,) = collected.run.targets
    assert outcome.status == "timeout"
    assert "timeout" in outcome.message
    assert 4.0 <= elapsed < 20
    assert not collected.run.successful


def test_script_with_nccl_ddp_and_compile_runs_on_the_fake_pg() -> None:  # (f)
    target = script_target(SCRIPT, ("--steps", "50"))
    collected = collect([target], _settings(timeout=120, max_steps=2), preferred=_preferred())
    (outcome,) = collected.run.targets
    assert outcome.status == "ok", outcome
    notes = " ".join(outcome.notes)
    assert "init_process_group(backend='nccl') runs on the fake process group" in notes
    assert "step limit reached (2 optimizer steps)" in notes
    assert collected.run.graphs >= 2
    findings, _ = apply([_finding(SCRIPT, "DL102", 28)], collected, cwd=ROOT)
    item = next(f for f in findings if f.code == "DL102")
    assert _status(item) == CONFIRMED
    assert dict(item.properties)["gbId"] == "GB0124"
    assert normalize(str(SCRIPT)) in collected.traced


# A CUDA script with and without --map-cuda-to-cpu: tests/confirm/test_scripts.py.


def _start_event(result) -> dict:
    (start,) = [e for e in result.events if e.get("event") == "start"]
    return start


def test_targets_are_forked_from_one_warm_server() -> None:
    spec = _entry("fixtures/confirm/scalars.py:make_captured").spec(_settings())
    with ForkServer(cwd=ROOT, startup_timeout=120) as server:
        first = server.run(spec, timeout=60, memory_mb=None)
        pid = server.pid
        second = server.run(spec, timeout=60, memory_mb=None)
        assert server.pid == pid
    assert first.ended and second.ended
    starts = [_start_event(first), _start_event(second)]
    assert [s["ppid"] for s in starts] == [pid, pid]
    assert starts[0]["pid"] != starts[1]["pid"]  # a fresh child each time
    assert server.pid is None  # closed


def test_a_server_that_cannot_start_falls_back_to_one_interpreter_per_target() -> None:
    spec = _entry("fixtures/confirm/scalars.py:make_captured").spec(_settings())
    with ForkServer(cwd=ROOT, startup_timeout=60, python="/nonexistent/python") as server:
        result = server.run(spec, timeout=120, memory_mb=None)
    assert result.ended
    (note,) = server.notes
    assert "each target starts its own interpreter" in note


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status  # a zombie waiting for init: killed


def test_a_server_that_dies_mid_target_loses_only_that_target() -> None:
    import os
    import signal
    import threading

    hang = _entry("fixtures/confirm/hang.py:make_hang").spec(_settings())
    quick = _entry("fixtures/confirm/scalars.py:make_captured").spec(_settings())
    with ForkServer(cwd=ROOT, startup_timeout=120) as server:
        server.run(quick, timeout=60, memory_mb=None)  # started and warm
        first_pid = server.pid
        assert first_pid is not None
        threading.Timer(2.0, os.kill, (first_pid, signal.SIGKILL)).start()
        started = time.monotonic()
        lost = server.run(hang, timeout=60, memory_mb=None)
        assert time.monotonic() - started < 30  # not the 60 s timeout
        after = server.run(quick, timeout=60, memory_mb=None)
        assert server.pid not in (None, first_pid)  # a new server
    assert not lost.ended and not lost.timed_out and lost.returncode is None
    assert _gone(_start_event(lost)["pid"])  # the target's process group was killed too
    assert after.ended
    assert any("died while a target ran" in note for note in server.notes), server.notes


def test_ctrl_c_during_a_target_is_an_interruption_not_a_timeout(tmp_path: Path) -> None:
    """The real command line, warm server and all: SIGINT kills the target, exits 130."""
    import os
    import signal
    import subprocess
    import sys

    from distlint.confirm.reaper import processes

    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    args = ["--confirm-entry", "fixtures/confirm/hang.py:make_hang", "fixtures/confirm/hang.py"]
    distlint = subprocess.Popen(
        [sys.executable, "-m", "distlint", "check", "--confirm", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def target() -> int | None:  # the server's child: the target, once it runs
        table = processes()
        server = [pid for pid, _, ppid, _ in table if ppid == distlint.pid]
        return next((pid for pid, _, ppid, _ in table if ppid in server), None)

    deadline = time.monotonic() + 120
    while (pid := target()) is None:
        assert distlint.poll() is None, distlint.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.1)
    distlint.send_signal(signal.SIGINT)
    stdout, stderr = distlint.communicate(timeout=60)
    assert distlint.returncode == 130, stderr
    assert stdout == ""
    assert stderr.strip().endswith(
        "distlint: confirm interrupted by SIGINT (target fixtures/confirm/hang.py:make_hang "
        "was killed, temporary files removed): no report"
    )
    assert _gone(pid)
    assert not list(tmp_path.iterdir())
