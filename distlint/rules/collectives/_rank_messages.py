"""Messages and related locations for findings about rank divergence (DL201, DL208, DL209).

Each message says which collective is unmatched on which path and why the condition differs
between ranks ("`rank` from `dist.get_rank()` at utils.py:12"), so that a finding can be
checked in half a minute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Location, Span
from distlint.semantic.effects import Divergence, project_divergences

if TYPE_CHECKING:
    from distlint.rules.base import Rule
    from distlint.rules.project import Project

HINT = (
    "Issue it on every rank (hoist it out of the branch, or mirror it in the other branch); "
    "to find the rank that is missing at run time, set `TORCH_DISTRIBUTED_DEBUG=DETAIL`."
)


def span_of(located: object) -> Span | None:
    """The span of a lazily measured location (None while unmeasured or absent)."""
    return getattr(located, "span", None)


def condition_text(d: Divergence) -> str:
    return f"`{d.condition.text}`" if d.condition.text else "a rank-dependent condition"


def collective_text(d: Divergence) -> str:
    issued = d.issued
    implicit = ("implicit", "forward", "made", "member")
    return issued.kind if issued.origin.kind in implicit else f"`{issued.kind}`"


def evidence(d: Divergence) -> str:
    """Why the condition differs between ranks, with where the rank comes from."""
    test = d.test
    if test is None or not test.why:
        return ""
    where = ""
    span = span_of(test.why_span)
    if span is not None:
        where = f" at {test.why_path}:{span.start.line}"
    elif test.why_path and test.why_path != d.path:
        where = f" in {test.why_path}"
    why = test.why if test.why.startswith(("`", "parameter")) else f"`{test.why}`"
    return f" (rank from {why}{where})"


def what_runs(d: Divergence) -> str:
    """``step`` (it issues X) runs only on ranks where C is T."""
    issued = d.issued
    step = d.at.text or (issued.origin.text if issued.origin is d.at else "this call")
    via = "" if issued.origin is d.at else f" (it issues {collective_text(d)})"
    truth = "true" if d.taken else "false"
    return f"`{step}`{via} runs only on ranks where {condition_text(d)} is {truth}{evidence(d)}"


def related(d: Divergence) -> tuple[Location, ...]:
    found: list[Location] = []
    cond_span = span_of(d.condition.span)
    if cond_span is not None:
        found.append(Location(d.path, cond_span, "rank-dependent condition"))
    test = d.test
    why_span = span_of(test.why_span) if test is not None else None
    if test is not None and why_span is not None:
        found.append(Location(test.why_path, why_span, "the rank comes from here"))
    issued = d.issued
    origin_span = span_of(issued.origin.span)
    if origin_span is not None and issued.origin is not d.at:
        found.append(Location(issued.origin_path, origin_span, f"issues {issued.kind}"))
    return tuple(found)


def finding(rule: type[Rule], project: Project, d: Divergence, message: str) -> Finding | None:
    span = span_of(d.at.span)
    if span is None:
        return None
    return project.finding(rule, d.path, span, message, related=related(d))


def report(
    rule: type[Rule],
    project: Project,
    selects: Callable[[Divergence], bool],
    message: Callable[[Divergence], str],
) -> Iterator[Finding]:
    """The findings of one of the rank-divergence rules: the project's divergences it selects."""
    if project.facts is None:
        return
    for divergence in project_divergences(project.facts):
        if selects(divergence):
            found = finding(rule, project, divergence, message(divergence))
            if found is not None:
                yield found
