"""A content-addressed cache of first passes, so a re-check parses only what changed.

A file's first pass (its file-scope findings, its summary and its records for project rules)
depends on its bytes, its display path and module name, its settings and distlint itself, and
on nothing else: that is the key (distlint is identified by a hash of its own code and data,
so an upgrade or an edit of a rule invalidates every entry). What comes after the first
passes (project findings, second-pass results) is kept too, under a key made of every file's
key (``tasks.ProjectResults``): it is reused only when no file of the project changed, so a
change in one file reaches every finding that depends on it; in a check of a few files (the
pre-commit hook), also when a checked file changed in a way the project stage does not see
(``engine.project_reuse``).

Entries are pickles, so each is signed (HMAC-SHA256) with a key that is not in the cache: a
cache directory committed to a repository, or restored from somewhere else, is never
unpickled unless it was written with the same key. The key is ``DISTLINT_CACHE_KEY`` when set
(CI: a secret, so a restored cache is used), else a random key kept in the user's cache
directory. An entry that is unreadable, unsigned, signed with another key or for another file
is a miss and is rewritten. Writes are atomic (a temporary file renamed into place), so
concurrent runs never read half an entry; the directory holds a ``.gitignore`` of ``*`` and a
``CACHEDIR.TAG``, and is pruned to its size bound, oldest entries first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

from distlint.engine import transport
from distlint.syntax.regular_files import DIGESTS, DIGESTS_FORMAT, FileDigests, content_digest

CACHE_DIR_VARIABLE = "DISTLINT_CACHE_DIR"
CACHE_KEY_VARIABLE = "DISTLINT_CACHE_KEY"
DEFAULT_DIR_NAME = ".distlint_cache"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_SIGNATURE_BYTES = 32
_LEDGER = "written"  # bytes written since the entries were last listed, a line a run
_LEDGER_LINES = 1000
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# distlint's cache (see distlint/engine/cache.py)\n"
)


class FirstPassCache:
    """First-pass results by key (see the module docstring); ``get`` never raises."""

    def __init__(self, directory: Path, secret: bytes, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = directory
        self._secret = secret
        self._max_bytes = max_bytes
        self._written = 0
        # entries put but not written yet (see defer_writes): key -> signed entry
        self._deferred: dict[str, bytes] | None = None

    @classmethod
    def open(cls, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> FirstPassCache | None:
        """The cache in ``directory`` (created), or None when it cannot be written."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            ignore = directory / ".gitignore"
            if not ignore.exists():
                _write_atomic(ignore, b"# Automatically created by distlint.\n*\n")
            tag = directory / "CACHEDIR.TAG"
            if not tag.exists():
                _write_atomic(tag, _TAG.encode())
            return cls(directory, _secret(), max_bytes)
        except OSError:
            return None

    def key(self, data: bytes, identity: tuple | str) -> str:
        """The entry name for a file's bytes and what else its first pass depends on."""
        return self.key_of(content_digest(data), identity)

    def key_of(self, digest: bytes, identity: tuple | str) -> str:
        """:meth:`key` of the bytes whose :func:`content_digest` is ``digest`` (a file's
        bytes are hashed once for all the keys they are part of); ``identity``: a tuple, or
        its repr (:class:`Identities`)."""
        combined = hashlib.blake2b(digest_size=20)
        combined.update(self._code.encode())
        combined.update((identity if isinstance(identity, str) else repr(identity)).encode())
        combined.update(b"\0")
        combined.update(digest)
        return combined.hexdigest()

    def get(self, key: str, display: str) -> object | None:
        blob = self._deferred.get(key) if self._deferred is not None else None
        try:
            if blob is None:
                blob = self._entry(key).read_bytes()
        except OSError:
            return None
        signature, payload = blob[:_SIGNATURE_BYTES], blob[_SIGNATURE_BYTES:]
        if not hmac.compare_digest(signature, self._sign(key, payload)):
            return None  # foreign, corrupt or truncated: never unpickled
        try:
            result = transport.loads(payload)
        except Exception:  # signed but unreadable (another Python): a miss
            return None
        return result if getattr(result, "path", None) == display else None

    def put(self, key: str, result: object) -> None:
        try:
            payload = transport.dumps(result)
        except Exception:  # pragma: no cover - results are picklable (workers send them)
            return
        blob = self._sign(key, payload) + payload
        if self._deferred is not None:
            self._deferred[key] = blob
            return
        self._write(key, blob)

    def _write(self, key: str, blob: bytes) -> None:
        path = self._entry(key)
        try:
            path.parent.mkdir(exist_ok=True)
            _write_atomic(path, blob)
        except OSError:
            return  # a read-only or full disk: the run goes on without caching
        self._written += len(blob)

    def defer_writes(self) -> None:
        """From now on, entries are written (and the cache pruned) by :meth:`flush` only, an
        entry put meanwhile read from memory: the language server answers an edit first and
        writes its entries after (the result is pickled when it is put, as it is then)."""
        if self._deferred is None:
            self._deferred = {}

    def flush(self) -> None:
        """Write the entries :meth:`defer_writes` held back, then prune."""
        deferred, self._deferred = self._deferred, None
        for key, blob in (deferred or {}).items():
            self._write(key, blob)
        self.prune()
        if deferred is not None:
            self._deferred = {}

    @functools.cached_property
    def digests(self) -> FileDigests:
        """The digests of the files the last run read (a status pre-check, see
        :class:`~distlint.syntax.regular_files.FileDigests`); :meth:`finish` keeps this run's."""
        kept = self.get(self.digests_key, DIGESTS)
        return kept if isinstance(kept, FileDigests) else FileDigests()

    def use_digests(self, digests: FileDigests) -> None:
        """Use ``digests`` for the next run (kept by a long-lived process across runs)."""
        self.__dict__["digests"] = digests

    @property
    def digests_key(self) -> str:
        """The entry of :attr:`digests`: one for every run, whatever it checks, and for every
        version of distlint (whose fingerprint is made with it: :data:`DIGESTS_FORMAT`)."""
        name = repr(("file digests", DIGESTS_FORMAT)).encode()
        return hashlib.blake2b(name, digest_size=20).hexdigest()

    @functools.cached_property
    def _code(self) -> str:
        """:func:`code_fingerprint`, distlint's own files read only where their status changed."""
        return code_fingerprint(self.digests)

    def finish(self) -> None:
        """The end of a run: keep the digests it learnt (for the next run of this process
        too), and prune."""
        if "digests" in self.__dict__:
            kept = self.digests.kept()
            if self.digests.changed():
                self.put(self.digests_key, kept)
            self.__dict__["digests"] = kept
        self.prune()

    def prune(self) -> None:
        """Remove the oldest entries while the cache is over its size bound (with writes
        deferred, once they are written). The bytes each run wrote are added up in a ledger
        (appended to, so concurrent runs lose nothing), so that the entries are listed only
        when the ledger says the bound may be near."""
        if not self._written or self._deferred is not None:
            return
        ledger = self.directory / _LEDGER
        try:
            with open(ledger, "a", encoding="ascii") as handle:
                handle.write(f"{self._written}\n")
            lines = ledger.read_text(encoding="ascii").split()
            estimate = sum(int(line) for line in lines)
        except (OSError, ValueError):
            lines, estimate = [], self._max_bytes  # unreadable: list the entries
        self._written = 0
        if estimate <= self._max_bytes * 0.8:
            if len(lines) > _LEDGER_LINES:  # one line for many (what a race loses: a run's)
                with contextlib.suppress(OSError):
                    _write_atomic(ledger, f"{estimate}\n".encode())
            return
        entries = []
        for path in self.directory.glob("??/*.entry"):
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime_ns, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):
            if total <= self._max_bytes * 0.8:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size
        with contextlib.suppress(OSError):
            _write_atomic(ledger, f"{total}\n".encode())

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.entry"

    def _sign(self, key: str, payload: bytes) -> bytes:
        return hmac.new(self._secret, key.encode() + payload, hashlib.sha256).digest()


def identity_of(display: str, module_name: str | None, is_package: bool, settings: object) -> str:
    """What a first pass depends on besides the bytes, in a stable form (sets sorted)."""
    return Identities().of(display, module_name, is_package, settings)


class Identities:
    """:func:`identity_of` for the files of one run: the repr of (display path, module name,
    whether a package, the settings' fields), each settings object's fields rendered once (a
    project's files share a few); each is held while known, so that its id stays its own."""

    def __init__(self) -> None:
        self._rendered: dict[int, tuple[object, str]] = {}

    def of(self, display: str, module_name: str | None, is_package: bool, settings: object) -> str:
        known = self._rendered.get(id(settings))
        if known is None or known[0] is not settings:
            known = self._rendered[id(settings)] = (settings, repr(_fields(settings)))
        return f"({display!r}, {module_name!r}, {is_package!r}, {known[1]})"


def _fields(settings: object) -> tuple:
    fields = []
    for field in dataclasses.fields(settings):  # type: ignore[arg-type]
        value = getattr(settings, field.name)
        if isinstance(value, (set, frozenset)):
            value = tuple(sorted(value))
        fields.append((field.name, value))
    return tuple(fields)


def code_fingerprint(digests: FileDigests | None = None) -> str:
    """A hash of distlint's own code and data files (of their digests: ``digests`` knows the
    files whose status is unchanged since they were hashed)."""
    digests = digests if digests is not None else FileDigests()
    package = Path(__file__).resolve().parents[1]  # distlint/
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode())
            digest.update(digests.digest(path))
    return digest.hexdigest()


def default_directory(root: Path) -> Path:
    """``DISTLINT_CACHE_DIR``, else ``.distlint_cache`` at the project root."""
    chosen = os.environ.get(CACHE_DIR_VARIABLE)
    return Path(chosen) if chosen else root / DEFAULT_DIR_NAME


def _secret() -> bytes:
    chosen = os.environ.get(CACHE_KEY_VARIABLE)
    if chosen:
        return chosen.encode()
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(home) / "distlint" / "cache-key"
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, key.hex().encode(), mode=0o600)
        return bytes.fromhex(path.read_text().strip())  # another run may have won the race
    except (OSError, ValueError):
        return key  # nowhere to keep it: entries of this run only


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
