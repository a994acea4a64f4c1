"""DL209: a collective behind a condition that may differ between ranks (not proven)."""

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
    what_runs,
)
from distlint.semantic.effects import Divergence

if TYPE_CHECKING:
    from distlint.rules.project import Project


class PossiblyRankDivergentCollective(ProjectRule):
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

    @classmethod
    def check_project(cls, project: Project) -> Iterator[Finding]:
        return report(cls, project, lambda d: not d.proven, _message)


def _message(d: Divergence) -> str:
    doubt = d.test.doubt if d.test is not None else ""
    if doubt == "issued":
        doubt = d.issued.doubt or "issued"  # the doubtful collective is not the one shown
    if doubt in _WHY_ONLY_POSSIBLY:
        return f"{_where(d)}. {_WHY_ONLY_POSSIBLY[doubt]}"
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


def _where(d: Divergence) -> str:
    """What runs (or is skipped) on the ranks where a rank-varying condition holds."""
    if d.kind == "branch":
        return what_runs(d)
    truth = "true" if d.taken else "false"
    return (
        f"`{d.at.name}` on ranks where {condition_text(d)} is {truth}{evidence(d)} skips "
        f"{collective_text(d)}, which the other ranks still issue"
    )


# The condition does differ between ranks; why the collective itself is only possible.
_WHY_ONLY_POSSIBLY = {
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
