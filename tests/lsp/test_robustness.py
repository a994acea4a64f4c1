"""A check that raises is logged and never ends the server; initializationOptions apply."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.lsp.helpers import TIMEOUT, Doc, codes, server_config

# The real server, with the check failing for buffers that contain "BOOM".
BOOT = """
import distlint.lsp.server as server
real = server._check_in_project
def check_in_project(job, *args, **kwargs):
    if "BOOM" in job.text:
        raise RuntimeError("injected failure")
    return real(job, *args, **kwargs)
server._check_in_project = check_in_project
server.main()
"""

pytestmark = pytest.mark.asyncio(loop_scope="module")

NVFUSER = 'import torch\n\n\ndef f(x):\n    return x\n\n\nc = torch.compile(f, backend="nvfuser")\n'
DEBOUNCE = 0.6


@pytest_lsp.fixture(config=server_config([sys.executable, "-c", BOOT]), scope="module")
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


async def test_exception_while_checking_is_logged_and_server_survives(client):
    boom = Doc(client, client.root / "boom.py", NVFUSER + "BOOM = 1\n")
    assert await boom.open_and_wait() == []

    def logged():
        return [m for m in client.log_messages if "injected failure" in m.message]

    deadline = time.monotonic() + TIMEOUT
    while not logged() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    (message,) = logged()
    assert message.type == types.MessageType.Error
    assert "internal error while checking" in message.message
    assert "RuntimeError: injected failure" in message.message

    # The server still works: another document, and the same one once it stops crashing.
    good = Doc(client, client.root / "good.py", NVFUSER)
    assert codes(await good.open_and_wait()) == ["DL502"]
    assert codes(await boom.change_and_wait(NVFUSER)) == ["DL502"]


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
