"""DL201: collectives that only some ranks reach (the deadlock before step 1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Location, Severity
from distlint.registry import Rule
from distlint.semantic.effects import Divergence, EffectAnalysis

if TYPE_CHECKING:
    from distlint.project import Project

_HINT = (
    "Issue it on every rank (hoist it out of the branch, or mirror it in the other branch); "
    "to find the rank that is missing at run time, set `TORCH_DISTRIBUTED_DEBUG=DETAIL`."
)


class RankDivergentCollective(Rule):
    code = "DL201"
    name = "rank-divergent-collective"
    severity = Severity.ERROR
    summary = (
        "A collective is reached by only some ranks (a rank-dependent branch or early exit): "
        "the others hang until the process-group timeout or pair the wrong collectives."
    )
    tags = ("correctness", "distributed", "deadlock")
    precision = "high"
    scope = "project"

    @classmethod
    def check_project(cls, project: Project) -> Iterator[Finding]:
        facts = project.facts
        if facts is None:
            return
        analysis = EffectAnalysis(facts)
        found = [d for f in sorted(facts.functions) for d in analysis.divergences(f)]
        facts.resolve(
            span for d in found for span in (d.at.span, d.condition.span, d.issued.origin.span)
        )
        for divergence in found:
            finding = _finding(cls, project, divergence)
            if finding is not None:
                yield finding


def _finding(rule: type[Rule], project: Project, d: Divergence) -> Finding | None:
    span = getattr(d.at.span, "span", None)
    if span is None:
        return None
    cond = d.condition
    truth = "true" if d.taken else "false"
    condition = f"`{cond.text}`" if cond.text else "a rank-dependent condition"
    issued = d.issued
    what = issued.kind if issued.origin.kind == "implicit" else f"`{issued.kind}`"
    related: list[Location] = []
    cond_span = getattr(cond.span, "span", None)
    if cond_span is not None:
        related.append(Location(d.path, cond_span, "rank-dependent condition"))
    origin_span = getattr(issued.origin.span, "span", None)
    if origin_span is not None and issued.origin is not d.at:
        related.append(Location(issued.origin_path, origin_span, f"issues {issued.kind}"))
    if d.kind == "branch":
        step = d.at.text or (issued.origin.text if issued.origin is d.at else "this call")
        via = "" if issued.origin is d.at else f" (it issues {what})"
        message = (
            f"`{step}`{via} runs only on ranks where {condition} is {truth}; the other ranks "
            f"never issue {what} here, so they block in their next collective until the "
            "process-group timeout (30 min by default) or pair it with a different collective "
            f"and compute wrong values. {_HINT}"
        )
    else:
        exit_name = d.at.name
        message = (
            f"`{exit_name}` on ranks where {condition} is {truth} skips {what}, which the other "
            "ranks still issue afterwards: they block until the process-group timeout (30 min "
            f"by default) or pair it with a different collective. {_HINT}"
        )
    return project.finding(rule, d.path, span, message, related=tuple(related))
