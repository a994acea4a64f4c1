"""Run one target in a child process, bounded in time and memory.

* its own session (so its own process group): on timeout the whole tree is killed;
* ``RLIMIT_AS`` (address space) from ``resource.setrlimit`` before ``exec``;
* a fresh temporary directory for compiler caches (``TORCHINDUCTOR_CACHE_DIR``,
  ``TRITON_CACHE_DIR``) and for ``TMPDIR``, removed afterwards;
* an environment without ``TORCH_LOGS`` (set-but-empty crashes ``import torch`` on 2.13) and
  with ``CUDA_VISIBLE_DEVICES=""``: confirm mode runs on CPU.

The child writes JSON events to a file as they happen, so a killed child still leaves its
observations (see :mod:`distlint.confirm.child`).
"""

from __future__ import annotations

import contextlib
import json
import os
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
