"""Check one file: decode, parse once, walk once with every enabled rule, then report.

Failure policy: a file that cannot be read or parsed becomes a DL000 finding; a rule that
raises becomes a ToolError naming the rule and the file, that rule stops for this file, and
every other rule's findings are still reported.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from distlint.config import FileSettings
from distlint.context import FileContext, PendingReport
from distlint.findings import (
    Edit,
    Finding,
    Fix,
    Location,
    Position,
    Severity,
    Span,
    ToolError,
    make_position,
)
from distlint.imports import module_name_for
from distlint.positions import NodeRange, node_ranges
from distlint.registry import Rule, all_rules
from distlint.source import SourceError, check_nesting, decode_source
from distlint.suppressions import SuppressionIndex, scan
from distlint.walker import walk

_NEWLINES = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class FileResult:
    """Everything one file produced; picklable, sent back from worker processes."""

    path: str
    findings: tuple[Finding, ...] = ()
    errors: tuple[ToolError, ...] = ()
    suppressed: int = 0


def check_path(file_path: Path, display_path: str, settings: FileSettings) -> FileResult:
    """Read ``file_path`` from disk and check it."""
    try:
        data = file_path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return _unparsable(display_path, f"cannot read file: {reason}", 1, 0)
    module_name, is_package = module_name_for(file_path)
    return check_bytes(data, display_path, settings, module_name, is_package)


def check_bytes(
    data: bytes,
    display_path: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
) -> FileResult:
    """Decode ``data`` as Python source (BOM, PEP 263 cookie) and check it."""
    try:
        text = decode_source(data)
    except SourceError as exc:
        # The lines only place the finding (e.g. the line of an undecodable byte).
        approximate = data.decode("utf-8", "replace")
        return _unparsable(display_path, str(exc), exc.line, exc.column, approximate)
    return check_source(text, display_path, settings, module_name, is_package)


def check_source(
    text: str,
    display_path: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
) -> FileResult:
    """Check source text that is already decoded (the LSP server's unsaved buffers)."""
    try:
        check_nesting(text)
        module = cst.parse_module(text)
    except SourceError as exc:
        return _unparsable(display_path, str(exc), exc.line, exc.column, text)
    except cst.ParserSyntaxError as exc:
        message, line, column = _syntax_error_details(text, exc)
        return _unparsable(display_path, message, line, column, text)
    except RecursionError:
        return _unparsable(display_path, "too deeply nested to parse", 1, 0, text)

    try:
        ctx = FileContext(display_path, text, module, settings, module_name, is_package)
    except Exception as exc:  # a bug in the shared analysis: report it, never crash the run
        message = f"internal error while analysing the file: {type(exc).__name__}: {exc}"
        return FileResult(display_path, errors=(ToolError(display_path, message),))
    errors: list[ToolError] = []
    rules = [rule(ctx) for rule in _walking_rules(settings.enabled)]
    on_visit, on_leave = _dispatch_tables(ctx, rules, errors)
    try:
        walk(module, on_visit, on_leave, ctx.parents)
    except RecursionError:  # pragma: no cover - the walk is iterative; handlers may recurse
        errors.append(ToolError(display_path, "analysis exceeded the recursion limit"))
    return _finish(ctx, text, settings, errors)


# -- dispatch --------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _walking_rules(enabled: frozenset[str]) -> tuple[type[Rule], ...]:
    """Enabled rules that have visitor methods, in code order."""
    return tuple(
        rule
        for code, rule in all_rules().items()
        if code in enabled and any(True for _ in rule.visitor_methods())
    )


def _dispatch_tables(
    ctx: FileContext, rules: list[Rule], errors: list[ToolError]
) -> tuple[dict[type, list[Any]], dict[type, list[Any]]]:
    on_visit: dict[type, list[Any]] = {cst.FunctionDef: [ctx.enter_function]}
    on_leave: dict[type, list[Any]] = {}
    crashed: set[str] = set()
    for rule in rules:
        for event, node_type_name in type(rule).visitor_methods():
            node_type = getattr(cst, node_type_name, None)
            if not isinstance(node_type, type):
                raise TypeError(f"{type(rule).__name__}: unknown LibCST node {node_type_name}")
            handler = _guarded(getattr(rule, f"{event}_{node_type_name}"), rule, crashed, errors)
            table = on_visit if event == "visit" else on_leave
            table.setdefault(node_type, []).append(handler)
    on_leave.setdefault(cst.FunctionDef, []).append(ctx.leave_function)
    return on_visit, on_leave


def _guarded(handler: Any, rule: Rule, crashed: set[str], errors: list[ToolError]) -> Any:
    """Run a rule handler; on an exception, record it once and switch the rule off."""
    code = rule.code

    def call(node: cst.CSTNode) -> Any:
        if code in crashed:
            return None
        try:
            return handler(node)
        except Exception as exc:  # any rule bug must not stop the other rules
            crashed.add(code)
            errors.append(
                ToolError(
                    rule.ctx.path,
                    f"internal error in rule {code} ({rule.name}): {type(exc).__name__}: {exc}",
                    rule=code,
                )
            )
            return None

    return call


# -- findings --------------------------------------------------------------------------------------


def _finish(
    ctx: FileContext, text: str, settings: FileSettings, errors: list[ToolError]
) -> FileResult:
    reports = [r for r in ctx.reports if r.rule.code not in {e.rule for e in errors}]
    index = scan(text) if (reports or "DL001" in settings.enabled) else None
    if not reports and index is None:
        return FileResult(ctx.path, errors=tuple(errors))
    lines = _NEWLINES.split(text)
    ranges = _report_ranges(ctx.module, reports)
    findings: list[Finding] = []
    suppressed = 0
    for report in reports:
        finding = _finding(ctx.path, report, ranges, lines)
        if index is not None and index.is_suppressed(finding.code, finding.span.start.line):
            suppressed += 1
            continue
        findings.append(finding)
    if index is not None and "DL001" in settings.enabled:
        findings.extend(_unused_suppressions(ctx.path, index, settings, lines))
    unique = {(f.sort_key, f.span.end): f for f in findings}
    ordered = tuple(sorted(unique.values(), key=lambda f: f.sort_key))
    return FileResult(ctx.path, ordered, tuple(errors), suppressed)


def _report_ranges(
    module: cst.Module, reports: list[PendingReport]
) -> dict[cst.CSTNode, NodeRange]:
    nodes: list[cst.CSTNode] = []
    for report in reports:
        nodes.append(report.node)
        nodes.extend(node for node, _ in report.fix_nodes)
        nodes.extend(node for node, _ in report.related_nodes)
    try:
        return node_ranges(module, nodes)
    except RecursionError:  # pragma: no cover - codegen of pathological nesting
        return {}


def _span(node_range: NodeRange | None, lines: list[str]) -> Span:
    if node_range is None:
        start = end = Position(1, 1, 1)
        return Span(start, end)
    return Span(
        make_position(lines, node_range.start_line, node_range.start_column),
        make_position(lines, node_range.end_line, node_range.end_column),
    )


def _finding(
    path: str, report: PendingReport, ranges: dict[cst.CSTNode, NodeRange], lines: list[str]
) -> Finding:
    rule = report.rule
    fix = report.fix
    if report.fix_nodes:
        edits = tuple(
            Edit(_span(ranges.get(node), lines), content) for node, content in report.fix_nodes
        )
        if fix is not None:
            fix = Fix(fix.title, fix.edits + edits, fix.applicability)
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=report.severity or rule.severity,
        message=report.message,
        path=path,
        span=_span(ranges.get(report.node), lines),
        related=report.related
        + tuple(
            Location(path, _span(ranges.get(node), lines), label)
            for node, label in report.related_nodes
        ),
        fix=fix,
    )


def _unused_suppressions(
    path: str, index: SuppressionIndex, settings: FileSettings, lines: list[str]
) -> list[Finding]:
    from distlint.rules.tool import UnusedSuppression

    known = all_rules()
    found = []
    for supp in index.suppressions:
        for selector in supp.codes:
            if selector in supp.used:
                continue
            covers_known = any(code.startswith(selector) for code in known)
            if covers_known and not any(c.startswith(selector) for c in settings.enabled):
                continue  # the rule is off here, so we cannot tell whether it is needed
            if "DL001".startswith(selector):
                continue
            reason = "suppressed nothing" if covers_known else "is not a distlint rule code"
            span = Span(
                make_position(lines, supp.line, supp.column),
                make_position(lines, supp.line, supp.end_column),
            )
            found.append(
                Finding(
                    code=UnusedSuppression.code,
                    name=UnusedSuppression.name,
                    severity=UnusedSuppression.severity,
                    message=f"Unused suppression: `{selector}` {reason}; remove it.",
                    path=path,
                    span=span,
                )
            )
    return found


def _unparsable(
    path: str, message: str, line: int, column: int, text: str | None = None
) -> FileResult:
    from distlint.rules.tool import SyntaxErrorRule

    lines = _NEWLINES.split(text) if text is not None else [""]
    line = max(1, min(line, len(lines)))
    column = max(0, min(column, len(lines[line - 1])))
    position = make_position(lines, line, column)
    finding = Finding(
        code=SyntaxErrorRule.code,
        name=SyntaxErrorRule.name,
        severity=Severity.ERROR,
        message=message,
        path=path,
        span=Span(position, position),
    )
    return FileResult(path, (finding,))


def _syntax_error_details(text: str, exc: cst.ParserSyntaxError) -> tuple[str, int, int]:
    """Prefer CPython's message and location: they are what users know how to read."""
    try:
        ast.parse(text)
    except SyntaxError as err:
        line = err.lineno or 1
        column = max(0, (err.offset or 1) - 1)
        return f"syntax error: {err.msg}", line, column
    except (RecursionError, MemoryError, ValueError):
        pass
    detail = exc.message.split("\n", 1)[0]
    return (
        f"cannot parse this file (LibCST: {detail})",
        exc.raw_line,
        exc.raw_column,
    )
