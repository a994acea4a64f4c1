"""Messages and related locations for rank divergences: DL201 and DL208 findings, and the
review listing of ``distlint explain-ranks`` (:mod:`.rank_review`).

Each message says which collective is unmatched on which path and why the condition differs
between ranks ("`rank` from `dist.get_rank()` at utils.py:12"), so that a finding can be
checked in half a minute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Location, Span
from distlint.semantic.effects import Divergence, measure_divergences, project_divergences

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


def what_differs(d: Divergence) -> str:
    """What runs (or is skipped) on the ranks where a rank-varying condition holds."""
    if d.kind == "branch":
        return what_runs(d)
    truth = "true" if d.taken else "false"
    return (
        f"`{d.at.name}` on ranks where {condition_text(d)} is {truth}{evidence(d)} skips "
        f"{collective_text(d)}, which the other ranks still issue"
    )


def doubt(d: Divergence) -> str:
    """Why a divergence is only possible: a key of :data:`WHY_ONLY_POSSIBLY`, or "condition"
    when the condition is derived from the rank through code the analysis cannot see through."""
    found = d.test.doubt if d.test is not None else ""
    if found == "issued":
        found = d.issued.doubt or "issued"  # the doubtful collective is not the one shown
    return found if found in WHY_ONLY_POSSIBLY else "condition"


def why_only_possible(d: Divergence) -> str:
    kind = doubt(d)
    if kind in WHY_ONLY_POSSIBLY:
        return WHY_ONLY_POSSIBLY[kind]
    return (
        f"{condition_text(d)} may differ between ranks, through code the analysis cannot see "
        "through. If the value is the same on every rank (a shared file, a checkpoint field, a "
        "padded loader), nothing is wrong; otherwise the other ranks hang in their next "
        "collective. Broadcast the decision from one rank to make it uniform."
    )


# The condition does differ between ranks; why the collective itself is only possible.
WHY_ONLY_POSSIBLY = {
    "buffers": (
        "DDP's forward broadcasts the model's buffers (BatchNorm statistics, registered "
        "buffers) from rank 0 when it has any, and the analysis cannot prove that this model "
        "has some: if it does, the other ranks hang in their next collective; if it has none, "
        "nothing is wrong. Run the unwrapped module (`model.module`) on one rank."
    ),
    "cached": (
        "The collective is in a memoised function (`functools.cache`/`lru_cache`): a cache "
        "hit issues nothing, so the ranks diverge only when the call misses the cache on some "
        "ranks and hits on others. Make sure every rank calls it with the same arguments."
    ),
    "issued": (
        "What differs between the paths may not be issued at all (a memoised helper, the "
        "forward of a DDP model not proven to own buffers): check whether it runs a "
        "collective here."
    ),
    "configuration": (
        "The collective is issued only in some configurations (a helper that synchronises "
        "only for sharded models, one backend or one flag), so the ranks hang only in those. "
        "Check the configurations that reach this line, or issue the collective on every rank."
    ),
    "callback": (
        "The collectives run in a function handed to other code (a callback, a UI handler), "
        "which the analysis cannot follow: check that the other ranks issue the matching "
        "collectives while it runs."
    ),
    "served": (
        "One side only receives broadcasts in a loop (a server and its workers): check that "
        "the serving rank issues one matching broadcast per message and a final one that "
        "ends the workers' loop."
    ),
}


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
    selected = [d for d in project_divergences(project.facts, measured=False) if selects(d)]
    measure_divergences(project.facts, selected)  # only those: see project_divergences
    for divergence in selected:
        found = finding(rule, project, divergence, message(divergence))
        if found is not None:
            yield found
