"""Reading files of the user's tree that may not be regular files.

A path named ``train.py`` or ``pyproject.toml`` can be a named pipe (opening it for reading
waits for a writer: the run would hang), a socket, a device (``/dev/zero`` never ends), a
broken symbolic link or a link loop. Everything distlint reads from the user's tree goes
through :func:`read_regular_file`, which opens without waiting and refuses anything but a
regular file; :func:`what_is` names such a path for a message.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """A path that exists but is not a regular file; ``strerror`` says what it is."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (for anything but a regular file)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def content_digest(data: bytes) -> bytes:
    """A hash of a file's bytes: what the cache keys a file's results by."""
    return hashlib.blake2b(data, digest_size=20).digest()


def read_regular_file(path: Path) -> bytes:
    """The bytes of ``path``; :class:`NotRegularFile` (an OSError) for a pipe, a socket, a
    device or a directory, without waiting on it; other OSErrors as ``open`` raises them."""
    return _read_with_status(path)[0]


def _read_with_status(path: Path) -> tuple[bytes, os.stat_result]:
    """:func:`read_regular_file`, and the file's status taken before it was read."""
    try:
        handle = os.open(path, _OPEN_FLAGS)  # a named pipe opens at once without a writer
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver)
            what = f"not a regular file ({what_is(path)})"
            raise NotRegularFile(exc.errno, what, str(path)) from None
        raise
    try:
        status = os.fstat(handle)
    except OSError:
        os.close(handle)
        raise
    if not stat.S_ISREG(status.st_mode):
        os.close(handle)
        kind = kind_of(status.st_mode)
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind})", str(path))
    with os.fdopen(handle, "rb") as file:
        return file.read(), status


# A file whose modification or status change is more recent than this (nanoseconds) when its
# bytes are read may change again within the same tick of the file system's clock, leaving
# its status as it was: its digest is not kept (coarse clocks tick every 1-10 ms; FAT's, 2 s).
SETTLED_NS = 3_000_000_000
DIGESTS = "(digests)"
# Every version of distlint reads the same cache entry of digests (distlint's own files'
# digests make its fingerprint): a change of what FileDigests holds, or of content_digest,
# must change this.
DIGESTS_FORMAT = 1

Status = tuple[int, int, int, int, int, int]  # device, inode, mode, size, mtime_ns, ctime_ns


def status_of(status: os.stat_result) -> Status:
    return (
        status.st_dev,
        status.st_ino,
        status.st_mode,
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


@dataclass
class FileDigests:
    """:func:`content_digest` of files by path: a file whose status is what it was when its
    bytes were hashed (in this run, or in an earlier one: the engine caches ``known``) is not
    read again.

    Why a status that is the same means bytes that are the same: every write to a file sets
    its modification and status-change times to the file system's clock, and nothing but the
    clock sets the status-change time (``touch -d`` and ``os.utime`` set the modification time
    back, and the change time to now); a file replaced (an editor's save, ``git checkout``)
    is another inode, or one created now. So an edit keeps the status only when it lands in
    the same tick of that clock as the write before it, after that write was read: a digest
    is kept only for a file whose last change is older than :data:`SETTLED_NS` when it is
    read (the racy case git's index knows), so any later write stamps a later time. This
    holds where the file system's clock is this machine's, give or take that margin (local
    file systems; a network one whose server's clock lags by more could be fooled); and
    the status must be the same to the nanosecond, size, inode and device included.
    ``clock``: the current time in nanoseconds (tests set it)."""

    known: dict[str, tuple[Status, bytes]] = field(default_factory=dict)
    used: dict[str, tuple[Status, bytes]] = field(default_factory=dict)
    path: str = DIGESTS  # the cache's check that an entry is what was asked for
    clock: Callable[[], int] = time.time_ns

    def digest(self, path: Path) -> bytes:
        """The digest of ``path``'s bytes; OSError as :func:`read_regular_file` raises it."""
        known = self.unchanged(path)
        return known if known is not None else self.read(path)[1]

    def unchanged(self, path: Path) -> bytes | None:
        """The digest of ``path``'s bytes if known without reading them: the file's status
        is the one it had when they were hashed (None: not known)."""
        name = str(path)
        kept = self.used.get(name) or self.known.get(name)
        if kept is None:
            return None
        try:
            now = status_of(os.stat(path))
        except OSError:
            return None
        if now != kept[0]:
            return None
        self.used[name] = kept
        return kept[1]

    def read(self, path: Path) -> tuple[bytes, bytes]:
        """``path``'s bytes and their digest, kept for the next :meth:`digest` when the file
        has settled (see the class docstring)."""
        data, status = _read_with_status(path)
        digest = content_digest(data)
        changed = max(status.st_mtime_ns, status.st_ctime_ns)
        if changed < self.clock() - SETTLED_NS:
            self.used[str(path)] = (status_of(status), digest)
        return data, digest

    def changed(self) -> bool:
        """Whether this run learnt something the next should know (or forgot a file)."""
        return self.used != self.known

    def kept(self) -> FileDigests:
        """What to keep for the next run: this run's digests."""
        return FileDigests(dict(self.used))


@dataclass
class VerifiedDigests(FileDigests):
    """:class:`FileDigests` that a long-lived process keeps (the language server's analysis
    process): a file's status is looked at once, and its digest then trusted without a look
    until :meth:`forget` (a watched file changed) or :meth:`doubt` (nothing watches the
    files: look at each again)."""

    verified: set[str] = field(default_factory=set)

    def unchanged(self, path: Path) -> bytes | None:
        name = str(path)
        if name in self.verified:
            kept = self.used.get(name) or self.known.get(name)
            if kept is not None:
                self.used[name] = kept
                return kept[1]
        found = super().unchanged(path)
        if found is not None:
            self.verified.add(name)
        return found

    def read(self, path: Path) -> tuple[bytes, bytes]:
        data, digest = super().read(path)
        if str(path) in self.used:  # kept: settled
            self.verified.add(str(path))
        return data, digest

    def forget(self, path: str) -> None:
        """``path`` changed (or was created, or deleted): read it again when asked."""
        self.verified.discard(path)
        self.used.pop(path, None)
        self.known.pop(path, None)

    def doubt(self) -> None:
        """Look at every file's status again before trusting its digest."""
        self.verified.clear()

    def settle(self) -> None:
        """The end of a run: what it used is known for the next (nothing is dropped)."""
        self.known.update(self.used)


def resolved(path: Path, folders: dict[Path, Path]) -> Path:
    """``path.resolve()`` by way of its folder's real path, kept in ``folders`` (the files
    and folders of one folder share it, and it is made from its own folder's): a link is
    looked for in each name once, where ``resolve`` looks at every name of every path."""
    if not path.is_absolute() or path.name in ("", "..") or os.path.islink(path):
        return path.resolve()
    folder = folders.get(path.parent)
    if folder is None:
        folder = folders[path.parent] = resolved(path.parent, folders)
    return folder / path.name


def read_regular_text(path: Path, encoding: str = "utf-8") -> str:
    """:func:`read_regular_file` decoded (UnicodeDecodeError as ``Path.read_text`` raises it)."""
    return read_regular_file(path).decode(encoding)


def what_is(path: Path) -> str:
    """What ``path`` is when it is neither a directory nor a regular file one can read: 'a named
    pipe', 'a broken symbolic link (to x.py)', 'a symbolic link loop', 'no such file or
    directory', or the system's reason ('Permission denied')."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) and os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:
                return "a broken symbolic link"
            return f"a broken symbolic link (to {printable(target)})"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "no such file or directory"
        return exc.strerror or type(exc).__name__
    if stat.S_ISREG(info.st_mode):
        return "a regular file"
    return kind_of(info.st_mode)


def printable(text: str) -> str:
    """``text`` (a file name) with the bytes that are not UTF-8 shown escaped (``bad\\xff.py``),
    so that every report and message can be written. Escapes, not U+FFFD replacement
    characters: two names differing only in such bytes must stay apart (reported paths are
    keys for fixes and baselines)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: undecodable bytes of the file system
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no file system decoding makes
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
