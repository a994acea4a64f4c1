"""``distlint server``: the language server (pygls 2).

Diagnostics come from the editor's buffer text (unsaved contents included) through
:func:`distlint.engine.checker.check_file`; nothing of the user's code is imported or run, and
confirm mode never runs here. Clients that support pull diagnostics (LSP 3.17
``textDocument/diagnostic``) get them on request; others get ``publishDiagnostics`` pushed on
open, save and (debounced) change. Each diagnostic's ``data`` carries its fix edits and a
precomputed noqa-comment edit, so code actions need no re-lint.

Checks run in an analysis process (:mod:`distlint.lsp.worker`), never in the server's: the
event loop keeps answering while a large file is analysed, a newer version of a document
supersedes the check of the older one, and a check that crashes, dies or runs past its budget
costs that version's diagnostics only. The document then shows a DL000 saying so, never an
empty list that looks clean; the details go to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from distlint import __version__
from distlint.config.settings import (
    CliOverrides,
    Config,
    ConfigError,
    ConfigResolver,
    FileSettings,
    settings_for,
)
from distlint.engine.cache import FirstPassCache
from distlint.engine.checker import FileSource, check_file
from distlint.engine.results import FileResult
from distlint.engine.tasks import file_budget
from distlint.findings import Applicability, Finding, Severity, Span, make_position
from distlint.lsp.wire import WireDiagnostic, as_sent, converter, range_json, range_object
from distlint.lsp.worker import Analyses, Outcome
from distlint.lsp.workspace import ChangeLog, IndexKey, WorkspaceChanges, Workspaces
from distlint.output.headline import headline
from distlint.rules.registry import all_rules, docs_url, get_rule
from distlint.syntax.pieces import ReusedPieces
from distlint.syntax.suppressions import scan
from distlint.syntax.text import (
    LineInfo,
    TextEdit,
    code_at,
    from_client_units,
    non_overlapping,
    noqa_edit,
    split_lines,
    to_client_units,
)

logger = logging.getLogger("distlint.lsp")

SOURCE = "distlint"
FIX_ALL_KIND = "source.fixAll.distlint"
CONFIG_NAMES = ("pyproject.toml", "distlint.toml")
DEFAULT_DEBOUNCE = 0.3  # seconds; initializationOptions {"debounce": 0.5} changes it
WATCHER_ID = "distlint-config-files"
SOURCE_WATCHER_ID = "distlint-source-files"
# what the workspace index is told of (distlint/lsp/workspace.py): a change of one of these
# files in the workspace folder; a .gitignore may change the listing
WATCHED_SOURCES = ("**/*.py", "**/*.pyi", "**/.gitignore")
# the file operations the server is told of (a folder's too: its files moved)
FILE_OPERATIONS = types.FileOperationRegistrationOptions(
    filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
)
# Findings that a noqa comment cannot silence: a file that does not parse, an unused suppression.
_NOT_SUPPRESSIBLE = frozenset({"DL000", "DL001"})

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.NOTE: types.DiagnosticSeverity.Information,
}


# -- what the analysis process computes ----------------------------------------------------------


@dataclass(frozen=True)
class ClientFeatures:
    """The client capabilities that shape diagnostics (fixed after ``initialize``)."""

    encoding: str = "utf-16"
    related_information: bool = True
    unnecessary_tag: bool = False


@dataclass(frozen=True)
class Job:
    uri: str
    version: int | None
    text: str
    generation: int
    resolver: ConfigResolver
    features: ClientFeatures
    root: Path | None = None  # the workspace root: config of buffers without a file path
    other_texts: dict[str, str] = field(default_factory=dict)  # other open docs, by fs path
    # the analysis process runs after_reply() once this job's reply went out: the check's
    # cache entries are written then
    after_reply: bool = False
    # files changed on disk, as the client reported them (the workspace index's input)
    changes: WorkspaceChanges = field(default_factory=WorkspaceChanges)
    config_generation: int = 0  # which configuration (the workspace index's)


@dataclass
class Analysis:
    """What the analysis process computes for one version of one document (sent back)."""

    diagnostics: list[WireDiagnostic] = field(default_factory=list)
    safe_fixes: list[list[TextEdit]] = field(default_factory=list)
    config_error: str | None = None
    tool_errors: tuple[str, ...] = ()
    crash: str | None = None  # the traceback of an internal error


@dataclass
class Checked:
    """The outcome of checking one version of one document, kept by the server."""

    uri: str
    version: int | None
    text: str
    generation: int
    result_id: str
    diagnostics: list[WireDiagnostic] = field(default_factory=list)
    safe_fixes: list[list[TextEdit]] = field(default_factory=list)

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    def payload_for(self, diagnostic: types.Diagnostic) -> dict[str, Any] | None:
        """The ``data`` of our diagnostic with this code and range (clients that drop it)."""
        where = range_json(diagnostic.range)
        for mine in self.diagnostics:
            if mine["code"] == diagnostic.code and mine["range"] == where:
                data: dict[str, Any] = mine["data"]
                return data
        return None


def result_id(text: str, generation: int) -> str:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    return f"{generation}-{digest}"


def analyse(state: AnalysisState, job: Job) -> Analysis:
    """Check one buffer and build its diagnostics; never raises (runs in the analysis
    process, with nothing but ``job`` and what the process keeps between jobs)."""
    analysis = Analysis()
    if job.after_reply:
        gc.disable()  # until after_reply()
    try:
        _analyse(state, job, analysis)
    except Exception:  # a bug of ours: the server shows it as a DL000 and logs it
        analysis.diagnostics = []
        analysis.safe_fixes = []
        analysis.crash = traceback.format_exc()
    return analysis


def _config_path(uri: str, root: Path | None) -> Path | None:
    """The path whose configuration applies to a document: its file, or for an unsaved new
    buffer ("untitled:") a file at the workspace root."""
    path = _fs_path(uri)
    return path or (root / "untitled.py" if root is not None else None)


def _analyse(state: AnalysisState, job: Job, analysis: Analysis) -> None:
    path = _fs_path(job.uri)
    lookup = _config_path(job.uri, job.root)
    lines = split_lines(job.text)
    config = Config()
    if lookup is not None:
        try:
            config = job.resolver.for_path(lookup)
        except ConfigError as exc:
            analysis.config_error = str(exc)
    if path is not None and _excluded(config, path):
        return  # excluded by the project's config: no diagnostics, as with ruff server
    settings = settings_for(config, CliOverrides(), lookup or Path.cwd() / "untitled.py")
    module_name: str | None = None
    is_package = False
    if path is not None:
        from distlint.syntax.module_names import module_name_for

        module_name, is_package = module_name_for(path)
    display = str(path) if path is not None else job.uri
    if path is None:
        result = check_file(FileSource(job.text, display, module_name, is_package), settings)
    else:
        result = _check_in_project(job, path, display, settings, state)
    analysis.tool_errors = tuple(error.message for error in result.errors)
    info: LineInfo | None = None
    for finding in result.findings:
        if info is None and finding.code not in _NOT_SUPPRESSIBLE:
            info = LineInfo(job.text, lines)
        analysis.diagnostics.append(_diagnostic(job, lines, display, finding, info))
        fix = finding.fix
        if fix is not None and fix.edits and fix.applicability is Applicability.SAFE:
            analysis.safe_fixes.append([_code_point_edit(e.span, e.content) for e in fix.edits])


class DocumentPieces:
    """The parsed pieces of each document's last text, kept by the analysis process from one
    job to the next (:class:`~distlint.syntax.pieces.ReusedPieces`): after an edit, only the
    pieces it changed are parsed again. A few documents at most (the most recently checked);
    a new analysis process starts with none, which costs one whole parse."""

    def __init__(self, documents: int = 8) -> None:
        self.documents = documents
        self._by_uri: dict[str, ReusedPieces] = {}

    def of(self, uri: str) -> ReusedPieces:
        reused = self._by_uri.pop(uri, None) or ReusedPieces()
        self._by_uri[uri] = reused  # the most recent last
        while len(self._by_uri) > self.documents:
            del self._by_uri[next(iter(self._by_uri))]
        return reused


class AfterReply:
    """What the analysis process leaves until a job's reply went out (:func:`after_reply`,
    which the worker runs right behind it), so that the editor gets its diagnostics first:
    writing the check's cache entries (and pruning the cache, which lists all of it), and
    collecting the check's garbage.

    The automatic collector is paused from the start of such a job (:attr:`Job.after_reply`)
    until then. The runner pauses it during a check and resumes it after; the first
    collection, of the youngest generation, then walked everything the check made (trees,
    summaries, findings) between the check and the reply: 30-80 ms of an edit of a 3,000-line
    buffer. It is the same collection here, after the reply."""

    def __init__(self) -> None:
        self.caches: list[FirstPassCache] = []

    def defer_writes(self, cache: FirstPassCache) -> None:
        cache.defer_writes()
        self.caches.append(cache)

    def run(self) -> None:
        caches, self.caches = self.caches, []
        try:
            for cache in caches:
                cache.flush()
        finally:
            gc.enable()
            gc.collect(0)


@dataclass
class AnalysisState:
    """What the analysis process keeps from one job to the next, made when it starts and
    passed to each job by its job loop (:class:`~distlint.lsp.worker.Analyses`): the pieces
    of each document's last parse, the cache writes held back until the reply went out, and
    the workspace index. Each is a cache of what a job would otherwise compute or read again,
    so a job's result does not depend on it."""

    pieces: DocumentPieces = field(default_factory=DocumentPieces)
    after: AfterReply = field(default_factory=AfterReply)
    workspaces: Workspaces = field(default_factory=Workspaces)


def after_reply(state: AnalysisState) -> None:
    """Run in the analysis process once a job's reply went out (see :class:`AfterReply`)."""
    state.after.run()


def _check_in_project(
    job: Job, path: Path, display: str, settings: FileSettings, state: AnalysisState
) -> FileResult:
    """The buffer as that file of its project: the files it imports and those importing it
    are linked with it (open buffers replacing their files), through the first-pass cache at
    the project root, so cross-file findings reach the editor as they reach ``check .``. What
    that takes of the project is kept by the workspace index (:mod:`distlint.lsp.workspace`)."""
    from distlint.config.project_files import project_root
    from distlint.engine.runner import run
    from distlint.engine.tasks import Task

    data = job.text.encode("utf-8", "surrogatepass")
    contents = {Path(p): t.encode("utf-8", "surrogatepass") for p, t in job.other_texts.items()}
    contents[path] = data
    root = project_root(path)
    tasks = [Task(path, display, settings, data=data)]
    if root is None:  # a file outside any project: no context, and no cache left behind
        return run(tasks, 1, reused=state.pieces.of(job.uri))[0]
    key = IndexKey(root, job.root or path.parent, job.config_generation)
    index = state.workspaces.index(key, job.resolver, job.changes)
    if index.cache is not None and job.after_reply:
        state.after.defer_writes(index.cache)
    context = index.context(path, contents)
    tasks += [replace(task, data=contents.get(task.path)) for task in context]
    index.before_run()
    try:
        return run(
            tasks, 1, cache=index.cache, reused=state.pieces.of(job.uri), folders=index.folders
        )[0]
    finally:
        index.after_run()


def _excluded(config: Config, path: Path) -> bool:
    """Whether a config file's exclude / extend-exclude patterns cover ``path``."""
    return (
        config.path is not None and config.exclude_patterns().matches(path.as_posix()) is not None
    )


def _fs_path(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


def _code_point_edit(span: Span, content: str) -> TextEdit:
    return TextEdit(
        (span.start.line - 1, span.start.column - 1),
        (span.end.line - 1, span.end.column - 1),
        content,
    )


def _point(lines: list[str], row: int, column: int, encoding: str) -> dict[str, int]:
    """A position's JSON form, in the client's units."""
    line = lines[row] if 0 <= row < len(lines) else ""
    return {"line": max(row, 0), "character": to_client_units(line, column, encoding)}


def _position(lines: list[str], row: int, column: int, encoding: str) -> types.Position:
    return types.Position(**_point(lines, row, column, encoding))


def _span_range(lines: list[str], span: Span, encoding: str) -> dict[str, Any]:
    return {
        "start": _point(lines, span.start.line - 1, span.start.column - 1, encoding),
        "end": _point(lines, span.end.line - 1, span.end.column - 1, encoding),
    }


def _edit_range(lines: list[str], edit: TextEdit, encoding: str) -> dict[str, Any]:
    return {
        "start": _point(lines, *edit.start, encoding),
        "end": _point(lines, *edit.end, encoding),
    }


def _diagnostic(
    job: Job, lines: list[str], display: str, finding: Finding, info: LineInfo | None
) -> WireDiagnostic:
    """The finding as the client receives it (:mod:`distlint.lsp.wire`)."""
    encoding = job.features.encoding
    fix_data = None
    if finding.fix is not None and finding.fix.edits:
        fix_data = {
            "title": finding.fix.title,
            "applicability": finding.fix.applicability.value,
            "edits": [
                {
                    "range": _edit_range(lines, _code_point_edit(e.span, e.content), encoding),
                    "newText": e.content,
                }
                for e in finding.fix.edits
            ],
        }
    noqa_data = None
    if info is not None and finding.code not in _NOT_SUPPRESSIBLE:
        edit = noqa_edit(info, finding.span.start.line - 1, finding.code)
        if edit is not None:
            noqa_data = {"range": _edit_range(lines, edit, encoding), "newText": edit.new_text}
    message = finding.message
    related = None
    where = _span_range(lines, finding.span, encoding)
    if job.features.related_information and (short := headline(message)) != message:
        # the problems list shows a line: the headline, and the whole message as the first
        # related entry (at the finding itself); hover shows it too
        message = short
        related = [{"location": {"uri": job.uri, "range": where}, "message": finding.message}]
    if finding.related:
        if job.features.related_information:
            related = (related or []) + [
                {
                    "location": {
                        "uri": _location_uri(job, display, loc.path),
                        "range": _span_range(
                            _lines_of(job, display, lines, loc.path), loc.span, encoding
                        ),
                    },
                    "message": loc.message or "related location",
                }
                for loc in finding.related
            ]
        else:  # the client cannot show related locations: name them in the message
            places = "; ".join(
                f"{loc.message or 'see'}: line {loc.span.start.line}" for loc in finding.related
            )
            message = f"{message} ({places})"
    severity = _SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning)
    wire: WireDiagnostic = {
        "range": where,
        "message": message,
        "severity": severity.value,
        "code": finding.code,
    }
    url = docs_url(finding.code)
    if url:
        wire["codeDescription"] = {"href": url}
    wire["source"] = SOURCE
    if finding.code == "DL001" and job.features.unnecessary_tag:
        wire["tags"] = [types.DiagnosticTag.Unnecessary.value]
    if related:
        wire["relatedInformation"] = related
    wire["data"] = {"code": finding.code, "name": finding.name, "fix": fix_data, "noqa": noqa_data}
    return wire


def _notice(job: Job, message: str, severity: Severity) -> WireDiagnostic:
    """A DL000 at the top of the document: distlint could not check it (or not all of it)."""
    from distlint.rules.tool.syntax_error import SyntaxErrorRule

    start = make_position([], 1, 0)
    finding = Finding(
        code=SyntaxErrorRule.code,
        name=SyntaxErrorRule.name,
        severity=severity,
        message=message,
        path=job.uri,
        span=Span(start, start),
    )
    return _diagnostic(job, [], job.uri, finding, None)


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else text


def _location_uri(job: Job, display: str, path: str) -> str:
    if path == display:
        return job.uri
    return from_fs_path(str(Path(path).resolve())) or job.uri


def _lines_of(job: Job, display: str, lines: list[str], path: str) -> list[str]:
    """The lines of the file a related location is in (to convert its columns)."""
    if path == display:
        return lines
    resolved = str(Path(path).resolve())
    if resolved in job.other_texts:
        return split_lines(job.other_texts[resolved])
    try:
        return split_lines(Path(resolved).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


# -- the server ------------------------------------------------------------------------------------


class DistlintSession:
    """State and behaviour behind the LSP handlers registered by :func:`create_server`."""

    def __init__(self, ls: LanguageServer) -> None:
        self.ls = ls
        self.debounce = DEFAULT_DEBOUNCE
        self.features = ClientFeatures()
        self.pull = False
        self.resolver = ConfigResolver()
        self.generation = 0
        self.open_uris: set[str] = set()
        self.checked: dict[str, Checked] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}
        # the check of a document's text in progress: its text, generation, and the check
        # (None when a newer text superseded it)
        self.inflight: dict[str, tuple[str, int, asyncio.Future[Checked | None]]] = {}
        self.analyses = Analyses(after=after_reply, make_state=AnalysisState)
        self.config_generation = 0  # a new configuration: a new workspace index
        self.disk_changes = ChangeLog()  # what the client reported changed on disk
        self.watching = False  # the client watches the workspace's source files for us
        self.shut_down = False
        self.shown_config_errors: set[str] = set()
        self.logged: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def initialize(self, params: types.InitializeParams) -> None:
        all_rules()  # imported once here: every forked analysis process starts with them
        caps = params.capabilities
        encoding = self.ls.workspace.position_encoding or types.PositionEncodingKind.Utf16
        self.pull = get_capability(caps, "text_document.diagnostic", None) is not None

        def diagnostic_capability(name: str) -> Any:
            # Pull clients may declare these on textDocument.diagnostic (LSP 3.18); all
            # declare them on publishDiagnostics.
            value = None
            if self.pull:
                value = get_capability(caps, f"text_document.diagnostic.{name}", None)
            if value is None:
                value = get_capability(caps, f"text_document.publish_diagnostics.{name}", None)
            return value

        tag_support = diagnostic_capability("tag_support")
        self.features = ClientFeatures(
            encoding=str(getattr(encoding, "value", encoding)),
            related_information=bool(diagnostic_capability("related_information")),
            unnecessary_tag=bool(
                tag_support and types.DiagnosticTag.Unnecessary in (tag_support.value_set or ())
            ),
        )
        options = params.initialization_options
        if isinstance(options, dict):
            debounce = options.get("debounce")
            if isinstance(debounce, (int, float)) and not isinstance(debounce, bool):
                self.debounce = max(0.0, float(debounce))

    async def register_watchers(self) -> None:
        caps = self.ls.client_capabilities
        if not get_capability(
            caps, "workspace.did_change_watched_files.dynamic_registration", False
        ):
            return
        watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
        sources = [types.FileSystemWatcher(glob_pattern=pattern) for pattern in WATCHED_SOURCES]
        registrations = [
            types.Registration(
                id=registration_id,
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=chosen),
            )
            for registration_id, chosen in ((WATCHER_ID, watchers), (SOURCE_WATCHER_ID, sources))
        ]
        try:
            await self.ls.client_register_capability_async(
                types.RegistrationParams(registrations=registrations)
            )
        except Exception as exc:  # the client refused: config changes are seen on save only
            self.log(types.MessageType.Info, f"distlint: file watcher not registered: {exc}")
            return
        # from now on a file's change on disk is reported: the workspace index trusts that
        # (and looks at each file's status where it is not)
        self.watching = self._root() is not None

    def shutdown(self) -> None:
        self.shut_down = True
        for task in self.pending.values():
            task.cancel()
        self.pending.clear()
        self.analyses.close()

    def exit(self) -> None:
        """``exit``: end the process now, whatever is being analysed (the analysis process is
        killed first); status 0 after ``shutdown``, 1 without (LSP)."""
        self.analyses.close()
        sys.stderr.flush()
        os._exit(0 if self.shut_down else 1)

    # -- documents ---------------------------------------------------------------------------

    def opened(self, uri: str, language_id: str | None) -> None:
        if not _is_python(uri, language_id):
            return
        self.open_uris.add(uri)
        self.schedule(uri, 0.0)

    def changed(self, uri: str) -> None:
        if uri in self.open_uris:
            self.analyses.supersede(uri)  # the older text's check is of no use any more
            self.schedule(uri, self.debounce)

    def saved(self, uri: str) -> None:
        if uri.rsplit("/", 1)[-1] in CONFIG_NAMES:
            self.reload_config()
            return
        self._record(uri, listing=False)
        if uri in self.open_uris:
            self.schedule(uri, 0.0)

    def closed(self, uri: str) -> None:
        self.open_uris.discard(uri)
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.analyses.supersede(uri)
        self.analyses.trim()  # the memory of a large document's trees goes back
        self.checked.pop(uri, None)
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def watched_files_changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.rsplit("/", 1)[-1] in CONFIG_NAMES for change in params.changes):
            self.reload_config()
            return
        for change in params.changes:
            name = change.uri.rsplit("/", 1)[-1]
            listing = change.type != types.FileChangeType.Changed or name == ".gitignore"
            self._record(change.uri, listing)
        self.files_changed()

    def file_operation(self, uris: Sequence[str]) -> None:
        """Files (or folders) created, renamed or deleted in the editor."""
        if any(uri.rsplit("/", 1)[-1] in CONFIG_NAMES for uri in uris):
            self.reload_config()
            return
        for uri in uris:
            self._record(uri, listing=True)
        self.files_changed()

    def _record(self, uri: str, listing: bool) -> None:
        path = _fs_path(uri)
        if path is not None:
            self.disk_changes.record(str(path), listing)

    def files_changed(self) -> None:
        """Files changed on disk: re-check the open documents (cross-file findings)."""
        self.generation += 1
        self._check_open_documents(self.debounce)

    def reload_config(self) -> None:
        """Forget every loaded config and re-check the open documents."""
        self.resolver = ConfigResolver()
        self.config_generation += 1
        self.generation += 1
        self.shown_config_errors.clear()
        self._check_open_documents(0.0)

    def _check_open_documents(self, delay: float) -> None:
        for uri in sorted(self.open_uris):
            self.schedule(uri, delay)
        if self.pull and get_capability(
            self.ls.client_capabilities, "workspace.diagnostics.refresh_support", False
        ):
            self.ls.workspace_diagnostic_refresh(None)

    # -- checking ----------------------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        """(Re)start the per-URI debounce timer; when it fires, check and push."""
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        if self.shut_down:  # nothing more is checked or published after shutdown
            return
        self.pending[uri] = asyncio.ensure_future(self._check_later(uri, delay))

    async def _check_later(self, uri: str, delay: float) -> None:
        task = asyncio.current_task()
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            checked = await self.current(uri)
            if not self.pull:
                self.publish(checked)
        except asyncio.CancelledError:
            raise
        except Exception:  # never let a background check end the server
            self.log(
                types.MessageType.Error,
                f"distlint: checking {uri} failed:\n{traceback.format_exc()}",
            )
        finally:
            if self.pending.get(uri) is task:
                del self.pending[uri]

    def publish(self, checked: Checked) -> None:
        if checked.uri not in self.open_uris:
            return
        if checked.text != self.ls.workspace.get_text_document(checked.uri).source:
            return  # stale: a newer check of this document is on its way
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=checked.uri, version=checked.version, diagnostics=as_sent(checked.diagnostics)
            )
        )

    async def current(self, uri: str) -> Checked:
        """The check of the document's current text: cached, in progress, or started now."""
        while True:
            document = self.ls.workspace.get_text_document(uri)
            text = document.source
            state = self.checked.get(uri)
            if state is not None and state.text == text and state.generation == self.generation:
                return state
            flight = self.inflight.get(uri)
            if flight is None or flight[0] != text or flight[1] != self.generation:
                flight = self._submit(uri, text, document.version)
            checked = await asyncio.shield(flight[2])
            if checked is not None:
                return checked
            if uri not in self.open_uris:  # superseded by its closing: nothing to show
                return Checked(uri, None, text, self.generation, result_id(text, self.generation))
            # superseded: the document changed meanwhile; check its newest text

    def _submit(
        self, uri: str, text: str, version: int | None
    ) -> tuple[str, int, asyncio.Future[Checked | None]]:
        job = Job(
            uri=uri,
            version=version,
            text=text,
            generation=self.generation,
            resolver=self.resolver,
            features=self.features,
            root=self._root(),
            other_texts=self._other_open_documents(uri),
            after_reply=self.analyses.after is not None,
            changes=self.disk_changes.changes(self._root() if self.watching else None),
            config_generation=self.config_generation,
        )
        outcome = self.analyses.submit(uri, analyse, (job,), self._budget(uri))
        entry = (text, self.generation, asyncio.get_running_loop().create_future())
        self.inflight[uri] = entry
        outcome.add_done_callback(lambda done: self._finished(job, entry, done))
        return entry

    def _budget(self, uri: str) -> float | None:
        """CPU seconds a check of this document may take: ``file-timeout`` as for the CLI."""
        lookup = _config_path(uri, self._root())
        config = Config()
        if lookup is not None:
            with contextlib.suppress(ConfigError):  # the check reports it; default budget
                config = self.resolver.for_path(lookup)
        return file_budget(None, config)

    def _other_open_documents(self, uri: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for other in self.open_uris:
            path = _fs_path(other)
            if other != uri and path is not None:
                found[str(path)] = self.ls.workspace.get_text_document(other).source
        return found

    def _root(self) -> Path | None:
        root = self.ls.workspace.root_path
        return Path(root) if root else None

    def _finished(
        self,
        job: Job,
        entry: tuple[str, int, asyncio.Future[Checked | None]],
        done: asyncio.Future[Outcome],
    ) -> None:
        uri = job.uri
        if self.inflight.get(uri) is entry:
            del self.inflight[uri]
        checked = None
        try:
            outcome = done.result()
            if not outcome.superseded:
                checked = self._checked(job, outcome)
        except BaseException as exc:  # pragma: no cover - never: log it, do not hang waiters
            self.log(types.MessageType.Error, f"distlint: checking {uri} failed: {exc!r}")
        finally:
            if not entry[2].done():
                entry[2].set_result(checked)

    def _checked(self, job: Job, outcome: Outcome) -> Checked:
        """What the server keeps of a check; a failed one is a DL000, never a clean list."""
        uri = job.uri
        checked = Checked(
            uri, job.version, job.text, job.generation, result_id(job.text, job.generation)
        )
        analysis = outcome.value
        if outcome.failure is not None or not isinstance(analysis, Analysis):
            reason = outcome.failure or "no result"
            self.log(types.MessageType.Error, f"distlint: could not check {uri}: {reason}")
            message = f"distlint could not check this file: {reason}"
            checked.diagnostics = [_notice(job, message, Severity.ERROR)]
        elif analysis.crash is not None:
            self.log(
                types.MessageType.Error,
                f"distlint: internal error while checking {uri}, shown as a DL000 at the top "
                f"of the file (please report it):\n{analysis.crash}",
            )
            message = (
                "distlint could not check this file: internal error "
                f"({_last_line(analysis.crash)}); the server's log has the details"
            )
            checked.diagnostics = [_notice(job, message, Severity.ERROR)]
        else:
            checked.diagnostics = list(analysis.diagnostics)
            checked.safe_fixes = analysis.safe_fixes
            for message in analysis.tool_errors:
                self.log(types.MessageType.Warning, f"distlint: {uri}: {message}")
            if analysis.tool_errors:  # a rule crashed: what it would have found is missing
                more = len(analysis.tool_errors) - 1
                message = f"distlint could not fully check this file: {analysis.tool_errors[0]}"
                if more:
                    message += f" (and {more} more error{'s' if more > 1 else ''})"
                checked.diagnostics.append(_notice(job, message, Severity.WARNING))
        if isinstance(analysis, Analysis) and analysis.config_error is not None:
            self.config_error(analysis.config_error)
        if uri in self.open_uris and job.generation == self.generation:
            self.checked[uri] = checked
        return checked

    def config_error(self, message: str) -> None:
        if message in self.shown_config_errors:
            return
        self.shown_config_errors.add(message)
        text = (
            f"distlint: configuration error: {message}. "
            "Using the default settings until it is fixed."
        )
        self.ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=text)
        )
        self.log(types.MessageType.Error, text)

    def log(self, kind: types.MessageType, message: str) -> None:
        key = f"{kind}:{message}"
        if key in self.logged:
            return
        if len(self.logged) > 1000:
            self.logged.clear()
        self.logged.add(key)
        logger.debug("%s", message)  # the client shows it; stderr stays quiet
        self.ls.window_log_message(types.LogMessageParams(type=kind, message=message))

    # -- pull diagnostics --------------------------------------------------------------------

    async def pull_diagnostics(
        self, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        uri = params.text_document.uri
        if self.pull:  # the client asked now: no need to wait out the debounce
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
        checked = await self.current(uri)
        if params.previous_result_id == checked.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=checked.result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=as_sent(checked.diagnostics), result_id=checked.result_id
        )

    # -- code actions ------------------------------------------------------------------------

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(only, types.CodeActionKind.QuickFix):
            state = self.checked.get(uri)
            for diagnostic in params.context.diagnostics:
                if diagnostic.source != SOURCE:
                    continue
                data = diagnostic.data
                if not isinstance(data, dict):
                    data = state.payload_for(diagnostic) if state is not None else None
                if isinstance(data, dict):
                    actions.extend(_quick_fixes(uri, diagnostic, data))
        if _wanted(only, FIX_ALL_KIND):
            try:
                if only:  # asked for by kind (e.g. on save): worth waiting for the check
                    state = await self.current(uri)
                else:  # the light bulb: answer now, from a check of this very text only
                    state = self._up_to_date(uri)
                    if state is None:
                        return actions
            except Exception as exc:  # e.g. a document that is neither open nor on disk
                self.log(types.MessageType.Warning, f"distlint: no fix-all for {uri}: {exc!r}")
                return actions
            edits = non_overlapping(state.safe_fixes)
            if edits:
                encoding = self.features.encoding
                actions.append(
                    types.CodeAction(
                        title="distlint: Fix all auto-fixable problems",
                        kind=FIX_ALL_KIND,
                        edit=types.WorkspaceEdit(
                            changes={
                                uri: [
                                    types.TextEdit(
                                        range=range_object(
                                            _edit_range(state.lines, edit, encoding)
                                        ),
                                        new_text=edit.new_text,
                                    )
                                    for edit in edits
                                ]
                            }
                        ),
                    )
                )
        return actions

    def _up_to_date(self, uri: str) -> Checked | None:
        state = self.checked.get(uri)
        text = self.ls.workspace.get_text_document(uri).source
        if state is None or state.text != text or state.generation != self.generation:
            return None
        return state

    # -- hover -------------------------------------------------------------------------------

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        document = self.ls.workspace.get_text_document(params.text_document.uri)
        text = document.source
        lines = split_lines(text)
        row = params.position.line
        if not 0 <= row < len(lines):
            return None
        line = lines[row]
        encoding = self.features.encoding
        column = from_client_units(line, params.position.character, encoding)
        index = scan(text)
        if index is None:
            return self._finding_hover(params.text_document.uri, text, params.position)
        for supp in index.suppressions:
            if supp.line != row + 1 or not supp.column <= column <= supp.end_column:
                continue
            hit = code_at(line[supp.column : supp.end_column], column - supp.column)
            if hit is None:
                continue
            start, end, code = hit
            markdown = rule_markdown(code)
            if markdown is None:
                return None
            contents = _markup(self.ls.client_capabilities, markdown)
            return types.Hover(
                contents=contents,
                range=types.Range(
                    start=_position(lines, row, supp.column + start, encoding),
                    end=_position(lines, row, supp.column + end, encoding),
                ),
            )
        return self._finding_hover(params.text_document.uri, text, params.position)

    def _finding_hover(self, uri: str, text: str, at: types.Position) -> types.Hover | None:
        """Over a flagged range: each finding's rule, its summary, its whole message and the
        rule's page (from the last check of this very text)."""
        state = self.checked.get(uri)
        if state is None or state.text != text:
            return None
        point = (at.line, at.character)
        hits = [
            d
            for d in state.diagnostics
            if d["source"] == SOURCE
            and (d["range"]["start"]["line"], d["range"]["start"]["character"])
            <= point
            <= (d["range"]["end"]["line"], d["range"]["end"]["character"])
        ]
        if not hits:
            return None
        parts = []
        for diagnostic in hits:
            code = str(diagnostic["code"])
            rule = get_rule(code)
            title = f"**{code} {rule.name}**: {rule.summary}" if rule else f"**{code}**"
            url = docs_url(code)
            link = f"\n\n[{code} documentation]({url})" if url else ""
            parts.append(f"{title}\n\n{diagnostic['message']}{link}")
        contents = _markup(self.ls.client_capabilities, "\n\n---\n\n".join(parts))
        where = range_object(hits[0]["range"]) if len(hits) == 1 else None
        return types.Hover(contents=contents, range=where)


def _is_python(uri: str, language_id: str | None) -> bool:
    if language_id:
        return language_id.lower() == "python"
    return uri.endswith((".py", ".pyi"))


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == want or kind.startswith(f"{want}.") for want in only)


def _text_edits(edits: list[dict[str, Any]]) -> list[types.TextEdit]:
    return [
        types.TextEdit(range=range_object(edit["range"]), new_text=edit["newText"])
        for edit in edits
    ]


def _quick_fixes(
    uri: str, diagnostic: types.Diagnostic, data: dict[str, Any]
) -> list[types.CodeAction]:
    code = str(data.get("code") or diagnostic.code)
    actions = []
    fix = data.get("fix")
    if isinstance(fix, dict) and fix.get("edits"):
        actions.append(
            types.CodeAction(
                title=f"distlint ({code}): {fix['title']}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=fix.get("applicability") == Applicability.SAFE.value,
                edit=types.WorkspaceEdit(changes={uri: _text_edits(fix["edits"])}),
            )
        )
    noqa = data.get("noqa")
    if isinstance(noqa, dict):
        actions.append(
            types.CodeAction(
                title=f"distlint ({code}): Suppress {code} on this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=types.WorkspaceEdit(changes={uri: _text_edits([noqa])}),
            )
        )
    return actions


def rule_markdown(code: str) -> str | None:
    """Hover text for a code (its docs page) or a prefix (the rules it selects)."""
    rule = get_rule(code)
    if rule is not None:
        from distlint.output.docs import rule_doc

        try:
            doc = rule_doc(rule.code)
        except Exception:  # a malformed page must not break hover: fall back to the summary
            doc = None
        if doc is not None:
            return doc.markdown
        return (
            f"# {rule.code} {rule.name}\n\n{rule.summary}\n\n"
            f"Severity: {rule.severity.value}. [Documentation]({rule.url()})\n"
        )
    matching = [r for c, r in all_rules().items() if c.startswith(code)]
    if not matching:
        return f"`{code}` is not a distlint rule code."
    rows = "\n".join(f"- **{r.code}** `{r.name}`: {r.summary}" for r in matching)
    return f"`{code}` selects:\n\n{rows}\n"


def _markup(caps: types.ClientCapabilities, markdown: str) -> types.MarkupContent:
    formats = get_capability(caps, "text_document.hover.content_format", None)
    if formats and types.MarkupKind.Markdown not in formats:
        from distlint.output.docs import markdown_to_text

        return types.MarkupContent(
            kind=types.MarkupKind.PlainText, value=markdown_to_text(markdown)
        )
    return types.MarkupContent(kind=types.MarkupKind.Markdown, value=markdown)


def create_server() -> LanguageServer:
    """A configured server; call ``start_io()`` or ``start_tcp(host, port)`` on it."""
    ls = LanguageServer("distlint", __version__, converter_factory=converter)
    session = DistlintSession(ls)
    ls.distlint = session  # type: ignore[attr-defined]  # for tests and debugging

    @ls.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        session.initialize(params)

    @ls.feature(types.INITIALIZED)
    async def on_initialized(params: types.InitializedParams) -> None:
        await session.register_watchers()

    @ls.feature(types.SHUTDOWN)
    def on_shutdown(params: None) -> None:
        session.shutdown()

    @ls.feature(types.EXIT)
    def on_exit(params: None) -> None:
        session.exit()

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        session.opened(params.text_document.uri, params.text_document.language_id)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        session.changed(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        session.saved(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        session.closed(params.text_document.uri)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        session.watched_files_changed(params)

    @ls.feature(types.WORKSPACE_DID_CREATE_FILES, FILE_OPERATIONS)
    def did_create_files(params: types.CreateFilesParams) -> None:
        session.file_operation([file.uri for file in params.files])

    @ls.feature(types.WORKSPACE_DID_RENAME_FILES, FILE_OPERATIONS)
    def did_rename_files(params: types.RenameFilesParams) -> None:
        session.file_operation([uri for f in params.files for uri in (f.old_uri, f.new_uri)])

    @ls.feature(types.WORKSPACE_DID_DELETE_FILES, FILE_OPERATIONS)
    def did_delete_files(params: types.DeleteFilesParams) -> None:
        session.file_operation([file.uri for file in params.files])

    @ls.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    async def diagnostic(params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        return await session.pull_diagnostics(params)

    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],
            resolve_provider=False,
        ),
    )
    async def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return await session.code_actions(params)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        return session.hover(params)

    return ls


def main(tcp_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Run the server on stdio (default) or on TCP ``host:tcp_port``."""
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="distlint server: %(levelname)s %(message)s",
    )
    server = create_server()
    if tcp_port is None:
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
        sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream
        # A forked analysis process closes sys.stdin first thing (multiprocessing): that would
        # wait forever for the lock that the server's reading thread holds on the real one.
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - for the process's life
        server.start_io(stdin, stdout)
    else:
        server.start_tcp(host, tcp_port)
