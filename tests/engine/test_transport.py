"""Results as deep as the code they summarise cross process pipes and the cache: pickling that
hits Python's recursion limit is redone on the parser's large stack."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from distlint.engine import transport
from distlint.engine.cache import FirstPassCache
from distlint.engine.runner import process_context


@dataclass(frozen=True)
class Nested:
    """As a summary's if-effect: one level per ``elif``."""

    orelse: tuple


def _chain(depth: int) -> Nested:
    value = Nested(())
    for _ in range(depth):
        value = Nested((value,))
    return value


def _depth(value: Nested) -> int:
    depth = 0
    while value.orelse:
        value, depth = value.orelse[0], depth + 1
    return depth


DEEP = 3_000  # levels: past what pickle can take under Python's default limit of 1,000 frames


def test_plain_pickle_fails_at_this_depth_so_the_test_means_something() -> None:
    """At Python's default limit (set here, whatever an earlier test left)."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)
    try:
        with pytest.raises(RecursionError):
            pickle.dumps(_chain(DEEP))
    finally:
        sys.setrecursionlimit(saved)


def test_dumps_and_loads_round_trip_a_deep_value() -> None:
    assert _depth(transport.loads(transport.dumps(_chain(DEEP)))) == DEEP


def test_no_pickle_recurses_deeper_than_a_piece() -> None:
    """A value 20,000 levels deep, pickled and unpickled under a limit of 600 frames (from
    CPython 3.12 the C pickler stops near 1,500 levels whatever the stack: only pieces of
    bounded depth get through there)."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(600)
    try:
        data = transport.dumps(_chain(20_000))
        assert _depth(transport.loads(data)) == 20_000
    finally:
        sys.setrecursionlimit(saved)


@dataclass
class Linked:
    """A mutable node of a chain, referring to itself and to an object all nodes share."""

    next: object = None
    shared: object = None
    me: object = None


def test_pieces_keep_shared_objects_and_short_cycles() -> None:
    first = node = Linked()
    shared = [1, 2]
    for _ in range(1_000):
        node.next = Linked(shared=shared)
        node = node.next
        node.me = node
    got = transport.loads(transport.dumps(first))
    node, seen, lists = got.next, 1, set()
    while node.next is not None:
        assert node.me is node
        lists.add(id(node.shared))
        node, seen = node.next, seen + 1
    assert seen == 1_000 and node.shared == [1, 2]
    assert len(lists) <= 1_000 // 100 + 1  # one copy of the shared list a piece at most


def test_a_deep_value_crosses_a_pipe() -> None:
    receiver, sender = process_context().Pipe(duplex=False)
    transport.send(sender, _chain(DEEP))
    assert _depth(transport.receive(receiver)) == DEEP


def test_the_cache_keeps_a_deep_result(tmp_path: Path) -> None:
    cache = FirstPassCache.open(tmp_path / "cache")
    assert cache is not None
    key = "ab" + "0" * 38
    cache.put(key, _Result("x.py", _chain(DEEP)))
    got = cache.get(key, "x.py")
    assert isinstance(got, _Result) and _depth(got.summary) == DEEP


@dataclass(frozen=True)
class _Result:
    path: str
    summary: Nested


# -- no deep pickle on a normal stack under the large stack's raised limit ----------------------
#
# The limit is the process's. Under 30,000 frames a deep pickle on a normal stack no longer
# stops at 1,000 frames with a RecursionError (which dumps() answers by pickling on the large
# stack): on CPython 3.10 and 3.11 it recurses on, and a stack of 2 MB (about that of Windows'
# main thread; macOS's other threads have 512 KB) runs out first: SIGSEGV, the file lost, or
# the whole run. Each case runs in a process of its own, with a 2 MB stack (a crash there
# fails the test, not the test run).

ROOT = Path(__file__).resolve().parents[2]
SMALL_STACK_KB = 2048
DEEPER = 6_000  # levels: on a 2 MB stack, past what pickle survives under 30,000 frames

_PRELUDE = f"""
import sys, threading, time
from dataclasses import dataclass
from distlint.engine import transport
from distlint.syntax import source


@dataclass(frozen=True)
class Nested:
    orelse: tuple


def chain(depth):
    value = Nested(())
    for _ in range(depth):
        value = Nested((value,))
    return value


def depth(value):
    found = 0
    while value.orelse:
        value, found = value.orelse[0], found + 1
    return found


def round_trip():
    return depth(transport.loads(transport.dumps(chain(DEEPER))))


DEEPER = {DEEPER}
DEFAULT = sys.getrecursionlimit()
"""


def _run_small_stack(script: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    command = f'ulimit -S -s {SMALL_STACK_KB} && exec "$0" -c "$1"'
    code = _PRELUDE + textwrap.dedent(script)
    return subprocess.run(
        ["/bin/sh", "-c", command, sys.executable, code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


small_stack = pytest.mark.skipif(
    not sys.platform.startswith("linux") or sys.version_info >= (3, 12),
    reason="sets the main thread's stack with ulimit; from CPython 3.12 C recursion (pickle) "
    "has a limit of its own, which sys.setrecursionlimit does not raise: no crash to guard",
)


@small_stack
def test_the_small_stack_crashes_a_deep_pickle_under_the_raised_limit() -> None:
    """What the tests below guard against (so that they mean something): SIGSEGV."""
    done = _run_small_stack(
        """
        sys.setrecursionlimit(30_000)
        import pickle
        pickle.dumps(chain(DEEPER))
        print("survived")
    """
    )
    assert done.returncode < 0 and "survived" not in done.stdout, done


@small_stack
def test_a_deep_pickle_after_a_timed_out_call_is_made_on_the_large_stack() -> None:
    """A stage that runs past its budget (--project-timeout) goes on as a daemon thread, here
    2,000 frames deep, and keeps the raised limit (lowered under it, CPython aborts: see
    source.py); its caller then pickles a deep result, which must not be made on the caller's
    own stack under that limit."""
    done = _run_small_stack("""
        reached, release = threading.Event(), threading.Event()

        def dive(level):
            if level == 0:
                reached.set()
                release.wait()
                return None
            return dive(level - 1)

        try:
            source.on_large_stack(dive, 2_000, timeout=0.2)
        except source.StageTimeout:
            pass
        assert reached.wait(60)
        print("raised", sys.getrecursionlimit() > DEFAULT)
        print("depth", round_trip())
        release.set()
        for thread in threading.enumerate():
            if thread.name == "distlint-deep":
                thread.join(60)
        print("restored", sys.getrecursionlimit() == DEFAULT)
    """)
    assert done.returncode == 0, done
    assert done.stdout.split() == ["raised", "True", "depth", str(DEEPER), "restored", "True"]


@small_stack
def test_a_child_forked_during_a_call_does_not_inherit_the_limit() -> None:
    """Workers are forked on Linux. A child forked while another thread's call holds the
    raised limit has only the thread that forked: it gets the normal limit back (it kept the
    raised one for good, with nothing there to restore it, and crashed on a deep pickle)."""
    done = _run_small_stack("""
        import os
        entered, release = threading.Event(), threading.Event()

        def hold():
            entered.set()
            release.wait()

        holder = threading.Thread(target=source.on_large_stack, args=(hold,))
        holder.start()
        assert entered.wait(60)
        assert sys.getrecursionlimit() > DEFAULT
        pid = os.fork()
        if pid == 0:
            limit = sys.getrecursionlimit()
            ok = round_trip() == DEEPER and limit == DEFAULT
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        release.set()
        holder.join()
        print("child", status, "limit", sys.getrecursionlimit() == DEFAULT)
    """)
    assert done.returncode == 0, done
    assert done.stdout.strip() == "child 0 limit True", done
