"""Run a fixture's ``case_*`` functions on several gloo ranks and hand back what each rank did.

Proof tests of distributed rules (DL201, DL204, DL205, DL303, ...) need real process groups:
a deadlock has to be seen to hang and end with gloo's timeout, a mis-paired collective has to
be seen to give a wrong value. This harness runs one case as ``world_size`` processes (2 by
default) on 127.0.0.1:

* each rank is a separate process forked from a **forkserver that has already imported
  torch** (:data:`PRELOAD`: ``torch``, ``torch.distributed``, ``torch.nn.parallel`` and
  ``torch._dynamo``, which the DDP constructor imports lazily and which costs several
  seconds): starting a rank costs milliseconds instead of seconds. The forkserver starts
  once per pytest process; the pytest process itself never imports torch;
* rank 0 hosts a ``TCPStore`` on a free port it binds itself (port 0, so no race with other
  runs) and publishes the port to the other ranks through a file; every rank then calls
  ``init_process_group("gloo", store=..., rank=r, world_size=n,
  timeout=timedelta(seconds=pg_timeout))``. ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
  ``MASTER_ADDR`` and ``MASTER_PORT`` are set as ``torchrun`` would set them;
* the fixture module is imported (before the process group is created, so that the ranks
  reach the rendezvous together), then ``case_<name>()`` is called with no arguments. Its
  return value is sent back as JSON (tensors as ``tolist()``);
* a rank that has finished (returned or raised) **stays alive** until every rank of the case
  has finished, as the other ranks of a real job carry on: a peer that exits early would turn
  gloo's timeout on the waiting rank into an immediate ``Connection closed by peer``
  (torch 2.13.0);
* every rank runs in its own process group (``os.setpgrp``); a case still running
  ``hard_timeout`` seconds after it started is killed (``SIGKILL`` to each rank's process
  group) and the ranks that had not finished are reported with ``hung=True``;
* a rank that dies on its own (gloo aborts the process on a size mismatch, SIGABRT)
  is reported with its exit code and the tail of its output.

Cases run in parallel: all ranks of all requested cases at once (up to ``max_processes``).
A case that hangs costs ``pg_timeout`` seconds of wall time, not CPU time, so keep
``pg_timeout`` short (3–5 s).

Usage from a proof test::

    from tests.proof.gloo import run_gloo_cases

    results = run_gloo_cases(FIXTURES / "DL201" / "bad.py", pg_timeout=3)
    rank0, rank1 = results["case_barrier_on_rank_zero_only"]
    assert rank0.type == "builtins.RuntimeError" and "Timed out waiting" in rank0.message
    assert rank1.ok

From a shell (prints one line per rank)::

    python -m tests.proof.gloo fixtures/DL201/bad.py [case_name ...]
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"

DEFAULT_PG_TIMEOUT = 3.0
# Time for the store and gloo's full-mesh connection on a loaded machine; the collective
# timeout (pg_timeout) applies after that.
RENDEZVOUS_TIMEOUT = 60.0
PRELOAD = ("torch", "torch.distributed", "torch.nn.parallel", "torch._dynamo")
_OUTPUT_TAIL = 6000


@dataclass(frozen=True)
class RankOutcome:
    """What one rank of a case did."""

    rank: int
    ok: bool  # the case function returned
    type: str | None = None  # "module.QualName" of the exception it raised
    message: str = ""  # str(exception), truncated to 4000 characters
    traceback: str = ""
    value: Any = None  # the returned value, through JSON
    hung: bool = False  # still running at the hard timeout: killed by the harness
    exitcode: int | None = None  # set when the process ended without reporting (e.g. -6)
    seconds: float | None = None  # time spent in the case function (None if it never ended)
    output: str = ""  # tail of what the rank wrote to stdout/stderr

    def timed_out(self, pg_timeout: float) -> bool:
        """Whether the rank gave up waiting in a collective after the process-group timeout,
        with gloo's own text ("...unbound_buffer.cc:78] Timed out waiting 3000ms for recv
        operation to complete"; 129 and "send" for the sending side). Under load a sending
        rank may instead see the pair closed by that same timeout ("Application timeout caused
        pair closure"), still after the process-group timeout."""
        pattern = re.compile(
            rf"^\[[^\]]*gloo/transport/tcp/unbound_buffer\.cc:\d+\] "
            rf"Timed out waiting {int(pg_timeout * 1000)}ms for (recv|send) operation to complete$"
        )
        closed = self.message.strip() == "Application timeout caused pair closure"
        return (
            self.type == "builtins.RuntimeError"
            and (pattern.match(self.message) is not None or closed)
            and self.seconds is not None
            and self.seconds >= pg_timeout * 0.9
        )

    @property
    def died(self) -> bool:
        """The process ended by itself without reporting (crash, abort, os._exit)."""
        return not self.ok and self.type is None and not self.hung


@dataclass
class _Rank:
    rank: int
    process: Any
    conn: Any
    result: dict[str, Any] | None = None
    exited: bool = False


@dataclass
class _Run:
    case: str
    workdir: Path
    deadline: float
    ranks: list[_Rank] = field(default_factory=list)

    def finished(self) -> bool:
        return all(r.result is not None or r.exited for r in self.ranks)


# -- the parent side ----------------------------------------------------------------------------


_AST_LOCK = threading.Lock()  # CPython 3.11's ast.parse is not safe in concurrent threads


def case_names(fixture: Path) -> list[str]:
    """Names of the ``case_*`` functions a fixture defines, in source order (no import).

    Proof modules run fixtures from worker threads; on CPython 3.11 concurrent ``ast.parse``
    calls can fail with ``SystemError: AST constructor recursion depth mismatch``
    (python/cpython#106905), so parses are serialised."""
    with _AST_LOCK:
        tree = ast.parse(Path(fixture).read_text(encoding="utf-8"))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("case_")
    ]


def run_gloo_case(
    fixture: Path,
    case: str,
    *,
    world_size: int = 2,
    pg_timeout: float = DEFAULT_PG_TIMEOUT,
    hard_timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[RankOutcome, ...]:
    """Outcomes of ``case`` of ``fixture``, one per rank (index = rank)."""
    return run_gloo_cases(
        fixture,
        [case],
        world_size=world_size,
        pg_timeout=pg_timeout,
        hard_timeout=hard_timeout,
        env=env,
    )[case]


def run_gloo_cases(
    fixture: Path,
    cases: Iterable[str] | None = None,
    *,
    world_size: int = 2,
    pg_timeout: float = DEFAULT_PG_TIMEOUT,
    hard_timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    max_processes: int | None = None,
) -> dict[str, tuple[RankOutcome, ...]]:
    """Outcomes of several cases of one fixture (all ``case_*`` by default), run in parallel.

    ``pg_timeout`` is the process group's collective timeout (what a deadlocked rank waits
    before gloo raises). ``hard_timeout`` bounds each case's wall time from the start of its
    processes (default ``pg_timeout + 30``). ``env`` is added to each rank's environment
    before the fixture is imported (``TORCH_DISTRIBUTED_DEBUG`` is then re-read with
    ``dist.set_debug_level_from_env()``, since torch is already imported in the forkserver).
    """
    fixture = Path(fixture).resolve()
    names = list(cases) if cases is not None else case_names(fixture)
    if not names:
        return {}
    limit = hard_timeout if hard_timeout is not None else pg_timeout + 30.0
    cap = max_processes or max(world_size, 32)
    pending = list(names)
    running: list[_Run] = []
    results: dict[str, tuple[RankOutcome, ...]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="distlint-gloo-"))
    try:
        while pending or running:
            while pending and (len(running) + 1) * world_size <= max(cap, world_size):
                case = pending.pop(0)
                running.append(
                    _start(fixture, case, world_size, pg_timeout, limit, dict(env or {}), scratch)
                )
            _pump(running)
            now = time.monotonic()
            for run in list(running):
                if run.finished() or now >= run.deadline:
                    results[run.case] = _finish(run)
                    running.remove(run)
    finally:
        for run in running:  # only on an error of the harness itself
            _kill(run)
        shutil.rmtree(scratch, ignore_errors=True)
    return {name: results[name] for name in names}


def _context():  # type: ignore[no-untyped-def]
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    # Only effective before the forkserver starts (the first call in this process); a module
    # that fails to preload is imported by each rank instead (slower, still correct).
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _start(
    fixture: Path,
    case: str,
    world_size: int,
    pg_timeout: float,
    limit: float,
    env: dict[str, str],
    scratch: Path,
) -> _Run:
    ctx = _context()
    workdir = Path(tempfile.mkdtemp(prefix=f"{case}-", dir=scratch))
    run = _Run(case, workdir, time.monotonic() + limit)
    for rank in range(world_size):
        parent_end, child_end = ctx.Pipe(duplex=True)
        spec = {
            "fixture": str(fixture),
            "case": case,
            "rank": rank,
            "world_size": world_size,
            "pg_timeout": pg_timeout,
            "env": env,
            "workdir": str(workdir),
        }
        process = ctx.Process(target=_rank_main, args=(spec, child_end), daemon=True)
        process.start()
        child_end.close()
        run.ranks.append(_Rank(rank, process, parent_end))
    return run


def _pump(running: list[_Run]) -> None:
    """Wait (briefly) for results or exits of any rank, and record them."""
    from multiprocessing.connection import wait

    waitables: dict[object, tuple[_Rank, str]] = {}
    for run in running:
        for rank in run.ranks:
            if rank.result is None and not rank.exited:
                waitables[rank.conn] = (rank, "conn")
            if not rank.exited:
                waitables[rank.process.sentinel] = (rank, "exit")
    if not waitables:
        return
    deadline = min(run.deadline for run in running)
    timeout = max(0.0, min(0.5, deadline - time.monotonic()))
    for ready in wait(list(waitables), timeout=timeout):
        rank, what = waitables[ready]
        if what == "conn":
            try:
                rank.result = rank.conn.recv()
            except (EOFError, OSError):
                rank.exited = True
        else:
            rank.exited = True


def _finish(run: _Run) -> tuple[RankOutcome, ...]:
    # Release the ranks that finished and are lingering, then kill whatever is left.
    for rank in run.ranks:
        if rank.result is not None and rank.process.is_alive():
            with contextlib.suppress(OSError):
                rank.conn.send("release")
    end = time.monotonic() + 5.0
    for rank in run.ranks:
        if rank.result is not None:
            rank.process.join(max(0.0, end - time.monotonic()))
    _kill(run)
    outcomes = []
    for rank in run.ranks:
        output = _read_tail(run.workdir / f"rank{rank.rank}.log")
        rank.conn.close()
        if rank.result is not None:
            data = dict(rank.result)
            data["value"] = json.loads(data.pop("value_json"))
            outcomes.append(RankOutcome(rank=rank.rank, output=output, **data))
        elif rank.exited:
            outcomes.append(
                RankOutcome(rank=rank.rank, ok=False, exitcode=rank.process.exitcode, output=output)
            )
        else:
            outcomes.append(RankOutcome(rank=rank.rank, ok=False, hung=True, output=output))
    return tuple(outcomes)


def _kill(run: _Run) -> None:
    for rank in run.ranks:
        process = rank.process
        if process.is_alive():
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the rank and anything it started
            except (ProcessLookupError, PermissionError):
                process.kill()
        process.join(5.0)


def _read_tail(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-_OUTPUT_TAIL:].decode("utf-8", errors="replace")


# -- the rank side ------------------------------------------------------------------------------


def _rank_main(spec: dict[str, Any], conn: Any) -> None:
    """Body of one rank process: set up, run the case, report, linger, exit."""
    os.setpgrp()
    workdir = Path(spec["workdir"])
    rank, world_size = spec["rank"], spec["world_size"]
    log = os.open(workdir / f"rank{rank}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ.pop("TORCH_LOGS", None)  # an empty TORCH_LOGS crashes `import torch` (2.13.0)
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
        }
    )
    os.environ.update(spec["env"])
    # scratch files a case writes (tempfile.gettempdir()) go to the case's own folder, shared
    # by its ranks and removed with it
    os.environ["TMPDIR"] = str(workdir)
    tempfile.tempdir = None
    result: dict[str, Any]
    started = time.monotonic()
    try:
        import torch.distributed as dist

        if "TORCH_DISTRIBUTED_DEBUG" in spec["env"]:
            dist.set_debug_level_from_env()
        function = getattr(_load(Path(spec["fixture"])), spec["case"])
        _init_group(rank, world_size, spec["pg_timeout"], workdir)
        started = time.monotonic()
        value = function()
    except BaseException as exc:  # the documented failure is what we are here to see
        result = {
            "ok": False,
            "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
            "message": str(exc)[:4000],
            "traceback": "".join(traceback.format_exception(exc))[-4000:],
            "value_json": "null",
            "seconds": time.monotonic() - started,
        }
    else:
        result = {
            "ok": True,
            "value_json": json.dumps(_jsonable(value)),
            "seconds": time.monotonic() - started,
        }
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        conn.send(result)
        conn.recv()  # linger until every rank of the case has finished
    except (EOFError, OSError):
        pass
    os._exit(0)  # skip process-group destructors: a peer may be stuck in a collective


def _init_group(rank: int, world_size: int, pg_timeout: float, workdir: Path) -> None:
    from datetime import timedelta

    import torch.distributed as dist

    rendezvous = timedelta(seconds=RENDEZVOUS_TIMEOUT)
    port_file = workdir / "port"
    if rank == 0:
        store = dist.TCPStore(
            "127.0.0.1", 0, world_size, True, timeout=rendezvous, wait_for_workers=False
        )
        tmp = workdir / "port.tmp"
        tmp.write_text(str(store.port))
        tmp.replace(port_file)
    else:
        deadline = time.monotonic() + RENDEZVOUS_TIMEOUT
        while not port_file.exists():
            if time.monotonic() > deadline:
                raise TimeoutError("rank 0 did not publish the store's port")
            time.sleep(0.01)
        store = dist.TCPStore(
            "127.0.0.1", int(port_file.read_text()), world_size, False, timeout=rendezvous
        )
    os.environ["MASTER_PORT"] = str(store.port)
    # Meet on the store first (its timeout is generous: ranks of parallel cases compete for
    # the CPU), so that gloo's connection, which runs under the short collective timeout, starts
    # on every rank at the same moment.
    if store.add("distlint/arrived", 1) == world_size:
        store.set("distlint/go", "1")
    store.wait(["distlint/go"])
    dist.init_process_group(
        "gloo",
        store=store,
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=pg_timeout),
    )


def _load(path: Path):  # type: ignore[no-untyped-def]
    """Import a fixture: as a module of its package when it lives in one, else by path."""
    import importlib
    import importlib.util

    parts = [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    if len(parts) > 1:
        sys.path.insert(0, str(root))
        return importlib.import_module(".".join(parts))
    spec = importlib.util.spec_from_file_location(f"gloo_fixture_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # tensors, numpy arrays
        return tolist()
    return repr(value)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.proof.gloo FIXTURE [case_name ...]", file=sys.stderr)
        return 2
    started = time.monotonic()
    results = run_gloo_cases(Path(argv[0]), argv[1:] or None)
    for case, ranks in results.items():
        for o in ranks:
            if o.ok:
                what = f"ok value={json.dumps(o.value)}"
            elif o.hung:
                what = "HUNG (killed)"
            elif o.type is None:
                what = f"died exit={o.exitcode}"
            else:
                what = f"{o.type}: {o.message.splitlines()[0] if o.message else ''}"
            secs = f"{o.seconds:.1f}s" if o.seconds is not None else "-"
            print(f"{case} rank{o.rank} [{secs}] {what}")
    print(f"({time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
