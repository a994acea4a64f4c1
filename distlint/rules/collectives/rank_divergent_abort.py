"""DL208: a ``raise`` on some ranks before a collective the others still issue."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity
from distlint.rules.base import ProjectRule
from distlint.rules.collectives._rank_messages import (
    collective_text,
    condition_text,
    evidence,
    report,
)
from distlint.semantic.effects import Divergence

if TYPE_CHECKING:
    from distlint.rules.project import Project


class RankDivergentAbort(ProjectRule):
    code = "DL208"
    name = "rank-divergent-abort"
    severity = Severity.WARNING
    summary = (
        "Some ranks raise before a collective the others still issue: the job fails, and the "
        "other ranks wait in that collective until the process-group timeout unless the "
        "launcher ends them."
    )
    tags = ("distributed", "robustness")
    precision = "high"

    @classmethod
    def check_project(cls, project: Project) -> Iterator[Finding]:
        return report(cls, project, lambda d: d.proven and d.aborts, _message)


def _message(d: Divergence) -> str:
    truth = "true" if d.taken else "false"
    return (
        f"`raise` on ranks where {condition_text(d)} is {truth}{evidence(d)} ends them before "
        f"{collective_text(d)}, which the other ranks still issue: the job fails, and the "
        "other ranks wait in it until the process-group timeout (30 min by default) unless "
        "the launcher (torchrun) tears them down. Decide on every rank (broadcast the check's "
        "result) and raise everywhere, or abort the whole job explicitly."
    )
