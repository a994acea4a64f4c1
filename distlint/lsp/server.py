"""``distlint server``: the language server (pygls 2).

Diagnostics come from the editor's buffer text (unsaved contents included) through
:func:`distlint.engine.checker.check_source`; nothing of the user's code is imported or run, and
confirm mode never runs here. Clients that support pull diagnostics (LSP 3.17
``textDocument/diagnostic``) get them on request; others get ``publishDiagnostics`` pushed on
open, save and (debounced) change. Each diagnostic's ``data`` carries its fix edits and a
precomputed noqa-comment edit, so code actions need no re-lint.

Checks run on one worker thread, so the event loop keeps answering while a large file is
analysed; every check is wrapped so that an exception is logged and never ends the server.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
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
from distlint.engine.checker import FileResult, check_source
from distlint.findings import Applicability, Finding, Severity, Span
from distlint.meta import rule_url
from distlint.output.headline import headline
from distlint.rules.registry import all_rules, get_rule
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
# Findings that a noqa comment cannot silence: a file that does not parse, an unused suppression.
_NOT_SUPPRESSIBLE = frozenset({"DL000", "DL001"})

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.NOTE: types.DiagnosticSeverity.Information,
}


# -- what the worker thread computes -------------------------------------------------------------


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


@dataclass
class Checked:
    """The outcome of checking one version of one document."""

    uri: str
    version: int | None
    text: str
    generation: int
    result_id: str
    lines: list[str]
    diagnostics: list[types.Diagnostic] = field(default_factory=list)
    safe_fixes: list[list[TextEdit]] = field(default_factory=list)
    config_error: str | None = None
    tool_errors: tuple[str, ...] = ()
    crash: str | None = None

    def payload_for(self, diagnostic: types.Diagnostic) -> dict[str, Any] | None:
        """The ``data`` of our diagnostic with this code and range (clients that drop it)."""
        for mine in self.diagnostics:
            if mine.code == diagnostic.code and mine.range == diagnostic.range:
                return mine.data
        return None


def result_id(text: str, generation: int) -> str:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
    return f"{generation}-{digest}"


def analyse(job: Job) -> Checked:
    """Check one buffer and build its diagnostics; never raises (runs on the worker thread)."""
    lines = split_lines(job.text)
    checked = Checked(
        job.uri, job.version, job.text, job.generation, result_id(job.text, job.generation), lines
    )
    try:
        _analyse(job, checked)
    except Exception:  # a bug of ours: log it, keep the server (and the editor) running
        checked.diagnostics = []
        checked.safe_fixes = []
        checked.crash = traceback.format_exc()
    return checked


def _analyse(job: Job, checked: Checked) -> None:
    path = _fs_path(job.uri)
    # An unsaved new buffer ("untitled:") gets the settings of the workspace root.
    lookup = path or (job.root / "untitled.py" if job.root is not None else None)
    config = Config()
    if lookup is not None:
        try:
            config = job.resolver.for_path(lookup)
        except ConfigError as exc:
            checked.config_error = str(exc)
    if path is not None and _excluded(config, path):
        return  # excluded by the project's config: no diagnostics, as with ruff server
    settings = settings_for(config, CliOverrides(), lookup or Path.cwd() / "untitled.py")
    module_name: str | None = None
    is_package = False
    if path is not None:
        from distlint.syntax.imports import module_name_for

        module_name, is_package = module_name_for(path)
    display = str(path) if path is not None else job.uri
    if path is None:
        result = check_source(job.text, display, settings, module_name, is_package)
    else:
        result = _check_in_project(job, path, display, settings)
    checked.tool_errors = tuple(error.message for error in result.errors)
    info: LineInfo | None = None
    for finding in result.findings:
        if info is None and finding.code not in _NOT_SUPPRESSIBLE:
            info = LineInfo(job.text, checked.lines)
        checked.diagnostics.append(_diagnostic(job, checked.lines, display, finding, info))
        fix = finding.fix
        if fix is not None and fix.edits and fix.applicability is Applicability.SAFE:
            checked.safe_fixes.append([_code_point_edit(e.span, e.content) for e in fix.edits])


def _check_in_project(job: Job, path: Path, display: str, settings: FileSettings) -> FileResult:
    """The buffer as that file of its project: the files it imports and those importing it
    are linked with it (open buffers replacing their files), through the first-pass cache at
    the project root, so cross-file findings reach the editor as they reach ``check .``."""
    from distlint.config.project_files import project_root
    from distlint.engine.cache import FirstPassCache, default_directory
    from distlint.engine.runner import Task, context_tasks, run

    data = job.text.encode("utf-8", "surrogatepass")
    contents = {Path(p): t.encode("utf-8", "surrogatepass") for p, t in job.other_texts.items()}
    contents[path] = data
    cwd = job.root or path.parent
    context = context_tasks([path], [path], job.resolver, CliOverrides(), cwd, contents, True)
    tasks = [Task(path, display, settings, data=data)]
    tasks += [replace(task, data=contents.get(task.path)) for task in context]
    cache = None
    if not os.environ.get("DISTLINT_NO_CACHE"):
        root = project_root(path)
        if root is not None:  # a file outside any project leaves no cache behind
            cache = FirstPassCache.open(default_directory(root))
    return run(tasks, 1, cache=cache)[0]


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


def _position(lines: list[str], row: int, column: int, encoding: str) -> types.Position:
    line = lines[row] if 0 <= row < len(lines) else ""
    return types.Position(line=max(row, 0), character=to_client_units(line, column, encoding))


def _span_range(lines: list[str], span: Span, encoding: str) -> types.Range:
    return types.Range(
        start=_position(lines, span.start.line - 1, span.start.column - 1, encoding),
        end=_position(lines, span.end.line - 1, span.end.column - 1, encoding),
    )


def _edit_range(lines: list[str], edit: TextEdit, encoding: str) -> types.Range:
    return types.Range(
        start=_position(lines, *edit.start, encoding),
        end=_position(lines, *edit.end, encoding),
    )


def _range_dict(rng: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


def _diagnostic(
    job: Job, lines: list[str], display: str, finding: Finding, info: LineInfo | None
) -> types.Diagnostic:
    encoding = job.features.encoding
    fix_data = None
    if finding.fix is not None and finding.fix.edits:
        fix_data = {
            "title": finding.fix.title,
            "applicability": finding.fix.applicability.value,
            "edits": [
                {
                    "range": _range_dict(
                        _edit_range(lines, _code_point_edit(e.span, e.content), encoding)
                    ),
                    "newText": e.content,
                }
                for e in finding.fix.edits
            ],
        }
    noqa_data = None
    if info is not None and finding.code not in _NOT_SUPPRESSIBLE:
        edit = noqa_edit(info, finding.span.start.line - 1, finding.code)
        if edit is not None:
            noqa_data = {
                "range": _range_dict(_edit_range(lines, edit, encoding)),
                "newText": edit.new_text,
            }
    message = finding.message
    related = None
    if job.features.related_information and headline(message) != message:
        # the problems list shows a line: the headline, and the whole message as the first
        # related entry (at the finding itself); hover shows it too
        message = headline(finding.message)
        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=job.uri, range=_span_range(lines, finding.span, encoding)
                ),
                message=finding.message,
            )
        ]
    if finding.related:
        if job.features.related_information:
            related = (related or []) + [
                types.DiagnosticRelatedInformation(
                    location=types.Location(
                        uri=_location_uri(job, display, loc.path),
                        range=_span_range(
                            _lines_of(job, display, lines, loc.path), loc.span, encoding
                        ),
                    ),
                    message=loc.message or "related location",
                )
                for loc in finding.related
            ]
        else:  # the client cannot show related locations: name them in the message
            places = "; ".join(
                f"{loc.message or 'see'}: line {loc.span.start.line}" for loc in finding.related
            )
            message = f"{message} ({places})"
    tags = None
    if finding.code == "DL001" and job.features.unnecessary_tag:
        tags = [types.DiagnosticTag.Unnecessary]
    return types.Diagnostic(
        range=_span_range(lines, finding.span, encoding),
        message=message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_url(finding.code)),
        source=SOURCE,
        related_information=related,
        tags=tags,
        data={"code": finding.code, "name": finding.name, "fix": fix_data, "noqa": noqa_data},
    )


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
        self.inflight: dict[str, tuple[str, int, asyncio.Future[Checked]]] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="distlint-check")
        self.shown_config_errors: set[str] = set()
        self.logged: set[str] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def initialize(self, params: types.InitializeParams) -> None:
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
        registration = types.Registration(
            id=WATCHER_ID,
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
        )
        try:
            await self.ls.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:  # the client refused: config changes are seen on save only
            self.log(types.MessageType.Info, f"distlint: file watcher not registered: {exc}")

    def shutdown(self) -> None:
        for task in self.pending.values():
            task.cancel()
        self.pending.clear()
        self.executor.shutdown(wait=False, cancel_futures=True)

    # -- documents ---------------------------------------------------------------------------

    def opened(self, uri: str, language_id: str | None) -> None:
        if not _is_python(uri, language_id):
            return
        self.open_uris.add(uri)
        self.schedule(uri, 0.0)

    def changed(self, uri: str) -> None:
        if uri in self.open_uris:
            self.schedule(uri, self.debounce)

    def saved(self, uri: str) -> None:
        if uri.rsplit("/", 1)[-1] in CONFIG_NAMES:
            self.reload_config()
        elif uri in self.open_uris:
            self.schedule(uri, 0.0)

    def closed(self, uri: str) -> None:
        self.open_uris.discard(uri)
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.checked.pop(uri, None)
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def watched_files_changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.rsplit("/", 1)[-1] in CONFIG_NAMES for change in params.changes):
            self.reload_config()

    def reload_config(self) -> None:
        """Forget every loaded config and re-check the open documents."""
        self.resolver = ConfigResolver()
        self.generation += 1
        self.shown_config_errors.clear()
        for uri in sorted(self.open_uris):
            self.schedule(uri, 0.0)
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
                uri=checked.uri, version=checked.version, diagnostics=checked.diagnostics
            )
        )

    async def current(self, uri: str) -> Checked:
        """The check of the document's current text: cached, in progress, or started now."""
        document = self.ls.workspace.get_text_document(uri)
        text = document.source
        state = self.checked.get(uri)
        if state is not None and state.text == text and state.generation == self.generation:
            return state
        flight = self.inflight.get(uri)
        if flight is not None and flight[0] == text and flight[1] == self.generation:
            return await asyncio.shield(flight[2])
        job = Job(
            uri=uri,
            version=document.version,
            text=text,
            generation=self.generation,
            resolver=self.resolver,
            features=self.features,
            root=self._root(),
            other_texts=self._other_open_documents(uri),
        )
        future = asyncio.get_running_loop().run_in_executor(self.executor, analyse, job)
        entry = (text, self.generation, future)
        self.inflight[uri] = entry
        future.add_done_callback(lambda done: self._finished(uri, entry, done))
        return await asyncio.shield(future)

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

    def _finished(self, uri: str, entry: tuple, future: asyncio.Future[Checked]) -> None:
        if self.inflight.get(uri) is entry:
            del self.inflight[uri]
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:  # pragma: no cover - analyse() catches everything
            self.log(types.MessageType.Error, f"distlint: checking {uri} failed: {exc!r}")
            return
        checked = future.result()
        if checked.crash is not None:
            self.log(
                types.MessageType.Error,
                f"distlint: internal error while checking {uri}; no diagnostics for this "
                f"version (please report it):\n{checked.crash}",
            )
        for message in checked.tool_errors:
            self.log(types.MessageType.Warning, f"distlint: {uri}: {message}")
        if checked.config_error is not None:
            self.config_error(checked.config_error)
        if uri in self.open_uris and checked.generation == self.generation:
            self.checked[uri] = checked

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
            items=checked.diagnostics, result_id=checked.result_id
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
                state = await self.current(uri)
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
                                        range=_edit_range(state.lines, edit, encoding),
                                        new_text=edit.new_text,
                                    )
                                    for edit in edits
                                ]
                            }
                        ),
                    )
                )
        return actions

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
            if d.source == SOURCE
            and (d.range.start.line, d.range.start.character)
            <= point
            <= (d.range.end.line, d.range.end.character)
        ]
        if not hits:
            return None
        parts = []
        for diagnostic in hits:
            code = str(diagnostic.code)
            rule = get_rule(code)
            title = f"**{code} {rule.name}**: {rule.summary}" if rule else f"**{code}**"
            link = f"\n\n[{code} documentation]({rule_url(code)})"
            parts.append(f"{title}\n\n{diagnostic.message}{link}")
        contents = _markup(self.ls.client_capabilities, "\n\n---\n\n".join(parts))
        return types.Hover(contents=contents, range=hits[0].range if len(hits) == 1 else None)


def _is_python(uri: str, language_id: str | None) -> bool:
    if language_id:
        return language_id.lower() == "python"
    return uri.endswith((".py", ".pyi"))


def _wanted(only: list[str] | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == want or kind.startswith(f"{want}.") for want in only)


def _text_edits(edits: list[dict[str, Any]]) -> list[types.TextEdit]:
    return [
        types.TextEdit(
            range=types.Range(
                start=types.Position(**edit["range"]["start"]),
                end=types.Position(**edit["range"]["end"]),
            ),
            new_text=edit["newText"],
        )
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
    ls = LanguageServer("distlint", __version__)
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
        server.start_io(stdin, stdout)
    else:
        server.start_tcp(host, tcp_port)
