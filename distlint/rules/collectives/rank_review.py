"""The review listing of ``distlint explain-ranks``: every rank-dependent decision around a
collective that the analysis found, proven or only possible.

The proven ones are the findings of DL201 (a hang) and DL208 (a raise); the possible ones are
not findings at all (most of them are fine code: 16 in 185 were right on the real-code corpus,
so DL209 was removed), but someone auditing a codebase for hangs reads them, each with the
reason it is only possible and where the rank enters.
"""

from __future__ import annotations

from dataclasses import dataclass

from distlint.findings import Location
from distlint.rules.collectives._rank_messages import (
    doubt,
    related,
    span_of,
    what_differs,
    why_only_possible,
)
from distlint.semantic.effects import Divergence, project_divergences
from distlint.semantic.link import ProjectFacts


@dataclass(frozen=True)
class RankPlace:
    """One place where ranks may stop issuing the same collectives."""

    path: str
    line: int
    column: int
    function: str  # its qualified name in its module
    kind: str  # "proven" or "possible"
    reported_as: str | None  # the rule that reports a proven one (DL201, DL208); None if possible
    doubt: str  # why it is only possible ("condition", "buffers", ...); "" when proven
    what: str  # what runs or is skipped on the ranks where the condition holds
    why: str
    related: tuple[Location, ...]

    @property
    def label(self) -> str:
        """The reporting rule of a proven place, "possible" for the others."""
        return self.reported_as or "possible"


def rank_places(facts: ProjectFacts, reported: set[str] | None = None) -> list[RankPlace]:
    """The places of the project's divergences in the files ``reported`` (None: all), in
    path, line and column order, each place once."""
    found: dict[tuple[str, int, int, str, str], RankPlace] = {}
    for d in project_divergences(facts):
        span = span_of(d.at.span)
        if span is None or (reported is not None and d.path not in reported):
            continue
        place = _place(d, span.start.line, span.start.column)
        found.setdefault((place.path, place.line, place.column, place.kind, place.what), place)
    return [found[key] for key in sorted(found)]


def _place(d: Divergence, line: int, column: int) -> RankPlace:
    function = d.function.split(":", 1)[1] if ":" in d.function else d.function
    if d.proven:
        code = "DL208" if d.aborts else "DL201"
        kind, why, doubt_kind, reported_as = "proven", f"proven: reported as {code}", "", code
    else:
        kind, why, doubt_kind, reported_as = "possible", why_only_possible(d), doubt(d), None
    return RankPlace(
        path=d.path,
        line=line,
        column=column,
        function=function,
        kind=kind,
        reported_as=reported_as,
        doubt=doubt_kind,
        what=what_differs(d),
        why=why,
        related=related(d),
    )
