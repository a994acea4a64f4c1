"""DL209: a collective behind a condition that may differ between ranks (not proven)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity
from distlint.registry import Rule
from distlint.rules.rank_messages import (
    collective_text,
    condition_text,
    evidence,
    report,
    what_runs,
)
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
    if d.issued.doubt == "buffers":
        return _buffers_message(d)
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


def _buffers_message(d: Divergence) -> str:
    """The condition differs between ranks, but the collective is a DDP forward of a model
    the analysis cannot prove to own buffers (with none, DDP's forward issues nothing)."""
    if d.kind == "branch":
        where = what_runs(d)
    else:
        truth = "true" if d.taken else "false"
        where = (
            f"`{d.at.name}` on ranks where {condition_text(d)} is {truth}{evidence(d)} skips "
            f"{collective_text(d)}, which the other ranks still run"
        )
    return (
        f"{where}. DDP's forward broadcasts the model's buffers (BatchNorm statistics, "
        "registered buffers) from rank 0 when it has any, and the analysis cannot prove that "
        "this model has some: if it does, the other ranks hang in their next collective; if "
        "it has none, nothing is wrong. Run the unwrapped module (`model.module`) on one rank."
    )
