"""DL001 unused-suppression: see its docs page, docs/rules/DL001.md."""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.base import Rule


class UnusedSuppression(Rule):
    code = "DL001"
    name = "unused-suppression"
    severity = Severity.NOTE
    summary = "A suppression comment names a distlint code that it did not suppress."
    default_enabled = False
    tags = ("maintainability",)
    precision = "very-high"
