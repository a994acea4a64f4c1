"""The distlint language server (``distlint server``), built on pygls 2.

This package's ``__init__`` imports nothing from pygls, so static checking never needs it;
:func:`missing_dependencies` tells the CLI whether the ``lsp`` extra is installed.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = (
    "distlint server needs pygls and lsprotocol: install the 'lsp' extra "
    "(from a distlint checkout: pip install '.[lsp]')"
)


def missing_dependencies() -> list[str]:
    """The LSP packages that are not importable (empty when the server can run)."""
    return [name for name in ("pygls", "lsprotocol") if importlib.util.find_spec(name) is None]


def run(tcp_port: int | None = None) -> None:
    """Start the server on stdio, or on TCP 127.0.0.1:``tcp_port``."""
    from distlint.lsp.server import main

    main(tcp_port)
