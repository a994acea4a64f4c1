"""Check one file: decode, parse once, walk once with every enabled rule, then report.

A file goes through these stages. The first pass runs file- and project-scope rules and
summarises the file for the semantic layer (:mod:`distlint.semantic`). Once every file's
summary is linked, project rules run, and files that hold or reach compiled regions (or run
under a CUDA graph capture started elsewhere) get a second pass with the project facts: only
region-scope rules and the file rules that read the facts (``Rule.reads_facts``), on the
first pass's tree when it is still in memory (:class:`ParsedTrees`). Last, :func:`settle`
applies the file's suppressions once to the findings of every stage, then reports unused ones
(DL001). :func:`check_file` does all of it for a single file (a :class:`FileSource`: on disk,
bytes or decoded text); the runner does it for many files in parallel.

Failure policy: a file that cannot be read or parsed becomes a DL000 finding; a rule that
raises becomes a ToolError naming the rule and the file, that rule stops for this file, and
every other rule's findings are still reported.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import libcst as cst

from distlint.engine.results import PROJECT, FileResult
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
from distlint.syntax.indentation import IndentColumns
from distlint.syntax.module_names import module_name_for
from distlint.syntax.pieces import ReusedPieces
from distlint.syntax.positions import NodeRange, Positions
from distlint.syntax.regular_files import read_regular_file
from distlint.syntax.source import (
    NEWLINES,
    SourceError,
    StageTimeout,
    check_nesting,
    compile_quietly,
    decode_source,
    on_large_stack,
    parse_source,
)
from distlint.syntax.spans import (
    ORDINAL_TYPES,
    SourceLookup,
    measure_keys,
    parsed_entry,
    range_span,
)
from distlint.syntax.suppressions import Suppression, SuppressionIndex, scan
from distlint.syntax.walker import walk

Columns = IndentColumns | None  # a tree's column map back to its text (rewritten indentation)


@dataclass(frozen=True)
class SecondPass:
    """What a file's second pass gets: the project facts."""

    facts: ProjectFacts


@dataclass(frozen=True)
class _Kept:
    """A first pass's tree and what its second pass and linking reuse of it."""

    text: str
    module: cst.Module
    seen: dict[type, list[cst.CSTNode]]  # its nodes of ordinal types (lazy spans)
    columns: Columns
    positions: Positions  # what measuring its nodes has learnt so far


class ParsedTrees:
    """First-pass trees kept for the second pass in the same process (runs in one process).

    Only files that may get a second pass are kept (their summary has a compile site or a
    CUDA graph capture), up to ``max_chars`` of source in all: a kept tree costs about 16
    bytes per character of its text (tracemalloc, torch/distributed/fsdp). A file whose tree
    was not kept is parsed again.

    ``reused``: the pieces of the reported file's earlier text (an editor's buffer, see
    :class:`~distlint.syntax.pieces.ReusedPieces`): its first pass parses only those an edit
    changed.
    """

    def __init__(self, max_chars: int = 2_000_000, reused: ReusedPieces | None = None) -> None:
        self._kept: dict[str, _Kept] = {}
        self._room = max_chars
        self.reused = reused

    def offer(self, ctx: RuleContext, summary: ModuleSummary) -> None:
        """Keep the tree of a file just summarised if it may get a second pass."""
        text = ctx.source
        if (summary.compile_sites or summary.capture_sites) and len(text) <= self._room:
            self._kept[ctx.path] = _Kept(text, ctx.module, ctx.seen, ctx.columns, ctx.positions)
            self._room -= len(text)

    def holds(self, path: str) -> bool:
        """Whether the tree of ``path`` is kept (its second pass will not parse it)."""
        return path in self._kept

    def take(self, path: str) -> _Kept | None:
        """What was kept of ``path`` (given once), or None."""
        return self._kept.pop(path, None)

    def for_spans(self) -> dict[str, tuple]:
        """The kept trees as linking measures lazy spans with them (``link``'s ``parsed``)."""
        return {
            path: parsed_entry(k.text, k.module, k.seen, k.columns, k.positions)
            for path, k in self._kept.items()
        }


@dataclass(frozen=True)
class FileSource:
    """A file to check: where its text comes from, the path findings name, and the module it
    is in its project. ``origin`` is a ``Path`` to read from disk, ``bytes`` to decode (BOM,
    PEP 263 cookie: stdin, an editor's buffer as saved) or a ``str`` already decoded (an
    editor's unsaved buffer). Picklable: workers get it as it is."""

    origin: Path | bytes | str
    display: str
    module_name: str | None = None
    is_package: bool = False

    @classmethod
    def on_disk(cls, path: Path, display: str) -> FileSource:
        """The file at ``path``, its module named by the packages around it."""
        return cls(path, display, *module_name_for(path))

    def load(self) -> str | FileResult:
        """The text, or instead the DL000 result of a file unread, undecodable or too large
        (a file on disk that is too large is not even read)."""
        origin, display = self.origin, self.display
        if isinstance(origin, str):
            return origin
        if isinstance(origin, bytes):
            return _decoded(origin, display)
        try:
            size = origin.stat().st_size
            if size > MAX_FILE_BYTES:
                return _too_large(display, size)
            data = read_regular_file(origin)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return _unparsable(display, f"cannot read file: {reason}", 1, 0)
        return _decoded(data, display)

    def text(self) -> str | None:
        """The text, None where :meth:`load` gives a DL000 instead (what linking measures the
        file's lazy spans with)."""
        loaded = self.load()
        return loaded if isinstance(loaded, str) else None


def check_file(source: FileSource, settings: FileSettings) -> FileResult:
    """Check one file as a project of its own: the first pass, then link its summary, run the
    project rules and the second pass if needed (on the first pass's tree), then settle.

    In this process and with no time budget (what the workers run; for input you do not
    trust, ``engine.runner.check_alone`` runs it in a worker with one)."""
    trees = ParsedTrees()
    first = analyze_file(source, settings, None, trees)
    enabled = settings.enabled
    if first.summary is None:
        return settle(first, enabled)
    parsed = trees.for_spans()
    stage = project_stage([first], settings.compile_wrappers, lambda _: source.text(), (), parsed)
    facts = stage.facts
    second = None
    if facts is not None and needs_second_pass(facts, first.summary.key):
        second = analyze_file(source, settings, SecondPass(facts), trees)
    return settle(first, enabled, second, stage.found.get(first.path, ()), stage.errors)


@dataclass
class ProjectStage:
    """What linking and the project rules gave: the facts (None when linking failed), the
    project findings by file, and the stage's errors (a crash or an overrun names itself);
    after linking alone, the stage's budget (seconds, None: none) and when it started."""

    facts: ProjectFacts | None
    found: dict[str, list[Finding]]
    errors: list[ToolError]
    budget: float | None = None
    started: float = 0.0


def project_stage(
    results: Sequence[FileResult],
    wrappers: Sequence[str],
    sources: SourceLookup,
    native: Sequence[tuple[str, str, frozenset[str]]] = (),
    parsed: dict | None = None,
    budget: float | None = None,
) -> ProjectStage:
    """Link the first passes' summaries, then run the project rules, within ``budget``
    seconds for both (None: no limit). A crash or an overrun of linking costs the project
    rules and the second pass, one of a project rule costs that rule's findings; each is
    reported as a tool error, and the file-scope findings stand. ``native``: (path, text,
    rules enabled) of C/C++ sources."""
    linked = link_stage(results, wrappers, sources, parsed, budget)
    if linked.facts is None:
        return linked
    return project_rules_stage(linked, results, native)


def link_stage(
    results: Sequence[FileResult],
    wrappers: Sequence[str],
    sources: SourceLookup,
    parsed: dict | None = None,
    budget: float | None = None,
) -> ProjectStage:
    """The first step of :func:`project_stage`: the facts (no findings yet), or the error
    that linking gave; ``budget`` goes on to :func:`project_rules_stage` less what linking
    took."""
    started = time.monotonic()
    summaries = [r.summary for r in results if r.summary is not None]
    try:
        facts = on_large_stack(link, summaries, wrappers, sources, parsed, timeout=budget)
    except StageTimeout:
        why = f"linking the project did not finish within {_budget(budget)}"
        return ProjectStage(None, {}, [ToolError(PROJECT, _not_run(why))])
    except Exception as exc:  # a bug of ours: the file-scope findings still stand
        why = f"internal error while linking the project: {type(exc).__name__}: {exc}"
        return ProjectStage(None, {}, [ToolError(PROJECT, _not_run(why))])
    return ProjectStage(facts, {}, [], budget, started)


def project_rules_stage(
    linked: ProjectStage,
    results: Sequence[FileResult],
    native: Sequence[tuple[str, str, frozenset[str]]] = (),
) -> ProjectStage:
    """The second step of :func:`project_stage`: the project rules' findings with the facts
    of ``linked`` (:func:`link_stage`), within what is left of its budget."""
    from distlint.rules.project import FileRecords, Project

    linked_results = [r for r in results if r.summary is not None]
    project = Project(
        [
            FileRecords(r.path, r.summary.key, r.records)
            for r in linked_results
            if r.summary is not None
        ],
        linked.facts,
        [(path, text) for path, text, _ in native],
    )
    enabled = {r.path: r.summary.enabled for r in linked_results if r.summary is not None}
    enabled.update((path, codes) for path, _, codes in native)
    budget = linked.budget
    left = None if budget is None else max(0.0, budget - (time.monotonic() - linked.started))
    errors: list[ToolError] = []
    found = project_findings(project, enabled, errors, left, budget)
    return ProjectStage(linked.facts, found, errors)


def _budget(budget: float | None) -> str:
    return f"the {budget:g} s budget of the project stage (--project-timeout)"


def _not_run(why: str) -> str:
    return f"{why}; project rules and region rules were not run"


def needs_second_pass(facts: ProjectFacts, module_key: str) -> bool:
    """Whether a file must be walked again: it holds or compiles compiled code, or runs under
    a CUDA graph capture started in another function."""
    return facts.has_regions(module_key) or facts.has_captures(module_key)


def settle(
    first: FileResult,
    enabled: frozenset[str],
    second: FileResult | None = None,
    project: Sequence[Finding] = (),
    errors: Sequence[ToolError] = (),
) -> FileResult:
    """A file's final result: the findings of every stage (first pass, second pass, project
    rules), its suppressions applied once, then DL001 on the suppressions none of them used.

    The second pass re-ran the file rules that read facts: their first-pass findings and
    errors give way to the second pass's. ``errors``: the project stage's, shown here.
    """
    findings = list(first.findings)
    found_errors = list(first.errors)
    if second is not None:
        again = {code for code, _ in _second_pass_codes(enabled, tuple(all_rules()))}
        findings = [f for f in findings if f.code not in again]
        found_errors = [e for e in found_errors if e.rule not in again]
        findings += second.findings
        found_errors += second.errors
    findings += project
    found_errors += errors
    index = first.suppressions
    suppressed = 0
    if index is not None:
        index = SuppressionIndex(
            [_unused_copy(supp) for supp in index.suppressions],
            index.logical_start,
            index.logical_end,
        )
        kept = []
        for finding in findings:
            if index.is_suppressed(finding.code, finding.span.start.line):
                suppressed += 1
            else:
                kept.append(finding)
        findings = kept
        if "DL001" in enabled:
            findings += _unused_suppressions(first.path, index, enabled)
    unique = {(f.sort_key, f.span.end): f for f in findings}
    ordered = tuple(sorted(unique.values(), key=lambda f: f.sort_key))
    return FileResult(first.path, ordered, tuple(found_errors), suppressed)


def _unused_copy(supp: Suppression) -> Suppression:
    """``supp`` with no use recorded (a first pass may be settled more than once)."""
    return Suppression(
        supp.line, supp.column, supp.end_column, supp.comment, supp.own_line, set(), supp.span
    )


def project_findings(
    project: Any,
    enabled_by_path: dict[str, frozenset[str]],
    errors: list[ToolError] | None = None,
    timeout: float | None = None,
    budget: float | None = None,
) -> dict[str, list[Finding]]:
    """Findings of project-scope rules, by file, keeping only rules enabled for that file. A
    rule that raises loses its own findings only: the error goes to ``errors``. Past
    ``timeout`` seconds the rules still running or not started lose theirs, and that is an
    error too (``budget``: the whole stage's, for the message)."""
    codes = set().union(*enabled_by_path.values()) if enabled_by_path else set()
    rules = [
        (code, rule)
        for code, rule in all_rules().items()
        if rule.scope == "project" and code in codes
    ]
    if not rules:
        return {}
    stage = _ProjectRules(project, rules)
    try:
        on_large_stack(stage.run, timeout=timeout)
    except StageTimeout:
        stage.stop.set()
    done = list(stage.done)  # what finished in time; a rule that overran adds nothing now
    found: dict[str, list[Finding]] = {}
    for code, rule, produced in done:
        if isinstance(produced, Exception):  # a bug of ours: the other rules' findings stand
            if errors is not None:
                what = f"{type(produced).__name__}: {produced}"
                message = f"internal error in rule {code} ({rule.name}): {what}"
                errors.append(ToolError(PROJECT, message, code))
            continue
        for finding in produced:
            if code in enabled_by_path.get(finding.path, frozenset()):
                found.setdefault(finding.path, []).append(finding)
    finished = {code for code, _, _ in done}
    late = [(code, rule) for code, rule in rules if code not in finished]
    if stage.stop.is_set() and late and errors is not None:
        code, rule = late[0]
        message = f"rule {code} ({rule.name}) did not finish within {_budget(budget or timeout)}"
        if late[1:]:
            message += "; " + ", ".join(c for c, _ in late[1:]) + " did not run"
        errors.append(ToolError(PROJECT, message + "; their findings are missing", code))
    return found


class _ProjectRules:
    """The project rules, run one after another; what each gave is kept as it finishes, so
    an overrun loses only the rules that had not finished."""

    def __init__(self, project: Any, rules: list[tuple[str, type[Rule]]]) -> None:
        self.project = project
        self.rules = rules
        self.done: list[tuple[str, type[Rule], list[Finding] | Exception]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        for code, rule in self.rules:
            if self.stop.is_set():
                return
            try:
                produced: list[Finding] | Exception = list(rule.check_project(self.project))
            except Exception as exc:
                produced = exc
            if self.stop.is_set():
                return
            self.done.append((code, rule, produced))


def analyze_file(
    source: FileSource,
    settings: FileSettings,
    second: SecondPass | None = None,
    trees: ParsedTrees | None = None,
    measure: Sequence[tuple] = (),
    premeasure_chars: int | None = None,
) -> FileResult:
    """One pass over a file (see the module docstring): the first (``second`` is None) or the
    second. ``trees``: where the first pass keeps its tree for the second, and where the
    second finds it (then the text is not loaded again). ``measure``: keys of lazily
    located nodes to measure into ``FileResult.measured``; ``premeasure_chars``: a file of
    at least this many characters measures all of its own there (see :func:`_finish`).

    It runs on a thread with a large stack and recursion limit (``source.on_large_stack``):
    LibCST's visitors recurse once per level of a tree.
    """
    display, module_name, is_package = source.display, source.module_name, source.is_package
    kept = trees.take(display) if second is not None and trees is not None else None
    if kept is not None:
        args = (kept.text, display, settings, module_name, is_package, second, kept)
        return on_large_stack(_analyze_source, *args)
    loaded = source.load()
    if isinstance(loaded, FileResult):
        return loaded
    if len(loaded) > MAX_FILE_BYTES:  # characters: at least as many bytes
        return _too_large(display, len(loaded))
    premeasure = second is None and premeasure_chars is not None and len(loaded) >= premeasure_chars
    fresh = (loaded, display, settings, module_name, is_package, second, None, trees, measure)
    return on_large_stack(_analyze_source, *fresh, premeasure)


def _decoded(data: bytes, display_path: str) -> str | FileResult:
    """The text of ``data``, or the DL000 result of a file too large or not decodable."""
    if len(data) > MAX_FILE_BYTES:
        return _too_large(display_path, len(data))
    try:
        return decode_source(data)
    except SourceError as exc:
        # The lines only place the finding (e.g. the line of an undecodable byte).
        approximate = data.decode("utf-8", "replace")
        return _unparsable(display_path, str(exc), exc.line, exc.column, approximate)


def _analyze_source(
    text: str,
    display_path: str,
    settings: FileSettings,
    module_name: str | None,
    is_package: bool,
    second: SecondPass | None,
    parsed: _Kept | None = None,
    trees: ParsedTrees | None = None,
    measure: Sequence[tuple] = (),
    premeasure: bool = False,
) -> FileResult:
    positions = None
    try:
        if parsed is not None:  # the first pass's tree of this text (ParsedTrees)
            module, columns, positions = parsed.module, parsed.columns, parsed.positions
        else:
            check_nesting(text)
            reused = trees.reused if trees is not None else None
            # one argument without reuse: a stand-in parser (tests) need not take the other
            module, columns = parse_source(text, reused) if reused else parse_source(text)
            if reused:
                positions = reused.positions(module, columns)
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
        ctx = RuleContext(
            display_path, text, module, settings, module_name, is_package, columns, positions
        )
        if second is not None:
            ctx.facts = second.facts
    except Exception as exc:  # a bug in the shared analysis: report it, never crash the run
        message = f"internal error while analysing the file: {type(exc).__name__}: {exc}"
        return FileResult(display_path, errors=(ToolError(display_path, message),))
    errors: list[ToolError] = []
    if settings.plugins:  # loaded at configuration time; again in a spawned worker
        add_local_plugins(settings.plugins)
    catalog = tuple(all_rules())  # a key of the memo: a spawned worker may load a plugin later
    rules = [rule(ctx) for rule in _walking_rules(settings.enabled, second is not None, catalog)]
    on_visit, on_leave = _dispatch_tables(ctx, rules, errors)
    if second is None:
        on_visit.setdefault(cst.Call, []).insert(0, ctx.note_call)
        for kind in ORDINAL_TYPES[1:]:
            on_visit.setdefault(kind, []).insert(0, ctx.node_counter(kind))
    walked = True
    try:
        walk(module, on_visit, on_leave, ctx.parents)
    except RecursionError:  # pragma: no cover - the walk is iterative; handlers may recurse
        errors.append(ToolError(display_path, "analysis exceeded the recursion limit"))
        walked = False
    summary = None
    if second is None:
        try:
            summary = Collector(ctx).collect()
            summary.enabled = settings.enabled
            if trees is not None and walked:
                trees.offer(ctx, summary)
        except RecursionError:
            errors.append(ToolError(display_path, "semantic summary exceeded the recursion limit"))
        except Exception as exc:  # a bug in the shared analysis: report it, never crash the run
            errors.append(
                ToolError(
                    display_path,
                    f"internal error while summarising the file: {type(exc).__name__}: {exc}",
                )
            )
    result = _finish(ctx, text, errors, summary, second is None, premeasure and walked)
    if measure and walked:
        entry = parsed_entry(text, ctx.module, ctx.seen, ctx.columns, ctx.positions)
        measured = dict(result.measured) | measure_keys(entry, measure)
        result = replace(result, measured=tuple(measured.items()))
    _release(ctx, *rules)
    return result


def _release(*holders: object) -> None:
    """Empty a pass's rule context and rules once its result is made (nothing of the result
    refers to them). They refer to each other (``rule.ctx``, a report's rule, the analyses
    memoised on the context): cycles that would keep the file's whole tree alive until the
    next cycle collection, which then walks all of it (four fifths of what the collection
    before each file walked on torch/distributed, see ``engine.runner``). Emptied, they hold
    nothing: reference counting frees the tree here, and the collection walks only what the
    result keeps."""
    for holder in holders:
        state = getattr(holder, "__dict__", None)
        if state is not None:
            state.clear()


# -- dispatch --------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _walking_rules(
    enabled: frozenset[str], second: bool, catalog: tuple[str, ...]
) -> tuple[type[Rule], ...]:
    """Enabled rules of a pass that have visitor methods, in code order: file and project
    rules in the first pass, :func:`_second_pass_codes` in the second. ``catalog``: the codes
    of every known rule, so that the memo is not read across a plugin's loading (a spawned
    worker whose first file had no plugin in its settings memoised the catalog without it,
    although ``--select ALL`` named the plugin's codes: they went unchecked)."""
    if second:
        chosen = _second_pass_codes(enabled, catalog)
    else:
        chosen = tuple(
            (code, rule)
            for code, rule in all_rules().items()
            if code in enabled and rule.scope in ("file", "project")
        )
    return tuple(rule for _, rule in chosen if any(True for _ in rule.visitor_methods()))


@lru_cache(maxsize=64)
def _second_pass_codes(
    enabled: frozenset[str], catalog: tuple[str, ...]
) -> tuple[tuple[str, type[Rule]], ...]:
    """The enabled rules whose result depends on the project facts: region rules, and file
    rules that read the facts (``reads_facts``; their first result is replaced). ``catalog``:
    see :func:`_walking_rules`."""
    return tuple(
        (code, rule)
        for code, rule in all_rules().items()
        if code in enabled and (rule.scope == "region" or rule.reads_facts)
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
    errors: list[ToolError],
    summary: ModuleSummary | None = None,
    first: bool = True,
    premeasure: bool = False,
) -> FileResult:
    """The pass's findings, placed but not suppressed yet (:func:`settle` does that once for
    every stage); the first pass also gives the file's suppressions, measured.

    ``premeasure``: also measure every lazily located node, in the same partial codegen as
    the findings, into ``FileResult.measured`` (their placeholders stay unmeasured, see
    :class:`~distlint.syntax.spans.MeasuredSpans`): the parent of a parallel run then need
    not parse the file again when a project finding points into it."""
    crashed = {e.rule for e in errors}
    reports = [r for r in ctx.reports if r.rule.code not in crashed]
    records = tuple((code, data) for code, data in ctx.records if code not in crashed)
    keyed: dict[tuple, cst.CSTNode] | None = {} if premeasure else None
    eager = ctx.settle_located(keyed)
    index = scan(text, code_prefixes()) if first else None
    if not reports and not eager and not keyed and index is None:
        return FileResult(ctx.path, errors=tuple(errors), summary=summary, records=records)
    lines = NEWLINES.split(text)
    nodes = [node for _, node in eager]
    ranges = _report_ranges(ctx, reports, [*nodes, *keyed.values()]) if keyed else None
    measured: tuple[tuple[tuple, Span], ...] = ()
    if ranges and keyed:
        measured = tuple((key, range_span(ranges.get(node), lines)) for key, node in keyed.items())
    else:  # none wanted, or measuring them all failed (pathological nesting): the usual
        ranges = _report_ranges(ctx, reports, nodes)
    for item, node in eager:
        item.span = range_span(ranges.get(node), lines)
    if index is not None:
        for supp in index.suppressions:
            supp.span = Span(
                make_position(lines, supp.line, supp.column),
                make_position(lines, supp.line, supp.end_column),
            )
    findings = tuple(_finding(ctx.path, report, ranges, lines) for report in reports)
    return FileResult(ctx.path, findings, tuple(errors), 0, summary, records, index, measured)


def _report_ranges(
    ctx: RuleContext, reports: list[PendingReport], located: Sequence[cst.CSTNode] = ()
) -> dict[cst.CSTNode, NodeRange]:
    nodes: list[cst.CSTNode] = list(located)
    for report in reports:
        nodes.append(report.node)
        nodes.extend(node for node, _ in report.fix_nodes)
        nodes.extend(node for node, _ in report.related_nodes)
    try:
        return ctx.positions.ranges(nodes)
    except RecursionError:  # pragma: no cover - codegen of pathological nesting
        return {}


def _finding(
    path: str, report: PendingReport, ranges: dict[cst.CSTNode, NodeRange], lines: list[str]
) -> Finding:
    rule = report.rule
    fix = report.fix
    if report.fix_nodes:
        edits = tuple(
            Edit(range_span(ranges.get(node), lines), content) for node, content in report.fix_nodes
        )
        if fix is not None:
            fix = Fix(fix.title, fix.edits + edits, fix.applicability)
    return Finding(
        code=rule.code,
        name=rule.name,
        severity=report.severity or rule.severity,
        message=report.message,
        path=path,
        span=range_span(ranges.get(report.node), lines),
        related=report.related
        + tuple(
            Location(path, range_span(ranges.get(node), lines), label)
            for node, label in report.related_nodes
        ),
        fix=fix,
    )


def _unused_suppressions(
    path: str, index: SuppressionIndex, enabled: frozenset[str]
) -> list[Finding]:
    from distlint.rules.removed import removed_rule
    from distlint.rules.tool.unused_suppression import UnusedSuppression

    known = all_rules()
    found = []
    for supp in index.suppressions:
        unused: list[tuple[str, str]] = []
        for selector in supp.codes:
            if selector in supp.used:
                continue
            covers_known = any(code.startswith(selector) for code in known)
            if covers_known and not any(c.startswith(selector) for c in enabled):
                continue  # the rule is off here, so we cannot tell whether it is needed
            if "DL001".startswith(selector):
                continue
            removed = removed_rule(selector)
            if removed is not None:
                reason = f"names a rule removed in distlint {removed.version} ({removed.instead})"
            elif covers_known:
                reason = "suppressed nothing"
            else:
                reason = "is not a distlint rule code"
            unused.append((selector, reason))
        if supp.kind != "noqa":  # another tool's code in a `# distlint:` list silences nothing
            unused += [(code, "is not a distlint rule code") for code in supp.comment.foreign]
        span = supp.span or Span(Position(supp.line, 1, 1), Position(supp.line, 1, 1))
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
        compile_quietly(text)
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
