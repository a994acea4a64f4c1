"""The other files of the project that a check of some files needs, so that checking one file
(the pre-commit hook, ``distlint check train.py``) gives it the findings ``distlint check .``
gives it.

The project root is the nearest directory holding ``pyproject.toml`` or ``distlint.toml``,
else the git work tree; a file in neither has no project beyond the files named (its directory
may be a home folder or ``/tmp``, too big to walk for every check). Within it, the files the
named files import (transitively) and the files that import a named file are summarised and
linked with them; findings are reported for the named files only. Imports are read with a
regular expression (no parse): a file taken in needlessly costs time, never a finding. What
a file imports is kept by the digest of its bytes (:class:`ImportScans`, which the engine
caches), so a warm run reads every file but scans only those that changed.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from distlint.config.gitignore import find_repo_root
from distlint.syntax.regular_files import FileDigests, content_digest, read_regular_file
from distlint.syntax.source import SourceError, decode_source

ROOT_MARKERS = ("pyproject.toml", "distlint.toml")
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<source>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[\w., \t]+)"
    r"|import[ \t]+(?P<modules>[\w., \t]+))",
    re.MULTILINE,
)
_RELATIVE = re.compile(rb"from[ \t]+\.+[ \t]+import")  # may name a package by its folder alone


def project_root(path: Path) -> Path | None:
    """Where the project of ``path`` (a file or a directory, absolute) starts, if anywhere."""
    start = path if path.is_dir() else path.parent
    for directory in (start, *start.parents):
        if any((directory / marker).is_file() for marker in ROOT_MARKERS):
            return directory
    return find_repo_root(start)


# What a file's text imports, whatever its path: the dotted names (each with whether only a
# package can be meant) and its relative imports as (dots, module, names imported).
ImportScan = tuple[frozenset[tuple[str, bool]], tuple[tuple[int, str, tuple[str, ...]], ...]]
IMPORT_SCANS = "(imports)"


@dataclass
class ImportScans:
    """Import scans by the digest of the bytes scanned: ``known`` from an earlier run, the
    ones of this run gathered in ``used`` (what is worth keeping for the next)."""

    known: dict[bytes, ImportScan] = field(default_factory=dict)
    used: dict[bytes, ImportScan] = field(default_factory=dict)
    path: str = IMPORT_SCANS  # the cache's check that an entry is what was asked for

    def scan(self, data: bytes, digest: bytes | None = None) -> ImportScan:
        """The scan of ``data`` (whose :func:`content_digest` is ``digest`` when given)."""
        digest = digest if digest is not None else content_digest(data)
        found = self.known_scan(digest)
        if found is None:
            found = self.used[digest] = scan_bytes(data)
        return found

    def known_scan(self, digest: bytes) -> ImportScan | None:
        """The scan of the bytes whose digest is ``digest``, if known (None: not scanned)."""
        found = self.used.get(digest) or self.known.get(digest)
        if found is not None:
            self.used[digest] = found
        return found

    def kept(self) -> ImportScans:
        """What to keep for the next run: this run's scans."""
        return ImportScans(self.used)


def related_files(
    named: Iterable[Path],
    candidates: Iterable[Path],
    contents: dict[Path, bytes] | None = None,
    scans: ImportScans | None = None,
    digests: FileDigests | None = None,
) -> list[Path]:
    """The candidates (files of the project, absolute) that the named files import,
    transitively, or that import a named file; sorted, the named files left out.
    ``contents`` overrides what is on disk (an editor's buffer, stdin); ``scans`` holds the
    scans of an earlier run and gets this run's; ``digests``: the files' digests (those of
    an earlier run serve a file whose status is unchanged), which scans are known by."""
    index = ModuleIndex(
        candidates, contents or {}, scans if scans is not None else ImportScans(), digests
    )
    return related_in(named, index)


def related_in(named: Iterable[Path], index: ModuleIndex) -> list[Path]:
    """:func:`related_files` of the project ``index`` holds (:meth:`ModuleIndex.kept`)."""
    named_set = {p for p in named}
    wanted: set[Path] = set()
    pending = list(named_set)
    while pending:
        current = pending.pop()
        for imported in index.imports_of(current):
            if imported not in wanted and imported not in named_set:
                wanted.add(imported)
                pending.append(imported)
    spellings = _spellings(named_set)
    for candidate in index.files:
        if (
            candidate not in named_set
            and candidate not in wanted
            and index.may_import(candidate, spellings)
            and any(target in named_set for target in index.imports_of(candidate))
        ):
            wanted.add(candidate)  # e.g. registers a fake for an op defined in a named file
    return sorted(wanted)


class ModuleIndex:
    """Project files by the dotted names they may be imported under (any path suffix); and
    when made by :meth:`kept`, the project files each one imports, by the digest of its
    bytes, for as long as the list of files is the same (the language server's index)."""

    def __init__(
        self,
        files: Iterable[Path],
        contents: dict[Path, bytes],
        scans: ImportScans,
        digests: FileDigests | None = None,
    ):
        self.files = sorted(set(files))
        self._by_text = {str(file): file for file in self.files}
        self._contents = contents
        self._scans = scans
        self._digests = digests if digests is not None else FileDigests()
        self._by_suffix: dict[str, list[Path]] = {}
        for file in self.files:
            parts = list(file.with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            for start in range(max(0, len(parts) - 6), len(parts)):
                self._by_suffix.setdefault(".".join(parts[start:]), []).append(file)
        self._imports: dict[Path, list[Path]] = {}
        # the imports of files on disk, by path: (the digest of the bytes scanned, them)
        self._kept: dict[Path, tuple[bytes, list[Path]]] | None = None

    @classmethod
    def kept(cls, files: Iterable[Path], digests: FileDigests, scans: ImportScans) -> ModuleIndex:
        """An index whose files' imports outlive a question (:meth:`asking`); ``digests``
        tells whether a file's bytes are still those whose imports it holds; ``scans``: known
        scans (an earlier run's), added to."""
        index = cls(files, {}, scans, digests)
        index._kept = {}
        return index

    def asking(self, contents: dict[Path, bytes]) -> ModuleIndex:
        """This index for one question, ``contents`` overriding files on disk."""
        asked = copy.copy(self)
        asked._contents = contents
        asked._imports = {}
        return asked

    def _still_kept(self, file: Path) -> tuple[bytes | None, list[Path] | None]:
        """The digest of ``file`` when known without reading it, and its imports kept from
        those very bytes (None: not kept, or the file changed)."""
        if self._kept is None or file in self._contents:
            return None, None
        digest = self._digests.unchanged(file)
        kept = self._kept.get(file)
        if digest is None or kept is None or kept[0] != digest:
            return digest, None
        return digest, kept[1]

    def may_import(self, file: Path, spellings: list[bytes] | None) -> bool:
        """Whether ``file`` may import a file whose import spells one of ``spellings`` (see
        :func:`_spellings`; None: any file may): a byte search, where reading its imports
        hashes, decodes and scans it (most of a project's files import none of the few named)."""
        if spellings is None or self._still_kept(file)[1] is not None:
            return True  # with its imports at hand, they answer
        try:
            data = self._contents.get(file)
            data = data if data is not None else read_regular_file(file)
        except OSError:
            return False  # no imports then either (nor in UTF-16: not source, see decode_source)
        return any(word in data for word in spellings) or _RELATIVE.search(data) is not None

    def imports_of(self, file: Path) -> list[Path]:
        cached = self._imports.get(file)
        if cached is not None:
            return cached
        digest, kept = self._still_kept(file)
        if kept is not None:
            self._imports[file] = kept
            return kept
        try:
            (names, relative_imports), digest = self._scan(file)
        except OSError:
            names, relative_imports = frozenset(), ()
        absolute = names
        targets = [
            t
            for dotted, package in sorted(absolute)
            for t in self._by_suffix.get(dotted, ())
            if not package or t.name == "__init__.py"
        ]
        # a project file only: one the discovery left out (excluded, ignored) stays out
        targets += sorted(_relative_targets(relative_imports, file, self._by_text))
        # each once, first seen first: a package's __init__ may name hundreds of modules
        found = [target for target in dict.fromkeys(targets) if target != file]
        self._imports[file] = found
        if self._kept is not None and digest is not None and file not in self._contents:
            self._kept[file] = (digest, found)
        return found

    def _scan(self, file: Path) -> tuple[ImportScan, bytes | None]:
        """What ``file`` imports: read, hashed and scanned only when its digest (a file
        whose status is unchanged is not read for it) is not one of a known scan; and the
        digest of the bytes scanned (None: a buffer's, not the file's)."""
        data = self._contents.get(file)
        if data is not None:
            return self._scans.scan(data), None
        digest = self._digests.unchanged(file)
        found = self._scans.known_scan(digest) if digest is not None else None
        if found is None:
            data, digest = self._digests.read(file)
            found = self._scans.scan(data, digest)
        return found, digest


def related_inputs(
    named: Iterable[Path],
    candidates: Iterable[Path],
    contents: dict[Path, bytes],
    digests: FileDigests,
    scans: ImportScans,
) -> tuple:
    """All that :func:`related_files` answers from (for a cache of its answers): each named
    file's path and what it imports (scanned into ``scans``), each other candidate's path and
    the digest of its bytes (None: unreadable). The candidates' absolute paths, since
    imports are matched with their folders' names."""
    named_set = set(named)
    imports: list[tuple[str, object, object]] = []
    for path in sorted(named_set):
        try:
            data = contents.get(path)
            if data is not None:
                names, relative = scans.scan(data)
            else:
                names, relative = scans.scan(*digests.read(path))
            imports.append((str(path), tuple(sorted(names)), relative))
        except OSError:
            imports.append((str(path), None, None))
    others = []
    for path in sorted(set(candidates) - named_set):
        data = contents.get(path)
        try:
            digest = content_digest(data) if data is not None else digests.digest(path)
        except OSError:
            digest = None
        others.append((str(path), digest))
    return tuple(imports), tuple(others)


def _spellings(named: Iterable[Path]) -> list[bytes] | None:
    """What any import of one of ``named`` spells, but for a relative one of a package by its
    folder alone (``from . import x``): the module's name, or for a package's
    ``__init__.py`` its folder's (None for a name that is not ASCII: a file in another
    encoding may spell it in other bytes)."""
    found = []
    for path in named:
        word = path.parent.name if path.name == "__init__.py" else path.stem
        if not word.isascii():
            return None
        found.append(word.encode("ascii"))
    return found


def scan_bytes(data: bytes) -> ImportScan:
    """:func:`scan_imports` of a file's bytes (nothing for bytes that are not source)."""
    try:
        text = decode_source(data)
    except SourceError:
        text = ""
    return scan_imports(text)


def scan_imports(text: str) -> ImportScan:
    """Dotted names a text imports, each with whether only a package can be meant
    (``from a.b import c``: packages ``a`` and ``a.b``, or module ``a.b``, and ``a.b.c``),
    and its relative imports (``from ..b import c, d``: ``(2, "b", ("c", "d"))``)."""
    names: set[tuple[str, bool]] = set()
    relative: list[tuple[int, str, tuple[str, ...]]] = []
    for match in _IMPORT.finditer(text):
        modules = match.group("modules")
        if modules is not None:
            for item in modules.split(","):
                dotted = item.split()[0] if item.split() else ""
                names.update(_prefixes(dotted))
                names.add((dotted, False))
            continue
        source = match.group("source") or ""
        imported = [
            n.split()[0]
            for n in match.group("names").strip("()").replace("\n", " ").split(",")
            if n.split()
        ]
        dots = len(source) - len(source.lstrip("."))
        base = source[dots:]
        if dots:
            relative.append((dots, base, tuple(imported)))
            continue
        names.update(_prefixes(base))
        names.add((base, False))
        names.update((f"{base}.{name}", False) for name in imported if name != "*")
    return frozenset(n for n in names if n[0]), tuple(relative)


def _relative_targets(
    relative: Iterable[tuple[int, str, tuple[str, ...]]], file: Path, known: dict[str, Path]
) -> set[Path]:
    """The project files (``known``, by the text of their path) that relative imports of
    ``file`` may name (``from .b import c``: ``b.py``, ``b/__init__.py``, ``b/c.py``...).
    A name that is an identifier is joined as text (a package's ``__init__`` may import
    hundreds); any other (``*``, a stray token of a broken file) goes through Path, whose
    rules (``.`` parts dropped, ``with_name``) decide what it names."""
    found: set[Path] = set()
    for dots, base, imported in relative:
        directory = file.parent
        for _ in range(dots - 1):
            directory = directory.parent
        module = directory.joinpath(*base.split(".")) if base else directory
        prefix = os.path.join(module, "")
        candidates: list[str] = []
        for name in [*imported, ""]:
            if name.isidentifier():
                candidates += (f"{prefix}{name}.py", f"{prefix}{name}{os.sep}__init__.py")
                continue
            target = module / name if name and name != "*" else module
            candidates += (str(target.with_name(target.name + ".py")), str(target / "__init__.py"))
        found.update(known[text] for text in candidates if text in known)
    return found


def _prefixes(dotted: str) -> list[tuple[str, bool]]:
    """The packages whose ``__init__`` importing ``dotted`` runs."""
    parts = dotted.split(".")
    return [(".".join(parts[: i + 1]), True) for i in range(len(parts) - 1) if parts[i]]
