"""One warm fork server for all the confirm runs of a test module (one torch import).

``shared_server`` replaces ``ForkServer`` in :mod:`distlint.confirm.run` for the module, so
``collect`` (and the CLI above it) forks every target from the same server; the module closes
it at the end. Use it in a module with ``from tests.confirm.server_util import shared_server``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from distlint.confirm import run as confirm_run
from distlint.confirm.sandbox import ForkServer

ROOT = Path(__file__).resolve().parents[2]


class SharedServer:
    """Called like ForkServer(...), it hands out the one server and leaves it open."""

    def __init__(self) -> None:
        self.server = ForkServer(cwd=ROOT, startup_timeout=120)

    def __call__(self, **kwargs: Any) -> SharedServer:
        return self

    def __enter__(self) -> ForkServer:
        return self.server

    def __exit__(self, *exc: Any) -> None: ...


@pytest.fixture(scope="module", autouse=True)
def shared_server() -> Iterator[ForkServer]:
    shared = SharedServer()
    with pytest.MonkeyPatch.context() as patch, shared.server:
        patch.setattr(confirm_run, "ForkServer", shared)
        yield shared.server
