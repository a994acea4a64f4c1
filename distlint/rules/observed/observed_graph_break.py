"""DL901 observed-graph-break: see its docs page, docs/rules/DL901.md."""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.base import Rule


class ObservedGraphBreak(Rule):
    code = "DL901"
    name = "observed-graph-break"
    severity = Severity.WARNING
    summary = "The confirm run observed a graph break that no static finding predicted."
    tags = ("performance", "torch.compile", "confirm")
    precision = "very-high"
