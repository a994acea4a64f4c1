"""DL9xx: findings observed by confirm mode (``check --confirm``), produced by
:mod:`distlint.confirm.match` rather than by a visitor."""

from distlint.findings import Severity
from distlint.rules.registry import Rule


class ObservedGraphBreak(Rule):
    code = "DL901"
    name = "observed-graph-break"
    severity = Severity.WARNING
    summary = "The confirm run observed a graph break that no static finding predicted."
    tags = ("performance", "torch.compile", "confirm")
    precision = "very-high"


class ObservedCompileError(Rule):
    code = "DL902"
    name = "observed-compile-error"
    severity = Severity.ERROR
    summary = "The confirm run failed to compile a frame where no static finding predicted it."
    tags = ("correctness", "torch.compile", "confirm")
    precision = "very-high"
