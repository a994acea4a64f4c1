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
    try:
        handle = os.open(path, _OPEN_FLAGS)  # a named pipe opens at once without a writer
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver)
            what = f"not a regular file ({what_is(path)})"
            raise NotRegularFile(exc.errno, what, str(path)) from None
        raise
    try:
        mode = os.fstat(handle).st_mode
    except OSError:
        os.close(handle)
        raise
    if not stat.S_ISREG(mode):
        os.close(handle)
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind_of(mode)})", str(path))
    with os.fdopen(handle, "rb") as file:
        return file.read()


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
