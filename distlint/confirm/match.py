"""Findings × observations: a status for each finding, DL901 / DL902 for the unpredicted.

A finding is matched by file and statement: Dynamo reports a break at the line of the
instruction it could not trace, which lies somewhere in the statement the finding is in (the
``if`` header for a data-dependent branch, the line of ``.item()`` in a long call). The
statement is the innermost one whose lines (for ``if``/``for``/``while``/``with``/``def``: the
header only) contain the finding's first line, widened to the finding's own span.

Statuses (``properties.confirmation``):

* ``confirmed``: Dynamo broke the graph or failed to compile there;
* ``not-observed``: Dynamo traced the statement, and nothing broke there;
* ``not-reached``: Dynamo never traced that code (a branch not taken, a function not called,
  or a target that failed before it got there).

Only findings that predict a graph break or a compile error of a compiled frame get a status
(:data:`OBSERVABLE`); a deadlock or a recompile storm is not something a CPU dry run sees.

Custom-op findings (:data:`CUSTOM_OP`: DL401 no fake implementation, DL402 no autograd formula)
sit on the op's definition, while the failure happens where the op is called. They are matched
by the op's qualified name: a compile error (or, for DL402, an eager ``backward()`` error) that
names the op and the missing piece confirms the finding wherever it was raised. A different
failure of the same op means the run stopped before it could show this one (``not-reached``);
otherwise the finding is ``not-observed`` when Dynamo traced one of its call sites.
"""

from __future__ import annotations

import ast
import os
import re
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from distlint.findings import Finding, Location, Severity, Span, make_position
from distlint.syntax.source import python_ast

# Codes whose finding says "Dynamo breaks the graph / fails to compile at this statement".
OBSERVABLE = frozenset(
    {
        "DL101",
        "DL102",
        "DL103",
        "DL104",
        "DL105",
        "DL106",
        "DL110",
        "DL202",
        "DL203",
        "DL406",
        "DL407",
    }
)
# Codes whose finding says "calling this custom op fails"; matched by the op's name.
CUSTOM_OP = {"DL401": "fake", "DL402": "autograd"}
CONFIRMED, NOT_OBSERVED, NOT_REACHED = "confirmed", "not-observed", "not-reached"
_OP_IN_FINDING = re.compile(r"Custom op `(?P<op>[\w.]+::[\w.]+)`")
_OP_IN_SOURCE = re.compile(r"""["'](?P<op>[\w.]+::[\w.]+)["']""")
_OP_FAILURES = (
    ("fake", re.compile(r"no fake impl registered for <CustomOpDef\((?P<op>[\w.]+::[\w.]+)\)>")),
    (
        "autograd",
        re.compile(r"backward through (?P<ns>\w+)\.(?P<name>\w+)\.\w+ but no autograd formula"),
    ),
)
_EXPLANATION = re.compile(r"^\s*Explanation:\s*(.+)$", re.MULTILINE)
_MAX_EXPLANATION = 240


@dataclass(frozen=True)
class Observation:
    """One graph break or compile error, at a user-code line."""

    kind: str  # "break" | "error"
    path: str  # absolute, normalized
    line: int
    gb_id: str | None
    gb_type: str
    reason: str
    explanation: str
    target: str
    frame: tuple[str, str, int | None] | None = None  # compiled frame: file, function, line
    frame_skipped: bool = False
    exc_type: str = ""
    op: str | None = None  # a custom op the failure names ("ns::name")
    op_failure: str | None = None  # what it lacks: "fake" | "autograd"


@dataclass
class TargetOutcome:
    """How one target went."""

    name: str
    seconds: float
    status: str  # "ok" | "timeout" | "crashed" | "raised" | "exited" | "cuda" | "error"
    message: str = ""
    graphs: int = 0
    breaks: int = 0
    errors: int = 0
    frames: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class ConfirmRun:
    """Everything confirm mode adds to a report."""

    targets: list[TargetOutcome] = field(default_factory=list)
    roots_compiled: int = 0
    graphs: int = 0
    breaks: int = 0
    compile_errors: int = 0
    library_breaks: int = 0  # breaks with no user-code frame (e.g. inside DDP.forward)
    counts: dict[str, int] = field(default_factory=dict)  # status -> findings
    observed_only: int = 0  # DL901 + DL902 findings added
    startup_seconds: float | None = None  # the fork server's imports, paid once per run
    notes: list[str] = field(default_factory=list)  # about the run itself (not a target)

    @property
    def notifications(self) -> list[TargetOutcome]:
        return [t for t in self.targets if t.status != "ok"]

    @property
    def successful(self) -> bool:
        return not self.notifications


# -- locating -------------------------------------------------------------------------------------


def _library_roots() -> tuple[str, ...]:
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.normpath(path) + os.sep)
    roots.add(str(Path(__file__).resolve().parent.parent) + os.sep)  # distlint itself
    return tuple(sorted(roots))


_LIBRARY = _library_roots()


def is_library(path: str) -> bool:
    norm = os.path.normpath(path)
    if path.startswith("<") or f"{os.sep}site-packages{os.sep}" in norm:
        return True
    return (norm + os.sep).startswith(_LIBRARY) or norm.startswith(_LIBRARY)


def user_frame(
    stack: Iterable[Any], preferred: set[str] | frozenset[str] = frozenset()
) -> tuple[str, int] | None:
    """The innermost frame in a checked file (``preferred``), else the innermost user frame."""
    frames = []
    for row in stack or ():
        try:
            filename, line = str(row[0]), int(row[1])
        except (TypeError, ValueError, IndexError):
            continue
        frames.append((normalize(filename), line))
    for filename, line in reversed(frames):
        if filename in preferred:
            return filename, line
    for filename, line in reversed(frames):
        if not is_library(filename):
            return filename, line
    return None


def normalize(path: str, cwd: Path | None = None) -> str:
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = (cwd or Path.cwd()) / candidate
    try:
        return str(candidate.resolve())
    except OSError:
        return os.path.normpath(str(candidate))


def explanation_of(message: str) -> str:
    match = _EXPLANATION.search(message)
    text = match.group(1).strip() if match else ""
    if len(text) > _MAX_EXPLANATION:
        text = text[: _MAX_EXPLANATION - 1].rstrip() + "…"
    return text


# -- events -> observations -----------------------------------------------------------------------


def observations_from_events(
    events: list[dict[str, Any]], target: str, preferred: set[str]
) -> tuple[list[Observation], dict[str, set[int]], dict[str, int]]:
    """Observations, traced lines per file, and tallies, from one child's events."""
    observations: list[Observation] = []
    lines: dict[str, set[int]] = {}
    frames: set[tuple[Any, ...]] = set()
    tally = {"graphs": 0, "breaks": 0, "errors": 0, "library_breaks": 0, "frames": 0}
    seen: set[tuple[Any, ...]] = set()
    for event in events:
        kind = event.get("event")
        if kind == "lines":
            lines.setdefault(normalize(event["file"]), set()).update(event.get("lines", ()))
        elif kind == "graph":
            tally["graphs"] += 1
            frame = event.get("frame")
            if frame:
                frames.add((frame[0], frame[1]))
        elif kind in ("break", "compile_error", "raised"):
            message = event.get("message", "")
            op, op_failure = custom_op_failure(message)
            if kind == "raised" and op is None:
                continue  # the target's own error: reported as its outcome, not matched
            place = user_frame(event.get("stack", ()), preferred) or user_frame(
                event.get("call_stack", ()), preferred
            )
            frame = event.get("frame")
            if frame and kind != "raised":
                frames.add((frame[0], frame[1]))
            if kind == "break":
                counter = "breaks" if place is not None else "library_breaks"
            else:
                counter = "errors" if kind == "compile_error" else ""
            if place is None and op is None:
                if counter:
                    tally[counter] += 1
                continue
            key = (kind, place, event.get("gb_type"), event.get("gb_id"), op)
            if key in seen:
                continue
            seen.add(key)
            if counter:
                tally[counter] += 1
            observations.append(
                Observation(
                    kind={"break": "break", "compile_error": "error"}.get(kind, "raised"),
                    path=place[0] if place else "",
                    line=place[1] if place else 0,
                    gb_id=event.get("gb_id"),
                    gb_type=event.get("gb_type") or event.get("exc_type") or "",
                    reason=event.get("reason", ""),
                    explanation=explanation_of(message),
                    target=target,
                    frame=(normalize(frame[0]), frame[1], frame[2]) if frame else None,
                    frame_skipped=bool(event.get("frame_skipped")),
                    exc_type=event.get("exc_type", ""),
                    op=op,
                    op_failure=op_failure,
                )
            )
    tally["frames"] = len(frames)
    return observations, lines, tally


def custom_op_failure(message: str) -> tuple[str | None, str | None]:
    """The custom op (``ns::name``) and missing piece (``fake``/``autograd``) a failure names."""
    for failure, pattern in _OP_FAILURES:
        found = pattern.search(message or "")
        if found:
            groups = found.groupdict()
            op = groups.get("op") or f"{groups['ns']}::{groups['name']}"
            return op, failure
    return None, None


def finding_op(finding: Finding, path: str, read_text: Callable[[str], str | None]) -> str | None:
    """The custom op a DL401/DL402 finding is about: from its message, else its source line."""
    found = _OP_IN_FINDING.search(finding.message)
    if found:
        return found.group("op")
    text = read_text(path)
    lines = text.splitlines() if text else []
    for number in range(finding.span.start.line, finding.span.end.line + 1):
        if 0 < number <= len(lines):
            found = _OP_IN_SOURCE.search(lines[number - 1])
            if found:
                return found.group("op")
    return None


# -- statements -----------------------------------------------------------------------------------


@cache
def _statement_ranges(path: str) -> tuple[tuple[int, int], ...]:
    try:
        tree = python_ast(Path(path).read_bytes())
    except OSError:
        return ()
    if not isinstance(tree, ast.Module):
        return ()
    ranges = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            end = max(node.lineno, body[0].lineno - 1)
        else:
            end = node.end_lineno or node.lineno
        ranges.append((node.lineno, end))
    return tuple(ranges)


def statement_lines(path: str, span: Span) -> tuple[int, int]:
    """First and last line of the statement holding ``span`` (header of a compound one)."""
    first, last = span.start.line, max(span.start.line, span.end.line)
    if span.end.column == 1 and span.end.line > span.start.line:
        last -= 1  # half-open span ending at the start of the next line
    best: tuple[int, int] | None = None
    for start, end in _statement_ranges(path):
        if start <= first <= end and (best is None or end - start < best[1] - best[0]):
            best = (start, end)
    if best is None:
        return first, last
    return min(first, best[0]), max(last, best[1])


# -- matching -------------------------------------------------------------------------------------


def with_properties(finding: Finding, **values: Any) -> Finding:
    props = dict(finding.properties)
    props.update({k: v for k, v in values.items() if v is not None})
    return replace(finding, properties=tuple(props.items()))


def match(
    findings: list[Finding],
    observations: list[Observation],
    traced: dict[str, set[int]],
    *,
    cwd: Path,
    enabled: Callable[[str], bool] = lambda code: True,
    read_text: Callable[[str], str | None] | None = None,
    scope: set[str] | None = None,
) -> tuple[list[Finding], dict[str, int], int]:
    """Findings with statuses, plus DL901/DL902 findings; the status counts; DL90x count.

    ``scope`` (absolute paths): observations in other files give no DL901/DL902 (they are
    outside what was checked); None means every file.
    """
    consumed: set[int] = set()
    by_place: dict[str, list[tuple[int, Observation]]] = {}
    by_op: dict[str, list[tuple[int, Observation]]] = {}
    for index, obs in enumerate(observations):
        if obs.kind != "raised":
            by_place.setdefault(obs.path, []).append((index, obs))
        if obs.op:
            by_op.setdefault(obs.op, []).append((index, obs))
    reader = read_text or _read
    counts = {CONFIRMED: 0, NOT_OBSERVED: 0, NOT_REACHED: 0}
    out: list[Finding] = []
    for finding in findings:
        path = normalize(finding.path, cwd)
        if finding.code in CUSTOM_OP:
            op = finding_op(finding, path, reader)
            if op is None:
                out.append(finding)
                continue
            status, extra_props = _custom_op_status(finding, op, by_op, traced, cwd, consumed)
            out.append(with_properties(finding, confirmation=status, **extra_props))
            counts[status] += 1
            continue
        if finding.code not in OBSERVABLE:
            out.append(finding)
            continue
        first, last = statement_lines(path, finding.span)
        hits = [(i, o) for i, o in by_place.get(path, ()) if first <= o.line <= last]
        if hits:
            # an error explains a finding better than a break: prefer it
            hits.sort(key=lambda item: item[1].kind != "error")
            consumed.update(i for i, _ in hits)
            obs = hits[0][1]
            status = CONFIRMED
            out.append(
                with_properties(finding, confirmation=status, gbId=obs.gb_id, observed=obs.gb_type)
            )
        else:
            lines = traced.get(path, set())
            status = NOT_OBSERVED if any(first <= n <= last for n in lines) else NOT_REACHED
            out.append(with_properties(finding, confirmation=status))
        counts[status] += 1
    unmatched = [
        o
        for i, o in enumerate(observations)
        if i not in consumed
        and o.kind != "raised"
        and o.path
        and (scope is None or o.path in scope)
    ]
    extra = observed_findings(unmatched, cwd, enabled, read_text)
    return out + extra, counts, len(extra)


def _custom_op_status(
    finding: Finding,
    op: str,
    by_op: dict[str, list[tuple[int, Observation]]],
    traced: dict[str, set[int]],
    cwd: Path,
    consumed: set[int],
) -> tuple[str, dict[str, Any]]:
    """Status of a DL401/DL402 finding about ``op`` (see the module docstring)."""
    wanted = CUSTOM_OP[finding.code]
    failures = by_op.get(op, [])
    hits = [(i, o) for i, o in failures if o.op_failure == wanted]
    if hits:
        hits.sort(key=lambda item: (item[1].kind != "error", item[1].path == ""))
        consumed.update(i for i, _ in hits)
        obs = hits[0][1]
        props: dict[str, Any] = {"gbId": obs.gb_id, "observed": obs.gb_type or obs.exc_type}
        if obs.path:
            props["observedAt"] = f"{display(obs.path, cwd)}:{obs.line}"
        return CONFIRMED, props
    if failures:
        return NOT_REACHED, {}  # the op failed for another reason first
    for location in finding.related:
        if not location.message.startswith("called"):
            continue
        lines = traced.get(normalize(location.path, cwd), set())
        if location.span.start.line in lines:
            return NOT_OBSERVED, {}
    return NOT_REACHED, {}


def observed_findings(
    observations: list[Observation],
    cwd: Path,
    enabled: Callable[[str], bool],
    read_text: Callable[[str], str | None] | None = None,
) -> list[Finding]:
    from distlint.rules.registry import get_rule
    from distlint.syntax.suppressions import scan

    findings: dict[tuple[Any, ...], Finding] = {}
    for obs in observations:
        code = "DL901" if obs.kind == "break" else "DL902"
        rule = get_rule(code)
        if rule is None or not enabled(code):
            continue
        key = (code, obs.path, obs.line, obs.gb_id, obs.gb_type)
        if key in findings:
            continue
        text = (read_text or _read)(obs.path)
        lines = text.splitlines() if text is not None else []
        if text is not None:
            index = scan(text)
            if index is not None and index.is_suppressed(code, obs.line):
                continue
        findings[key] = Finding(
            code=code,
            name=rule.name,
            severity=rule.severity if code == "DL901" else Severity.ERROR,
            message=_message(obs),
            path=display(obs.path, cwd),
            span=line_span(lines, obs.line),
            related=_related(obs, cwd),
            properties=(
                ("confirmation", CONFIRMED),
                ("gbId", obs.gb_id),
                ("observed", obs.gb_type),
                ("target", obs.target),
            ),
        )
    return list(findings.values())


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def line_span(lines: list[str], line: int) -> Span:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if end <= start:
        start, end = 0, 0
    return Span(make_position(lines, line, start), make_position(lines, line, end))


def display(path: str, cwd: Path) -> str:
    try:
        return Path(path).relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _related(obs: Observation, cwd: Path) -> tuple[Location, ...]:
    if obs.frame is None:
        return ()
    filename, name, line = obs.frame
    if line is None or is_library(filename):
        return ()
    if filename == obs.path and line == obs.line:
        return ()
    text = _read(filename)
    lines = text.splitlines() if text is not None else []
    return (Location(display(filename, cwd), line_span(lines, line), f"compiled frame `{name}`"),)


def _message(obs: Observation) -> str:
    from distlint.confirm.gb import advice, covering_rules

    registry_explanation, hints = advice(obs.gb_id, obs.gb_type)
    text = obs.explanation or registry_explanation
    explanation = f" {text}" if text else ""
    if not explanation.endswith((".", "…")) and explanation:
        explanation += "."
    tail = "".join(f" Hint: {hint}" for hint in hints)
    if tail and not tail.endswith((".", "…", "!", "?")):
        tail += "."
    rules = covering_rules(obs.gb_id)
    if rules:
        tail += (
            f" distlint reports {obs.gb_id} with {', '.join(rules)} where the source shows it "
            "(docs/graph-breaks.md)."
        )
    gb = f"{obs.gb_id} " if obs.gb_id else ""
    if obs.kind == "break":
        skipped = ""
        if obs.frame_skipped and obs.frame is not None:
            skipped = f"; the whole frame `{obs.frame[1]}` fell back to eager"
        return (
            f"The confirm run observed a graph break here ({gb}`{obs.gb_type}`){skipped}."
            f"{explanation} No static rule predicted it.{tail}"
        )
    first = obs.reason or obs.gb_type
    error = f"{obs.exc_type}: {first}" if obs.exc_type else first
    gb = f" ({obs.gb_id})" if obs.gb_id else ""
    return f"The confirm run failed to compile here: `{error}`{gb}.{explanation}{tail}"
