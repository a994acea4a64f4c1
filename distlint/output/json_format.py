"""``--format json``: a stable list of finding objects (documented in docs/json-format.md).

A ``properties`` object (``confirmation``, ``gbId``, ...) appears only on findings that
``--confirm`` gave a status to; without it the objects are unchanged.
"""

from __future__ import annotations

import json
from typing import Any

from distlint.findings import Finding, Span
from distlint.output.headline import headline
from distlint.output.report import Report
from distlint.rules.registry import docs_url


def _range(span: Span) -> dict[str, Any]:
    return {
        "start": {
            "line": span.start.line,
            "column": span.start.column,
            "column_utf16": span.start.column_utf16,
        },
        "end": {
            "line": span.end.line,
            "column": span.end.column,
            "column_utf16": span.end.column_utf16,
        },
    }


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    """One finding as plain JSON data."""
    fix = None
    if finding.fix is not None:
        fix = {
            "title": finding.fix.title,
            "applicability": finding.fix.applicability.value,
            "edits": [
                {"range": _range(edit.span), "content": edit.content} for edit in finding.fix.edits
            ],
        }
    out = {
        "code": finding.code,
        "name": finding.name,
        "severity": finding.severity.value,
        "message": finding.message,
        "headline": headline(finding.message),
        "path": finding.path,
        "range": _range(finding.span),
        "related": [
            {"path": loc.path, "range": _range(loc.span), "message": loc.message}
            for loc in finding.related
        ],
        "fix": fix,
        "url": docs_url(finding.code),
    }
    if finding.properties:
        from distlint.confirm.report import json_properties

        out["properties"] = json_properties(finding)
    return out


def render_json(report: Report) -> str:
    return json.dumps([finding_to_dict(f) for f in report.findings], indent=2) + "\n"
