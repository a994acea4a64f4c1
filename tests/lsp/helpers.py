"""Client-side helpers for the end-to-end LSP tests (independent of distlint.lsp's code)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0  # seconds; generous so a slow CI machine cannot flake

ENCODING_OF = {"visual-studio-code": "utf-16", "neovim@v0.11.0": "utf-8", "emacs": "utf-32"}
CLIENTS = list(ENCODING_OF)


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def make_client() -> LanguageClient:
    """pytest-lsp's client, recording every publishDiagnostics and capability registration."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = defaultdict(list)  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    def on_publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.published[params.uri].append(params)  # type: ignore[attr-defined]

    def on_register(ls: LanguageClient, params: types.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    features[types.CLIENT_REGISTER_CAPABILITY] = on_register
    register_lsp_features(client, features)
    return client


def server_config(
    command: list[str] | None = None, env: dict[str, str] | None = None
) -> ClientServerConfig:
    return ClientServerConfig(
        server_command=command or [sys.executable, "-m", "distlint", "server"],
        server_env={**server_env(), **(env or {})},
        client_factory=make_client,
    )


# -- a server whose analysis misbehaves on request -------------------------------------------------

# The real server, with the project check replaced by one that logs each analysis
# ("<pid> <uri> <version>" per line, to the file named by argv[1]) and misbehaves on buffers
# containing a keyword: BOOM raises, SEGV kills its process, RECURSE and NOMEMORY raise
# RecursionError and MemoryError, SPIN loops, SLEEP sleeps 60 s, CHILD starts `sleep 60`
# (logged with "#child" after the URI), HOG keeps 400 MB, RULEBUG adds a rule's error to the
# result. Forked analysis processes inherit the hooks (spawned ones do not). A libcst parse in
# the server process itself is logged as "PARSED-IN-SERVER".
HOOKS = r"""
import os, signal, sys, time
from pathlib import Path

SERVER = os.getpid()
LOG = Path(sys.argv[1])


def note(line):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


import libcst

parse_module = libcst.parse_module


def guarded_parse(*args, **kwargs):
    if os.getpid() == SERVER:
        note("PARSED-IN-SERVER")
    return parse_module(*args, **kwargs)


libcst.parse_module = guarded_parse

import distlint.lsp.server as server

real = server._check_in_project
HOG = []


def check_in_project(job, *args, **kwargs):
    note(f"{os.getpid()} {job.uri} {job.version}")
    text = job.text
    if "BOOM" in text:
        raise RuntimeError("injected failure")
    if "SEGV" in text:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "RECURSE" in text:
        def down(n):
            return down(n + 1)
        down(0)
    if "NOMEMORY" in text:
        bytearray(1 << 62)
    if "SPIN" in text:
        while True:
            pass
    if "CHILD" in text:  # a process of its own, e.g. the parser isolated in one
        import subprocess

        child = subprocess.Popen(["sleep", "60"])
        note(f"{child.pid} {job.uri}#child {job.version}")
    if "SLEEP" in text:
        time.sleep(60)
    if "HOG" in text:  # 400 MB kept by the analysis process
        HOG.append(b"x" * (400 << 20))
    result = real(job, *args, **kwargs)
    if "RULEBUG" in text:  # as when a rule raises: its error comes with the other findings
        from distlint.engine.results import FileResult
        from distlint.findings import ToolError

        bug = ToolError(result.path, "internal error in rule DL999 (test): ValueError: bug")
        return FileResult(result.path, result.findings, (bug,), result.suppressed)
    return result


server._check_in_project = check_in_project
server.main()
"""


def hooked_server_config(log: Path, env: dict[str, str] | None = None) -> ClientServerConfig:
    return server_config([sys.executable, "-c", HOOKS, str(log)], env)


def analyses(log: Path) -> list[tuple[int, str, int]]:
    """(pid, uri, version) of each analysis the hooked server's processes started."""
    if not log.exists():
        return []
    found = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if line != "PARSED-IN-SERVER":
            pid, uri, version = line.split(" ")
            found.append((int(pid), uri, int(version)))
    return found


async def until(predicate, what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


# -- processes (Linux /proc) -----------------------------------------------------------------------


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[0] != b"Z":
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def resident_bytes(pid: int) -> int:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


# -- positions, computed independently of the server's converter ----------------------------------


def units(prefix: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-16":
        return len(prefix.encode("utf-16-le")) // 2
    return len(prefix)


def _find(text: str, needle: str, occurrence: int) -> int:
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    return index


def position_of(text: str, needle: str, encoding: str, occurrence: int = 0) -> types.Position:
    """The client position of the ``occurrence``-th ``needle`` in ``text``."""
    index = _find(text, needle, occurrence)
    line_start = text.rfind("\n", 0, index) + 1
    return types.Position(
        line=text.count("\n", 0, index), character=units(text[line_start:index], encoding)
    )


def range_of(text: str, needle: str, encoding: str, occurrence: int = 0) -> types.Range:
    """The client range of the ``occurrence``-th ``needle`` (on one line) in ``text``."""
    index = _find(text, needle, occurrence)
    line_start = text.rfind("\n", 0, index) + 1
    start = position_of(text, needle, encoding, occurrence)
    end = units(text[line_start : index + len(needle)], encoding)
    return types.Range(start=start, end=types.Position(line=start.line, character=end))


def _offset(lines: list[str], position: types.Position, encoding: str) -> int:
    offset = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    count = 0
    for index, char in enumerate(line):
        if count >= position.character:
            return offset + index
        count += units(char, encoding)
    return offset + len(line)


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """What an editor does with a WorkspaceEdit's TextEdits ('\n' line ends only)."""
    lines = text.split("\n")
    spans = [
        (_offset(lines, e.range.start, encoding), _offset(lines, e.range.end, encoding), e.new_text)
        for e in edits
    ]
    for start, end, new_text in sorted(spans, reverse=True):
        text = text[:start] + new_text + text[end:]
    return text


# -- document helpers ------------------------------------------------------------------------------


class Doc:
    """An open document of the test client, with its text and version."""

    def __init__(self, client: LanguageClient, path: Path | str, text: str) -> None:
        """``path``: a file (written with ``text``), or a URI such as ``untitled:Untitled-1``."""
        self.client = client
        self.text = text
        self.version = 1
        if isinstance(path, str):
            self.uri = path
            return
        self.uri = path.as_uri()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    @property
    def encoding(self) -> str:
        return self.client.encoding  # type: ignore[attr-defined]

    def open(self) -> None:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=self.uri, language_id="python", version=self.version, text=self.text
                )
            )
        )

    def change(self, text: str) -> None:
        self.text = text
        self.version += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def close(self) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(self.uri))
        )

    def pushed_count(self) -> int:
        return len(self.client.published[self.uri])  # type: ignore[attr-defined]

    async def pushed_after(self, count: int) -> types.PublishDiagnosticsParams:
        """Wait for a publishDiagnostics for this document beyond the first ``count`` ones."""
        published = self.client.published[self.uri]  # type: ignore[attr-defined]
        deadline = time.monotonic() + TIMEOUT
        while len(published) <= count:
            if time.monotonic() > deadline:
                raise AssertionError(f"no diagnostics published for {self.uri}")
            await asyncio.sleep(0.005)
        return published[-1]

    async def pull(self, previous: str | None = None) -> Any:
        return await asyncio.wait_for(
            self.client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(
                    text_document=types.TextDocumentIdentifier(self.uri),
                    previous_result_id=previous,
                )
            ),
            TIMEOUT,
        )

    async def diagnostics_after(self, count: int) -> list[types.Diagnostic]:
        """The current diagnostics the way this client gets them (pushed or pulled)."""
        if self.client.pull:  # type: ignore[attr-defined]
            report = await self.pull()
            assert report.kind == "full"
            return list(report.items)
        params = await self.pushed_after(count)
        assert params.version == self.version
        return list(params.diagnostics)

    async def open_and_wait(self) -> list[types.Diagnostic]:
        count = self.pushed_count()
        self.open()
        return await self.diagnostics_after(count)

    async def change_and_wait(self, text: str) -> list[types.Diagnostic]:
        count = self.pushed_count()
        self.change(text)
        return await self.diagnostics_after(count)

    async def code_actions(
        self,
        diagnostics: list[types.Diagnostic],
        only: list[str] | None = None,
        rng: types.Range | None = None,
    ) -> list[types.CodeAction]:
        if rng is None:
            rng = (
                diagnostics[0].range
                if diagnostics
                else types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=0, character=0),
                )
            )
        result = await asyncio.wait_for(
            self.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(self.uri),
                    range=rng,
                    context=types.CodeActionContext(diagnostics=diagnostics, only=only),
                )
            ),
            TIMEOUT,
        )
        return list(result or [])

    def edited(self, action: types.CodeAction) -> str:
        assert action.edit is not None and action.edit.changes is not None
        assert list(action.edit.changes) == [self.uri]
        return apply_edits(self.text, list(action.edit.changes[self.uri]), self.encoding)


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)
