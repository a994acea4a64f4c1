"""Rule codes taken out of the catalog, and what to use instead (Ruff's removed rules).

One table, read wherever a code can be named: the command line's selectors, a configuration's
``select``/``extend-select``/``ignore``/``per-file-ignores``, suppression comments (DL001),
``distlint rule CODE`` and the corpus scorer. A removed code is never an error there: it is
dropped with a warning that says what replaced it, as Ruff does for its removed rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class RemovedRule:
    """A code that no longer names a rule: when it went, why, and what to use instead."""

    code: str
    name: str
    version: str  # the distlint version without the rule
    reason: str
    instead: str

    def notice(self) -> str:
        """The one-line message shown wherever the code is still named."""
        return (
            f"{self.code} ({self.name}) was removed in distlint {self.version} and is ignored: "
            f"{self.instead}"
        )


REMOVED_RULES: Mapping[str, RemovedRule] = MappingProxyType(
    {
        "DL209": RemovedRule(
            code="DL209",
            name="possibly-rank-divergent-collective",
            version="0.2.0",
            reason="16 of its 185 findings on the real-code corpus were right",
            instead="`distlint explain-ranks` lists the places it reported, for review",
        ),
    }
)


def removed_rule(selector: str) -> RemovedRule | None:
    """The removed rule ``selector`` names exactly (case-insensitive), or None."""
    return REMOVED_RULES.get(selector.strip().upper())
