"""DL902 observed-compile-error: see its docs page, docs/rules/DL902.md."""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.base import Rule


class ObservedCompileError(Rule):
    code = "DL902"
    name = "observed-compile-error"
    severity = Severity.ERROR
    summary = "The confirm run failed to compile a frame where no static finding predicted it."
    tags = ("correctness", "torch.compile", "confirm")
    precision = "very-high"
