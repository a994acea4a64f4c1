"""``--format text`` (default): ``path:line:col: CODE [severity] message`` plus the source line.

The first line of each finding is the classic ``file:line:col:`` form that editors and CI
problem matchers parse; the snippet, related places and fix follow, indented. With
``--confirm`` the severity is followed by the finding's status (``[confirmed]``,
``[not-observed]``, ``[not-reached]``, the values of JSON's ``properties.confirmation``) and
the summary by the confirm run's.
"""

from __future__ import annotations

from collections import Counter

from distlint.findings import Finding, Severity
from distlint.reporters import Report
from distlint.source import NEWLINES

_RESET = "\x1b[0m"
_STYLE = {
    "path": "\x1b[1m",
    "code": "\x1b[1;31m",
    Severity.ERROR: "\x1b[31m",
    Severity.WARNING: "\x1b[33m",
    Severity.NOTE: "\x1b[36m",
    "dim": "\x1b[2m",
    "caret": "\x1b[1;31m",
}


class _Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, style: object, text: str) -> str:
        return f"{_STYLE[style]}{text}{_RESET}" if self.enabled else text


def render_text(
    report: Report,
    color: bool = False,
    show_source: bool = True,
    statistics: bool = False,
    quiet: bool = False,
) -> str:
    paint = _Painter(color)
    out: list[str] = []
    for finding in report.findings:
        out.append(_headline(finding, paint))
        if show_source:
            out.extend(_snippet(finding, report, paint))
        for related in finding.related:
            where = f"{related.path}:{related.span.start.line}:{related.span.start.column}"
            label = related.message or "see"
            out.append(f"  {paint('dim', '=')} {label} at {where}")
        if finding.fix is not None:
            out.append(
                f"  {paint('dim', '=')} fix ({finding.fix.applicability.value}): "
                f"{finding.fix.title}"
            )
        if show_source:
            out.append("")
    if statistics:
        out.extend(_statistics(report))
    if not quiet:
        out.append(summary_line(report))
        if report.confirm is not None:
            from distlint.confirm.report import summary_lines

            out.extend(summary_lines(report.confirm))
    return "\n".join(out) + ("\n" if out else "")


def _headline(finding: Finding, paint: _Painter) -> str:
    start = finding.span.start
    where = paint("path", f"{finding.path}:{start.line}:{start.column}:")
    severity = paint(finding.severity, f"[{finding.severity.value}]")
    status = dict(finding.properties).get("confirmation") if finding.properties else None
    if status:  # from --confirm: [confirmed], [not-observed] or [not-reached]
        severity += " " + paint("code" if status == "confirmed" else "dim", f"[{status}]")
    return f"{where} {paint('code', finding.code)} {severity} {finding.message}"


def _snippet(finding: Finding, report: Report, paint: _Painter) -> list[str]:
    text = report.read_source(finding.path)
    if text is None:
        return []
    lines = NEWLINES.split(text)
    start, end = finding.span.start, finding.span.end
    if not 0 < start.line <= len(lines):
        return []
    line_text = lines[start.line - 1].expandtabs(1)
    first = start.column - 1
    last = end.column - 1 if end.line == start.line else len(line_text.rstrip())
    width = max(1, last - first)
    gutter = str(start.line)
    pad = " " * len(gutter)
    return [
        f"  {pad} {paint('dim', '|')}",
        f"  {paint('dim', gutter)} {paint('dim', '|')} {line_text}",
        f"  {pad} {paint('dim', '|')} {' ' * first}{paint('caret', '^' * width)}",
    ]


def _statistics(report: Report) -> list[str]:
    counts = Counter((f.code, f.name) for f in report.findings)
    rows = [f"{count:>5}  {code}  {name}" for (code, name), count in sorted(counts.items())]
    return rows + ([""] if rows else [])


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_line(report: Report) -> str:
    checked = _plural(report.files_checked, "file")
    if not report.findings:
        return f"No findings ({checked} checked)."
    tally = report.counts()
    parts = [
        _plural(tally[Severity.ERROR], "error"),
        _plural(tally[Severity.WARNING], "warning"),
    ]
    if tally[Severity.NOTE]:
        parts.append(_plural(tally[Severity.NOTE], "note"))
    return (
        f"{_plural(len(report.findings), 'finding')} ({', '.join(parts)}) in "
        f"{_plural(report.files_with_findings, 'file')} ({checked} checked)."
    )
