"""The server's process and its analysis process: ``exit`` ends both at once, whatever is
being analysed (status 0 after ``shutdown``, 1 without), nothing the analysis started
survives, the analysis process dies with a killed server, and spawned analysis processes
(macOS, Windows) give the same diagnostics as forked ones. One server per test."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from distlint.engine.runner import START_METHOD_VARIABLE
from tests.lsp.helpers import (
    TIMEOUT,
    Doc,
    alive,
    analyses,
    codes,
    hooked_server_config,
    server_config,
    until,
)

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

LOG = Path(tempfile.mkdtemp(prefix="distlint-lsp-")) / "analyses.log"
NVFUSER = 'import torch\n\n\ndef f(x):\n    return x\n\n\nc = torch.compile(f, backend="nvfuser")\n'
PROMPT = 5.0  # seconds: "at once", generous for a busy machine (the slow check takes 60 s)
FAST = 2.0  # seconds: a request answered while a check runs (~100 ms; generous)


async def initialize(client: LanguageClient, root: Path, spec: str = "visual-studio-code") -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(spec),
            root_uri=root.as_uri(),
            initialization_options={"debounce": 0.1},
        )
    )
    client.root = root
    client.encoding = "utf-16"
    client.pull = spec.startswith("neovim")


@pytest_lsp.fixture(config=hooked_server_config(LOG))
async def client(lsp_client: LanguageClient, tmp_path):
    await initialize(lsp_client, tmp_path)
    yield  # each test ends the server itself


@pytest_lsp.fixture(config=hooked_server_config(LOG))
async def puller(lsp_client: LanguageClient, tmp_path):
    await initialize(lsp_client, tmp_path, "neovim@v0.11.0")
    yield
    await lsp_client.shutdown_session()
    assert lsp_client._server.returncode == 0


@pytest_lsp.fixture(config=server_config(env={START_METHOD_VARIABLE: "spawn"}))
async def spawning(lsp_client: LanguageClient, tmp_path):
    await initialize(lsp_client, tmp_path)
    yield
    await lsp_client.shutdown_session()
    assert lsp_client._server.returncode == 0


async def slow_check(client, child: bool = True) -> list[int]:
    """Open a document whose check takes 60 s (and starts a child process); return the pids
    of the analysis process (and of its child) once they run."""
    text = NVFUSER + ("CHILD = 1\n" if child else "") + "SLEEP = 1\n"
    doc = Doc(client, client.root / "slow.py", text)
    doc.open()
    suffixes = ["", "#child"] if child else [""]

    def pids() -> list[int]:
        entries = analyses(LOG)
        return [pid for suffix in suffixes for pid, uri, _ in entries if uri == doc.uri + suffix]

    await until(lambda: len(pids()) == len(suffixes), "the slow check to start")
    return pids()


async def exited(client) -> int:
    return await asyncio.wait_for(client._server.wait(), TIMEOUT)


async def test_exit_after_shutdown_is_prompt_and_status_0(client):
    worker, child = await slow_check(client)
    assert alive(worker) and alive(child)
    assert os.getpgid(worker) == worker == os.getpgid(child)  # killed as one group
    assert os.getpgid(worker) != os.getpgid(client._server.pid)
    # the kernel's first choice when memory runs out (not the editor, not the server)
    assert Path(f"/proc/{worker}/oom_score_adj").read_text().strip() == "1000"
    started = time.monotonic()
    await asyncio.wait_for(client.shutdown_async(None), FAST)
    client.exit(None)
    assert await exited(client) == 0
    assert time.monotonic() - started < PROMPT
    await until(lambda: not alive(worker) and not alive(child), "no orphans", PROMPT)


async def test_exit_without_shutdown_is_prompt_and_status_1(client):
    worker, child = await slow_check(client)
    started = time.monotonic()
    client.exit(None)
    assert await exited(client) == 1
    assert time.monotonic() - started < PROMPT
    await until(lambda: not alive(worker) and not alive(child), "no orphans", PROMPT)


async def test_the_analysis_process_dies_with_a_killed_server(client):
    (worker,) = await slow_check(client, child=False)
    client._server.send_signal(signal.SIGKILL)
    assert await exited(client) == -signal.SIGKILL
    await until(lambda: not alive(worker), "the analysis process to die", PROMPT)


async def test_spawned_analysis_processes_give_the_same_diagnostics(spawning):
    client = spawning
    doc = Doc(client, client.root / "train.py", NVFUSER)
    found = await doc.open_and_wait()
    assert codes(found) == ["DL502"]
    assert found[0].range.start.line == 7
    assert codes(await doc.change_and_wait(NVFUSER + "BROKEN(\n")) == ["DL000"]


async def test_a_pull_waiting_on_a_superseded_check_gets_the_newest_text(puller):
    client = puller
    doc = Doc(client, client.root / "pulled.py", NVFUSER + "SLEEP = 1\n")
    doc.open()
    pulled = asyncio.ensure_future(doc.pull())
    await until(lambda: [u for _, u, _ in analyses(LOG) if u == doc.uri], "the slow check")
    assert not pulled.done()
    started = time.monotonic()
    doc.change(NVFUSER)
    report = await pulled
    assert time.monotonic() - started < 30  # the slow check would take 60 s
    assert report.kind == "full" and codes(list(report.items)) == ["DL502"]
    assert [v for _, u, v in analyses(LOG) if u == doc.uri] == [1, 2]
