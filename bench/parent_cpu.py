"""Where the parent process of a parallel ``distlint check`` spends its own CPU, by stage.

The workers' CPU scales with ``--jobs``; the parent's does not, and bounds the speed-up of
many jobs. This runs one check in this process with each stage's entry point wrapped, and
prints the parent's CPU time (``time.process_time``: this process, all its threads, not its
workers) spent in each stage, exclusive of the stages nested in it, with the wall time of each
stage and the workers' CPU (``RUSAGE_CHILDREN``) for comparison; then, for each pass, how
busy the workers were, when each ran out of files, and the longest and the last calls:

    python bench/parent_cpu.py -- check -j 16 --no-cache --exit-zero -q DIR

Everything after ``--`` is the ``distlint`` command line. Stages: imports (the interpreter
and the modules, before the check starts), rule modules, discovery (finding the files),
settings (each file's configuration), native files (C/C++ sources read for op
registrations), context (files linked for context), module names, first pass / second pass
(what the parent does while its workers run: starting them, sending calls, reading results),
unpickling results, link, project rules, settle (suppressions), report (rendering); "other"
is the rest of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from distlint import cli
from distlint.config import discovery, settings
from distlint.engine import checker, runner, transport
from distlint.engine import tasks as engine_tasks
from distlint.output import render as render_module
from distlint.rules import registry


class Stages:
    """Exclusive parent CPU and wall time per stage, stages nesting as the calls do."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._open: list[list[float]] = []  # per open stage: time taken by nested stages

    def wrap(self, name: str | Callable[..., str], function: Callable[..., Any]) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Any:
            stage = name if isinstance(name, str) else name(*args, **kwargs)
            self._open.append([0.0, 0.0])
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                used_cpu = time.process_time() - cpu
                used_wall = time.perf_counter() - wall
                nested_cpu, nested_wall = self._open.pop()
                self.cpu[stage] = self.cpu.get(stage, 0.0) + used_cpu - nested_cpu
                self.wall[stage] = self.wall.get(stage, 0.0) + used_wall - nested_wall
                self.calls[stage] = self.calls.get(stage, 0) + 1
                if self._open:
                    self._open[-1][0] += used_cpu
                    self._open[-1][1] += used_wall

        return timed


def _pass_name(tasks: Any, *args: Any, **kwargs: Any) -> str:
    return "second pass" if tasks and tasks[0].second else "first pass"


class Timeline:
    """Each pass's calls as the parent saw them: which worker ran which file, from when it
    started (sent ahead: when the previous call came back) to when its result came back."""

    def __init__(self) -> None:
        self.passes: list[tuple[float, float, list[str], list[tuple[int, int, float, float]]]] = []
        self._calls: list[tuple[int, int, float, float]] = []
        self._started: dict[int, tuple[int, float]] = {}

    def wrap_map(self, function: Callable) -> Callable:
        def timed(pool: Any, calls: Any, *args: Any, **kwargs: Any) -> Any:
            self._calls, self._started = [], {}
            began = time.perf_counter()
            try:
                return function(pool, calls, *args, **kwargs)
            finally:
                names = [call[2] for call in calls]
                self.passes.append((began, time.perf_counter(), names, self._calls))

        return timed

    def wrap_start(self, function: Callable) -> Callable:
        def timed(worker: Any) -> Any:
            self._started[id(worker)] = (worker.held[0], time.perf_counter())
            return function(worker)

        return timed

    def wrap_finished(self, function: Callable) -> Callable:
        def timed(worker: Any) -> Any:
            index, began = self._started.pop(id(worker), (worker.held[0], 0.0))
            self._calls.append((id(worker), index, began, time.perf_counter()))
            return function(worker)

        return timed

    def report(self) -> None:
        for number, (began, ended, names, calls) in enumerate(self.passes, 1):
            workers: dict[int, list[tuple[float, float]]] = {}
            for worker, _, start, end in calls:
                workers.setdefault(worker, []).append((start, end))
            if not workers:
                continue
            first_idle = min(max(end for _, end in spans) for spans in workers.values())
            busy = sum(end - start for spans in workers.values() for start, end in spans)
            span = ended - began
            print(
                f"pass {number}: {len(calls)} calls on {len(workers)} workers, {span:.2f} s;"
                f" workers busy {busy / (span * len(workers)):.0%} of it; the first worker"
                f" idle for good {ended - first_idle:.2f} s before the end",
                file=sys.stderr,
            )
            ends = sorted(max(end for _, end in spans) - began for spans in workers.values())
            print("  workers done at " + " ".join(f"{end:.2f}" for end in ends), file=sys.stderr)
            print("  the longest calls, then the last to finish:", file=sys.stderr)
            longest = sorted(calls, key=lambda c: c[2] - c[3])[:5]
            last = sorted(calls, key=lambda c: -c[3])[:8]
            for _, index, start, end in [*longest, *last]:
                print(
                    f"  {end - start:6.2f} s  from {start - began:6.2f} s  {names[index]}",
                    file=sys.stderr,
                )


def install(stages: Stages, timeline: Timeline) -> None:
    """Wrap the entry point of each stage where its caller looks it up."""
    discovery.Discovery.files = stages.wrap("discovery", discovery.Discovery.files)  # type: ignore[method-assign]
    settings.ConfigResolver.file_settings = stages.wrap(  # type: ignore[method-assign]
        "settings", settings.ConfigResolver.file_settings
    )
    engine_tasks.native_sources = stages.wrap("native files", engine_tasks.native_sources)
    engine_tasks.context_tasks = stages.wrap("context", engine_tasks.context_tasks)
    runner._run_pass = stages.wrap(_pass_name, runner._run_pass)
    transport.loads = stages.wrap("unpickling results", transport.loads)
    checker.link = stages.wrap("link", checker.link)
    checker.project_findings = stages.wrap("project rules", checker.project_findings)
    runner.settle = stages.wrap("settle", runner.settle)
    render_module.render = stages.wrap("report", render_module.render)
    cli.render = render_module.render
    runner.Worker.__init__ = stages.wrap("starting workers", runner.Worker.__init__)  # type: ignore[method-assign]
    runner.release_freed_memory = stages.wrap("releasing memory", runner.release_freed_memory)
    engine_tasks._with_module_names = stages.wrap("module names", engine_tasks._with_module_names)
    runner._share_rule_sets = stages.wrap("sharing rule sets", runner._share_rule_sets)
    runner._Pool.map = timeline.wrap_map(runner._Pool.map)  # type: ignore[method-assign]
    runner.Worker._start = timeline.wrap_start(runner.Worker._start)  # type: ignore[method-assign]
    runner.Worker.finished = timeline.wrap_finished(runner.Worker.finished)  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    stages = Stages()
    started = time.process_time()  # the interpreter and the modules imported above
    stages.wrap("rule modules", registry.all_rules)()  # imported once, by the first run
    stages.cpu["imports"], stages.wall["imports"], stages.calls["imports"] = started, 0.0, 1
    timeline = Timeline()
    install(stages, timeline)
    run = stages.wrap("other", cli.main)
    wall = time.perf_counter()
    with contextlib.suppress(SystemExit):
        run(command, standalone_mode=False)
    wall = time.perf_counter() - wall
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"{'stage':<20} {'parent CPU s':>12} {'wall s':>8} {'calls':>6}", file=sys.stderr)
    for stage in sorted(stages.cpu, key=lambda s: -stages.cpu[s]):
        print(
            f"{stage:<20} {stages.cpu[stage]:>12.2f} {stages.wall[stage]:>8.2f}"
            f" {stages.calls[stage]:>6}",
            file=sys.stderr,
        )
    print(
        f"parent CPU {own.ru_utime + own.ru_stime:.2f} s (peak {own.ru_maxrss / 1024:.0f} MiB),"
        f" workers {workers.ru_utime + workers.ru_stime:.2f} s (the largest's peak"
        f" {workers.ru_maxrss / 1024:.0f} MiB), wall {wall:.2f} s",
        file=sys.stderr,
    )
    timeline.report()


if __name__ == "__main__":
    main()
