"""Paths that are not regular files, and file names that are not UTF-8.

A named pipe called ``train.py`` (or ``.gitignore``, ``pyproject.toml``...) once hung the run:
opening a pipe for reading waits for a writer. Named on the command line, a pipe, a socket, a
broken link or a link loop was reported as "no such file or directory". Every case runs in a
subprocess with a timeout, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distlint.config.discovery import Discovery
from distlint.config.settings import ConfigResolver
from distlint.syntax.regular_files import NotRegularFile, read_regular_file, what_is

GOOD = 'import torch\n\n\ndef f(x):\n    return x\n\n\ng = torch.compile(f, backend="nvfuser")\n'
TIMEOUT = 60  # seconds; a hang is what these tests are about
DISTLINT = (sys.executable, "-m", "distlint", "check", "--no-cache")


def distlint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "distlint", "check", "--no-cache", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def make_socket(path: Path) -> socket.socket:
    """A Unix socket file at ``path`` (bound from its directory: socket paths are short)."""
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind(path.name)
    finally:
        os.chdir(here)
    return server


@pytest.fixture
def tree(tmp_path: Path):
    """good.py (one DL502), a pipe, a socket, a broken link and a link loop, all named *.py."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "good.py").write_text(GOOD)
    os.mkfifo(tmp_path / "pipe.py")
    server = make_socket(tmp_path / "sock.py")
    (tmp_path / "broken.py").symlink_to("nowhere.py")
    (tmp_path / "loop.py").symlink_to("loop.py")
    yield tmp_path
    server.close()


EXPLICIT = {
    "pipe.py": "pipe.py: not a regular file (a named pipe)",
    "sock.py": "sock.py: not a regular file (a socket)",
    "broken.py": "broken.py: a broken symbolic link (to nowhere.py)",
    "loop.py": "loop.py: a symbolic link loop",
    "absent.py": "absent.py: no such file or directory",
}


@pytest.mark.parametrize("name", sorted(EXPLICIT))
def test_a_named_path_that_is_not_a_file_says_what_it_is(tree: Path, name: str) -> None:
    """Named on the command line: exit 2 (like a missing path), the other files checked."""
    proc = distlint(tree, "--format", "json", name, "good.py")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"distlint: {EXPLICIT[name]}"]
    assert [f["path"] for f in json.loads(proc.stdout)] == ["good.py"]


def test_met_while_walking_they_are_skipped_with_a_warning(tree: Path) -> None:
    """Found in a directory: one warning each, the run's exit code is its findings' (1)."""
    (tree / "sub").mkdir()
    os.mkfifo(tree / "sub" / "kernels.cu")  # native sources are read too
    os.mkfifo(tree / "sub" / "notes.txt")  # not a name distlint reads: nothing said
    (tree / "sub" / "pkg").symlink_to("..", target_is_directory=True)  # not followed
    proc = distlint(tree, "--format", "json", ".")
    assert proc.returncode == 1, proc.stderr
    assert [f["path"] for f in json.loads(proc.stdout)] == ["good.py"]
    assert proc.stderr.splitlines() == [
        "distlint: warning: broken.py: a broken symbolic link (to nowhere.py); skipped",
        "distlint: warning: loop.py: a symbolic link loop; skipped",
        "distlint: warning: pipe.py: not a regular file (a named pipe); skipped",
        "distlint: warning: sock.py: not a regular file (a socket); skipped",
        "distlint: warning: sub/kernels.cu: not a regular file (a named pipe); skipped",
    ]


def test_an_ignored_special_file_is_not_mentioned(tree: Path) -> None:
    (tree / ".gitignore").write_text("pipe.py\nsock.py\nbroken.py\nloop.py\n")
    proc = distlint(tree, "--format", "json", ".")
    assert (proc.returncode, proc.stderr) == (1, "")


# every file distlint reads from the user's tree besides the sources: a pipe must not hang it
READ_BY_THE_WAY = [
    ".gitignore",
    "pyproject.toml",
    "requirements.txt",
    "setup.cfg",
    "setup.py",
    "environment.yml",
    ".git/info/exclude",
]


@pytest.mark.parametrize("name", READ_BY_THE_WAY)
def test_a_pipe_in_place_of_a_project_file_does_not_hang(tmp_path: Path, name: str) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / "good.py").write_text(GOOD)
    os.mkfifo(tmp_path / name)
    proc = distlint(tmp_path, "--format", "json", ".")
    assert proc.returncode == 1, proc.stderr
    assert [f["path"] for f in json.loads(proc.stdout)] == ["good.py"]
    if name == "setup.py":  # a Python file itself: said, like any other pipe named *.py
        assert "setup.py: not a regular file (a named pipe); skipped" in proc.stderr
    else:
        assert proc.stderr == ""


def test_a_pipe_given_as_config_or_baseline_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    os.mkfifo(tmp_path / "conf.toml")
    proc = distlint(tmp_path, "--config", "conf.toml", "good.py")
    assert proc.returncode == 2
    assert "conf.toml: cannot read config file: not a regular file (a named pipe)" in proc.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.distlint]\nbaseline = "base.json"\n')
    os.mkfifo(tmp_path / "base.json")
    proc = distlint(tmp_path, "good.py")
    assert proc.returncode == 2
    assert "base.json: cannot read the baseline: not a regular file (a named pipe)" in proc.stderr


def test_read_regular_file_refuses_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    server = make_socket(tmp_path / "sock")
    (tmp_path / "file").write_bytes(b"x = 1\n")
    started = time.monotonic()
    try:
        for name, kind in (("pipe", "a named pipe"), ("sock", "a socket"), (".", "a directory")):
            with pytest.raises(NotRegularFile) as raised:
                read_regular_file(tmp_path / name)
            assert raised.value.strerror == f"not a regular file ({kind})"
        if Path("/dev/zero").exists():  # a device never ends
            with pytest.raises(NotRegularFile, match="a character device"):
                read_regular_file(Path("/dev/zero"))
    finally:
        server.close()
    assert time.monotonic() - started < 5
    assert read_regular_file(tmp_path / "file") == b"x = 1\n"
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "absent")
    assert what_is(tmp_path / "absent") == "no such file or directory"
    assert what_is(tmp_path / "file" / "below") == "no such file or directory"


def test_a_file_that_turns_into_a_pipe_after_discovery_is_a_dl000(tmp_path: Path) -> None:
    """Between discovery and reading, a file can be replaced: reading says so, never waits."""
    from distlint.config.settings import CliOverrides, settings_for
    from distlint.engine.checker import FileSource, check_file

    os.mkfifo(tmp_path / "late.py")
    settings = settings_for(ConfigResolver().for_path(tmp_path), CliOverrides(), tmp_path)
    result = check_file(FileSource.on_disk(tmp_path / "late.py", "late.py"), settings)
    assert [(f.code, f.message) for f in result.findings] == [
        ("DL000", "cannot read file: not a regular file (a named pipe)")
    ]


def test_discovery_keeps_a_linked_file_and_skips_a_linked_directory(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(GOOD)
    (tmp_path / "alias.py").symlink_to("real.py")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(GOOD)
    (tmp_path / "link.py").symlink_to("pkg", target_is_directory=True)  # a directory named .py
    discovery = Discovery(ConfigResolver(), tmp_path)
    files, notices = discovery.files([Path(".")])
    assert [f.display for f in files] == ["alias.py", "pkg/m.py", "real.py"]
    assert (notices, discovery.skipped) == ([], [])


# -- names that are not UTF-8 ----------------------------------------------------------------------

BAD_NAME = os.fsdecode(b"bad\xff.py")
SHOWN = "bad\\xff.py"  # the byte escaped: two such names stay apart (they are keys for fixes)
# RFC 3986 URI-reference characters: unreserved, reserved, and percent-encoded octets
URI = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-F]{2})*$")


@pytest.fixture
def bad_name_tree(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / BAD_NAME).write_text(GOOD)
    return tmp_path


FORMATS = {
    "text": ["--format", "text", "--output-format", "full"],
    "concise": ["--format", "text", "--output-format", "concise"],
    "json": ["--format", "json"],
    "github": ["--format", "github"],
    "sarif": ["--format", "sarif"],
}


def shown_paths(fmt: str, text: str) -> list[str]:
    """The file paths a report names (one finding, DL502, in sub/<bad name>)."""
    if fmt == "json":
        return [f["path"] for f in json.loads(text)]
    if fmt == "sarif":
        results = json.loads(text)["runs"][0]["results"]
        locations = results[0]["locations"]
        return [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in locations]
    if fmt == "github":
        return re.findall(r"file=([^,]*),", text)
    return re.findall(r"^(?: *--> )?(\S+?):8:30:", text, re.MULTILINE)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_name_that_is_not_utf8_in_every_format(bad_name_tree: Path, fmt: str) -> None:
    """On stdout and in an -o file the name is valid UTF-8 with the byte escaped; a SARIF URI
    percent-encodes the real byte (RFC 3986), relative to the repository root."""
    expected = ["sub/bad%FF.py"] if fmt == "sarif" else [f"sub/{SHOWN}"]
    out = bad_name_tree / "report.out"
    for args in ([], ["-o", str(out)]):
        proc = subprocess.run(
            [*DISTLINT, *FORMATS[fmt], *args, "."],
            cwd=bad_name_tree,
            capture_output=True,
            timeout=TIMEOUT,
        )
        assert proc.returncode == 1, proc.stderr.decode()
        assert proc.stderr == b""
        data = out.read_bytes() if args else proc.stdout
        text = data.decode("utf-8")  # strict: no lone surrogate, no raw byte
        assert shown_paths(fmt, text) == expected
        if fmt == "sarif":
            assert all(URI.match(uri) for uri in expected)
        if fmt == "json":
            assert "\\udc" not in text  # json.dumps would write a lone surrogate as \udcff


def test_a_name_that_is_not_utf8_in_sarif_output_and_messages(bad_name_tree: Path) -> None:
    """--sarif-output beside the text report, a notice naming a missing non-UTF-8 path, and
    standard input under such a name all write the escaped name (the URI the real bytes)."""
    sarif = bad_name_tree / "out.sarif"
    missing = os.fsdecode(b"gone\xfe.py")
    proc = subprocess.run(
        [*DISTLINT, "--sarif-output", str(sarif), ".", missing],
        cwd=bad_name_tree,
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode("utf-8").splitlines() == [
        "distlint: gone\\xfe.py: no such file or directory"
    ]
    assert proc.stdout.decode("utf-8").startswith(f"sub/{SHOWN}:8:30: DL502 ")
    assert shown_paths("sarif", sarif.read_text(encoding="utf-8")) == ["sub/bad%FF.py"]
    stdin = subprocess.run(
        [*DISTLINT, "--format", "sarif", "--stdin-filename", os.fsdecode(b"in\xfe.py"), "-"],
        cwd=bad_name_tree,
        input=GOOD.encode(),
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert stdin.returncode == 1, stdin.stderr.decode()
    assert shown_paths("sarif", stdin.stdout.decode("utf-8")) == ["in%FE.py"]


def test_two_names_differing_only_in_undecodable_bytes_stay_apart(tmp_path: Path) -> None:
    (tmp_path / os.fsdecode(b"m\xfe.py")).write_text(GOOD)
    (tmp_path / os.fsdecode(b"m\xff.py")).write_text(GOOD)
    proc = distlint(tmp_path, "--format", "json", ".")
    assert sorted(f["path"] for f in json.loads(proc.stdout)) == ["m\\xfe.py", "m\\xff.py"]
