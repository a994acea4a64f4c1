"""``--format text`` (default): ``path:line:col: CODE [severity] message`` plus the source line.

The first line of each finding is the classic ``file:line:col:`` form that editors and CI
problem matchers parse; the snippet, related places and fix follow, indented. With
``--confirm`` the severity is followed by the finding's status (``[confirmed]``,
``[not-observed]``, ``[not-reached]``, the values of JSON's ``properties.confirmation``) and
the summary by the confirm run's.
"""

from __future__ import annotations

from collections import Counter

from distlint.engine.fixes import applicable, fixable_counts
from distlint.findings import Finding, Severity
from distlint.output.headline import headline
from distlint.output.report import Report
from distlint.syntax.source import NEWLINES

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

    def __call__(self, style: str, text: str) -> str:  # a Severity is a str
        return f"{_STYLE[style]}{text}{_RESET}" if self.enabled else text


def render_text(
    report: Report,
    color: bool = False,
    show_source: bool = True,
    statistics: bool = False,
    quiet: bool = False,
    output_format: str = "full",
    show_fixes: bool = False,
) -> str:
    paint = _Painter(color)
    out: list[str] = []
    if statistics:
        out.extend(_statistics(report))
    elif output_format == "concise":
        out.extend(_concise(finding, paint) for finding in report.findings)
    else:
        lines: dict[str, list[str] | None] = {}  # path -> its lines, split once per file
        for finding in report.findings:
            out.extend(_full(finding, report, paint, show_source, lines))
    if show_fixes and report.fixed:
        if out and out[-1] != "":
            out.append("")
        out.extend(fix_summary_lines(report, show_fixes=True, paint=paint))
        out.append("")
    if not quiet:
        hint = fixable_hint(report)
        if hint:
            out.append(hint)
        if report.baselined:
            out.append(f"{_plural(report.baselined, 'finding')} in the baseline not shown.")
        out.append(summary_line(report))
        if report.fixed is not None and not show_fixes:
            out.extend(fix_summary_lines(report, show_fixes=False))
        if report.confirm is not None:
            from distlint.confirm.report import summary_lines

            out.extend(summary_lines(report.confirm))
    return "\n".join(out) + ("\n" if out else "")


def _full(
    finding: Finding,
    report: Report,
    paint: _Painter,
    show_source: bool,
    lines_of: dict[str, list[str] | None],
) -> list[str]:
    out = [_headline(finding, paint)]
    if show_source:
        if finding.path not in lines_of:
            text = report.read_source(finding.path)
            lines_of[finding.path] = NEWLINES.split(text) if text is not None else None
        out.extend(_snippet(finding, lines_of[finding.path], paint))
    for related in finding.related:
        where = f"{related.path}:{related.span.start.line}:{related.span.start.column}"
        label = related.message or "see"
        out.append(f"  {paint('dim', '=')} {label} at {where}")
    if finding.fix is not None:
        out.append(
            f"  {paint('dim', '=')} fix ({finding.fix.applicability.value}): {finding.fix.title}"
        )
    if show_source:
        out.append("")
    return out


def _concise(finding: Finding, paint: _Painter) -> str:
    """``path:line:col: CODE headline``: one line, the headline at most 100 characters."""
    start = finding.span.start
    where = paint("path", f"{finding.path}:{start.line}:{start.column}:")
    return f"{where} {paint('code', finding.code)} {headline(finding.message)}"


def _headline(finding: Finding, paint: _Painter) -> str:
    start = finding.span.start
    where = paint("path", f"{finding.path}:{start.line}:{start.column}:")
    severity = paint(finding.severity, f"[{finding.severity.value}]")
    status = dict(finding.properties).get("confirmation") if finding.properties else None
    if status:  # from --confirm: [confirmed], [not-observed] or [not-reached]
        severity += " " + paint("code" if status == "confirmed" else "dim", f"[{status}]")
    return f"{where} {paint('code', finding.code)} {severity} {finding.message}"


def _snippet(finding: Finding, lines: list[str] | None, paint: _Painter) -> list[str]:
    if lines is None:
        return []
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


def statistics_rows(report: Report) -> list[dict[str, object]]:
    """Findings per rule, most frequent first (then by code), with how many are fixable
    (``--statistics``; the JSON format prints these rows as they are)."""
    counts = Counter((f.code, f.name) for f in report.findings)
    fixable = Counter(
        (f.code, f.name) for f in report.findings if applicable(f.fix, report.unsafe_fixes)
    )
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        {"code": code, "name": name, "count": count, "fixable": fixable[(code, name)]}
        for (code, name), count in rows
    ]


def _statistics(report: Report) -> list[str]:
    rows = statistics_rows(report)
    if not rows:
        return []
    out = [f"{'count':>5}  {'code':<5}  {'fixable':>7}  rule"]
    out += [
        f"{row['count']:>5}  {row['code']:<5}  {row['fixable']:>7}  {row['name']}" for row in rows
    ]
    return [*out, ""]


def fixable_hint(report: Report) -> str | None:
    """How many findings ``--fix`` would fix (and how many more with ``--unsafe-fixes``)."""
    safe, unsafe = fixable_counts(report.findings)
    if report.unsafe_fixes:
        total = safe + unsafe
        return f"{total} fixable with `--fix --unsafe-fixes`." if total else None
    if safe and unsafe:
        return f"{safe} fixable with `--fix` ({unsafe} more with `--fix --unsafe-fixes`)."
    if safe:
        return f"{safe} fixable with `--fix`."
    if unsafe:
        return f"{unsafe} fixable with `--fix --unsafe-fixes` (unsafe fixes: review them)."
    return None


def fix_summary_lines(
    report: Report, show_fixes: bool = False, paint: _Painter | None = None
) -> list[str]:
    """``Fixed N findings in M files.``; with ``show_fixes``, per file and rule, Ruff's way."""
    fixed = report.fixed or Counter()
    total = sum(fixed.values())
    if not total:
        return ["No fixes applied."]
    files = len({path for path, _, _ in fixed})
    head = f"Fixed {_plural(total, 'finding')} in {_plural(files, 'file')}"
    if not show_fixes:
        return [head + "."]
    paint = paint or _Painter(False)
    out = [head + ":"]
    by_path: dict[str, list[tuple[str, str, int]]] = {}
    for (path, code, name), count in sorted(fixed.items()):
        by_path.setdefault(path, []).append((code, name, count))
    for path, rows in by_path.items():
        out.append(f"- {paint('path', path)}:")
        out.extend(f"    {count} × {paint('code', code)} ({name})" for code, name, count in rows)
    return out


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
