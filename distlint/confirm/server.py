"""The fork server: forks one child per target and supervises it to the last process.

``python -m distlint.confirm.server [--cold] [--tmp DIR]`` (started by
:class:`distlint.confirm.sandbox.ForkServer`) makes itself a child subreaper
(:mod:`distlint.confirm.reaper`), imports torch, Dynamo and torch.distributed
(:func:`distlint.confirm.child.warm_up`; not with ``--cold``: then each child imports what
it needs), writes ``{"ready": seconds, "pid": PID}`` on stdout, then reads one JSON request
per line on stdin::

    {"spec": PATH, "events": PATH, "output": PATH, "cwd": DIR, "env": {...},
     "memory_mb": N, "nonce": HEX, "tmp": DIR}

For each request it forks a child that starts its own session (so its own process group),
applies the memory limit, moves to ``cwd``, sets ``env``, sends its stdout and stderr to a pipe
and runs the target (:func:`distlint.confirm.child.run_target`, which signs its end-of-run
record with ``nonce``). The server answers ``{"pid": PID}`` at once. While the child runs it
keeps the last :data:`OUTPUT_CAP` bytes of the output (memory and disk stay bounded whatever
the target prints) and watches stdin. When the child ends it kills every process the target
left behind (:func:`distlint.confirm.reaper.sweep`), writes the kept output to ``output`` and
answers ``{"pid": PID, "status": CODE, "left": N}`` (``-N``: killed by signal N; ``left``: the
processes it killed), then reads the next request. The server itself never runs a target:
each child starts from the same freshly imported state, and what a target patches dies with
it.

End of input stops the server, and it removes its directory ``--tmp``. If the input ends
while a target runs (distlint was interrupted, or killed outright), the server kills the
target's tree and removes the run's temporary directory (``tmp`` of the request) first.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import sys
import time
from typing import Any

from distlint.confirm import reaper

OUTPUT_CAP = 64 * 1024  # bytes of a target's output kept (the end of it)
_DRAIN_SECONDS = 2.0  # after the sweep, how long the output pipe may take to reach EOF


def _child(request: dict[str, Any], output: int, close: tuple[int, ...]) -> None:
    """In the forked child: isolate, then run the target. Never returns."""
    code = 70
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        memory_mb = request.get("memory_mb")
        if memory_mb:
            import resource

            limit = int(memory_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.chdir(request["cwd"])
        os.environ.update(request.get("env") or {})
        import tempfile

        tempfile.tempdir = None  # TMPDIR changed: forget the server's
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        for fd in (null, output, *close):
            if fd > 2:
                with contextlib.suppress(OSError):
                    os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        import faulthandler

        faulthandler.enable()  # a segfault names the Python line it happened on

        from distlint.confirm.child import run_target

        code = run_target(request["spec"], request["events"], nonce=request.get("nonce"))
    except SystemExit as exc:  # not from the target: run_target records the target's
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


class Tail:
    """The last ``cap`` bytes of a stream, and how many came before them."""

    def __init__(self, cap: int = OUTPUT_CAP) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > 2 * self.cap:
            del self.data[: len(self.data) - self.cap]

    def text(self) -> bytes:
        kept = bytes(self.data[-self.cap :])
        dropped = self.total - len(kept)
        if dropped <= 0:
            return kept
        return f"[distlint: {dropped} bytes of output left out]\n".encode() + kept


class Server:
    """Reads requests from ``stdin_fd``, replies on ``stdout``."""

    def __init__(self, stdin_fd: int, stdout: Any) -> None:
        self.stdin_fd = stdin_fd
        self.stdout = stdout
        self.buffer = b""
        self.eof = False

    def reply(self, **data: Any) -> None:
        try:
            self.stdout.write(json.dumps(data) + "\n")
            self.stdout.flush()
        except OSError:  # distlint is gone
            self.eof = True

    def _fill(self) -> None:
        chunk = os.read(self.stdin_fd, 65536)
        if chunk:
            self.buffer += chunk
        else:
            self.eof = True

    def requests(self) -> Any:
        while True:
            while b"\n" not in self.buffer and not self.eof:
                self._fill()
            if b"\n" not in self.buffer:
                return
            line, _, self.buffer = self.buffer.partition(b"\n")
            if line.strip():
                yield json.loads(line)

    def run(self, request: dict[str, Any]) -> None:
        keep = frozenset(reaper.children())
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child(request, write_end, (read_end, self.stdin_fd, self.stdout.fileno()))
        os.close(write_end)
        self.reply(pid=pid)
        tail = Tail()
        status = self._supervise(pid, read_end, tail)
        left = reaper.sweep(pid, keep)
        self._drain(read_end, tail)
        os.close(read_end)
        with contextlib.suppress(OSError), open(request["output"], "wb") as out:
            out.write(tail.text())
        if self.eof:  # distlint closed our input while the target ran: it is gone or leaving
            shutil.rmtree(request["tmp"], ignore_errors=True)
        self.reply(pid=pid, status=status, left=left)

    def _supervise(self, pid: int, read_end: int, tail: Tail) -> int:
        """Keep the output's tail until the child ends; kill it if our input closes."""
        with selectors.DefaultSelector() as selector:
            selector.register(read_end, selectors.EVENT_READ)
            if self.eof:  # distlint went away before the target started
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            else:
                selector.register(self.stdin_fd, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select(0.05):
                    if key.fd == read_end:
                        chunk = os.read(read_end, 65536)
                        if chunk:
                            tail.add(chunk)
                        else:
                            selector.unregister(read_end)
                    else:
                        self._fill()
                        if self.eof:
                            selector.unregister(self.stdin_fd)
                            with contextlib.suppress(ProcessLookupError, PermissionError):
                                os.killpg(pid, signal.SIGKILL)
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return os.waitstatus_to_exitcode(status)

    def _drain(self, read_end: int, tail: Tail) -> None:
        """The rest of the output: every writer is dead after the sweep, so EOF is near."""
        deadline = time.monotonic() + _DRAIN_SECONDS
        with selectors.DefaultSelector() as selector:
            selector.register(read_end, selectors.EVENT_READ)
            while time.monotonic() < deadline:
                if not selector.select(max(deadline - time.monotonic(), 0)):
                    return
                chunk = os.read(read_end, 65536)
                if not chunk:
                    return
                tail.add(chunk)


def serve(stdin_fd: int, stdout: Any, *, warm: bool = True, tmp: str | None = None) -> int:
    started = time.monotonic()
    subreaper = reaper.become_subreaper()
    if warm:
        from distlint.confirm.child import warm_up

        warm_up()
    server = Server(stdin_fd, stdout)
    try:
        server.reply(ready=round(time.monotonic() - started, 3), pid=os.getpid(), sweeps=subreaper)
        for request in server.requests():
            if server.eof:
                break
            server.run(request)
    finally:  # distlint removes it too when it is alive; not when it was killed
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main(argv: list[str]) -> int:
    # The protocol owns the real stdout; anything torch prints goes to stderr.
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    tmp = argv[argv.index("--tmp") + 1] if "--tmp" in argv else None
    return serve(sys.stdin.fileno(), protocol, warm="--cold" not in argv, tmp=tmp)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
