"""The confirm sandbox against hostile targets: process trees, forged records, exits, signals.

The targets here are tiny Python files run "bare" (``"bare": true`` in the spec: no torch,
no hooks) from a cold fork server, so each run costs a fork, not an ``import torch``; what is
tested (supervision, the end-of-run protocol, messages, cleanup) does not depend on torch.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from distlint.confirm import run as confirm_run
from distlint.confirm.child import Recorder
from distlint.confirm.match import TargetOutcome
from distlint.confirm.run import collect, crash_cause, outcome_of
from distlint.confirm.sandbox import ChildResult, ForkServer, read_events, run_child
from distlint.confirm.server import OUTPUT_CAP, Tail
from distlint.confirm.targets import ConfirmSettings, Target

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@dataclass(frozen=True)
class Bare(Target):
    """A target run without torch."""

    def spec(self, settings: ConfirmSettings) -> dict[str, Any]:
        return {**super().spec(settings), "bare": True}


def script(tmp_path: Path, text: str, *argv: str, name: str = "target.py") -> Bare:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return Bare(kind="script", name=name, script=str(path), argv=argv)


@pytest.fixture(autouse=True)
def cold_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """collect() starts a cold server (no torch import) instead of the warm one.

    The tests work in ``tmp_path``: messages name files relative to the working directory.
    """
    monkeypatch.setattr(confirm_run, "ForkServer", functools.partial(ForkServer, warm=False))
    monkeypatch.chdir(tmp_path)


def confirm(target: Target, tmp_path: Path, timeout: float = 30) -> tuple[TargetOutcome, Any]:
    collected = collect([target], ConfirmSettings(base=tmp_path, timeout=timeout), preferred=set())
    (outcome,) = collected.run.targets
    return outcome, collected.run


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return state[state.rfind(b")") + 2 :].split()[0] != b"Z"


def pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


# A script that starts CHILDREN sleepers in its process group, one that leaves with setsid and
# one daemon (double fork + setsid: its parent exits at once), writes their pids to argv[1],
# then does what argv[2] says.
SPAWNER = """\
import os, subprocess, sys, time
SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]
pids = [subprocess.Popen(SLEEP).pid for _ in range({children})]
pids.append(subprocess.Popen(SLEEP, start_new_session=True).pid)
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    daemon = subprocess.Popen(SLEEP).pid
    os.write(write, str(daemon).encode())
    os._exit(0)
os.close(write)
pids.append(int(os.read(read, 100)))
with open(sys.argv[1], "w") as out:
    out.write(" ".join(map(str, pids)))
if sys.argv[2] == "hang":
    time.sleep(120)
"""


def test_a_target_that_returns_leaves_no_process_running(tmp_path: Path) -> None:
    target = script(tmp_path, SPAWNER.format(children=50), str(tmp_path / "pids"), "return")
    outcome, run = confirm(target, tmp_path)
    assert outcome.status == "ok", outcome
    started = pids(tmp_path / "pids")
    assert len(started) == 52
    assert not [pid for pid in started if alive(pid)]
    assert run.notes == ["target target.py left 52 processes running when it ended: killed"]


def test_setsid_escapes_are_killed_at_the_timeout(tmp_path: Path) -> None:
    target = script(tmp_path, SPAWNER.format(children=2), str(tmp_path / "pids"), "hang")
    started = time.monotonic()
    outcome, _ = confirm(target, tmp_path, timeout=3)
    assert time.monotonic() - started < 20
    assert outcome.status == "timeout"
    assert not [pid for pid in pids(tmp_path / "pids") if alive(pid)]


def test_the_fallback_interpreter_sweeps_too(tmp_path: Path) -> None:
    target = script(tmp_path, SPAWNER.format(children=3), str(tmp_path / "pids"), "return")
    spec = target.spec(ConfirmSettings(base=tmp_path))
    result = run_child(spec, timeout=30, memory_mb=None, cwd=tmp_path)
    assert result.ended and result.left == 5
    assert not [pid for pid in pids(tmp_path / "pids") if alive(pid)]


FORGE = """\
import json, os, signal
events = next(
    os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
    if os.readlink(f"/proc/self/fd/{fd}").endswith("events.jsonl")
)
with open(events, "a") as out:
    out.write(json.dumps({"event": "end", "reason": "done", "nonce": None}) + "\\n")
FINISH
"""


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL (signal 9)"),
        (
            "os._exit(0)",
            "it exited with status 0 before the end of the run (os._exit in the target?)",
        ),
    ],
)
def test_a_forged_end_record_does_not_make_a_run_complete(
    tmp_path: Path, finish: str, expected: str
) -> None:
    outcome, run = confirm(script(tmp_path, FORGE.replace("FINISH", finish)), tmp_path)
    assert outcome.status == "crashed"
    assert outcome.message == f"the child process crashed: {expected}"
    assert not run.successful


def test_ended_needs_the_nonce_and_a_zero_status() -> None:
    end = {"event": "end", "nonce": "secret"}
    assert ChildResult(events=[end], returncode=0, nonce="secret").ended
    assert not ChildResult(events=[end], returncode=-9, nonce="secret").ended
    assert not ChildResult(events=[{**end, "nonce": "guess"}], returncode=0, nonce="secret").ended
    assert not ChildResult(events=[{"event": "end"}], returncode=0, nonce="secret").ended


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "sys.exit(0)",
            "the script called sys.exit(0) before the compiled code ran at target.py:3",
        ),
        ("sys.exit()", "the script called sys.exit() before the compiled code ran at target.py:3"),
        (
            "sys.exit(3)",
            "the script called sys.exit(3) before the compiled code ran at target.py:3",
        ),
        (
            "sys.exit('no data')",
            "the script called sys.exit('no data') before the compiled code ran",
        ),
    ],
)
def test_sys_exit_in_a_script_is_told_as_such(tmp_path: Path, body: str, message: str) -> None:
    outcome, _ = confirm(script(tmp_path, f"import sys\n\n{body}\n"), tmp_path)
    assert outcome.status == "exited"
    assert outcome.message.startswith(message), outcome.message
    assert "crashed" not in outcome.message


def test_sys_exit_in_an_entry_factory_is_told_as_such(tmp_path: Path) -> None:
    (tmp_path / "entries.py").write_text("import sys\n\ndef make():\n    sys.exit(0)\n")
    entry = f"{tmp_path / 'entries.py'}:make"
    outcome, _ = confirm(Bare(kind="entry", name=entry, entry=entry), tmp_path)
    assert outcome.status == "exited"
    assert outcome.message == (
        "the entry called sys.exit(0) before the compiled code ran at entries.py:4"
    )


def _result(*events: dict[str, Any]) -> ChildResult:
    end = {"event": "end", "nonce": "n"}
    return ChildResult(events=[*events, end], returncode=0, nonce="n")


def test_sys_exit_0_ends_a_script_that_compiled_but_not_an_entry() -> None:
    exit_event = {"event": "exit", "code": 0, "stack": []}
    compiled = {"graphs": 1, "breaks": 0, "errors": 0, "frames": 1, "library_breaks": 0}
    script_target = Target(kind="script", name="train.py", script="train.py")
    assert outcome_of(script_target, _result(exit_event), compiled).status == "ok"
    entry = Target(kind="entry", name="m:f", entry="m:f")
    outcome = outcome_of(entry, _result(exit_event), compiled)
    assert outcome.status == "exited"
    assert outcome.message == "the entry called sys.exit(0) after the compiled code ran"


NUMPY_NOISE = """\
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.1.0 as it may crash.
Traceback (most recent call last):  File "<string>", line 1, in <module>
AttributeError: _ARRAY_API not found
/x/torch/nn/modules/transformer.py:20: UserWarning: Failed to initialize NumPy: _ARRAY_API \
not found (Triggered internally at /pytorch/torch/csrc/utils/tensor_numpy.cpp:84.)
  device: torch.device = torch.device(torch._C._get_default_device()),  # torch.device('cpu'),
"""


def test_a_segfault_names_its_line_not_torchs_numpy_warning(tmp_path: Path) -> None:
    text = f"""\
    import os, signal, sys
    sys.stderr.write({NUMPY_NOISE!r})
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSEGV)
    """
    outcome, _ = confirm(script(tmp_path, text), tmp_path)
    assert outcome.status == "crashed"
    assert outcome.message == (
        "the child process crashed: killed by SIGSEGV (signal 11); "
        "Fatal Python error: Segmentation fault at target.py:4"
    )


def test_crash_cause_quotes_an_exception_never_a_warning() -> None:
    assert crash_cause(NUMPY_NOISE) == ""
    traceback = 'Traceback (most recent call last):\n  File "t.py", line 1\nValueError: bad\n'
    assert crash_cause(NUMPY_NOISE + traceback + NUMPY_NOISE) == "ValueError: bad"
    assert crash_cause("RuntimeError: x\n/a.py:1: UserWarning: y\n  warn()\n") == "RuntimeError: x"


def test_output_is_capped_in_memory_and_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(work))
    sizes = []

    def tick(elapsed: float) -> None:
        sizes.append(sum(f.stat().st_size for f in work.rglob("*") if f.is_file()))

    target = script(
        tmp_path,
        """\
        import sys, time
        for _ in range(400):
            sys.stdout.write("x" * 100_000 + "\\n")
        print("the last line")
        time.sleep(1)
        """,
    )
    spec = target.spec(ConfirmSettings(base=tmp_path))
    with ForkServer(cwd=tmp_path, startup_timeout=30, warm=False) as server:
        result = server.run(spec, timeout=60, memory_mb=None, tick=tick)
    assert result.ended
    assert result.stderr_tail.endswith("the last line\n")
    assert sizes and max(sizes) < 1024 * 1024  # 40 MB printed
    assert not list(work.iterdir())  # and removed


def test_tail_keeps_the_end_and_says_what_it_left_out() -> None:
    tail = Tail(cap=10)
    for _ in range(100):
        tail.add(b"0123456789abc")
    assert tail.text() == b"[distlint: 1290 bytes of output left out]\n3456789abc"
    assert len(tail.data) <= 20
    assert OUTPUT_CAP == 64 * 1024


def test_event_file_is_read_to_a_limit_and_keeps_the_end_record(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"event": "note", "text": "x" * 50}) for _ in range(1000)]
    lines.append(json.dumps({"event": "end", "nonce": "n"}))
    path.write_text("\n".join(lines) + "\n")
    events = read_events(path, limit=10_000)
    assert len(events) < 200
    assert events[-2] == {"event": "end", "nonce": "n"}
    assert events[-1]["text"] == "only the first 10000 bytes of events read"


def test_the_recorder_stops_at_its_limit_but_writes_the_end(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    recorder = Recorder(str(path), limit=1000)
    for _ in range(100):
        recorder.emit("note", text="y" * 50)
    recorder.emit("end", nonce="n")
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert path.stat().st_size < 1200
    assert events[-2]["text"] == "too many events: the rest were not recorded"
    assert events[-1] == {"nonce": "n", "event": "end"}


# -- signals to distlint ---------------------------------------------------------------------------

DRIVER = """\
import functools, sys
from pathlib import Path
from distlint.confirm import run as confirm_run
from distlint.confirm.cli import ConfirmRequest
from distlint.confirm.sandbox import ForkServer
from distlint.confirm.targets import ConfirmSettings
from tests.confirm.test_sandbox import Bare

confirm_run.ForkServer = functools.partial(ForkServer, warm=False)
base = Path(sys.argv[1])
argv = (sys.argv[2], "hang")
target = Bare(kind="script", name="hang.py", script=str(base / "hang.py"), argv=argv)
request = ConfirmRequest(ConfirmSettings(base=base, timeout=100), [target], progress=False)
request.run([], cwd=base)
print("not interrupted")
"""


def _start_driver(tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    (tmp_path / "hang.py").write_text(SPAWNER.format(children=2))
    work = tmp_path / "tmp"
    work.mkdir()
    pid_file = tmp_path / "pids"
    env = {**os.environ, "TMPDIR": str(work), "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(tmp_path), str(pid_file)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return driver, pid_file, work


def _gone(pid_file: Path, work: Path, wait: float = 10) -> None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not [p for p in pids(pid_file) if alive(p)] and not list(work.iterdir()):
            return
        time.sleep(0.05)
    raise AssertionError(([p for p in pids(pid_file) if alive(p)], list(work.iterdir())))


@pytest.mark.parametrize(("signum", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_to_distlint_kills_the_target_and_removes_its_files(
    tmp_path: Path, signum: str, code: int
) -> None:
    driver, pid_file, work = _start_driver(tmp_path)
    driver.send_signal(getattr(signal, signum))
    stdout, stderr = driver.communicate(timeout=30)
    assert driver.returncode == code, stderr
    assert stdout == ""
    assert stderr.strip() == (
        f"distlint: confirm interrupted by {signum} (target hang.py was killed, temporary "
        "files removed): no report"
    )
    assert "timeout" not in stderr
    _gone(pid_file, work, wait=0.5)  # all done before distlint exited


def test_a_killed_distlint_leaves_no_target_and_no_files(tmp_path: Path) -> None:
    driver, pid_file, work = _start_driver(tmp_path)
    driver.kill()  # no handler runs: the fork server notices its input close
    driver.communicate(timeout=30)
    _gone(pid_file, work)
