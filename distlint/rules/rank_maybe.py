"""DL209: a collective behind a condition that may differ between ranks (not proven)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity
from distlint.registry import Rule
from distlint.rules.rank_messages import collective_text, condition_text, evidence, report
from distlint.semantic.effects import Divergence

if TYPE_CHECKING:
    from distlint.project import Project


class PossiblyRankDivergentCollective(Rule):
    code = "DL209"
    name = "possibly-rank-divergent-collective"
    severity = Severity.NOTE
    default_enabled = False
    summary = (
        "A collective is skipped or issued behind a condition derived from the rank through "
        "code the analysis cannot see through: if the condition differs between ranks, the "
        "job hangs."
    )
    tags = ("distributed", "deadlock", "review")
    precision = "low"
    scope = "project"

    @classmethod
    def check_project(cls, project: Project) -> Iterator[Finding]:
        return report(cls, project, lambda d: not d.proven, _message)


def _message(d: Divergence) -> str:
    what = collective_text(d)
    if d.kind == "branch":
        effect = f"{what} runs only where it is {'true' if d.taken else 'false'}"
    else:
        effect = f"`{d.at.name}` skips {what} where it is {'true' if d.taken else 'false'}"
    return (
        f"{condition_text(d)} may differ between ranks{evidence(d)}, through code the "
        f"analysis cannot see through; {effect}. If the value is the same on every rank "
        "(a shared file, a checkpoint field, a padded loader), nothing is wrong; otherwise "
        "the other ranks hang in their next collective. Broadcast the decision from one rank "
        "to make it uniform."
    )
