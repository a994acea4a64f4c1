"""Analysis out of the server process: a check that raises, crashes its process, recurses,
runs out of memory or past its budget costs that version's diagnostics only (a DL000, never an
empty list); newer versions supersede older checks; requests are answered while a check runs;
the server process never parses. One hooked server (tests/lsp/helpers.py HOOKS) for the module.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from bench.lsp_latency import training_script
from tests.lsp.helpers import (
    TIMEOUT,
    Doc,
    alive,
    analyses,
    codes,
    descendants,
    hooked_server_config,
    position_of,
    resident_bytes,
    until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

LOG = Path(tempfile.mkdtemp(prefix="distlint-lsp-")) / "analyses.log"
NVFUSER = 'import torch\n\n\ndef f(x):\n    return x\n\n\nc = torch.compile(f, backend="nvfuser")\n'
DEBOUNCE = 0.6
FAST = 2.0  # seconds: a request answered while a check runs (~100 ms; generous for a busy box)


@pytest_lsp.fixture(config=hooked_server_config(LOG), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("robustness")
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=tmp_path.as_uri(),
            initialization_options={"debounce": DEBOUNCE},
        )
    )
    lsp_client.root = tmp_path
    lsp_client.encoding = "utf-16"
    lsp_client.pull = False
    yield
    await lsp_client.shutdown_session()
    assert lsp_client._server.returncode == 0


def server_pid(client) -> int:
    return client._server.pid


def analysed(doc: Doc) -> list[tuple[int, int]]:
    """(pid, version) of each analysis of ``doc`` so far."""
    return [(pid, version) for pid, uri, version in analyses(LOG) if uri == doc.uri]


def only_dl000(diagnostics: list[types.Diagnostic]) -> types.Diagnostic:
    assert codes(diagnostics) == ["DL000"], diagnostics
    (diagnostic,) = diagnostics
    assert diagnostic.range.start == types.Position(line=0, character=0)
    return diagnostic


def whole_message(diagnostic: types.Diagnostic) -> str:
    """The whole message (VS Code gets the headline, and the whole as the first related)."""
    if diagnostic.related_information:
        return diagnostic.related_information[0].message
    return diagnostic.message


async def test_exception_while_checking_is_a_dl000_and_logged(client):
    boom = Doc(client, client.root / "boom.py", NVFUSER + "BOOM = 1\n")
    dl000 = only_dl000(await boom.open_and_wait())
    assert dl000.severity == types.DiagnosticSeverity.Error
    message = whole_message(dl000)
    assert message.startswith("distlint could not check this file: internal error")
    assert "RuntimeError: injected failure" in message

    def logged():
        return [m for m in client.log_messages if "injected failure" in m.message]

    await until(logged, "the log message")
    (log,) = logged()
    assert log.type == types.MessageType.Error
    assert "internal error while checking" in log.message
    assert "Traceback" in log.message

    # The server still works: another document, and the same one once it stops crashing.
    good = Doc(client, client.root / "good.py", NVFUSER)
    assert codes(await good.open_and_wait()) == ["DL502"]
    assert codes(await boom.change_and_wait(NVFUSER)) == ["DL502"]


async def test_a_rule_error_adds_a_warning_to_the_findings(client):
    doc = Doc(client, client.root / "rulebug.py", NVFUSER + "RULEBUG = 1\n")
    diagnostics = await doc.open_and_wait()
    assert codes(diagnostics) == ["DL000", "DL502"]  # the other rules' findings stay
    dl000 = next(d for d in diagnostics if d.code == "DL000")
    assert dl000.severity == types.DiagnosticSeverity.Warning
    assert whole_message(dl000) == (
        "distlint could not fully check this file: "
        "internal error in rule DL999 (test): ValueError: bug"
    )
    assert codes(await doc.change_and_wait(NVFUSER)) == ["DL502"]


async def test_a_crashed_analysis_process_is_a_dl000_and_is_replaced(client):
    doc = Doc(client, client.root / "segv.py", NVFUSER + "SEGV = 1\n")
    dl000 = only_dl000(await doc.open_and_wait())
    assert dl000.severity == types.DiagnosticSeverity.Error
    message = whole_message(dl000)
    assert message.startswith("distlint could not check this file: ")
    assert "SIGSEGV" in message
    ((dead, _),) = analysed(doc)
    assert not alive(dead)
    assert dead != server_pid(client)
    # a new process checks the next version, and other documents
    assert codes(await doc.change_and_wait(NVFUSER)) == ["DL502"]
    ((_, _), (fresh, _)) = analysed(doc)
    assert fresh != dead and alive(fresh)
    other = Doc(client, client.root / "after_segv.py", NVFUSER)
    assert codes(await other.open_and_wait()) == ["DL502"]


@pytest.mark.parametrize(
    ("keyword", "error"), [("RECURSE", "RecursionError"), ("NOMEMORY", "MemoryError")]
)
async def test_recursion_and_memory_errors_are_a_dl000(client, keyword, error):
    doc = Doc(client, client.root / f"{keyword.lower()}.py", NVFUSER + f"{keyword} = 1\n")
    message = whole_message(only_dl000(await doc.open_and_wait()))
    assert message.startswith("distlint could not check this file: internal error")
    assert error in message
    assert codes(await doc.change_and_wait(NVFUSER)) == ["DL502"]


async def test_a_check_past_its_budget_is_a_dl000(client):
    folder = client.root / "budget"
    folder.mkdir()
    (folder / "distlint.toml").write_text("file-timeout = 1\n", encoding="utf-8")
    doc = Doc(client, folder / "spin.py", NVFUSER + "SPIN = 1\n")
    started = time.monotonic()
    message = whole_message(only_dl000(await doc.open_and_wait()))
    assert time.monotonic() - started < 4 * 1 + 10  # CPU budget, or 4x it in wall time
    assert message == (
        "distlint could not check this file: its analysis exceeded the 1 s budget (file-timeout)"
    )
    ((spun, _),) = analysed(doc)
    assert not alive(spun)  # killed
    assert codes(await doc.change_and_wait(NVFUSER)) == ["DL502"]


async def test_a_newer_version_supersedes_the_running_check(client):
    doc = Doc(client, client.root / "supersede.py", NVFUSER + "SLEEP = 1\n")
    doc.open()
    await until(lambda: analysed(doc), "the slow check to start")
    ((slow, _),) = analysed(doc)
    count = doc.pushed_count()
    started = time.monotonic()
    doc.change(NVFUSER)
    published = await doc.pushed_after(count)
    assert time.monotonic() - started < 30  # the slow check would take 60 s
    assert published.version == 2 and codes(list(published.diagnostics)) == ["DL502"]
    # the older version's check was stopped (its process killed) and never published
    assert [p.version for p in client.published[doc.uri]] == [2]
    assert [version for _, version in analysed(doc)] == [1, 2]
    assert not alive(slow)


async def test_rapid_edits_are_coalesced(client):
    doc = Doc(client, client.root / "rapid.py", NVFUSER)
    assert codes(await doc.open_and_wait()) == ["DL502"]
    count = doc.pushed_count()
    for i in range(200):
        doc.change(NVFUSER + f"x = {i}\n")
    published = await doc.pushed_after(count)
    assert published.version == 201
    assert codes(list(published.diagnostics)) == ["DL502"]
    await asyncio.sleep(DEBOUNCE)
    versions = [version for _, version in analysed(doc)]
    assert versions[0] == 1 and versions[-1] == 201
    assert len(versions) <= 3  # not 200 checks
    assert [p.version for p in client.published[doc.uri]][count:] == [201]


async def hover(client, doc: Doc, position: types.Position) -> tuple[types.Hover | None, float]:
    started = time.monotonic()
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(doc.uri), position=position
    )
    result = await asyncio.wait_for(client.text_document_hover_async(params), TIMEOUT)
    return result, time.monotonic() - started


async def test_requests_are_answered_while_a_check_runs(client):
    text = NVFUSER.replace('"nvfuser")', '"nvfuser")  # noqa: DL502') + "SLEEP = 1\n"
    doc = Doc(client, client.root / "busy.py", text)
    doc.open()
    await until(lambda: analysed(doc), "the slow check to start")
    result, took = await hover(client, doc, position_of(text, "DL502", "utf-16"))
    assert took < FAST
    assert "invalid-compile-option" in result.contents.value
    started = time.monotonic()
    actions = await doc.code_actions([])  # the light bulb: no waiting for the check
    assert time.monotonic() - started < FAST
    assert actions == []
    assert doc.pushed_count() == 0  # the check was still running all along
    doc.close()


async def test_hover_is_answered_while_a_large_buffer_is_checked(client):
    """No hook: the real check of a large buffer, long compared to a request."""
    text = training_script(6000)
    doc = Doc(client, client.root / "large.py", text)
    doc.open()
    started = time.monotonic()
    result, took = await hover(client, doc, position_of(text, "import torch", "utf-16"))
    answered = time.monotonic()
    assert result is None and took < FAST
    published = await doc.pushed_after(0)
    assert time.monotonic() > answered  # the hover came first, while the check ran
    assert published.version == 1 and "DL502" in codes(list(published.diagnostics))
    print(f"\nhover {took * 1000:.0f} ms; diagnostics after {time.monotonic() - started:.1f} s")
    doc.close()


def tree_bytes(pid: int) -> int:
    """Resident memory of the server and its analysis process(es)."""
    return sum(resident_bytes(p) for p in [pid, *descendants(pid)])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_memory_goes_back_after_a_large_check(client):
    warm = Doc(client, client.root / "warm.py", NVFUSER)
    assert codes(await warm.open_and_wait()) == ["DL502"]
    idle = tree_bytes(server_pid(client))
    doc = Doc(client, client.root / "hog.py", NVFUSER + "HOG = 1\n")
    assert codes(await doc.open_and_wait()) == ["DL502"]  # its process grew by 400 MB
    ((hog, _),) = analysed(doc)
    assert alive(hog)  # kept while the document is open (the next edit needs no new one)
    doc.close()
    await until(lambda: not alive(hog), "the grown analysis process to be replaced")
    after = tree_bytes(server_pid(client))
    assert after < 2 * idle, (idle, after)
    assert codes(await warm.change_and_wait(NVFUSER + "\n")) == ["DL502"]


async def test_the_server_process_never_parses(client):
    doc = Doc(client, client.root / "parse.py", NVFUSER)
    assert codes(await doc.open_and_wait()) == ["DL502"]
    (pid, _), *_ = analysed(doc)
    assert pid != server_pid(client)
    assert "PARSED-IN-SERVER" not in LOG.read_text(encoding="utf-8")


async def test_debounce_from_initialization_options(client):
    doc = Doc(client, client.root / "debounce.py", "x = 1\n")
    assert await doc.open_and_wait() == []
    count = doc.pushed_count()
    started = time.monotonic()
    doc.change(NVFUSER)
    await asyncio.sleep(DEBOUNCE / 2)
    assert doc.pushed_count() == count  # still waiting out the debounce
    published = await doc.pushed_after(count)
    assert time.monotonic() - started >= DEBOUNCE
    assert codes(list(published.diagnostics)) == ["DL502"]
