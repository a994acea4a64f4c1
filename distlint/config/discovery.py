"""Which files ``distlint check PATHS`` looks at.

Directories are walked for ``*.py``/``*.pyi``, skipping what the governing config excludes
(by default VCS folders, virtualenvs, build output, caches), anything a ``.gitignore`` lists,
and any directory that holds a ``pyvenv.cfg`` (a virtualenv, whatever its name). Files named
explicitly are always checked unless ``--force-exclude`` asks for the same filtering, which is
what a pre-commit hook wants.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from distlint.config.gitignore import GitIgnore, find_repo_root
from distlint.config.settings import Config, ConfigResolver
from distlint.syntax.regular_files import printable, what_is

PYTHON_SUFFIXES = (".py", ".pyi")
# C/C++/CUDA sources: scanned (never parsed as Python) for TORCH_LIBRARY op registrations.
NATIVE_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")


@dataclass(frozen=True)
class DiscoveredFile:
    """A file to check: where it is, and how it is shown to users."""

    path: Path  # absolute
    display: str  # relative to the working directory when possible, posix separators


def display_path(path: Path, cwd: Path) -> str:
    """Relative posix path under ``cwd``; other paths are shown as given. Bytes of a file name
    that are not UTF-8 are shown escaped (``bad\\xff.py``), so every report can be written."""
    try:
        shown = path.relative_to(cwd).as_posix()
    except ValueError:
        shown = path.as_posix()
    return printable(shown)


class Discovery:
    """Walks the given paths; keeps one GitIgnore per repository root."""

    def __init__(self, resolver: ConfigResolver, cwd: Path, force_exclude: bool = False):
        self._resolver = resolver
        self._cwd = cwd
        self._force_exclude = force_exclude
        self._gitignores: dict[Path, GitIgnore] = {}  # by repository root
        self._gitignore_of_dir: dict[Path, GitIgnore] = {}  # by directory, saves stat calls
        # by directory: the resolver resolves the path (a system call per component) each time
        self._config_of_dir: dict[Path, Config] = {}
        self._native: dict[Path, DiscoveredFile] = {}
        # what the walk skipped and why (a directory without permission, a pipe named x.py, a
        # broken link): reported as warnings; the run goes on
        self.skipped: list[str] = []

    def files(self, paths: list[Path]) -> tuple[list[DiscoveredFile], list[str]]:
        """Files to check, sorted and unique; and messages for paths that do not exist, are
        not files (a named pipe, a broken link) or hold no file to check (a directory a
        ``.gitignore`` above it ignores, say)."""
        found: dict[Path, DiscoveredFile] = {}
        missing: list[str] = []
        for given in paths:
            path = given if given.is_absolute() else self._cwd / given
            path = Path(os.path.normpath(path))
            is_dir, is_file = _kind(path)
            if is_dir:
                walked = self._walk(path)
                if (
                    not walked
                    and not self._force_exclude  # there, excluded means "skip it", as asked
                    and not any(native.is_relative_to(path) for native in self._native)
                ):
                    missing.append(f"{given}: no Python file to check (all excluded or ignored)")
                for file in walked:
                    found.setdefault(file, DiscoveredFile(file, display_path(file, self._cwd)))
            elif is_file and path.name.endswith(NATIVE_SUFFIXES):
                self._native.setdefault(path, DiscoveredFile(path, display_path(path, self._cwd)))
            elif is_file:
                if self._force_exclude and self._excluded(path, is_dir=False, explicit=True):
                    continue
                found.setdefault(path, DiscoveredFile(path, display_path(path, self._cwd)))
            else:
                missing.append(f"{printable(str(given))}: {_not_a_file(path)}")
        return sorted(found.values(), key=lambda f: f.display), missing

    def native_files(self) -> list[DiscoveredFile]:
        """C/C++/CUDA files met by the last :meth:`files` call (same excludes), sorted."""
        return sorted(self._native.values(), key=lambda f: f.display)

    def _walk(self, top: Path) -> list[Path]:
        files: list[Path] = []
        if top != self._cwd and self._force_exclude and self._excluded(top, True, True):
            return files
        stack = [top]
        while stack:
            directory = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as exc:
                reason = exc.strerror or type(exc).__name__
                shown = display_path(directory, self._cwd)
                self.skipped.append(f"{shown}: cannot read the directory ({reason}); skipped")
                continue
            for entry in entries:
                path = Path(entry.path)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = entry.is_file()
                except OSError:
                    is_dir = is_file = False
                if (
                    not is_dir
                    and not is_file
                    and entry.name.endswith(PYTHON_SUFFIXES + NATIVE_SUFFIXES)
                    and not _is_dir(path)  # a link to a directory: not followed, as git does
                    and not self._excluded(path, is_dir=False)
                ):
                    shown = display_path(path, self._cwd)
                    self.skipped.append(f"{shown}: {_not_a_file(path)}; skipped")
                    continue
                if is_dir:
                    if not self._excluded(path, is_dir=True):
                        stack.append(path)
                elif (
                    is_file
                    and entry.name.endswith(PYTHON_SUFFIXES + NATIVE_SUFFIXES)
                    and not self._excluded(path, is_dir=False)
                ):
                    if entry.name.endswith(PYTHON_SUFFIXES):
                        files.append(path)
                    else:
                        display = display_path(path, self._cwd)
                        self._native.setdefault(path, DiscoveredFile(path, display))
        return files

    def _excluded(self, path: Path, is_dir: bool, explicit: bool = False) -> bool:
        directory = path.parent
        config = self._config_of_dir.get(directory)
        if config is None:
            config = self._config_of_dir[directory] = self._resolver.for_path(directory)
        patterns = config.exclude_patterns()
        if explicit and patterns.matches(path.as_posix()) is not None:
            return True
        if not explicit and patterns.matches_name(path.name, path.as_posix()):
            return True
        if is_dir and _is_file(path / "pyvenv.cfg"):
            return True
        if explicit:
            return self._ignored_with_parents(path, is_dir)
        return self._gitignore_for(path).is_ignored(path, is_dir)

    def _gitignore_for(self, path: Path) -> GitIgnore:
        directory = path.parent
        cached = self._gitignore_of_dir.get(directory)
        if cached is not None:
            return cached
        root = find_repo_root(directory) or self._cwd
        ignore = self._gitignores.get(root)
        if ignore is None:
            ignore = GitIgnore(root)
            self._gitignores[root] = ignore
        self._gitignore_of_dir[directory] = ignore
        return ignore

    def _ignored_with_parents(self, path: Path, is_dir: bool) -> bool:
        """For explicit paths: ignored itself or under an ignored directory."""
        gitignore = self._gitignore_for(path)
        if gitignore.is_ignored(path, is_dir):
            return True
        return any(
            gitignore.is_ignored(parent, True)
            for parent in path.parents
            if _is_under(parent, self._cwd) and parent != self._cwd
        )


def _kind(path: Path) -> tuple[bool, bool]:
    """(a directory, a regular file) for ``path``, links followed; both False where it cannot
    be known (a broken link, a link loop, a parent without permission)."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return False, False
    return stat.S_ISDIR(mode), stat.S_ISREG(mode)


def _is_dir(path: Path) -> bool:
    return _kind(path)[0]


def _not_a_file(path: Path) -> str:
    """Why a path named or met is not checked: 'no such file or directory', 'not a regular
    file (a named pipe)', 'a broken symbolic link (to x.py)', 'a symbolic link loop'..."""
    what = what_is(path)
    if what.startswith(("a named pipe", "a socket", "a character device", "a block device")):
        return f"not a regular file ({what})"
    return what


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False where it cannot be known (a directory without permission)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _is_under(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True
