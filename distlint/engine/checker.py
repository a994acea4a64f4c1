"""Check one file: decode, parse once, walk once with every enabled rule, then report.

A file is checked in up to two passes. The first runs file- and project-scope rules and
summarises the file for the semantic layer (:mod:`distlint.semantic`). Once every file's
summary is linked, files that hold compiled regions or project findings get a second pass
with the project facts (region-scope rules, plus the project findings so that suppressions
and DL001 see them). :func:`check_source` does both for a single file; the runner does them
for many files in parallel.

Failure policy: a file that cannot be read or parsed becomes a DL000 finding; a rule that
raises becomes a ToolError naming the rule and the file, that rule stops for this file, and
every other rule's findings are still reported.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from distlint.file_settings import FileSettings
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
from distlint.rules.base import Rule
from distlint.rules.context import PendingReport, RuleContext
from distlint.rules.registry import add_local_plugins, all_rules, code_prefixes
from distlint.semantic.collect import Collector
from distlint.semantic.link import ProjectFacts, link
from distlint.semantic.model import ModuleSummary
from distlint.syntax.imports import module_name_for
from distlint.syntax.positions import NodeRange, node_ranges
from distlint.syntax.source import (
    NEWLINES,
    SourceError,
    check_nesting,
    decode_source,
    on_large_stack,
    parse_module,
)
from distlint.syntax.spans import ORDINAL_TYPES, SourceLookup
from distlint.syntax.suppressions import SuppressionIndex, scan
from distlint.syntax.walker import walk


@dataclass(frozen=True)
class FileResult:
    """Everything one file produced; picklable, sent back from worker processes.

    ``summary`` and ``records`` are the first pass's input to linking; they are dropped from
    final results.
    """

    path: str
    findings: tuple[Finding, ...] = ()
    errors: tuple[ToolError, ...] = ()
    suppressed: int = 0
    summary: ModuleSummary | None = None
    records: tuple[tuple[str, object], ...] = ()

    def final(self) -> FileResult:
        return FileResult(self.path, self.findings, self.errors, self.suppressed)


@dataclass(frozen=True)
class SecondPass:
    """What a file's second pass gets: the project facts and the project findings for it."""

    facts: ProjectFacts
    findings: tuple[Finding, ...] = ()


def check_path(file_path: Path, display_path: str, settings: FileSettings) -> FileResult:
    """Read ``file_path`` from disk and check it as a project of one file."""
    module_name, is_package = module_name_for(file_path)
    first = analyze_path(file_path, display_path, settings, module_name, is_package)

    def source(_: str) -> str | None:
        try:
            return decode_source(file_path.read_bytes())
        except (OSError, SourceError):
            return None

    return _alone(
        first,
        source,
        lambda second: analyze_path(
            file_path, display_path, settings, module_name, is_package, second
        ),
        settings.compile_wrappers,
    )


def check_bytes(
    data: bytes,
    display_path: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
) -> FileResult:
    """Decode ``data`` as Python source (BOM, PEP 263 cookie) and check it alone."""
    first = analyze_bytes(data, display_path, settings, module_name, is_package)

    def source(_: str) -> str | None:
        try:
            return decode_source(data)
        except SourceError:
            return None

    return _alone(
        first,
        source,
        lambda second: analyze_bytes(data, display_path, settings, module_name, is_package, second),
        settings.compile_wrappers,
    )


def check_source(
    text: str,
    display_path: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
) -> FileResult:
    """Check source text that is already decoded (the LSP server's unsaved buffers)."""
    first = analyze_source(text, display_path, settings, module_name, is_package)
    return _alone(
        first,
        lambda _: text,
        lambda second: analyze_source(
            text, display_path, settings, module_name, is_package, second
        ),
        settings.compile_wrappers,
    )


def _alone(
    first: FileResult, source: SourceLookup, again: Any, wrappers: tuple[str, ...] = ()
) -> FileResult:
    """Finish a one-file project: link its summary and run the second pass if needed."""
    from distlint.rules.project import FileRecords, Project

    if first.summary is None:
        return first.final()
    facts = on_large_stack(link, [first.summary], wrappers, source)
    project = Project([FileRecords(first.path, first.summary.key, first.records)], facts)
    errors: list[ToolError] = []
    enabled = {first.path: _enabled_of(first)}
    findings = on_large_stack(project_findings, project, enabled, errors)
    if not needs_second_pass(facts, first.summary.key, findings.get(first.path)):
        return with_errors(first.final(), errors)
    result = again(SecondPass(facts, tuple(findings.get(first.path, ())))).final()
    return with_errors(result, errors)


def with_errors(result: FileResult, errors: list[ToolError]) -> FileResult:
    """The result with the project rules' errors added (a rule crash names itself)."""
    if not errors:
        return result
    merged = result.errors + tuple(errors)
    return FileResult(result.path, result.findings, merged, result.suppressed)


def _enabled_of(result: FileResult) -> frozenset[str]:
    return result.summary.enabled if result.summary is not None else frozenset()


def needs_second_pass(facts: ProjectFacts, module_key: str, findings: list[Finding] | None) -> bool:
    """Whether a file must be walked again: it holds or compiles compiled code, runs under a
    CUDA graph capture started in another function, or has project findings."""
    return bool(findings) or facts.has_regions(module_key) or facts.has_captures(module_key)


def project_findings(
    project: Any,
    enabled_by_path: dict[str, frozenset[str]],
    errors: list[ToolError] | None = None,
) -> dict[str, list[Finding]]:
    """Findings of project-scope rules, by file, keeping only rules enabled for that file. A
    rule that raises loses its own findings only: the error goes to ``errors``."""
    found: dict[str, list[Finding]] = {}
    codes = set().union(*enabled_by_path.values()) if enabled_by_path else set()
    for code, rule in all_rules().items():
        if rule.scope != "project" or code not in codes:
            continue
        try:
            produced = list(rule.check_project(project))
        except Exception as exc:  # a bug of ours: report it, keep every other rule's findings
            if errors is not None:
                what = f"{type(exc).__name__}: {exc}"
                message = f"internal error in rule {code} ({rule.name}): {what}"
                errors.append(ToolError("(project)", message, code))
            continue
        for finding in produced:
            if code in enabled_by_path.get(finding.path, frozenset()):
                found.setdefault(finding.path, []).append(finding)
    return found


def analyze_path(
    file_path: Path,
    display_path: str,
    settings: FileSettings,
    module_name: str | None,
    is_package: bool,
    second: SecondPass | None = None,
) -> FileResult:
    """One pass over a file on disk (see the module docstring)."""
    try:
        size = file_path.stat().st_size
        if size > MAX_FILE_BYTES:  # not even read
            return _too_large(display_path, size)
        data = file_path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return _unparsable(display_path, f"cannot read file: {reason}", 1, 0)
    return analyze_bytes(data, display_path, settings, module_name, is_package, second)


def analyze_bytes(
    data: bytes,
    display_path: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
    second: SecondPass | None = None,
) -> FileResult:
    if len(data) > MAX_FILE_BYTES:
        return _too_large(display_path, len(data))
    try:
        text = decode_source(data)
    except SourceError as exc:
        # The lines only place the finding (e.g. the line of an undecodable byte).
        approximate = data.decode("utf-8", "replace")
        return _unparsable(display_path, str(exc), exc.line, exc.column, approximate)
    return analyze_source(text, display_path, settings, module_name, is_package, second)


def analyze_source(
    text: str,
    display_path: str,
    settings: FileSettings,
    module_name: str | None = None,
    is_package: bool = False,
    second: SecondPass | None = None,
) -> FileResult:
    """One pass over decoded source: the first (``second`` is None) or the second.

    It runs on a thread with a large stack and recursion limit (``source.on_large_stack``):
    LibCST's visitors recurse once per level of a tree.
    """
    if len(text) > MAX_FILE_BYTES:  # characters: at least as many bytes
        return _too_large(display_path, len(text))
    args = (text, display_path, settings, module_name, is_package, second)
    return on_large_stack(_analyze_source, *args)


def _analyze_source(
    text: str,
    display_path: str,
    settings: FileSettings,
    module_name: str | None,
    is_package: bool,
    second: SecondPass | None,
) -> FileResult:
    try:
        check_nesting(text)
        module = parse_module(text)
    except SourceError as exc:
        return _unparsable(display_path, str(exc), exc.line, exc.column, text)
    except cst.ParserSyntaxError as exc:
        message, line, column = _syntax_error_details(text, exc)
        return _unparsable(display_path, message, line, column, text)
    except RecursionError:
        return _unparsable(display_path, "too deeply nested to parse", 1, 0, text)
    except Exception as exc:  # LibCST's validation/logic errors (``'a' b'b'``, ``'a' t'b'``)
        message, line, column = _syntax_error_details(text, None, exc)
        return _unparsable(display_path, message, line, column, text)

    try:
        ctx = RuleContext(display_path, text, module, settings, module_name, is_package)
        if second is not None:
            ctx.facts = second.facts
    except Exception as exc:  # a bug in the shared analysis: report it, never crash the run
        message = f"internal error while analysing the file: {type(exc).__name__}: {exc}"
        return FileResult(display_path, errors=(ToolError(display_path, message),))
    errors: list[ToolError] = []
    scopes = ("file", "project") if second is None else ("file", "region")
    if settings.plugins:  # loaded at configuration time; again in a spawned worker
        add_local_plugins(settings.plugins)
    rules = [rule(ctx) for rule in _walking_rules(settings.enabled, scopes)]
    on_visit, on_leave = _dispatch_tables(ctx, rules, errors)
    if second is None:
        on_visit.setdefault(cst.Call, []).insert(0, ctx.note_call)
        for kind in ORDINAL_TYPES[1:]:
            on_visit.setdefault(kind, []).insert(0, ctx.note_node)
    try:
        walk(module, on_visit, on_leave, ctx.parents)
    except RecursionError:  # pragma: no cover - the walk is iterative; handlers may recurse
        errors.append(ToolError(display_path, "analysis exceeded the recursion limit"))
    summary = None
    if second is None:
        try:
            summary = Collector(ctx).collect()
            summary.enabled = settings.enabled
        except RecursionError:
            errors.append(ToolError(display_path, "semantic summary exceeded the recursion limit"))
        except Exception as exc:  # a bug in the shared analysis: report it, never crash the run
            errors.append(
                ToolError(
                    display_path,
                    f"internal error while summarising the file: {type(exc).__name__}: {exc}",
                )
            )
    extra = second.findings if second is not None else ()
    return _finish(ctx, text, settings, errors, summary, extra)


# -- dispatch --------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _walking_rules(enabled: frozenset[str], scopes: tuple[str, ...]) -> tuple[type[Rule], ...]:
    """Enabled rules of these scopes that have visitor methods, in code order."""
    return tuple(
        rule
        for code, rule in all_rules().items()
        if code in enabled and rule.scope in scopes and any(True for _ in rule.visitor_methods())
    )


def _dispatch_tables(
    ctx: RuleContext, rules: list[Rule], errors: list[ToolError]
) -> tuple[dict[type, list[Any]], dict[type, list[Any]]]:
    """One dispatcher per node type and event, calling every rule's handler for it."""
    visits: dict[type, list[tuple[Rule, Any]]] = {}
    leaves: dict[type, list[tuple[Rule, Any]]] = {}
    for rule in rules:
        if not rule.active:
            continue
        for event, node_type_name in type(rule).visitor_methods():
            node_type = getattr(cst, node_type_name, None)
            if not isinstance(node_type, type):
                raise TypeError(f"{type(rule).__name__}: unknown LibCST node {node_type_name}")
            table = visits if event == "visit" else leaves
            table.setdefault(node_type, []).append(
                (rule, getattr(rule, f"{event}_{node_type_name}"))
            )
    crashed: set[str] = set()
    on_visit: dict[type, list[Any]] = {
        cst.FunctionDef: [ctx.enter_function],
        cst.ClassDef: [ctx.enter_class],
    }
    on_leave: dict[type, list[Any]] = {}
    for node_type, pairs in visits.items():
        on_visit.setdefault(node_type, []).append(_dispatcher(pairs, crashed, errors))
    for node_type, pairs in leaves.items():
        on_leave.setdefault(node_type, []).append(_dispatcher(pairs, crashed, errors))
    on_leave.setdefault(cst.FunctionDef, []).append(ctx.leave_function)
    on_leave.setdefault(cst.ClassDef, []).append(ctx.leave_class)
    return on_visit, on_leave


def _dispatcher(pairs: list[tuple[Rule, Any]], crashed: set[str], errors: list[ToolError]) -> Any:
    """Call each rule's handler; a rule that raises is recorded once and switched off.

    Handlers' return values are ignored: rules cannot prune the walk, the summary needs all
    of it.
    """
    handlers = tuple(pairs)

    def dispatch(node: cst.CSTNode) -> None:
        for rule, handler in handlers:
            if crashed and rule.code in crashed:
                continue
            try:
                handler(node)
            except Exception as exc:  # any rule bug must not stop the other rules
                crashed.add(rule.code)
                errors.append(
                    ToolError(
                        rule.ctx.path,
                        f"internal error in rule {rule.code} ({rule.name}): "
                        f"{type(exc).__name__}: {exc}",
                        rule=rule.code,
                    )
                )

    return dispatch


# -- findings --------------------------------------------------------------------------------------


def _finish(
    ctx: RuleContext,
    text: str,
    settings: FileSettings,
    errors: list[ToolError],
    summary: ModuleSummary | None = None,
    extra: tuple[Finding, ...] = (),
) -> FileResult:
    crashed = {e.rule for e in errors}
    reports = [r for r in ctx.reports if r.rule.code not in crashed]
    records = tuple((code, data) for code, data in ctx.records if code not in crashed)
    eager = ctx.settle_located()
    if not reports and not extra and not eager and "DL001" not in settings.enabled:
        return FileResult(ctx.path, errors=tuple(errors), summary=summary, records=records)
    lines = NEWLINES.split(text)
    ranges = _report_ranges(ctx.module, reports, [node for _, node in eager])
    for item, node in eager:
        item.span = _span(ranges.get(node), lines)
    wanted = reports or extra or "DL001" in settings.enabled
    index = scan(text, code_prefixes()) if wanted else None
    if not reports and not extra and index is None:
        return FileResult(ctx.path, errors=tuple(errors), summary=summary, records=records)
    findings: list[Finding] = []
    suppressed = 0
    candidates = [_finding(ctx.path, report, ranges, lines) for report in reports]
    for finding in [*candidates, *extra]:
        if index is not None and index.is_suppressed(finding.code, finding.span.start.line):
            suppressed += 1
            continue
        findings.append(finding)
    if index is not None and "DL001" in settings.enabled:
        findings.extend(_unused_suppressions(ctx.path, index, settings, lines))
    unique = {(f.sort_key, f.span.end): f for f in findings}
    ordered = tuple(sorted(unique.values(), key=lambda f: f.sort_key))
    return FileResult(ctx.path, ordered, tuple(errors), suppressed, summary, records)


def _report_ranges(
    module: cst.Module, reports: list[PendingReport], located: list[cst.CSTNode] = ()
) -> dict[cst.CSTNode, NodeRange]:
    nodes: list[cst.CSTNode] = list(located)
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
    from distlint.rules.tool.unused_suppression import UnusedSuppression

    known = all_rules()
    found = []
    for supp in index.suppressions:
        unused: list[tuple[str, str]] = []
        for selector in supp.codes:
            if selector in supp.used:
                continue
            covers_known = any(code.startswith(selector) for code in known)
            if covers_known and not any(c.startswith(selector) for c in settings.enabled):
                continue  # the rule is off here, so we cannot tell whether it is needed
            if "DL001".startswith(selector):
                continue
            reason = "suppressed nothing" if covers_known else "is not a distlint rule code"
            unused.append((selector, reason))
        if supp.kind != "noqa":  # another tool's code in a `# distlint:` list silences nothing
            unused += [(code, "is not a distlint rule code") for code in supp.comment.foreign]
        span = Span(
            make_position(lines, supp.line, supp.column),
            make_position(lines, supp.line, supp.end_column),
        )
        found += [
            Finding(
                code=UnusedSuppression.code,
                name=UnusedSuppression.name,
                severity=UnusedSuppression.severity,
                message=f"Unused suppression: `{selector}` {reason}; remove it.",
                path=path,
                span=span,
            )
            for selector, reason in unused
        ]
    return found


# Files larger than this are not parsed: LibCST needs about 200 bytes of memory per byte of
# source (a 50 MB file took more than 10 GB and the parser aborted). The largest real
# Python files (generated tables, protobuf modules) stay well under it.
MAX_FILE_BYTES = 10 * 1024 * 1024


def _too_large(path: str, size: int) -> FileResult:
    limit = MAX_FILE_BYTES // (1024 * 1024)
    message = f"not checked: {size / (1024 * 1024):.1f} MiB is over the {limit} MiB size cap"
    return _unparsable(path, message, 1, 0)


def _unparsable(
    path: str, message: str, line: int, column: int, text: str | None = None
) -> FileResult:
    from distlint.rules.tool.syntax_error import SyntaxErrorRule

    lines = NEWLINES.split(text) if text is not None else [""]
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


def _syntax_error_details(
    text: str, exc: cst.ParserSyntaxError | None, other: Exception | None = None
) -> tuple[str, int, int]:
    """Prefer CPython's message and location: they are what users know how to read. When
    CPython accepts the file, say that it is valid and only LibCST could not read it."""
    try:
        with warnings.catch_warnings():  # CPython's SyntaxWarnings are not the user's problem here
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as err:
        line = err.lineno or 1
        column = max(0, (err.offset or 1) - 1)
        return f"syntax error: {err.msg}", line, column
    except (RecursionError, MemoryError, ValueError):
        pass
    else:
        reason = exc.message.split("\n", 1)[0] if exc is not None else f"{other}"
        line = exc.raw_line if exc is not None else 1
        column = exc.raw_column if exc is not None else 0
        return (
            "valid Python that distlint's parser (LibCST) cannot read, so it was not checked "
            f"({reason})",
            line,
            column,
        )
    if exc is None:
        return f"cannot parse this file (LibCST: {type(other).__name__}: {other})", 1, 0
    detail = exc.message.split("\n", 1)[0]
    return (
        f"cannot parse this file (LibCST: {detail})",
        exc.raw_line,
        exc.raw_column,
    )
