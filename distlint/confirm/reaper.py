"""Kill a target's whole process tree, ``setsid`` escapes included.

The fork server (:mod:`distlint.confirm.server`) is the only process that forks targets, and
it never runs target code. On Linux it makes itself a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``): a process the target starts and then leaves behind,
whether it stayed in the target's process group or left it with ``setsid`` or a double fork,
is re-parented to the server instead of to init. When the target ends, for whatever reason
(it returned, raised, crashed, was killed at its timeout or because distlint was interrupted),
:func:`sweep` kills the target's process group, then every child of the server that did not
exist before the target was forked, waits for each, and repeats until none is left: a killed
process's own children become the server's children in turn, so the whole tree is reached
without knowing it in advance.

Where ``prctl`` is not available (not Linux) only the process group is killed: processes
that leave it are not tracked. A target can still escape on purpose (it runs as the same
user: it can kill the server first); this is about the children real code leaves behind
(data-loader workers, compile workers, daemons), not a security boundary.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def processes() -> list[tuple[int, str, int, int]]:
    """``(pid, state, ppid, pgid)`` of every process, from ``/proc`` (empty without it).

    A state is ``/proc/PID/stat``'s letter: ``"Z"`` for a zombie (ended, not yet reaped).
    """
    found: list[tuple[int, str, int, int]] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2:
            state = fields[0].decode("ascii", "replace")
            found.append((int(name), state, int(fields[1]), int(fields[2])))
    return found


def children() -> dict[int, str]:
    """This process's children and their states."""
    me = os.getpid()
    return {pid: state for pid, state, ppid, _ in processes() if ppid == me}


def _reap(pid: int, deadline: float) -> bool:
    """Wait for ``pid`` (a child of ours) until ``deadline``; whether it was reaped."""
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # not ours (any more), or already reaped
        if done:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def sweep(group: int, keep: frozenset[int] = frozenset(), limit: float = 10.0) -> int:
    """Kill process group ``group`` and every child of ours not in ``keep``, to the last one.

    Returns how many of them were still running (zombies are only reaped): the processes the
    target left behind. The group leader is the caller's to reap.
    """
    me = os.getpid()
    running = {
        pid
        for pid, state, ppid, pgid in processes()
        if state != "Z" and pid != group and (pgid == group or ppid == me) and pid not in keep
    }
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    killed: set[int] = set()
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = {pid: state for pid, state in children().items() if pid not in keep}
        if not found:
            break
        left = set(found)
        killed |= {pid for pid, state in found.items() if state != "Z"}
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            # a child that made its own group may have members that are not our children yet
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        for pid in left:
            _reap(pid, deadline)
    return len(running | killed)
