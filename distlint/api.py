"""distlint's public API for rules and plugins: the names here stay stable across releases.

A rule is a class with its metadata as class attributes and ``visit_<Node>`` /
``leave_<Node>`` methods named after LibCST node types; it reports with ``self.report``::

    import libcst as cst
    from distlint.api import Rule, Severity

    class LauncherWithoutTimeout(Rule):
        code = "XYZ001"  # a plugin's codes take a prefix of their own (DL is distlint's)
        name = "launcher-without-timeout"
        severity = Severity.WARNING
        summary = "launch() without timeout= waits forever on a dead rank."

        def visit_Call(self, node: cst.Call) -> None:
            if self.ctx.resolve(node.func) == "tools.launch.launch" and not any(
                arg.keyword and arg.keyword.value == "timeout" for arg in node.args
            ):
                self.report(node, "launch() without timeout= waits forever on a dead rank.")

``Rule`` looks at one file, ``RegionRule`` at code inside ``torch.compile`` regions
(``self.ctx.region``; decorate a visitor with ``@in_region`` to run it only there and be handed
the region), ``ProjectRule`` at several files (``record`` then ``check_project``).
``self.ctx`` is the :class:`RuleContext`: names (``resolve``), the file (``path``, ``source``,
``module``), the enclosing function, and ``memo(build)`` for per-file caches.

Subclassing registers a rule. Ship rules as a plugin: a local one (``plugins =
["tools/lint_rules"]`` in ``[tool.distlint]``) or an installed one (an entry point in the group
``distlint.plugins`` naming the module). Test them with :mod:`distlint.testing`.
"""

from distlint.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    FixAvailability,
    Location,
    Position,
    Severity,
    Span,
)
from distlint.rules.base import ProjectRule, RegionRule, Rule, in_region
from distlint.rules.context import RuleContext
from distlint.rules.project import Project

__all__ = [
    "Applicability",
    "Edit",
    "Finding",
    "Fix",
    "FixAvailability",
    "Location",
    "Position",
    "Project",
    "ProjectRule",
    "RegionRule",
    "Rule",
    "RuleContext",
    "Severity",
    "Span",
    "in_region",
]
