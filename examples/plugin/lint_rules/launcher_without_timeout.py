"""XYZ001 launcher-without-timeout: ``acme.launch.launch()`` called without ``timeout=``."""

from __future__ import annotations

import libcst as cst

from distlint.api import Rule, Severity


class LauncherWithoutTimeout(Rule):
    code = "XYZ001"
    name = "launcher-without-timeout"
    severity = Severity.WARNING
    summary = "acme.launch.launch() without timeout= waits forever when a rank dies."
    tags = ("distributed",)
    docs_url = "https://example.invalid/lint/XYZ001"

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.resolve(node.func) != "acme.launch.launch":
            return
        if any(arg.keyword is not None and arg.keyword.value == "timeout" for arg in node.args):
            return
        self.report(
            node,
            "acme.launch.launch() without timeout= waits forever when a rank dies; "
            "pass timeout=<seconds>.",
        )
