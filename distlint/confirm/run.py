"""Run every target and match what they observed to the static findings."""

from __future__ import annotations

import copy
import signal
from collections.abc import Callable, Sequence
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
from distlint.confirm.sandbox import (
    ChildResult,
    ForkServer,
    Interrupted,
    crash_cause,
    interruptible,
)
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
    """Run ``targets`` one after the other, each in a child forked from one warm server.

    SIGINT, SIGTERM or SIGHUP stop the run: the running target's tree is killed, the
    temporary directories are removed, and :class:`Interrupted` (naming the target) is raised.
    """
    progress = progress or Progress(len(targets), enabled=False)
    collected = Collected(run=ConfirmRun())
    run = collected.run
    roots: set[tuple[Any, ...]] = set()
    current: str | None = None
    try:
        with (
            interruptible(),
            ForkServer(cwd=settings.base, startup_timeout=settings.timeout) as server,
        ):
            for target in targets:
                current = target.name
                _run_one(target, settings, server, progress, collected, roots, preferred)
            current = None
            run.startup_seconds = server.startup_seconds
            run.notes = list(server.notes) + run.notes
    except Interrupted as exc:
        exc.target = current
        if current is not None:
            progress.done("interrupted", 0.0)
        raise
    run.roots_compiled = len(roots)
    return collected


def _run_one(
    target: Target,
    settings: ConfirmSettings,
    server: ForkServer,
    progress: Progress,
    collected: Collected,
    roots: set[tuple[Any, ...]],
    preferred: set[str],
) -> None:
    run = collected.run
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
    if result.left:
        run.notes.append(
            f"target {target.name} left {_plural(result.left, 'process', 'es')} "
            "running when it ended: killed"
        )
    progress.done(describe(outcome), result.seconds)


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
    checked_files: Sequence[Path] = (),
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
    """How the target went, from its exit status and the events it left.

    Only a zero exit status with the end record signed by the run's nonce
    (:attr:`ChildResult.ended`) counts as having run to the end: anything else is a crash,
    whatever the events say. Then the first ``raised`` or ``exit`` event decides.
    """
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
    stops = [e for e in result.events if e.get("event") in ("raised", "exit")]
    if result.timed_out:
        outcome.status = "timeout"
        outcome.message = f"killed after the {result.seconds:.0f} s timeout"
    elif not result.ended:
        outcome.status = "crashed"
        outcome.message = crash_message(result)
    elif stops and stops[0].get("event") == "exit":
        _exited(outcome, target, stops[0], compiled=bool(tally["graphs"] or tally["frames"]))
    elif stops:
        first = stops[0]
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
    return outcome


def _exited(outcome: TargetOutcome, target: Target, event: dict[str, Any], compiled: bool) -> None:
    """``sys.exit(code)`` in the target: a script's ``sys.exit(0)`` after compiling is its end."""
    code = event.get("code")
    if target.kind == "script" and code in (None, 0) and compiled:
        return
    who = "script" if target.kind == "script" else "entry"
    call = "sys.exit()" if code is None else f"sys.exit({code!r})"
    when = "after" if compiled else "before"
    outcome.status = "exited"
    outcome.message = (
        f"the {who} called {call} {when} the compiled code ran{_where(event.get('stack', ()))}"
    )


def crash_message(result: ChildResult) -> str:
    """Why a child did not run to the end: its exit status, and the cause its output shows."""
    code = result.returncode
    if code is None:
        how = "its fork server died"
    elif code < 0:
        how = f"killed by {_signal_name(-code)}"
    elif code == 0:
        how = "it exited with status 0 before the end of the run (os._exit in the target?)"
    else:
        how = f"it exited with status {code} before the end of the run"
    cause = crash_cause(result.stderr_tail)
    return f"the child process crashed: {how}" + (f"; {cause}" if cause else "")


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} (signal {number})"
    except ValueError:
        return f"signal {number}"


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


def _plural(count: int, word: str, suffix: str = "s") -> str:
    return f"{count} {word}{'' if count == 1 else suffix}"


def describe(outcome: TargetOutcome) -> str:
    """The progress line's outcome; a failure's message is printed once, by the caller."""
    if outcome.status != "ok":
        return outcome.status
    parts = [f"{outcome.graphs} graph{'s' * (outcome.graphs != 1)}"]
    parts.append(f"{outcome.breaks} break{'s' * (outcome.breaks != 1)}")
    if outcome.errors:
        parts.append(f"{outcome.errors} compile error{'s' * (outcome.errors != 1)}")
    return ", ".join(parts)
