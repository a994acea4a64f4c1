"""The warm fork server: imports torch once, then forks one child per target.

``python -m distlint.confirm.server`` (started by :class:`distlint.confirm.sandbox.ForkServer`)
imports torch, Dynamo and torch.distributed (:func:`distlint.confirm.child.warm_up`), writes
``{"ready": seconds}`` on stdout, then reads one JSON request per line on stdin::

    {"spec": PATH, "events": PATH, "output": PATH, "cwd": DIR, "env": {...}, "memory_mb": N}

For each request it forks a child that starts its own session (so its own process group: the
parent kills the whole tree at the timeout), applies the memory limit, moves to ``cwd``, sets
``env``, sends its stdout and stderr to ``output`` and runs the target
(:func:`distlint.confirm.child.run_target`). The server answers ``{"pid": PID}`` at once and
``{"pid": PID, "status": CODE}`` when the child ends (``-N``: killed by signal N), then reads
the next request; end of input stops it. The server itself never runs a target: each child
starts from the same freshly imported state, and what a target patches dies with it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any


def _child(request: dict[str, Any], protocol_fds: tuple[int, ...]) -> None:
    """In the forked child: isolate, then run the target. Never returns."""
    code = 70
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        memory_mb = request.get("memory_mb")
        if memory_mb:
            import resource

            limit = int(memory_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.chdir(request["cwd"])
        os.environ.update(request.get("env") or {})
        import tempfile

        tempfile.tempdir = None  # TMPDIR changed: forget the server's
        output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        for fd in (null, output, *protocol_fds):
            if fd > 2:
                os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115

        from distlint.confirm.child import run_target

        code = run_target(request["spec"], request["events"])
    except SystemExit as exc:
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


def serve(stdin: Any, stdout: Any) -> int:
    started = time.monotonic()
    from distlint.confirm.child import warm_up

    warm_up()
    reply = _replier(stdout)
    reply(ready=round(time.monotonic() - started, 3), pid=os.getpid())
    protocol_fds = (stdin.fileno(), stdout.fileno())
    for line in stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, protocol_fds)
        reply(pid=pid)
        _, status = os.waitpid(pid, 0)
        reply(pid=pid, status=os.waitstatus_to_exitcode(status))
    return 0


def _replier(stdout: Any) -> Any:
    def reply(**data: Any) -> None:
        stdout.write(json.dumps(data) + "\n")
        stdout.flush()

    return reply


def main() -> int:
    # The protocol owns the real stdout; anything torch prints goes to stderr.
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return serve(sys.stdin, protocol)


if __name__ == "__main__":
    sys.exit(main())
