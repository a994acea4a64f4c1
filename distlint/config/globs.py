"""Path globs for ``exclude`` and ``per-file-ignores`` (Ruff's semantics, simplified).

A pattern without ``/`` matches a file or directory name at any depth (``build``,
``*_pb2.py``); a pattern with ``/`` matches the path relative to the config file's directory
(``tests/**``, ``src/gen/*.py``), where ``**`` spans directories.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import PurePosixPath

_GLOB_CHARS = frozenset("*?[")


@lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob to a regex over posix paths; ``*`` and ``?`` stay inside one part."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class PathPatterns:
    """Patterns anchored at ``base`` (a posix absolute path string)."""

    patterns: tuple[str, ...]
    base: str

    def matches_name(self, name: str, path: str) -> str | None:
        """The first pattern matching this entry itself (not its parents): used while walking,
        where the parents were already let through."""
        relative = _relative(PurePosixPath(path), self.base)
        for pattern in self.patterns:
            cleaned = _clean(pattern)
            if "/" not in cleaned:
                if glob_regex(cleaned).match(name):
                    return pattern
            elif relative is not None and glob_regex(cleaned.lstrip("/")).match(
                relative.as_posix()
            ):
                return pattern
        return None

    @cached_property
    def _compiled(self) -> tuple[set[str], list[re.Pattern[str]], list[re.Pattern[str]]] | None:
        """The patterns for :meth:`in_directory`, compiled once: literal names, the regexes
        of the other names, those of the patterns that hold a ``/`` (None: a broken glob)."""
        names: set[str] = set()
        by_name: list[re.Pattern[str]] = []
        by_path: list[re.Pattern[str]] = []
        try:
            for pattern in self.patterns:
                cleaned = _clean(pattern)
                if "/" in cleaned:
                    by_path.append(glob_regex(cleaned.lstrip("/")))
                elif _GLOB_CHARS.isdisjoint(cleaned):
                    names.add(cleaned)  # its regex matches this name alone
                else:
                    by_name.append(glob_regex(cleaned))
        except re.error:
            return None
        return names, by_name, by_path

    def in_directory(self, directory: str) -> Callable[[str], bool]:
        """Whether :meth:`matches_name` matches an entry of ``directory`` (posix, absolute),
        told its name: a walk asks this for every entry, so the patterns are compiled once,
        literal names are looked up in a set, and the entry's relative path is built only
        when a pattern holds a ``/``."""
        compiled = self._compiled
        if compiled is None:  # a broken glob raises where matches_name reaches it, not before
            return lambda name: self.matches_name(name, posixpath.join(directory, name)) is not None
        names, by_name, by_path = compiled
        relative = _relative(PurePosixPath(directory), self.base)
        prefix = None if relative is None else relative.as_posix()

        def matches(name: str) -> bool:
            if name in names or any(regex.match(name) for regex in by_name):
                return True
            if not by_path:
                return False
            if prefix is None:  # the entry may still be the base itself
                entry = _relative(PurePosixPath(posixpath.join(directory, name)), self.base)
                subject = None if entry is None else entry.as_posix()
            else:
                subject = name if prefix == "." else f"{prefix}/{name}"
            return subject is not None and any(regex.match(subject) for regex in by_path)

        return matches

    def matches(self, path: str) -> str | None:
        """The first pattern matching ``path`` (posix, absolute) or one of its parents."""
        if not self.patterns:
            return None
        pure = PurePosixPath(path)
        relative = _relative(pure, self.base)
        for pattern in self.patterns:
            cleaned = _clean(pattern)
            if "/" not in cleaned:
                regex = glob_regex(cleaned)
                parts = relative.parts if relative is not None else pure.parts
                if any(regex.match(part) for part in parts):
                    return pattern
            elif relative is not None:
                regex = glob_regex(cleaned.lstrip("/"))
                rel = relative.as_posix()
                if regex.match(rel) or any(
                    regex.match(parent.as_posix()) for parent in relative.parents if parent.parts
                ):
                    return pattern
        return None


def _relative(path: PurePosixPath, base: str) -> PurePosixPath | None:
    try:
        return path.relative_to(base)
    except ValueError:
        return None


def _clean(pattern: str) -> str:
    cleaned = pattern.strip().rstrip("/")
    return cleaned[2:] if cleaned.startswith("./") else cleaned
