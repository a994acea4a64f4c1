"""DL000 syntax-error: see its docs page, docs/rules/DL000.md."""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.base import Rule


class SyntaxErrorRule(Rule):
    code = "DL000"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "The file cannot be parsed, so it was not checked."
    tags = ("correctness",)
    precision = "very-high"
