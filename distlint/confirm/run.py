"""Run every target and match what they observed to the static findings."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distlint.confirm.match import (
    ConfirmRun,
    Observation,
    TargetOutcome,
    match,
    normalize,
    observations_from_events,
)
from distlint.confirm.progress import Progress
from distlint.confirm.sandbox import ChildResult, ForkServer
from distlint.confirm.targets import ConfirmSettings, Target
from distlint.findings import Finding

CUDA_ADVICE = "confirm mode runs on CPU: pass --map-cuda-to-cpu to map cuda to cpu"


@dataclass
class Collected:
    """What the targets observed, before matching."""

    run: ConfirmRun
    observations: list[Observation] = field(default_factory=list)
    traced: dict[str, set[int]] = field(default_factory=dict)


def collect(
    targets: list[Target],
    settings: ConfirmSettings,
    *,
    preferred: set[str],
    progress: Progress | None = None,
) -> Collected:
    """Run ``targets`` one after the other, each in a child forked from one warm server."""
    progress = progress or Progress(len(targets), enabled=False)
    collected = Collected(run=ConfirmRun())
    run = collected.run
    roots: set[tuple[Any, ...]] = set()
    with ForkServer(cwd=settings.base, startup_timeout=settings.timeout) as server:
        for target in targets:
            progress.start(target.name)
            result = server.run(
                target.spec(settings),
                timeout=settings.timeout,
                memory_mb=settings.memory_mb,
                tick=progress.tick,
                cwd=settings.base,
            )
            found, lines, tally = observations_from_events(result.events, target.name, preferred)
            collected.observations += found
            for path, numbers in lines.items():
                collected.traced.setdefault(path, set()).update(numbers)
            roots |= root_frames(result.events)
            outcome = outcome_of(target, result, tally, mapped=settings.map_cuda_to_cpu)
            run.targets.append(outcome)
            run.graphs += tally["graphs"]
            run.breaks += tally["breaks"]
            run.compile_errors += tally["errors"]
            run.library_breaks += tally["library_breaks"]
            progress.done(describe(outcome), result.seconds)
        run.startup_seconds = server.startup_seconds
        run.notes = list(server.notes)
    run.roots_compiled = len(roots)
    return collected


def root_frames(events: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    """The user functions Dynamo compiled as root frames (``frame`` events in user code)."""
    roots = set()
    for event in events:
        frame = event.get("frame")
        if event.get("event") == "frame" and event.get("user") and frame:
            roots.add((normalize(str(frame[0])), frame[1], frame[2]))
    return roots


def apply(
    findings: list[Finding],
    collected: Collected,
    *,
    cwd: Path,
    enabled: Callable[[str], bool] = lambda code: True,
    read_text: Callable[[str], str | None] | None = None,
    scope: set[str] | None = None,
) -> tuple[list[Finding], ConfirmRun]:
    """Match observations to ``findings``; the run's counts are filled in (a copy)."""
    out, counts, extra = match(
        findings,
        collected.observations,
        collected.traced,
        cwd=cwd,
        enabled=enabled,
        read_text=read_text,
        scope=scope,
    )
    run = copy.copy(collected.run)
    run.counts = counts
    run.observed_only = extra
    return sorted(out, key=lambda f: f.sort_key), run


def run_confirm(
    findings: list[Finding],
    targets: list[Target],
    settings: ConfirmSettings,
    *,
    cwd: Path,
    enabled: Callable[[str], bool] = lambda code: True,
    progress: Progress | None = None,
    read_text: Callable[[str], str | None] | None = None,
    checked_files: list[Path] = (),  # type: ignore[assignment]
) -> tuple[list[Finding], ConfirmRun]:
    """Run ``targets``; return the findings with statuses (plus DL901/DL902) and the run."""
    preferred = {normalize(f.path, cwd) for f in findings}
    preferred |= {normalize(str(p), cwd) for p in checked_files}
    collected = collect(targets, settings, preferred=preferred, progress=progress)
    scope = preferred if checked_files else None
    return apply(findings, collected, cwd=cwd, enabled=enabled, read_text=read_text, scope=scope)


def outcome_of(
    target: Target, result: ChildResult, tally: dict[str, int], *, mapped: bool = False
) -> TargetOutcome:
    outcome = TargetOutcome(
        name=target.name,
        seconds=round(result.seconds, 2),
        status="ok",
        graphs=tally["graphs"],
        breaks=tally["breaks"],
        errors=tally["errors"],
        frames=tally["frames"],
        notes=[e.get("text", "") for e in result.events if e.get("event") == "note"],
    )
    raised = [e for e in result.events if e.get("event") == "raised"]
    if result.timed_out:
        outcome.status = "timeout"
        outcome.message = f"killed after the {result.seconds:.0f} s timeout"
    elif raised:
        first = raised[0]
        outcome.status = "cuda" if first.get("kind") == "cuda" else "raised"
        message = str(first.get("message", "")).strip()
        where = _where(first.get("stack", ()))
        if outcome.status == "cuda" and "--map-cuda-to-cpu" not in message:
            where += f" ({CUDA_ADVICE})"
        elif outcome.status == "raised" and not mapped and _mentions_cuda(target):
            where += (
                " (the script uses CUDA and confirm mode runs on CPU: --map-cuda-to-cpu runs it "
                "as if it had its GPUs)"
            )
        outcome.message = f"{message}{where}"
    elif not result.ended:
        outcome.status = "crashed"
        code = result.returncode
        if code is None:
            how = "its fork server died"
        else:
            how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
        tail = _last_line(result.stderr_tail)
        outcome.message = f"the child process crashed ({how})" + (f": {tail}" if tail else "")
    return outcome


def _mentions_cuda(target: Target) -> bool:
    """Whether a script target's source uses CUDA (``torch.cuda``, ``"cuda"``, ``.cuda(``)."""
    if not target.script:
        return False
    try:
        text = Path(target.script).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(token in text for token in ("torch.cuda", '"cuda', "'cuda", ".cuda("))


def _where(stack: list) -> str:
    from distlint.confirm.match import display, is_library

    for row in reversed(stack or []):
        if not is_library(str(row[0])):
            return f" at {display(normalize(str(row[0])), Path.cwd())}:{row[1]}"
    return ""


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def describe(outcome: TargetOutcome) -> str:
    """The progress line's outcome; a failure's message is printed once, by the caller."""
    if outcome.status != "ok":
        return outcome.status
    parts = [f"{outcome.graphs} graph{'s' * (outcome.graphs != 1)}"]
    parts.append(f"{outcome.breaks} break{'s' * (outcome.breaks != 1)}")
    if outcome.errors:
        parts.append(f"{outcome.errors} compile error{'s' * (outcome.errors != 1)}")
    return ", ".join(parts)
