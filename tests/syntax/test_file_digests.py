"""The digests of files kept across runs: a file is not read again while its status is the
one it had when it was hashed, and no edit that keeps its bytes' size, or its modification
time, or both, is missed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import distlint.syntax.regular_files as regular_files
from distlint.syntax.regular_files import SETTLED_NS, FileDigests, content_digest


def _later() -> int:
    """A clock far enough ahead that every file written by the test has settled."""
    return time.time_ns() + 10 * SETTLED_NS


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files read (for their bytes) from now on."""
    seen: list[Path] = []
    real = regular_files._read_with_status

    def read(path: Path):  # type: ignore[no-untyped-def]
        seen.append(path)
        return real(path)

    monkeypatch.setattr(regular_files, "_read_with_status", read)
    return seen


def _next_tick(path: Path) -> None:
    """Wait until a write now would stamp ``path`` with a later change time than it has."""
    before = path.stat().st_ctime_ns
    probe = path.with_suffix(".probe")
    for _ in range(200):
        probe.write_bytes(b"")
        if probe.stat().st_ctime_ns > before:
            return
        time.sleep(0.005)
    raise AssertionError("the file system's clock did not move")


def test_a_settled_file_is_read_once_and_then_known_by_its_status(tmp_path, reads) -> None:
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    digests = FileDigests(clock=_later)
    assert digests.digest(path) == content_digest(b"x = 1\n")
    kept = digests.kept()
    kept.clock = _later
    assert kept.digest(path) == content_digest(b"x = 1\n")
    assert reads == [path]  # the second run took it from its status


def test_an_edit_that_keeps_the_size_and_the_modification_time_is_read(tmp_path, reads) -> None:
    """The bytes change, the size stays, the modification time is set back (``touch -d``,
    ``cp -p``): the status-change time moved, so the file is read again."""
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    digests = FileDigests(clock=_later)
    digests.digest(path)
    stamp = path.stat()
    _next_tick(path)
    path.write_bytes(b"x = 2\n")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert path.stat().st_size == stamp.st_size
    assert path.stat().st_mtime_ns == stamp.st_mtime_ns
    later = digests.kept()
    later.clock = _later
    assert later.digest(path) == content_digest(b"x = 2\n")
    assert reads == [path, path]


def test_a_file_replaced_by_another_of_the_same_size_and_times_is_read(tmp_path, reads) -> None:
    """An editor's save (a new file renamed over the old one), its times copied over: another
    inode."""
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    digests = FileDigests(clock=_later)
    digests.digest(path)
    stamp = path.stat()
    other = tmp_path / "b.tmp"
    other.write_bytes(b"x = 2\n")
    os.utime(other, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    os.replace(other, path)
    assert digests.digest(path) == content_digest(b"x = 2\n")


def test_a_file_changed_just_before_it_was_read_is_not_kept(tmp_path, reads) -> None:
    """Written within the margin of the clock: another write in the same tick of the file
    system's clock would leave its status as it is, so its digest is not kept, and it is
    read on each run."""
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n")
    digests = FileDigests()
    assert digests.digest(path) == content_digest(b"x = 1\n")
    assert not digests.changed()
    assert digests.digest(path) == content_digest(b"x = 1\n")
    assert reads == [path, path]


def test_an_unreadable_file_raises_as_reading_it_does(tmp_path) -> None:
    with pytest.raises(OSError):
        FileDigests().digest(tmp_path / "missing.py")
    os.mkfifo(tmp_path / "pipe.py")
    with pytest.raises(regular_files.NotRegularFile):
        FileDigests().digest(tmp_path / "pipe.py")
