"""DL0xx: findings about distlint's own input, produced by the engine rather than a visitor."""

from distlint.findings import Severity
from distlint.rules.registry import Rule


class SyntaxErrorRule(Rule):
    code = "DL000"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "The file cannot be parsed, so it was not checked."
    tags = ("correctness",)
    precision = "very-high"


class UnusedSuppression(Rule):
    code = "DL001"
    name = "unused-suppression"
    severity = Severity.NOTE
    summary = "A suppression comment names a distlint code that it did not suppress."
    default_enabled = False
    tags = ("maintainability",)
    precision = "very-high"
