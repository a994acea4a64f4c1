"""Check many files as one project, in parallel, with output independent of ``--jobs``.

The stages of :mod:`distlint.engine.checker`: every file's first pass is independent (one parse,
one walk, one summary), so files are spread over a process pool; the parent links the
summaries (cheap), runs the project-scope rules, and sends the files that hold or reach
compiled regions through a second pass (region rules and the file rules that read facts
only), again in parallel; last, each file's findings of every stage are settled (suppressions,
DL001) in the parent. The second pass's input (the facts) reaches each worker through the
pool's initializer: inherited without pickling when workers are forked, pickled once per
worker when they are spawned (macOS, Windows, ``DISTLINT_START_METHOD=spawn``), so both give
the same result. In one process the second pass reuses the first pass's trees
(:class:`~distlint.engine.checker.ParsedTrees`).

Workers are supervised (:class:`_Pool`): each runs one file at a time (with the next one
waiting in its pipe, so it does not wait on the parent between files), so when a worker dies
(a parser crash kills the process, not just the file) or a file's analysis runs past the
per-file budget (``file_timeout``: ``--file-timeout``, ``file-timeout``), that file alone is
reported as DL000, the worker is replaced (the waiting file goes to another) and the run
goes on. Files are handed out largest first, so that the last to finish are small. With a
budget every file is checked in a worker, ``-j1`` included (one worker); without one (the
library default, the language server) small runs stay in-process and only files that may
crash the parser are checked in a process of their own.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from distlint.engine import transport
from distlint.engine.cache import FirstPassCache
from distlint.engine.checker import (
    FileSource,
    ParsedTrees,
    ProjectStage,
    SecondPass,
    _unparsable,
    analyze_file,
    check_file,
    link_stage,
    needs_second_pass,
    project_rules_stage,
    settle,
)
from distlint.engine.project_reuse import (
    ReadOfFile,
    moved_output,
    read_of_file,
    still_read_the_same,
)
from distlint.engine.results import PROJECT, FileResult
from distlint.engine.tasks import (
    FILE_TIMEOUT,
    NativeSource,
    ProjectLookup,
    ProjectResults,
    Task,
    _keeps_reads,
    _with_module_names,
    linked_only,
    look_up,
    unchanged_since_keyed,
)
from distlint.file_settings import FileSettings
from distlint.findings import ToolError
from distlint.rules.registry import all_rules
from distlint.semantic.link import ProjectFacts, link
from distlint.syntax.module_names import PackageFolders
from distlint.syntax.pieces import ReusedPieces
from distlint.syntax.regular_files import read_regular_file
from distlint.syntax.source import SourceError, decode_source, release_freed_memory
from distlint.syntax.spans import MeasuredSpans, SourceLookup

_IN_PROCESS_MAX_FILES = 4  # below this, starting workers costs more than it saves


SecondInputs = dict[str, SecondPass]  # display path -> the second pass's input for that file


def run(
    tasks: Sequence[Task],
    jobs: int,
    native: Sequence[NativeSource] = (),
    cache: FirstPassCache | None = None,
    file_timeout: float | None = None,
    project_timeout: float | None = None,
    reused: ReusedPieces | None = None,
    lookup: ProjectLookup | None = None,
    folders: PackageFolders | None = None,
) -> list[FileResult]:
    """Results in the order of ``tasks`` (then one per native file with findings), the
    files checked together as one project; tasks with ``report=False`` are summarised and
    linked only (no result). First passes are taken from ``cache`` where it has them, and
    what the later stages gave when no file changed (:class:`ProjectResults`).
    ``file_timeout``: seconds one file's analysis (each pass) may take, in a worker process;
    past it the file is a DL000 "not checked" (None: no budget). ``project_timeout``:
    seconds linking and the project rules may take together; past it what did not finish is
    reported as a tool error (None: no budget). ``reused``: the pieces of the reported
    file's earlier text, for a first pass in this process (an editor's buffer:
    :class:`~distlint.syntax.pieces.ReusedPieces`). ``lookup``: what
    :func:`~distlint.engine.tasks.look_up` found for these tasks, native files and cache.
    ``folders``: the files' module names as a caller that runs many checks of one project
    keeps them (the language server)."""
    with _collector_paused():
        run_jobs = Jobs(jobs, file_timeout)
        found = lookup if lookup is not None else look_up(tasks, native, cache, folders)
        results = _run_project(found, run_jobs, native, cache, project_timeout, reused)
    if cache is not None:
        cache.finish()
    return results


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the run (and in workers forked during it).

    Trees and summaries are acyclic and freed by reference counting; the automatic collector
    would only re-scan the summaries kept for linking while the next files are parsed, which
    cost ~10% of a check (bench/run.py). Cycles are still collected: before each file
    (:func:`_collect_before_a_file`), and at the end. A pass's rule context, its rules and
    its rank flow refer to each other; the checker empties them once the pass's result is
    made (``checker._release``), so reference counting frees the tree then, and a collection
    walks only what the results keep (on torch/distributed, a fifth of what it walked when
    those cycles kept each tree until the next collection: 0.5 M objects against 2.1 M);
    what cycles remain (a plugin's, the standard library's) are collected before the next
    file: a worker holds at most one file's garbage (collected every 200 files, a worker
    checking torch's distributed and nn sources peaked at 248 MiB, before each file at 160
    MiB). Each collection only walks what is new since the last one, see below.

    What exists when the run starts (the modules, the rule registry: most of the heap) is
    frozen (``gc.freeze``) for the run, and so is what survives each of those collections: a
    full collection otherwise walks all of it every time (~30 ms each, and 12% of a
    one-process check of torch/distributed re-scanning the kept summaries), and workers forked
    meanwhile inherit the frozen heap without touching its pages. Unfrozen at the end, so
    what became garbage meanwhile is collected as usual afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def _collect_before_a_file() -> None:
    """While the collector is paused, collect the cycles among what is new since the last
    time (the previous file's), then freeze the survivors."""
    if not gc.isenabled():
        gc.collect()
        gc.freeze()


def _freeze_before_forking() -> None:
    """While the collector is paused, freeze what the parent holds now (the cached first
    passes it read, the facts) before workers are forked: a worker's collection before each
    file (:func:`_collect_before_a_file`) then walks only its own objects. Unfrozen, the
    hook's one worker walked the 1,700 first passes it inherited (touching, so copying, every
    page of them): 2.0 s for a file whose check takes 0.25 s."""
    if not gc.isenabled():
        gc.freeze()


def check_alone(
    data: bytes,
    display: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
    file_timeout: float | None = FILE_TIMEOUT,
) -> FileResult:
    """:func:`distlint.engine.checker.check_file` of ``data`` (stdin; the library's one-file
    check) in a worker process with the command line's budget: a file past ``file_timeout``
    seconds, or one that kills its worker, is a DL000 and the caller goes on.
    ``file_timeout=None``: in this process, no budget (what ``check_file`` itself does)."""
    args = (FileSource(data, display, module_name, is_package), settings)
    if file_timeout is None:
        return check_file(*args)
    all_rules()
    with _Pool(1, {}) as pool:
        return pool.map([(check_file, args, display)], file_timeout)[0]


@dataclass(frozen=True)
class Jobs:
    """How a pass runs: how many workers, and the per-file budget (None: none)."""

    count: int
    file_timeout: float | None = None


def _run_project(
    lookup: ProjectLookup,
    jobs: Jobs,
    native: Sequence[NativeSource],
    cache: FirstPassCache | None,
    project_timeout: float | None = None,
    reused: ReusedPieces | None = None,
) -> list[FileResult]:
    tasks = lookup.tasks
    trees = ParsedTrees(reused=reused)
    wrappers, native_sources = lookup.wrappers, lookup.native
    project_key: str | None = None
    kept: ProjectResults | None = None
    keeping = None  # the project stage's output to cache, once the files are settled
    if cache is not None:
        keys, project_key, kept = lookup.keys, lookup.project_key, lookup.kept
        digests = lookup.digests
        settled = lookup.settled
        if settled is not None:
            return settled  # the output of the check that made the entry
        if isinstance(kept, ProjectResults):
            if kept.read:
                tasks = _measuring(tasks, kept.read)
            # the project stage's output serves: of the reported files only what is reported
            # is read, of the files linked for context nothing, unless a reported file's edit
            # turns out to matter
            needs = [
                _need_when_kept(kept, task, key) for task, key in zip(tasks, keys, strict=True)
            ]
            first, partial = _first_pass_cached(tasks, jobs, cache, keys, digests, trees, needs)
            kept = _still_holding(kept, tasks, keys, first, trees)
            if kept is None:
                needs = [
                    Need.ALL if not task.report or i in partial else Need.NOTHING
                    for i, task in enumerate(tasks)
                ]
                rest, _ = _first_pass_cached(tasks, jobs, cache, keys, digests, trees, needs)
                first = [
                    again if need is Need.ALL else result
                    for result, again, need in zip(first, rest, needs, strict=True)
                ]
        else:
            first, _ = _first_pass_cached(tasks, jobs, cache, keys, digests, trees)
        if not all(map(_cacheable, first)):
            project_key = None
    else:
        first = _run_pass(tasks, jobs, trees=trees)
    _share_rule_sets(first)
    if isinstance(kept, ProjectResults):  # no file changed since: the project stage's output
        found, errors = kept.found, []
        second = {
            i: kept.second[t.display] for i, t in enumerate(tasks) if t.display in kept.second
        }
    else:
        sources = source_lookup(tasks)
        reads = (
            {
                t.display: read_of_file(key[0], r.summary, r.records, sources(t.display))
                for t, key, r in zip(tasks, keys, first, strict=True)
                if t.report and key is not None
            }
            if project_key and _keeps_reads(tasks)
            else None
        )
        spans = _spans_at_hand(first, trees)
        stage = link_stage(first, wrappers, sources, spans, project_timeout)
        facts = stage.facts
        again = [
            i
            for i, r in enumerate(first)
            if tasks[i].report
            and r.summary is not None
            and facts is not None
            and needs_second_pass(facts, r.summary.key)
        ]
        inputs = {tasks[i].display: SecondPass(facts) for i in again if facts is not None}
        second_tasks = [_second(tasks[i]) for i in again]
        second_jobs, alongside = jobs, None
        if facts is not None and _rules_alongside(second_tasks, jobs):
            # what linking freed is not held on by the processes forked from here
            release_freed_memory()
            alongside = _RulesAlongside(stage, first, native_sources)
            second_jobs = replace(jobs, count=jobs.count - 1)  # one process runs the rules
        else:
            if facts is not None:
                stage = project_rules_stage(stage, first, native_sources)
            if not _in_process(second_tasks, jobs):
                # what the project stage's parses freed is not held on by the second pass's
                # workers (forked, they start with the pages this process holds); in this
                # process it would only cost the time (an editor's check: 10-20 ms an edit)
                release_freed_memory()
        checked = _run_pass(second_tasks, second_jobs, inputs, trees)
        if alongside is not None:
            stage = alongside.result()
        found, errors = stage.found, stage.errors
        second = dict(zip(again, checked, strict=True))
        if cache is not None and project_key and not errors and all(map(_cacheable, checked)):
            by_display = {tasks[i].display: result for i, result in second.items()}
            read = None
            if reads is not None and facts is not None:
                read = {
                    display: replace(before, measured=facts.measured.get(display, {}))
                    for display, before in reads.items()
                }
            keeping = ProjectResults(PROJECT, found, by_display, read)
    native_results = [
        FileResult(source.display, tuple(sorted(found[source.display], key=lambda f: f.sort_key)))
        for source in native
        if found.get(source.display)
    ]
    # a project rule crashed: its error is shown once, with the first reported file's result
    shown = next((i for i, task in enumerate(tasks) if task.report), None)
    final = [
        settle(
            result,
            tasks[i].settings.enabled,
            second.get(i),
            found.get(result.path, ()),
            errors if i == shown else (),
        )
        if tasks[i].report
        else result
        for i, result in enumerate(first)
    ]
    results = _reported(tasks, final) + native_results
    if (
        keeping is not None
        and cache is not None
        and project_key
        and unchanged_since_keyed(tasks, lookup.digests, cache)
    ):
        cache.put(project_key, replace(keeping, settled=tuple(results)))
    return results


def _spans_at_hand(first: Sequence[FileResult], trees: ParsedTrees) -> dict[str, object]:
    """What linking measures lazy spans with, by path, so that it parses no file again where
    it can: the trees kept in this process, else what first passes in workers measured."""
    found: dict[str, object] = {
        result.path: MeasuredSpans(dict(result.measured)) for result in first if result.measured
    }
    found.update(trees.for_spans())
    return found


def _share_rule_sets(results: Sequence[FileResult]) -> None:
    """One set of enabled rules per distinct set, not one per file: each summary from a
    worker or the cache brings its own (5 MiB over torch's 2,300 files)."""
    known: dict[frozenset[str], frozenset[str]] = {}
    for result in results:
        if result.summary is not None:
            enabled = result.summary.enabled
            result.summary.enabled = known.setdefault(enabled, enabled)


def _reported(tasks: Sequence[Task], results: list[FileResult]) -> list[FileResult]:
    return [result for task, result in zip(tasks, results, strict=True) if task.report]


def _still_holding(
    kept: ProjectResults,
    tasks: Sequence[Task],
    keys: Sequence[tuple[str, ...] | None],
    first: Sequence[FileResult],
    trees: ParsedTrees,
) -> ProjectResults | None:
    """An entry found under the project key (:mod:`.tasks`), if it gives what the project
    stage would give now: each reported file is unchanged, or was edited in a way the stage
    does not see but for the lines it moved
    (:func:`~distlint.engine.project_reuse.still_read_the_same`), its findings' positions in
    such files then moved; None when the stage must run."""
    if kept.read is None:
        return kept  # keyed by every file's contents
    sources = source_lookup(tasks)
    parsed: dict | None = None
    moved = {}
    for task, key, result in zip(tasks, keys, first, strict=True):
        if not task.report:
            continue
        read = kept.read.get(task.display)
        if read is None or key is None:
            return None
        if read.key == key[0]:
            continue
        if kept.second:
            return None  # see project_reuse: a second pass may have read the edited text
        if parsed is None:
            parsed = trees.for_spans()
        measured = dict(result.measured) if result.measured else None
        lines = still_read_the_same(
            read, result.summary, result.records, task.display, sources, parsed, measured
        )
        if lines is None:
            return None
        moved[task.display] = lines
    found = moved_output(kept.found, moved)
    return None if found is None else replace(kept, found=found)


def _measuring(tasks: Sequence[Task], read: dict[str, ReadOfFile]) -> list[Task]:
    """The tasks, the reported files' first passes measuring what the project stage
    measured in them (when they run: an edited file), so that :func:`_still_holding` need
    not parse it again."""
    return [
        replace(task, measure=tuple(read[task.display].measured))
        if task.report and task.display in read and read[task.display].measured
        else task
        for task in tasks
    ]


class Need(enum.Enum):
    """What a re-check reads of a file's cached first pass (:func:`_first_pass_cached`)."""

    NOTHING = "nothing"  # neither read nor run: an empty result
    REPORT = "report"  # its findings, errors and suppressions: the project stage's output serves
    ALL = "all"  # with its summary and records, for linking


def _need_when_kept(kept: ProjectResults, task: Task, key: tuple[str, ...] | None) -> Need:
    """What of a file's first pass a re-check reads when the project stage's output was
    found: of a file linked for context nothing; of a reported file what is reported, and
    its summary and records too when :func:`_still_holding` compares them with what the
    stage read (the file changed since)."""
    if not task.report:
        return Need.NOTHING
    read = kept.read.get(task.display) if kept.read is not None else None
    return Need.ALL if read is not None and key is not None and read.key != key[0] else Need.REPORT


def _first_pass_cached(
    tasks: Sequence[Task],
    jobs: Jobs,
    cache: FirstPassCache,
    keys: Sequence[tuple[str, ...] | None],
    digests: Sequence[bytes | None],
    trees: ParsedTrees | None = None,
    needs: Sequence[Need] | None = None,
) -> tuple[list[FileResult], set[int]]:
    """The first pass, reusing cached results of files whose key (:mod:`.tasks`) is
    unchanged, a miss run and cached under the last of its keys (unless the file changed
    since it was keyed: :func:`~distlint.engine.tasks.unchanged_since_keyed`); and the
    indices of the results read without their summary and records (:attr:`Need.REPORT`).
    ``needs``: what is needed of each file (default: all of every file's)."""
    results: dict[int, FileResult] = {}
    partial: set[int] = set()
    for index, task in enumerate(tasks):
        need = needs[index] if needs is not None else Need.ALL
        if need is Need.NOTHING:
            results[index] = FileResult(task.display)
            continue
        for key in keys[index] or ():
            hit = cache.get(key, task.display)
            if isinstance(hit, StoredPass):
                results[index] = hit.result(linked=need is Need.ALL)
                if need is Need.REPORT:
                    partial.add(index)
                break
    missing = [i for i in range(len(tasks)) if i not in results]
    checked = _run_pass([tasks[i] for i in missing], jobs, trees=trees)
    for index, result in zip(missing, checked, strict=True):
        results[index] = result
        file_keys = keys[index]
        if (
            file_keys
            and _cacheable(result)
            and unchanged_since_keyed([tasks[index]], [digests[index]], cache)
        ):
            cache.put(file_keys[-1], StoredPass.of(result))
    return [results[i] for i in range(len(tasks))], partial


@dataclass(frozen=True)
class StoredPass:
    """A first pass as the cache keeps it: what every re-check reads of it (its findings,
    errors and suppressions) apart from what only linking reads (its summary and records,
    pickled on their own: nine tenths of the bytes), so that a re-check that reuses the
    project stage's output unpickles no summary."""

    path: str  # the cache checks that an entry is what was asked for
    head: FileResult  # without summary, records and measured spans
    linked: bytes  # the summary and records, pickled (transport.dumps)

    @classmethod
    def of(cls, result: FileResult) -> StoredPass:
        head = replace(result, summary=None, records=(), measured=())
        return cls(result.path, head, transport.dumps((result.summary, result.records)))

    def result(self, linked: bool = True) -> FileResult:
        """The first pass; ``linked=False``: without its summary and records."""
        if not linked:
            return self.head
        summary, records = transport.loads(self.linked)
        return replace(self.head, summary=summary, records=records)


GAVE_UP = ("the parser ", "not checked:")  # how DL000 messages of files given up on start


def _cacheable(result: FileResult) -> bool:
    """Not a file the check gave up on (a crash or a stall may not happen again)."""
    return not any(f.code == "DL000" and f.message.startswith(GAVE_UP) for f in result.findings)


def link_results(
    results: Sequence[FileResult], tasks: Sequence[Task], wrappers: Sequence[str] = ()
) -> ProjectFacts:
    """Facts from first-pass results (for ``explain-regions``)."""
    summaries = [r.summary for r in results if r.summary is not None]
    return link(summaries, wrappers, source_lookup(tasks))


def source_lookup(tasks: Sequence[Task]) -> SourceLookup:
    """Read a checked file's text by its display path (to measure lazily located nodes)."""
    return FileSources(
        {task.display: task.path for task in tasks},
        {task.display: task.data for task in tasks if task.data is not None},
    )


@dataclass(frozen=True)
class FileSources:
    """A checked file's text by its display path; picklable, so facts can go to spawned
    workers."""

    paths: dict[str, Path]
    contents: dict[str, bytes]  # files not read from disk (stdin)

    def __call__(self, display: str) -> str | None:
        data = self.contents.get(display)
        try:
            if data is None:
                path = self.paths.get(display)
                if path is None:
                    return None
                data = read_regular_file(path)
            return decode_source(data)
        except (OSError, SourceError):
            return None


def first_pass(
    tasks: Sequence[Task], jobs: int, file_timeout: float | None = None
) -> list[FileResult]:
    """Only the first pass (summaries and file-scope findings), in the order of ``tasks``."""
    return _run_pass(_with_module_names(tasks), Jobs(jobs, file_timeout))


def _second(task: Task) -> Task:
    return replace(task, second=True)


def _run_pass(
    tasks: Sequence[Task],
    jobs: Jobs,
    inputs: SecondInputs | None = None,
    trees: ParsedTrees | None = None,
) -> list[FileResult]:
    """One pass over ``tasks``, in parallel when worth it; results in order. ``inputs``
    holds the second pass's input of each file (None in the first pass); ``trees`` keeps
    first-pass trees for the second pass when both run in this process."""
    inputs = inputs or {}
    if not tasks:
        return []
    # here, not in workers: a spawned worker knows a plugin's rules only once it checks a file
    tasks = [t if t.report else replace(t, settings=linked_only(t.settings)) for t in tasks]
    if _in_process(tasks, jobs):
        return [
            _check(task, inputs.get(task.display), trees if task.report else None) for task in tasks
        ]
    all_rules()  # import every rule module before forking, so workers inherit them
    _freeze_before_forking()
    calls = [(_check_in_worker, (task,), task.display) for task in tasks]
    sizes = [_size(task) for task in tasks] if jobs.count > 1 else None
    with _Pool(min(jobs.count, len(tasks)), inputs) as pool:
        return pool.map(calls, jobs.file_timeout, sizes)


def _in_process(tasks: Sequence[Task], jobs: Jobs) -> bool:
    """Whether :func:`_run_pass` checks ``tasks`` in this process rather than in workers."""
    return jobs.file_timeout is None and (jobs.count <= 1 or len(tasks) <= _IN_PROCESS_MAX_FILES)


def _rules_alongside(second: Sequence[Task], jobs: Jobs) -> bool:
    """Whether the project rules run in a process of their own while the second pass over
    ``second`` runs in workers, one fewer (:class:`_RulesAlongside`): with several jobs,
    where workers are forked."""
    forked = process_context().get_start_method() == "fork"
    fewer = replace(jobs, count=jobs.count - 1)
    return forked and jobs.count > 1 and bool(second) and not _in_process(second, fewer)


class _RulesAlongside:
    """The project rules run in a forked process while this one runs the second pass.

    Both need only what linking gave, and they took 1.5 s and 0.8 s one after the other at
    the end of a 16-job check of torch, with the other cores idle. Forked right after
    linking, the process starts with what the rules would see here; it sends back their
    findings, errors and the spans they measured (what a cached project stage records it
    read, see :class:`ProjectResults`). Only where workers are forked: a spawned process
    would have to unpickle every summary first."""

    def __init__(
        self,
        linked: ProjectStage,
        results: Sequence[FileResult],
        native: Sequence[tuple[str, str, frozenset[str]]],
    ) -> None:
        self.linked = linked
        context = multiprocessing.get_context("fork")
        self.receiver, sender = context.Pipe(duplex=False)
        self.process = context.Process(
            target=_project_rules_and_send, args=(linked, results, native, sender), daemon=True
        )
        self.process.start()
        sender.close()

    def result(self) -> ProjectStage:
        """What the rules gave (waiting for them); a process that died is an error."""
        facts = self.linked.facts
        try:
            found, errors, measured = transport.receive(self.receiver)
        except (EOFError, OSError):
            why = "internal error: the process running the project rules died"
            return ProjectStage(
                facts, {}, [ToolError(PROJECT, f"{why}; their findings are missing")]
            )
        finally:
            self.process.join()
            self.receiver.close()
        if facts is not None:
            facts.measured = measured
        return ProjectStage(facts, found, errors)


def _project_rules_and_send(
    linked: ProjectStage,
    results: Sequence[FileResult],
    native: Sequence[tuple[str, str, frozenset[str]]],
    sender: multiprocessing.connection.Connection,
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    stage = project_rules_stage(linked, results, native)
    measured = stage.facts.measured if stage.facts is not None else {}
    transport.send(sender, (stage.found, stage.errors, measured))
    sender.close()


def _size(task: Task) -> int:
    """How large the task's file is (0 if unknown): the pool hands out large files first."""
    if task.data is not None:
        return len(task.data)
    try:
        return task.path.stat().st_size
    except OSError:
        return 0


# A worker's second-pass inputs, given by the pool's initializer (in workers only).
_worker_inputs: SecondInputs = {}


def _start_worker(inputs: SecondInputs) -> None:
    global _worker_inputs
    _worker_inputs = inputs
    all_rules()  # spawned workers import the rule modules once, before their first file


START_METHOD_VARIABLE = "DISTLINT_START_METHOD"

if TYPE_CHECKING:  # the context of a start method (BaseContext has no Process class)
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext

    StartContext = ForkContext | SpawnContext | ForkServerContext


def process_context() -> StartContext:
    """fork on Linux (cheapest), spawn elsewhere; ``DISTLINT_START_METHOD`` overrides (tests
    use it to check that every start method gives the same output)."""
    chosen = os.environ.get(START_METHOD_VARIABLE)
    if chosen in multiprocessing.get_all_start_methods():  # fork, spawn or forkserver
        return cast("StartContext", multiprocessing.get_context(chosen))
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")  # pragma: no cover


def _check(task: Task, second: SecondPass | None, trees: ParsedTrees | None = None) -> FileResult:
    if second is None or trees is None or not trees.holds(task.display):
        # not before a second pass on a kept tree: the collection would walk that tree and
        # the first pass's summary, which live on (a tenth of an editor's check)
        _collect_before_a_file()
    if task.data is None and _may_crash_parser(task.path):
        return _check_isolated(task, second)
    return _check_unguarded(task, second, trees)


def _check_unguarded(
    task: Task,
    second: SecondPass | None,
    trees: ParsedTrees | None = None,
    premeasure_chars: int | None = None,
) -> FileResult:
    if task.second and second is None:
        raise RuntimeError(f"{task.display}: the second pass got no project facts")
    return analyze_file(task.source, task.settings, second, trees, task.measure, premeasure_chars)


# In a worker, a first pass of a file this large (characters) measures every lazily located
# node of it while its tree is at hand (``checker._finish``): the parent, which measures the
# spans project findings point at, would otherwise parse it again, alone, while every worker
# waits for the second pass (torch's 460 KB distributed_test.py: a third of its project stage).
PREMEASURE_CHARS = 100_000


_LONG_LINE = 5_000


def _may_crash_parser(path: Path) -> bool:
    """Whether ``path`` has a line long enough to hide nesting that overflows LibCST's stack.

    Deep brackets are rejected before parsing (source.check_nesting), but chains of thousands
    of lambdas or operators also kill the process (SIGSEGV); they need a very long line, which
    real code does not have, so only such rare files pay for a separate process.
    """
    try:
        if path.stat().st_size <= _LONG_LINE:
            return False
        data = read_regular_file(path)
    except OSError:
        return False
    return any(len(line) > _LONG_LINE for line in data.splitlines())


def _check_in_worker(task: Task) -> FileResult:
    """A file in a supervised worker: a crash or a stall here costs only this file."""
    _collect_before_a_file()
    return _check_unguarded(task, _worker_inputs.get(task.display), None, PREMEASURE_CHARS)


ISOLATED_TIMEOUT = 60.0  # seconds for one file that may crash or stall the parser


def _check_isolated(
    task: Task, second: SecondPass | None = None, timeout: float = ISOLATED_TIMEOUT
) -> FileResult:
    """Check one file in a fresh process: a crash or a stall there is that file's alone."""
    context = process_context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_check_and_send, args=(task, portable(second, context), sender), daemon=True
    )
    process.start()
    sender.close()
    try:
        if receiver.poll(timeout):
            return transport.receive(receiver)
        reason = f"the parser did not finish within {timeout:.0f} s; it was not checked"
    except EOFError:
        reason = "the parser crashed on this file (the process died); it was not checked"
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
    return _unparsable(task.display, reason, 1, 0)


def _check_and_send(
    task: Task, second: Portable, sender: multiprocessing.connection.Connection
) -> None:
    transport.send(sender, _check_unguarded(task, unpacked(second)))
    sender.close()


class Packed:
    """A value pickled by :mod:`transport` (deep values on a large stack) for a process
    that starts by unpickling its arguments: under spawn, ``Process(args=...)`` pickles them
    with plain pickle, which fails on a summary nested past 1,000 levels (an elif chain of
    1,500 rank tests ended the whole run with an internal RecursionError)."""

    def __init__(self, value: object) -> None:
        self.data = transport.dumps(value)


Portable = Any  # a value, or a Packed one where the process is not forked


def portable(value: object, context: multiprocessing.context.BaseContext) -> Portable:
    """``value`` as a new process of ``context`` should receive it: as it is when forked (it
    is inherited, not pickled), packed otherwise."""
    if context.get_start_method() == "fork" or value is None:
        return value
    return Packed(value)


def unpacked(value: Portable) -> Any:
    return transport.loads(value.data) if isinstance(value, Packed) else value


# -- supervised workers ----------------------------------------------------------------------------

Call = tuple[Callable[..., FileResult], tuple, str]  # function, its arguments, the file's name


def _serve(
    conn: multiprocessing.connection.Connection,
    inputs: Portable,
    make_state: Callable[[], object] | None = None,
) -> None:
    """A worker: ``(index, function, arguments, name)`` in, ``(index, result)`` out, until
    None. ``make_state``: made here, what the calls of a long-lived worker share (its
    caches), passed to each as its first argument."""
    _start_worker(unpacked(inputs))
    state = () if make_state is None else (make_state(),)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            message = transport.receive(conn)
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, function, args, name = message
        try:
            result = function(*state, *args)
        except Exception as exc:  # a bug: this file's error, never the end of the run
            text = f"internal error while checking the file: {type(exc).__name__}: {exc}"
            result = FileResult(name, errors=(ToolError(name, text),))
        transport.send(conn, (index, result))


class Worker:
    def __init__(self, inputs: Portable, make_state: Callable[[], object] | None = None) -> None:
        """``inputs``: the second pass's inputs, as :func:`portable` gives them;
        ``make_state``: see :func:`_serve`."""
        context = process_context()
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, inputs, make_state), daemon=True)
        self.process.start()
        child.close()
        # the calls it holds, in the order it runs them: the first runs, the next (if any)
        # waits in the pipe, so the worker starts it without waiting for the parent
        self.held: deque[int] = deque()
        self.started = 0.0
        self.cpu_started: float | None = None
        self.done = 0  # calls it finished

    @property
    def index(self) -> int | None:
        """The call it is running (None: idle)."""
        return self.held[0] if self.held else None

    def give(self, index: int, call: Call) -> bool:
        """Send a call, to run now when idle, else after the one it runs; False if the
        worker died before taking it."""
        return self.send(index, transport.dumps((index, *call)))

    def send(self, index: int, message: bytes) -> bool:
        """:meth:`give` of a call already pickled (``message``)."""
        try:
            self.conn.send_bytes(message)
        except (OSError, ValueError):  # it died before taking the call
            return False
        self.held.append(index)
        if len(self.held) == 1:
            self._start()
        return True

    def finished(self) -> None:
        """The call it ran came back; the one waiting (if any) runs from now."""
        self.held.popleft()
        self.done += 1
        if self.held:
            self._start()

    def _start(self) -> None:
        self.started = time.monotonic()
        self.cpu_started = _cpu_seconds(self.process.pid)

    def used(self, now: float) -> float:
        """Seconds the call it runs has taken: CPU time where known (a busy machine does
        not make a file time out), else wall time."""
        cpu = _cpu_seconds(self.process.pid) if self.cpu_started is not None else None
        if cpu is None or self.cpu_started is None:
            return now - self.started
        return cpu - self.cpu_started

    def left(self, budget: float, now: float) -> float:
        """Seconds before the call it runs may pass ``budget`` (:meth:`used`). Its CPU time
        is read only once its wall time has passed the budget: one thread runs a call, so
        its CPU time cannot pass the budget sooner, and the parent, woken by each result,
        would otherwise read every busy worker's /proc entry twice a result."""
        wall = now - self.started
        return budget - wall if wall < budget else budget - self.used(now)

    def over(self, budget: float, now: float) -> bool:
        return self.left(budget, now) <= 0 or now - self.started >= _WALL_FACTOR * budget

    def stop(self, kill: bool = False) -> None:
        if not kill:
            with contextlib.suppress(OSError, ValueError):
                transport.send(self.conn, None)
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


# A call is sent ahead (while the worker runs another) only when this small: the pipe holds
# it without blocking the parent, which must stay free to read the result being written.
# A task (path, settings) is about 1 KB; one carrying a file's text may be far larger.
_AHEAD_BYTES = 4096
# ... and only behind a call whose file is this small (bytes), when sizes are known: one sent
# behind a large file waits as long as that file takes, while the other workers may run out
# of files (torch's second largest file waited 13 s behind the largest, then ran 3.4 s alone
# at the end of a 16-job check). A file this large takes some 100 ms, against the fraction of
# a millisecond a worker waits on the parent for its next call when none was sent ahead.
_AHEAD_BEHIND_BYTES = 16_384


class _Pool:
    """Worker processes that each check one file at a time, supervised file by file.

    A worker that dies costs the file it was running (DL000 "the parser crashed"), one that
    runs a file past the budget is killed and costs that file (DL000 "not checked:
    exceeded"); either way a new worker takes its place, the file sent ahead to the old one
    goes to another, and the other files are checked as usual. Files are handed out largest
    first (``sizes``), so that a large file does not start last and keep the others waiting.
    """

    def __init__(self, size: int, inputs: SecondInputs) -> None:
        self.size = size
        self.inputs = portable(inputs, process_context())  # packed once for every worker
        self.workers: list[Worker] = []
        self.fresh_deaths = 0  # workers in a row that died before finishing anything

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers:
            worker.stop(kill=exc[0] is not None)
        self.workers = []

    def _replace(self, worker: Worker) -> Worker:
        worker.stop(kill=True)
        if worker.done == 0:
            self.fresh_deaths += 1
            if self.fresh_deaths > 3:
                raise RuntimeError("worker processes die as soon as they start")
        else:
            self.fresh_deaths = 0
        new = Worker(self.inputs)
        self.workers[self.workers.index(worker)] = new
        return new

    def map(
        self, calls: Sequence[Call], timeout: float | None, sizes: Sequence[int] | None = None
    ) -> list[FileResult]:
        """Each call's result, in the order of ``calls``; ``sizes``: how large each call's
        file is (the largest are handed out first)."""
        order = range(len(calls))
        if sizes is not None:
            order = sorted(order, key=lambda i: -sizes[i])  # type: ignore[assignment]
        pending = deque(order)
        results: dict[int, FileResult] = {}
        self.workers = [Worker(self.inputs) for _ in range(min(self.size, len(calls)))]

        def feed(worker: Worker, ahead: bool = True) -> None:
            """Keep ``worker`` running a call, with one more waiting when both are small
            (``ahead``: one may wait)."""
            while pending and len(worker.held) < (2 if ahead else 1):
                index = pending[0]
                message = transport.dumps((index, *calls[index]))
                if worker.held and not may_wait(worker.held[0], message):
                    return  # sent when the worker is idle
                pending.popleft()
                if worker.send(index, message):
                    continue
                pending.appendleft(index)  # not this file's fault: another worker takes it
                if worker.held:
                    return  # it died running a call: the loop below finds out which
                worker = self._replace(worker)

        def give_up(worker: Worker, reason: str) -> None:
            """The call ``worker`` runs is given up; the one sent ahead goes back first."""
            running, *ahead = worker.held
            results[running] = _gave_up(calls[running][2], reason)
            pending.extendleft(reversed(ahead))
            feed(self._replace(worker))

        def may_wait(running: int, message: bytes) -> bool:
            """Whether a call (pickled: ``message``) may wait in the pipe of a worker that
            runs call ``running``."""
            small = sizes is None or sizes[running] <= _AHEAD_BEHIND_BYTES
            return small and len(message) <= _AHEAD_BYTES

        for worker in list(self.workers):  # one call each, then one ahead where it may wait
            feed(worker, ahead=False)
        for worker in list(self.workers):
            feed(worker)
        while len(results) < len(calls):
            busy = [w for w in self.workers if w.index is not None]
            wait = None
            if timeout is not None and busy:
                now = time.monotonic()
                wait = max(0.01, min(w.left(timeout, now) for w in busy))
            handles: list[Any] = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            ready = set(multiprocessing.connection.wait(handles, wait))
            now = time.monotonic()
            for worker in busy:
                if worker.conn in ready:
                    try:
                        message = worker.conn.recv_bytes()
                    except (EOFError, OSError):
                        give_up(worker, death_reason(worker))
                        continue
                    worker.finished()
                    self.fresh_deaths = 0
                    feed(worker)  # before unpickling the result: the worker need not wait
                    got, result = transport.loads(message)
                    results[got] = result
                elif worker.process.sentinel in ready:
                    give_up(worker, death_reason(worker))
                elif timeout is not None and worker.over(timeout, now):
                    budget = f"the {timeout:g} s budget for one file (--file-timeout)"
                    give_up(worker, f"not checked: exceeded {budget}")
        return [results[i] for i in range(len(calls))]


_WALL_FACTOR = 4  # a file may take this many times its budget in wall time (a busy machine)
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` (its threads included), from /proc."""
    if pid is None:  # not started
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def death_reason(worker: Worker) -> str:
    worker.process.join(1)
    code = worker.process.exitcode
    how = ""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            how = f": {signal.Signals(-code).name}"
    return f"the parser crashed on this file (the process died{how}); it was not checked"


def _gave_up(name: str, reason: str) -> FileResult:
    return _unparsable(name, reason, 1, 0)
