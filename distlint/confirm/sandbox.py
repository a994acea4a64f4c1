"""Run targets in child processes, bounded in time, memory, output and process tree.

Each target runs in a child process forked by a fork server (:mod:`distlint.confirm.server`)
with

* its own session (so its own process group); the server is a child subreaper
  (:mod:`distlint.confirm.reaper`): when the target ends, however it ends, every process it
  left behind is killed, those that left its group with ``setsid`` included;
* ``RLIMIT_AS`` (address space) from ``resource.setrlimit``;
* a fresh temporary directory for compiler caches (``TORCHINDUCTOR_CACHE_DIR``,
  ``TRITON_CACHE_DIR``) and for ``TMPDIR``, removed afterwards;
* an environment without ``TORCH_LOGS`` (set-but-empty crashes ``import torch`` on 2.13) and
  with ``CUDA_VISIBLE_DEVICES=""``: confirm mode runs on CPU;
* its output kept to the last 64 KiB (:data:`distlint.confirm.server.OUTPUT_CAP`) and its
  event file read to :data:`MAX_EVENT_BYTES`.

The child writes JSON events to a file as they happen, so a killed child still leaves its
observations (see :mod:`distlint.confirm.child`). Whether it ran to the end is decided here,
not by what it wrote: a zero exit status *and* an ``end`` record carrying the run's secret
nonce (sent to the server over its private pipe, never written where the target can read it).

:class:`ForkServer` runs the children of one confirm run: a warm server process imports torch
once and forks a child per target, so N targets cost one import plus their own time.
:func:`run_child` runs one target from a cold server (the child imports torch itself): the
fallback when the warm server cannot start or dies.

:func:`interruptible` turns SIGINT, SIGTERM and SIGHUP into :class:`Interrupted` while targets
run, so the target's tree is killed and the temporary directories removed before distlint
exits; if distlint is killed outright, the server sees its input close and does the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ENV_DROP = ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE")
MAX_EVENT_BYTES = 64 * 1024 * 1024  # of a child's event file read (its recorder stops at 32)
_END_WINDOW = 1024 * 1024  # read from the end of a longer event file, for its end record
_REAP_SECONDS = 20.0  # for the server to sweep a killed target's tree and answer


@dataclass
class ChildResult:
    """What one child run left: its events, how it ended, and its captured output."""

    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    stderr_tail: str = ""
    nonce: str | None = None
    left: int = 0  # processes the target left running, killed after it ended

    @property
    def ended(self) -> bool:
        """Ran to the end: exit status 0 and the end record signed with this run's nonce."""
        return (
            self.returncode == 0
            and self.nonce is not None
            and any(
                event.get("event") == "end" and event.get("nonce") == self.nonce
                for event in self.events
            )
        )


class Interrupted(BaseException):
    """distlint got SIGINT, SIGTERM or SIGHUP while a target ran (see :func:`interruptible`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.target: str | None = None  # the target that was running, when one was

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_INTERRUPTS = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Raise :class:`Interrupted` on the first SIGINT/SIGTERM/SIGHUP; ignore the later ones.

    Later signals are ignored so that the cleanup the first one starts is not cut short. Only
    the main thread can handle signals: elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        if not fired:
            fired.append(signum)
            raise Interrupted(signum)

    numbers = [getattr(signal, name) for name in _INTERRUPTS if hasattr(signal, name)]
    previous = {number: signal.signal(number, handler) for number in numbers}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def child_env(cache_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    env.update(
        {
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache_dir, "inductor"),
            "TRITON_CACHE_DIR": os.path.join(cache_dir, "triton"),
            "TMPDIR": cache_dir,
            "CUDA_VISIBLE_DEVICES": "",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    distlint_root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (distlint_root, env.get("PYTHONPATH")) if p)
    return env


def run_child(
    spec: dict[str, Any],
    *,
    timeout: float,
    memory_mb: int | None,
    cwd: Path,
    python: str | None = None,
    tick: Callable[[float], None] | None = None,
) -> ChildResult:
    """Run one target from a cold fork server (the child imports torch itself).

    Same supervision as :meth:`ForkServer.run`; a server that cannot start at all gives a
    result with no return code and the reason as its output.
    """
    with ForkServer(cwd=cwd, startup_timeout=60, python=python, warm=False) as server:
        try:
            server._start()
        except (ServerUnavailable, OSError) as exc:
            return ChildResult(stderr_tail=str(exc))
        try:
            return server._run(spec, timeout=timeout, memory_mb=memory_mb, tick=tick, cwd=cwd)
        except _NotStarted as exc:
            return ChildResult(stderr_tail=str(exc))


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL does not wait for cleanup
        process.wait(timeout=10)


def read_events(path: Path, limit: int = MAX_EVENT_BYTES) -> list[dict[str, Any]]:
    """The events of ``path``: its first ``limit`` bytes, and its end record if it is longer."""
    events: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit)
            more = handle.read(1)
            if more:  # cut: keep whole lines, then look for the end record near the end
                data = data[: data.rfind(b"\n") + 1]
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(size - _END_WINDOW, limit))
                tail = handle.read(_END_WINDOW)
                ends = [line for line in tail.splitlines() if b'"event": "end"' in line]
                data += b"\n".join(ends[-1:])
    except OSError:
        return events
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the last line of a killed child may be cut
        if isinstance(event, dict):
            events.append(event)
    if more:
        events.append({"event": "note", "text": f"only the first {limit} bytes of events read"})
    return events


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(handle.tell() - limit, 0))
            data = handle.read(limit)
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace")


def _target_env(cache_dir: str) -> dict[str, str]:
    return {
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache_dir, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(cache_dir, "triton"),
        "TMPDIR": cache_dir,
    }


class ServerUnavailable(Exception):
    """The fork server could not start, or died; the message says why."""


class _NotStarted(ServerUnavailable):
    """The server did not take the target (it is gone): the target has not run."""


class ForkServer:
    """A warm process that imports torch once and forks one child per target.

    Use as a context manager; :meth:`run` has :func:`run_child`'s contract. When the server
    cannot be started (or dies between targets) :meth:`run` falls back to :func:`run_child`
    and says so in :attr:`notes`. ``warm=False`` starts a server that imports nothing: each
    child imports what its target needs.
    """

    def __init__(
        self,
        *,
        cwd: Path,
        startup_timeout: float,
        python: str | None = None,
        warm: bool = True,
    ) -> None:
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.python = python
        self.warm = warm
        self.notes: list[str] = []
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._buffer = b""
        self._eof = False
        self._failed = False

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- lifecycle --------------------------------------------------------------------------------

    def _start(self) -> None:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="distlint-confirm-server-")
        cache = Path(self._tmp.name) / "cache"
        cache.mkdir(exist_ok=True)
        self._log = Path(self._tmp.name) / "server.log"
        started = time.monotonic()
        command = [self.python or sys.executable, "-m", "distlint.confirm.server"]
        command += ["--tmp", self._tmp.name] + ([] if self.warm else ["--cold"])
        with open(self._log, "wb") as log:
            self._process = subprocess.Popen(
                command,
                cwd=str(self.cwd),
                env=child_env(str(cache)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        reply = self._read(self.startup_timeout)
        if reply is None or "ready" not in reply:
            tail = crash_cause(_tail(self._log))
            why = "timed out" if reply is None and not self._eof else "failed"
            self._stop()
            raise ServerUnavailable(
                f"the fork server {why} at start" + (f": {tail}" if tail else "")
            )
        self.startup_seconds = time.monotonic() - started

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs."""
        return self._process.pid if self._alive() else None  # type: ignore[union-attr]

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _stop(self, wait: float = 5) -> None:
        """Close the server's input (it ends; a target it runs is killed) and wait for it."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                if process.stdin:
                    process.stdin.close()
            try:
                process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                kill_group(process)
            if process.stdout:
                process.stdout.close()
        self._buffer = b""
        self._eof = False

    def close(self) -> None:
        self._stop()
        if self._tmp is not None:
            shutil.rmtree(self._tmp.name, ignore_errors=True)
            self._tmp.cleanup()
            self._tmp = None

    # -- protocol ---------------------------------------------------------------------------------

    def _read(self, timeout: float | None, tick: Callable[[], None] | None = None) -> Any:
        """The server's next reply; None at the timeout or when the server is gone."""
        process = self._process
        assert process is not None and process.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                wait = 0.2
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        return None
                if selector.select(wait):
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        self._eof = True
                        return None  # the server is gone
                    self._buffer += chunk
                elif tick is not None:
                    tick()
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            return None

    def _send(self, request: dict[str, Any]) -> bool:
        process = self._process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            process.stdin.flush()
        except OSError:
            return False
        return True

    # -- targets ----------------------------------------------------------------------------------

    def run(
        self,
        spec: dict[str, Any],
        *,
        timeout: float,
        memory_mb: int | None,
        tick: Callable[[float], None] | None = None,
        cwd: Path | None = None,
    ) -> ChildResult:
        """Run ``spec`` in a forked child; kill its process group after ``timeout`` seconds.

        The child works in ``cwd`` (default: the server's directory).
        """
        cwd = cwd or self.cwd
        if not self._failed and not self._alive():
            try:
                self._start()
            except (ServerUnavailable, OSError) as exc:
                self._failed = True
                self.notes.append(f"{exc}; each target starts its own interpreter")
        if not self._failed and self._alive():
            try:
                return self._run(spec, timeout=timeout, memory_mb=memory_mb, tick=tick, cwd=cwd)
            except _NotStarted as exc:  # the target did not start: run it on its own
                self._stop()
                self.notes.append(f"{exc}; the next target starts a new one")
        return run_child(spec, timeout=timeout, memory_mb=memory_mb, cwd=cwd, tick=tick)

    def _run(
        self,
        spec: dict[str, Any],
        *,
        timeout: float,
        memory_mb: int | None,
        tick: Callable[[float], None] | None,
        cwd: Path,
    ) -> ChildResult:
        result = ChildResult(nonce=secrets.token_hex(16))
        with tempfile.TemporaryDirectory(
            prefix="distlint-confirm-", ignore_cleanup_errors=True
        ) as tmp:
            spec_path = Path(tmp) / "spec.json"
            events_path = Path(tmp) / "events.jsonl"
            output_path = Path(tmp) / "stderr.txt"
            spec_path.write_text(json.dumps(spec), encoding="utf-8")
            events_path.touch()
            cache_dir = Path(tmp) / "cache"
            cache_dir.mkdir()
            request = {
                "spec": str(spec_path),
                "events": str(events_path),
                "output": str(output_path),
                "cwd": str(cwd),
                "env": _target_env(str(cache_dir)),
                "memory_mb": memory_mb,
                "nonce": result.nonce,
                "tmp": tmp,
            }
            started = time.monotonic()
            try:
                if not self._send(request):
                    raise _NotStarted("the fork server is gone")
                reply = self._read(timeout)
                if reply is None or "pid" not in reply:
                    raise _NotStarted("the fork server did not start the target")
            except _NotStarted:
                raise
            except BaseException:  # interrupted: the server kills what it started as it ends
                self._stop(wait=_REAP_SECONDS)
                raise
            pid = int(reply["pid"])
            try:
                status = self._wait(pid, started, timeout, tick, result)
            except ServerUnavailable as exc:  # the target's events are kept; it "crashed"
                self._stop()
                self.notes.append(f"{exc}; the next target starts a new one")
                status = None
            except BaseException:  # interrupted: kill the tree, let the server sweep it
                _kill_pid_group(pid)
                if self._alive() and self._read(_REAP_SECONDS) is None:
                    self._stop(wait=_REAP_SECONDS)
                raise
            result.returncode = status
            result.seconds = time.monotonic() - started
            result.events = read_events(events_path)
            result.stderr_tail = _tail(output_path)
        return result

    def _wait(
        self,
        pid: int,
        started: float,
        timeout: float,
        tick: Callable[[float], None] | None,
        result: ChildResult,
    ) -> int | None:
        def on_tick() -> None:
            if tick is not None:
                tick(time.monotonic() - started)

        remaining = timeout - (time.monotonic() - started)
        reply = self._read(max(remaining, 0.0), on_tick) if remaining > 0 else None
        if reply is None:
            if self._eof or not self._alive():
                _kill_pid_group(pid)
                raise ServerUnavailable("the fork server died while a target ran")
            result.timed_out = True
            _kill_pid_group(pid)
            reply = self._read(_REAP_SECONDS)
            if reply is None:
                raise ServerUnavailable("the fork server did not reap a killed target")
        result.left = int(reply.get("left") or 0)
        return reply.get("status")


def _kill_pid_group(pid: int) -> None:
    """SIGKILL a forked child's process group (it leads its own session), or the child."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# Output that is never the cause of a crash: torch's warnings about a NumPy it cannot use.
_NOISE = (
    "_ARRAY_API",
    "compiled using NumPy 1.x",
    "numpy.core.multiarray failed to import",
    "Failed to initialize NumPy",
)
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit)(?::.*)?$"
)
_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def crash_cause(output: str) -> str:
    """The cause a crashed child's output names, or ``""``.

    A fatal error (faulthandler's report of a segfault, with the innermost frame of user code)
    first, else the last exception line of a traceback. Warnings, source lines and torch's
    NumPy complaints are never quoted: when nothing better is there, nothing is.
    """
    from distlint.confirm.match import display, is_library, normalize

    lines = output.splitlines()
    fatal = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error:")]
    if fatal:
        text = lines[fatal[-1]].strip()[:300]
        for line in lines[fatal[-1] + 1 :]:
            frame = _FAULT_FRAME.match(line)
            if frame and not is_library(frame.group("file")):
                place = display(normalize(frame.group("file")), Path.cwd())
                return f"{text} at {place}:{frame.group('line')}"
        return text
    for line in reversed(lines):
        line = line.rstrip()
        if _EXCEPTION_LINE.match(line) and not any(noise in line for noise in _NOISE):
            return line[:300]
    return ""
