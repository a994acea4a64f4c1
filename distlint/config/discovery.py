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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from distlint.config.gitignore import GitIgnore, find_repo_root, holds_git
from distlint.config.globs import PathPatterns
from distlint.config.settings import Config, ConfigResolver
from distlint.syntax.regular_files import printable, what_is

PYTHON_SUFFIXES = (".py", ".pyi")
# C/C++/CUDA sources: scanned (never parsed as Python) for TORCH_LIBRARY op registrations.
NATIVE_SUFFIXES = (".cpp", ".cc", ".cxx", ".cu", ".cuh", ".h", ".hpp")
CHECKED_SUFFIXES = PYTHON_SUFFIXES + NATIVE_SUFFIXES
VENV_MARKER = "pyvenv.cfg"  # a directory holding it is a virtualenv, whatever its name


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
        self._patterns: dict[int, tuple[Config, PathPatterns]] = {}  # by config (see _patterns_of)
        # C/C++/CUDA files met, by path (their order kept): most are never shown (the context
        # of a hook's check does not ask), so their DiscoveredFile is made when asked for
        self._native: dict[str, None] = {}
        # what the walk skipped and why (a directory without permission, a pipe named x.py, a
        # broken link): reported as warnings; the run goes on
        self.skipped: list[str] = []
        # the directories the walks listed (a listing kept by the language server is stale
        # once one of them, or an ignore file in one, changes)
        self.listed: list[Path] = []

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
                    and not any(Path(native).is_relative_to(path) for native in self._native)
                ):
                    missing.append(f"{given}: no Python file to check (all excluded or ignored)")
                for file in walked:
                    found.setdefault(file, DiscoveredFile(file, display_path(file, self._cwd)))
            elif is_file and path.name.endswith(NATIVE_SUFFIXES):
                self._native.setdefault(str(path))
            elif is_file:
                if self._force_exclude and self._named_excluded(path, is_dir=False):
                    continue
                found.setdefault(path, DiscoveredFile(path, display_path(path, self._cwd)))
            else:
                missing.append(f"{printable(str(given))}: {_not_a_file(path)}")
        return sorted(found.values(), key=lambda f: f.display), missing

    def native_files(self) -> list[DiscoveredFile]:
        """C/C++/CUDA files met by the last :meth:`files` call (same excludes), sorted."""
        found = [DiscoveredFile(p, display_path(p, self._cwd)) for p in map(Path, self._native)]
        return sorted(found, key=lambda f: f.display)

    def _walk(self, top: Path) -> list[Path]:
        files: list[Path] = []
        if top != self._cwd and self._force_exclude and self._named_excluded(top, is_dir=True):
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
            self.listed.append(directory)
            names = {entry.name for entry in entries}
            if directory != top and VENV_MARKER in names and _is_file(directory / VENV_MARKER):
                continue  # a virtualenv, whatever its name: found by its own listing
            excluded = None  # made on the first entry that needs it
            for entry in entries:
                name = entry.name
                checked = name.endswith(CHECKED_SUFFIXES)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = checked and not is_dir and entry.is_file()
                except OSError:
                    is_dir = is_file = False
                if not is_dir and not checked:
                    continue  # most entries of a source tree: nothing more to learn
                excluded = excluded or self._excluder(directory, names)
                if (
                    not is_dir
                    and not is_file
                    and not _is_dir(Path(entry.path))  # a link to a directory: not followed
                    and not excluded(name, False)
                ):
                    shown = display_path(Path(entry.path), self._cwd)
                    self.skipped.append(f"{shown}: {_not_a_file(Path(entry.path))}; skipped")
                elif is_dir:
                    if not excluded(name, True):
                        stack.append(Path(entry.path))
                elif is_file and not excluded(name, False):
                    if name.endswith(PYTHON_SUFFIXES):
                        files.append(Path(entry.path))
                    else:
                        self._native.setdefault(entry.path)
        return files

    def _excluder(self, directory: Path, names: set[str]) -> Callable[[str, bool], bool]:
        """Whether an entry of ``directory`` (whose ``names`` the walk listed) met while
        walking is excluded, told its name and kind (its parents were let through): the
        directory's exclude patterns and ignore files are compiled once for all its entries.
        A virtualenv below is left out when it is listed (:meth:`_walk`)."""
        by_pattern = self._patterns_of(self._config_for(directory)).in_directory(
            directory.as_posix()
        )
        ignored = self._gitignore_of(directory, ".git" in names).in_directory(directory, names)

        def excluded(name: str, is_dir: bool) -> bool:
            return by_pattern(name) or ignored(name, is_dir)

        return excluded

    def _named_excluded(self, path: Path, is_dir: bool) -> bool:
        """Whether a path named (``--force-exclude``) is excluded: it or one of its parents."""
        if self._config_for(path.parent).exclude_patterns().matches(path.as_posix()) is not None:
            return True
        if is_dir and _is_file(path / VENV_MARKER):
            return True
        return self._ignored_with_parents(path, is_dir)

    def _patterns_of(self, config: Config) -> PathPatterns:
        """``config``'s exclude patterns, one object (compiled once) per configuration."""
        known = self._patterns.get(id(config))
        if known is None or known[0] is not config:
            known = self._patterns[id(config)] = (config, config.exclude_patterns())
        return known[1]

    def _config_for(self, directory: Path) -> Config:
        config = self._config_of_dir.get(directory)
        if config is None:
            config = self._config_of_dir[directory] = self._resolver.for_path(directory)
        return config

    def _gitignore_of(self, directory: Path, may_hold_git: bool = True) -> GitIgnore:
        """The ignore files of ``directory``'s repository; ``may_hold_git``: False when its
        listing shows no ``.git``."""
        cached = self._gitignore_of_dir.get(directory)
        if cached is not None:
            return cached
        parent = self._gitignore_of_dir.get(directory.parent)
        if (
            parent is not None
            and directory.parent != directory
            and not (may_hold_git and holds_git(directory))
        ):
            ignore = parent  # the repository of its parent, known while walking down
        else:
            root = find_repo_root(directory) or self._cwd
            if root not in self._gitignores:
                self._gitignores[root] = GitIgnore(root)
            ignore = self._gitignores[root]
        self._gitignore_of_dir[directory] = ignore
        return ignore

    def _ignored_with_parents(self, path: Path, is_dir: bool) -> bool:
        """For explicit paths: ignored itself or under an ignored directory."""
        gitignore = self._gitignore_of(path.parent)
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
