"""DL201: collectives that only some ranks reach (the deadlock before step 1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity
from distlint.rules.base import ProjectRule
from distlint.rules.collectives._rank_messages import (
    HINT,
    collective_text,
    condition_text,
    evidence,
    report,
    what_runs,
)
from distlint.semantic.effects import Divergence

if TYPE_CHECKING:
    from distlint.rules.project import Project


class RankDivergentCollective(ProjectRule):
    code = "DL201"
    name = "rank-divergent-collective"
    severity = Severity.ERROR
    summary = (
        "A collective is reached by only some ranks (a branch or early exit on a value proven "
        "to differ between ranks): the others hang until the process-group timeout or pair "
        "the wrong collectives."
    )
    tags = ("correctness", "distributed", "deadlock")
    precision = "high"

    @classmethod
    def check_project(cls, project: Project) -> Iterator[Finding]:
        return report(cls, project, lambda d: d.proven and not d.aborts, _message)


def _message(d: Divergence) -> str:
    what = collective_text(d)
    if d.kind == "branch":
        return (
            f"{what_runs(d)}; the other ranks never issue {what} here, so they block in their "
            "next collective until the process-group timeout (30 min by default) or pair it "
            f"with a different collective and compute wrong values. {HINT}"
        )
    truth = "true" if d.taken else "false"
    return (
        f"`{d.at.name}` on ranks where {condition_text(d)} is {truth}{evidence(d)} skips "
        f"{what}, which the other ranks still issue afterwards: they block until the "
        f"process-group timeout (30 min by default) or pair it with a different collective. "
        f"{HINT}"
    )
