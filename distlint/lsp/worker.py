"""The language server's analysis process: documents are checked out of the server process.

One worker process analyses one document version at a time. It is ``distlint check``'s
supervised worker (:mod:`distlint.runner`: the same process, pipe and CPU-time accounting as
the per-file budget), kept alive from one job to the next. The server only sends a job and
receives its diagnostics, so it never parses and never holds a tree, and:

- a worker that dies (SIGSEGV in the parser, killed for memory) costs that version's
  diagnostics, which the server shows as a DL000; the next job starts a fresh worker;
- a job that runs past its budget (CPU seconds: the configuration's ``file-timeout``) is
  killed, which the server shows as a DL000 too;
- a newer version of a document supersedes its queued or running job: the queue holds at most
  one job per document, and a running one is killed with its worker (the worker's whole
  process group, anything it started included) and a fresh worker takes the next job;
- memory: a worker that grew past twice its idle size (a large document's trees) is replaced
  once idle after a document closes, and one that grew by more than 1 GiB after any job, so
  the memory goes back to the system (while a large document is edited, its worker stays:
  starting one costs about a second where workers are spawned);
- :meth:`Analyses.close` (``shutdown``, ``exit``) kills the worker; on Linux a worker also dies
  with the server if the server is killed.

Every blocking step (waiting for the reply, reading it, killing and reaping the worker) runs
on a helper thread per job, so the server's event loop keeps answering requests. Workers are
started from the event loop's thread. The job's function and arguments are all it gets: the
worker reads no state of the server. What the jobs of one worker share (its caches: the pieces
of each document's last parse, the workspace index) is one object made by ``make_state`` when
the worker starts and passed to each call as its first argument; a fresh worker starts empty.

``after``: a call the worker runs once a job's reply came back (housekeeping that would
otherwise delay the reply: the language server's cache writes and garbage collection). It is
sent right behind the reply, so it runs while the editor shows the diagnostics; a job that
comes meanwhile waits for it in the pipe (its budget starts when it starts), and its reply is
never taken for the job's.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distlint.engine import transport
from distlint.engine.results import FileResult
from distlint.engine.runner import Worker, death_reason, process_context

_SETUP_TIMEOUT = 120.0  # seconds for a new worker to start (spawn imports distlint first)
_GROWTH = 2  # past this many times its idle resident size, a worker is replaced on close
_HARD_GROWTH = 1 << 30  # bytes over its idle size past which a worker is replaced after any job


@dataclass(frozen=True)
class Outcome:
    """What became of one job: its function's result, or why there is none."""

    value: Any = None
    failure: str | None = None  # the worker died or ran out of budget: why, for a DL000
    superseded: bool = False  # a newer job for the same document replaced it (no result)


_AFTER = -1  # the index of the ``after`` call (a job's is 0)


@dataclass(eq=False)
class _Job:
    key: str  # the document
    function: Callable[..., Any]
    args: tuple[Any, ...]
    budget: float | None  # CPU seconds (None: no budget)
    future: asyncio.Future[Outcome]
    superseded: bool = False


class Analyses:
    """A queue of analysis jobs, one per document at most, run by one supervised worker."""

    def __init__(
        self,
        after: Callable[..., Any] | None = None,
        make_state: Callable[[], object] | None = None,
    ) -> None:
        self.after = after  # run by the worker after each reply (see the module docstring)
        # made in each worker: what its calls share, each call's first argument (``after``'s
        # too), so that nothing a job reads of earlier ones is module-level state
        self.make_state = make_state
        self.queue: dict[str, _Job] = {}  # document -> its newest job, in arrival order
        self.running: _Job | None = None
        self.worker: Worker | None = None
        self.idle_size: int | None = None  # the worker's resident bytes before its first job
        self._trim = False  # a document closed: replace the worker if it grew (once idle)
        self.closed = False
        self._wake: asyncio.Event | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._cancel_reader: multiprocessing.connection.Connection | None = None
        self._cancel_writer: multiprocessing.connection.Connection | None = None

    # -- the server's side ---------------------------------------------------------------------

    def submit(
        self, key: str, function: Callable[..., Any], args: tuple[Any, ...], budget: float | None
    ) -> asyncio.Future[Outcome]:
        """Queue ``function(*args)`` for document ``key``, superseding its older job."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Outcome] = loop.create_future()
        if self.closed:
            future.set_result(Outcome(failure="the server is shutting down"))
            return future
        self.supersede(key)
        self.queue[key] = _Job(key, function, args, budget, future)
        if self._dispatcher is None or self._dispatcher.done():
            self._wake = asyncio.Event()
            self._dispatcher = asyncio.ensure_future(self._dispatch())
        assert self._wake is not None
        self._wake.set()
        return future

    def supersede(self, key: str) -> None:
        """Drop the queued job of ``key`` and stop its running one (a newer text is coming)."""
        queued = self.queue.pop(key, None)
        if queued is not None and not queued.future.done():
            queued.future.set_result(Outcome(superseded=True))
        running = self.running
        if running is not None and running.key == key and not running.superseded:
            running.superseded = True
            self._interrupt()

    def trim(self) -> None:
        """A document closed: once idle, replace the worker if it grew past twice its idle
        size (the trees of a large document)."""
        self._trim = True
        if self.running is None:
            self._retire_if_grown()

    def close(self) -> None:
        """Stop for good: queued jobs are dropped and the worker is killed now."""
        self.closed = True
        for job in self.queue.values():
            if not job.future.done():
                job.future.set_result(Outcome(failure="the server is shutting down"))
        self.queue.clear()
        running = self.running
        if running is not None:
            running.superseded = True
            if not running.future.done():
                running.future.set_result(Outcome(failure="the server is shutting down"))
        worker = self.worker
        if worker is not None and worker.process.exitcode is None:
            _kill(worker)
        self._interrupt()
        if self._dispatcher is not None:
            self._dispatcher.cancel()

    def _interrupt(self) -> None:
        """Wake the helper thread of the running job: it kills the worker."""
        if self._cancel_writer is not None:
            with contextlib.suppress(OSError, ValueError):
                self._cancel_writer.send_bytes(b"x")

    # -- the dispatcher (event loop) ------------------------------------------------------------

    async def _dispatch(self) -> None:
        assert self._wake is not None
        while not self.closed:
            if not self.queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            key = next(iter(self.queue))
            job = self.queue.pop(key)
            self.running = job
            try:
                outcome = await self._run(job)
            except Exception as exc:  # e.g. no process can be started: this job's failure
                outcome = Outcome(failure=f"no analysis process: {type(exc).__name__}: {exc}")
            finally:
                self.running = None
            if not job.future.done():
                job.future.set_result(outcome)
            self._retire_if_grown()

    def _retire_if_grown(self) -> None:
        """Replace the idle worker if it grew too much (see the module docstring)."""
        worker, idle = self.worker, self.idle_size
        trim, self._trim = self._trim, False
        if worker is None or idle is None or worker.process.exitcode is not None:
            return
        size = _resident_bytes(worker.process.pid)
        limit = _GROWTH * idle if trim else idle + _HARD_GROWTH
        if size is not None and size > limit:
            self.worker = None  # the next job starts a fresh one
            threading.Thread(target=_stop, args=(worker,), daemon=True).start()

    async def _run(self, job: _Job) -> Outcome:
        fresh = self.worker is None or self.worker.process.exitcode is not None
        if fresh:
            if self.worker is not None:  # it died while idle
                self.worker.stop(kill=True)
            self._start()
        worker = self.worker
        assert worker is not None and self._cancel_reader is not None
        while self._cancel_reader.poll():  # wake-ups meant for an earlier job
            self._cancel_reader.recv_bytes()
        if job.superseded:
            return Outcome(superseded=True)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[_Reply] = loop.create_future()
        args = (worker, fresh, self.idle_size, job, self.after, self._cancel_reader, loop, done)
        threading.Thread(
            target=_supervise, args=args, name="distlint-analysis", daemon=True
        ).start()
        reply = await done
        if reply.idle_size is not None:
            self.idle_size = reply.idle_size
        if reply.stopped:
            self.worker = None
        if job.superseded:
            return Outcome(superseded=True)
        return reply.outcome

    def _start(self) -> None:
        """A new worker, started from this (the event loop's) thread, which lives as long as
        the server: a worker's death-with-its-parent is tied to the thread that started it."""
        if self._cancel_reader is None:
            self._cancel_reader, self._cancel_writer = process_context().Pipe(duplex=False)
        self.worker = Worker({}, self.make_state)
        self.idle_size = None


# -- the helper thread of a job ------------------------------------------------------------------


@dataclass(frozen=True)
class _Reply:
    outcome: Outcome
    stopped: bool  # the worker was killed (or died) and reaped: start a new one
    idle_size: int | None = None


def _supervise(
    worker: Worker,
    fresh: bool,
    idle_size: int | None,
    job: _Job,
    after: Callable[..., Any] | None,
    cancel: multiprocessing.connection.Connection,
    loop: asyncio.AbstractEventLoop,
    done: asyncio.Future[_Reply],
) -> None:
    """Run ``job`` on ``worker`` and hand the reply to the event loop (a helper thread)."""
    try:
        reply = _serve_job(worker, fresh, idle_size, job, after, cancel)
    except Exception as exc:  # a bug of ours: that job's failure, never a stuck dispatcher
        _stop(worker)
        reply = _Reply(Outcome(failure=f"internal error: {type(exc).__name__}: {exc}"), True)
    with contextlib.suppress(RuntimeError):  # the loop is gone: the server is exiting
        loop.call_soon_threadsafe(_resolve, done, reply)


def _resolve(done: asyncio.Future[_Reply], reply: _Reply) -> None:
    if not done.done():
        done.set_result(reply)


def _serve_job(
    worker: Worker,
    fresh: bool,
    idle_size: int | None,
    job: _Job,
    after: Callable[..., Any] | None,
    cancel: multiprocessing.connection.Connection,
) -> _Reply:
    if fresh:  # its own process group, and (Linux) death with the server
        setup = _call(worker, (_attach, (), job.key), _SETUP_TIMEOUT, cancel)
        if setup.failure is not None or setup.superseded:
            _stop(worker)
            return _Reply(setup, True)
        idle_size = _resident_bytes(worker.process.pid)
    outcome = _call(worker, (job.function, job.args, job.key), job.budget, cancel)
    if outcome.failure is not None or outcome.superseded:
        _stop(worker)
        return _Reply(outcome, True, idle_size)
    if after is not None:  # not waited for; a worker that dies of it is found on the next job
        worker.give(_AFTER, (after, (), job.key))
    return _Reply(outcome, False, idle_size)


def _call(
    worker: Worker,
    call: tuple[Callable[..., Any], tuple[Any, ...], str],
    budget: float | None,
    cancel: multiprocessing.connection.Connection,
) -> Outcome:
    """One call on ``worker``, supervised as ``distlint check`` supervises a file."""
    if not worker.give(0, call):
        return Outcome(failure=death_reason(worker))
    handles: list[Any] = [worker.conn, worker.process.sentinel, cancel]
    while True:
        wait = None
        if budget is not None:
            wait = max(0.01, budget - worker.used(time.monotonic()))
        ready = multiprocessing.connection.wait(handles, wait)
        if cancel in ready:
            return Outcome(superseded=True)
        if worker.conn in ready:
            try:
                index, value = transport.receive(worker.conn)
            except (EOFError, OSError):
                return Outcome(failure=death_reason(worker))
            worker.finished()
            if index == _AFTER:  # the previous job's housekeeping: this job runs from now
                continue
            if isinstance(value, FileResult):  # the function raised (see runner._serve)
                return Outcome(failure="; ".join(e.message for e in value.errors))
            return Outcome(value)
        if worker.process.sentinel in ready:
            return Outcome(failure=death_reason(worker))
        if budget is not None and worker.over(budget, time.monotonic()):
            return Outcome(failure=f"its analysis exceeded the {budget:g} s budget (file-timeout)")


def _stop(worker: Worker) -> None:
    """Kill the worker with everything it started, and reap it."""
    if worker.process.exitcode is None:
        _kill(worker)
    worker.stop(kill=True)


def _kill(worker: Worker) -> None:
    pid = worker.process.pid
    if pid is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        os.killpg(pid, signal.SIGKILL)  # its group exists once _attach ran (not the server's)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        worker.process.kill()


_PR_SET_PDEATHSIG = 1


def _attach(*_state: object) -> None:
    """In a new worker (given its state, if it has one, as every call is): lead a process
    group of its own, so that killing it kills anything it started; let go of the server's
    protocol stream (file descriptor 1: whatever writes there would corrupt it, and holding
    it keeps the client from seeing the server end); on Linux,
    die when the server dies, and be what the kernel kills first when memory runs out (a
    runaway analysis, not the editor or the server)."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpgid(0, 0)
    with contextlib.suppress(OSError):
        os.dup2(2, 1)
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as score:
            score.write("1000")

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def _resident_bytes(pid: int | None) -> int | None:
    """Resident memory of process ``pid`` (Linux; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
