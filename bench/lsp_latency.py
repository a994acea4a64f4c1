"""Time the language server's diagnostics for a large buffer against a bare parse of it.

Starts ``distlint server`` (stdio), opens a generated training script of ``--lines`` lines
in a fresh temporary project (a push client, no debounce) and times didOpen -> the first
publishDiagnostics, then ``--edits`` edits (each a new text, so no cache hit) -> their
publishDiagnostics. Right before each of them it times ``libcst.parse_module`` of the same
text in this process (best of two), so that each ratio compares two figures taken under the
same load. Prints the medians and the median ratio; absolute figures from a quiet machine
only.

    python bench/lsp_latency.py --lines 3000 --edits 3

``--workspace DIR --file REL`` opens DIR as the workspace and edits its file REL instead (a
buffer in a large project: what finding its context costs at each edit); ``--watch`` makes
the client register the server's file watchers (the workspace index then trusts their
events instead of looking at every file's status). Fill the project's cache first (a
``distlint check DIR``, or one didOpen): a cold first check of a large project runs past the
editor's budget.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import libcst
from lsprotocol import types
from pygls.lsp.client import LanguageClient


def training_script(lines: int) -> str:
    """Realistic distributed-training code: ~2 findings per 200 lines (DL502 and DL203)."""
    head = [
        "import os",
        "",
        "import torch",
        "import torch.distributed as dist",
        "import torch.nn as nn",
        "from torch.nn.parallel import DistributedDataParallel as DDP",
        "",
    ]
    out = list(head)
    block = 0
    while len(out) + 20 <= lines:
        block += 1
        bad_backend = '"nvfuser"' if block % 10 == 0 else '"inductor"'
        collective = (
            "    dist.all_gather_object(gathered, {'loss': float(loss)})  # 🚀 metrics"
            if block % 10 == 5
            else "    gathered = [loss]"
        )
        out += [
            "",
            f"class Block{block}(nn.Module):",
            "    def __init__(self, dim: int = 512) -> None:",
            "        super().__init__()",
            "        self.proj = nn.Linear(dim, dim)",
            "        self.norm = nn.LayerNorm(dim)",
            "",
            "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
            "        return self.norm(torch.relu(self.proj(x)) + x)",
            "",
            "",
            f"@torch.compile(backend={bad_backend})",
            f"def train_step_{block}(model, batch, optimizer):",
            "    loss = model(batch).float().pow(2).mean()",
            "    loss.backward()",
            "    optimizer.step()",
            "    gathered = [None]",
            collective,
            "    return loss.detach()",
            "",
        ]
    out += [
        f"STEPS_PER_EPOCH_{i} = {i} * int(os.environ.get('SCALE', '1'))"
        for i in range(lines - len(out))
    ]
    return "\n".join(out) + "\n"


def parse_time(text: str) -> float:
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        libcst.parse_module(text)
        best = min(best, time.perf_counter() - started)
    return best


async def diagnostics_latency(text: str, edits: int) -> list[tuple[float, float]]:
    """(seconds from didOpen / each didChange to its publishDiagnostics, seconds of a bare
    parse of that text just before), for a buffer in a fresh temporary project."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        path = root / "big_train.py"
        path.write_text(text, encoding="utf-8")
        return await edits_latency(root, path, text, edits)


async def edits_latency(
    root: Path, path: Path, text: str, edits: int, watch: bool = False
) -> list[tuple[float, float]]:
    """:func:`diagnostics_latency` of ``path`` in the workspace ``root``."""
    client = LanguageClient("bench", "1")
    published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: types.RegistrationParams) -> None:
        return None

    capabilities = types.ClientCapabilities()
    if watch:
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                    dynamic_registration=True
                )
            )
        )
    uri = path.as_uri()
    await client.start_io(sys.executable, "-m", "distlint", "server")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=root.as_uri(),
            initialization_options={"debounce": 0},
        )
    )
    client.initialized(types.InitializedParams())
    times = []
    parse = parse_time(text)
    started = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )
    await published.get()
    times.append((time.perf_counter() - started, parse))
    for version in range(2, edits + 2):
        parse = parse_time(text)
        started = time.perf_counter()
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text=f"{text}# edit {version}\n")
                ],
            )
        )
        while (await published.get()).version != version:
            pass
        times.append((time.perf_counter() - started, parse))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--workspace", type=Path, help="a project to open as the workspace")
    parser.add_argument("--file", help="the file of --workspace to edit (relative to it)")
    parser.add_argument("--watch", action="store_true", help="register the file watchers")
    args = parser.parse_args()
    if args.workspace is not None:
        root = args.workspace.resolve()
        path = root / args.file
        text = path.read_text(encoding="utf-8")
        samples = asyncio.run(edits_latency(root, path, text, args.edits, args.watch))
        args.lines = text.count("\n")
    else:
        text = training_script(args.lines)
        samples = asyncio.run(diagnostics_latency(text, args.edits))
    for label, chosen in (("didOpen", samples[:1]), ("didChange", samples[1:])):
        if not chosen:
            continue
        latency = statistics.median(t for t, _ in chosen)
        parse = statistics.median(p for _, p in chosen)
        ratio = statistics.median(t / p for t, p in chosen)
        print(
            f"{args.lines}-line buffer, {label} -> diagnostics (median of {len(chosen)}): "
            f"{latency * 1000:.0f} ms; bare libcst.parse_module {parse * 1000:.0f} ms; "
            f"{ratio:.2f}x the parse"
        )


if __name__ == "__main__":
    main()
