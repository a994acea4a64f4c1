"""``--format github``: GitHub Actions workflow commands, shown as annotations on the PR.

Escaping follows actions/toolkit ``command.ts``. GitHub shows at most 10 annotations per
severity per step, so this complements SARIF upload rather than replacing it.
"""

from __future__ import annotations

import os
from pathlib import Path

from distlint.findings import Finding, Severity
from distlint.output.report import Report

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, path: str | None = None) -> str:
    """One workflow command; ``path`` overrides the finding's (cwd-relative) path."""
    start, end = finding.span.start, finding.span.end
    properties = [("file", path or finding.path), ("line", str(start.line))]
    # Columns on a multi-line range confuse GitHub's rendering; keep lines only then.
    if start.line == end.line:
        properties.append(("col", str(start.column)))
    properties.append(("endLine", str(end.line)))
    if start.line == end.line:
        properties.append(("endColumn", str(end.column)))
    title = f"{finding.code} {finding.name}"
    status = dict(finding.properties).get("confirmation") if finding.properties else None
    if status:  # from --confirm
        title += f" [{status}]"
    properties.append(("title", title))
    rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{_COMMAND[finding.severity]} {rendered}::{escape_data(finding.message)}"


def repo_path(report: Report, path: str) -> str:
    """GitHub places annotations relative to the repository root, not the working directory."""
    absolute = os.path.normpath(os.path.join(report.cwd, path))
    try:
        return Path(absolute).relative_to(report.root).as_posix()
    except ValueError:
        return path


def render_github(report: Report) -> str:
    return "".join(
        annotation(finding, repo_path(report, finding.path)) + "\n" for finding in report.findings
    )
