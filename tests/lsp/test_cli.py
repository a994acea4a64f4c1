"""``distlint server`` on the command line: help, missing extra, TCP, lazy pygls import."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from click.testing import CliRunner

import distlint.lsp
from distlint.cli import main
from tests.lsp.helpers import REPO, server_env


def test_help_mentions_tcp():
    result = CliRunner().invoke(main, ["server", "--help"])
    assert result.exit_code == 0
    assert "--tcp PORT" in result.output and "stdio" in result.output


def test_missing_pygls_exits_2_with_install_hint(monkeypatch):
    monkeypatch.setattr(distlint.lsp, "missing_dependencies", lambda: ["pygls"])
    result = CliRunner().invoke(main, ["server"])
    assert result.exit_code == 2
    assert "install the 'lsp' extra" in result.output and "pip install '.[lsp]'" in result.output


def test_bad_port_is_a_usage_error():
    result = CliRunner().invoke(main, ["server", "--tcp", "0"])
    assert result.exit_code == 2


def test_static_checking_never_imports_pygls(tmp_path):
    (tmp_path / "train.py").write_text('import torch\ntorch.compile(f, backend="nvfuser")\n')
    code = (
        "import sys\n"
        "from distlint.cli import main\n"
        "sys.argv = ['distlint', 'check', 'train.py']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 1, exc.code\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=server_env(), capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_message(stream) -> dict:
    headers = {}
    while (line := stream.readline().strip()) != b"":
        name, value = line.split(b":", 1)
        headers[name.strip().lower()] = value.strip()
    return json.loads(stream.read(int(headers[b"content-length"])))


def test_tcp_transport(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "distlint", "server", "--tcp", str(port)],
        cwd=REPO,
        env=server_env(),
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=20)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.05)
        with conn, conn.makefile("rb") as stream:
            conn.sendall(
                _message(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {"processId": None, "rootUri": None, "capabilities": {}},
                    }
                )
            )
            reply = _read_message(stream)
            assert reply["id"] == 1
            capabilities = reply["result"]["capabilities"]
            assert capabilities["diagnosticProvider"]["identifier"] == "distlint"
            assert capabilities["positionEncoding"] == "utf-16"
            conn.sendall(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            assert _read_message(stream)["id"] == 2
            conn.sendall(_message({"jsonrpc": "2.0", "method": "exit"}))
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
