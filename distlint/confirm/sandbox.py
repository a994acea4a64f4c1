"""Run targets in child processes, bounded in time and memory.

Each target runs in a child process with

* its own session (so its own process group): on timeout the whole tree is killed;
* ``RLIMIT_AS`` (address space) from ``resource.setrlimit``;
* a fresh temporary directory for compiler caches (``TORCHINDUCTOR_CACHE_DIR``,
  ``TRITON_CACHE_DIR``) and for ``TMPDIR``, removed afterwards;
* an environment without ``TORCH_LOGS`` (set-but-empty crashes ``import torch`` on 2.13) and
  with ``CUDA_VISIBLE_DEVICES=""``: confirm mode runs on CPU.

The child writes JSON events to a file as they happen, so a killed child still leaves its
observations (see :mod:`distlint.confirm.child`).

:class:`ForkServer` runs the children of one confirm run: a warm server process imports torch
once and forks a child per target (:mod:`distlint.confirm.server`), so N targets cost one
import plus their own time. :func:`run_child` starts a fresh interpreter for one target (the
fallback when the server cannot start or dies).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ENV_DROP = ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE")


@dataclass
class ChildResult:
    """What one child run left: its events, how it ended, and its captured output."""

    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    seconds: float = 0.0
    stderr_tail: str = ""

    @property
    def ended(self) -> bool:
        return any(event.get("event") == "end" for event in self.events)


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


def _limit_memory(memory_mb: int | None) -> Callable[[], None] | None:
    if not memory_mb:
        return None

    def apply() -> None:
        import resource

        limit = int(memory_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_child(
    spec: dict[str, Any],
    *,
    timeout: float,
    memory_mb: int | None,
    cwd: Path,
    python: str | None = None,
    tick: Callable[[float], None] | None = None,
) -> ChildResult:
    """Run the child on ``spec``; kill its process group after ``timeout`` seconds."""
    result = ChildResult()
    with tempfile.TemporaryDirectory(prefix="distlint-confirm-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        events_path = Path(tmp) / "events.jsonl"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        events_path.touch()
        cache_dir = Path(tmp) / "cache"
        cache_dir.mkdir()
        stderr_path = Path(tmp) / "stderr.txt"
        started = time.monotonic()
        with open(stderr_path, "wb") as stderr, open(os.devnull, "rb") as stdin:
            process = subprocess.Popen(
                [
                    python or sys.executable,
                    "-m",
                    "distlint.confirm.child",
                    str(spec_path),
                    str(events_path),
                ],
                cwd=str(cwd),
                env=child_env(str(cache_dir)),
                stdin=stdin,
                stdout=stderr,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_limit_memory(memory_mb),
            )
            try:
                while True:
                    elapsed = time.monotonic() - started
                    remaining = timeout - elapsed
                    if remaining <= 0:
                        raise subprocess.TimeoutExpired(process.args, timeout)
                    try:
                        process.wait(timeout=min(0.2, remaining))
                        break
                    except subprocess.TimeoutExpired:
                        if tick is not None:
                            tick(time.monotonic() - started)
            except subprocess.TimeoutExpired:
                result.timed_out = True
                kill_group(process)
            except BaseException:
                kill_group(process)
                raise
        result.returncode = process.returncode
        result.seconds = time.monotonic() - started
        result.events = read_events(events_path)
        result.stderr_tail = _tail(stderr_path)
    return result


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # SIGKILL does not wait for cleanup
        process.wait(timeout=10)


def read_events(path: Path) -> list[dict[str, Any]]:
    events = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return events
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the last line of a killed child may be cut
        if isinstance(event, dict):
            events.append(event)
    return events


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


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
    and says so in :attr:`notes`.
    """

    def __init__(
        self,
        *,
        cwd: Path,
        startup_timeout: float,
        python: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.startup_timeout = startup_timeout
        self.python = python
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
        with open(self._log, "wb") as log:
            self._process = subprocess.Popen(
                [self.python or sys.executable, "-m", "distlint.confirm.server"],
                cwd=str(self.cwd),
                env=child_env(str(cache)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        reply = self._read(self.startup_timeout)
        if reply is None or "ready" not in reply:
            tail = _last_line(_tail(self._log))
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

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(OSError):
                if process.stdin:
                    process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                kill_group(process)
            if process.stdout:
                process.stdout.close()
        self._buffer = b""
        self._eof = False

    def close(self) -> None:
        self._stop()
        if self._tmp is not None:
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
        result = ChildResult()
        with tempfile.TemporaryDirectory(prefix="distlint-confirm-") as tmp:
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
            }
            started = time.monotonic()
            if not self._send(request):
                raise _NotStarted("the fork server is gone")
            reply = self._read(timeout)
            if reply is None or "pid" not in reply:
                raise _NotStarted("the fork server did not start the target")
            pid = int(reply["pid"])
            try:
                status = self._wait(pid, started, timeout, tick, result)
            except ServerUnavailable as exc:  # the target's events are kept; it "crashed"
                self._stop()
                self.notes.append(f"{exc}; the next target starts a new one")
                status = None
            except BaseException:
                _kill_pid_group(pid)
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
            reply = self._read(10)
            if reply is None:
                raise ServerUnavailable("the fork server did not reap a killed target")
        return reply.get("status")


def _kill_pid_group(pid: int) -> None:
    """SIGKILL a forked child's process group (it leads its own session), or the child."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
