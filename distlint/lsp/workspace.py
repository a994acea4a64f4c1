"""The language server's workspace index: what a buffer's check needs of its project, kept.

A buffer is checked as a file of its project (the files it imports and those importing it are
linked with it, :func:`distlint.engine.tasks.context_tasks`). Found again at every edit, that
context cost more than the buffer's own check in a large project: listing the project, reading
every file for its imports, naming and hashing the files linked. The analysis process keeps
instead, per project: the listing, each file's imports (by the digest of its bytes), the files'
digests, their module names and settings, and the project's cache; an edit then costs its own
file plus what changed on disk since the last one.

What changed comes two ways:

- **watched** (the client registered the server's file watchers, and the project lies in the
  workspace folder): the server records each path the client reports (watched-file events,
  saves, file operations) in a :class:`ChangeLog`, and each job carries it. Those files are
  read again; a created, deleted or renamed path, or a ``.gitignore``, lists the project again.
  Assumed: the client reports every change of a watched file in the workspace folder (the
  watchers cover ``*.py``, ``*.pyi`` and ``.gitignore``); a job that comes before the report
  of a change sees the files as they were, and the report makes the server check the open
  documents again.
- **fallback** (no watchers, a project outside the workspace folder, a log that no longer
  reaches back to the index's last job, or the first job after the watchers were
  registered): every file's status is looked at at each job
  (:class:`~distlint.syntax.regular_files.FileDigests`' pre-check: device, inode, mode, size,
  modification and status-change times), and the project is listed again when a directory the
  listing walked, or the ``.gitignore`` in one, changed status (an entry added, removed or
  renamed changes its directory's). Assumed, as for the digests: the file system's clock is
  this machine's within :data:`~distlint.syntax.regular_files.SETTLED_NS` (a directory changed
  that recently when it was listed is listed again at the next job). A repository's
  ``info/exclude`` and global git excludes are not looked at; configuration files are the
  server's to watch (a change starts a new configuration generation, and a new index).

An index starts empty in a new analysis process (the first check of a project pays the full
cost), and belongs to one configuration generation and working directory.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from distlint.config.discovery import DiscoveredFile, Discovery
from distlint.config.project_files import ImportScans, ModuleIndex, related_in
from distlint.config.settings import CliOverrides, ConfigError, ConfigResolver, FolderMemo
from distlint.engine.cache import FirstPassCache, default_directory
from distlint.engine.tasks import Task, cached_scans, context_task, scans_key
from distlint.syntax.module_names import PackageFolders
from distlint.syntax.regular_files import SETTLED_NS, Status, VerifiedDigests, status_of

# -- the server's side ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkspaceChanges:
    """What a job carries of the files changed on disk (:class:`ChangeLog`)."""

    watched: Path | None = None  # the folder whose files the client watches for the server
    start: int = 0  # the sequence number of ``paths[0]``
    # (path, whether the project's listing may have changed), oldest first
    paths: tuple[tuple[str, bool], ...] = ()

    @property
    def end(self) -> int:
        return self.start + len(self.paths)


@dataclass
class ChangeLog:
    """The paths the client reported changed, numbered; the oldest are dropped past ``limit``
    (an analysis process that missed them looks at every file's status instead)."""

    limit: int = 2000
    start: int = 0
    paths: list[tuple[str, bool]] = field(default_factory=list)

    def record(self, path: str, listing: bool) -> None:
        self.paths.append((path, listing))
        if len(self.paths) > self.limit:
            dropped = len(self.paths) - self.limit // 2
            del self.paths[:dropped]
            self.start += dropped

    def changes(self, watched: Path | None) -> WorkspaceChanges:
        return WorkspaceChanges(watched, self.start, tuple(self.paths))


# -- the analysis process's side -------------------------------------------------------------------


@dataclass(frozen=True)
class IndexKey:
    root: Path  # the project root
    cwd: Path  # the working directory of the listing (its display paths, a git-less root)
    generation: int  # the server's configuration generation


class ProjectIndex:
    """One project's listing, imports, digests, module names, settings and cache, kept by the
    analysis process from one job to the next (see the module docstring)."""

    def __init__(self, key: IndexKey, resolver: ConfigResolver, changes: WorkspaceChanges) -> None:
        self.key = key
        self.resolver = resolver
        self.overrides = CliOverrides()
        self.digests = VerifiedDigests()
        self.cache: FirstPassCache | None = None
        if not os.environ.get("DISTLINT_NO_CACHE"):
            self.cache = FirstPassCache.open(default_directory(key.root))
        self.scans = ImportScans()
        if self.cache is not None:  # what earlier runs learnt
            self.digests.known.update(self.cache.digests.known)
            self.scans = cached_scans(self.cache)
        self.seq = changes.end  # the changes seen up to (the log's end when listed)
        # whether the client reported changes when the index last saw them: from then on
        # only what it reports changed (until then, nothing was reported)
        self.watched = self._watched(changes)
        self._list()

    def _list(self) -> None:
        """List the project (again), keeping the digests (and the imports' scans)."""
        discovery = Discovery(self.resolver, self.key.cwd)
        try:
            candidates, _ = discovery.files([self.key.root])
        except ConfigError:  # context_tasks gives no context then
            candidates = []
        self.by_path: dict[Path, DiscoveredFile] = {c.path: c for c in candidates}
        self.imports = ModuleIndex.kept(self.by_path, self.digests, self.scans)
        self.folders = PackageFolders()
        self.memo = FolderMemo()
        self.tasks: dict[Path, Task | None] = {}
        self.scans_kept = False  # the import scans of this listing are in the cache
        self.listed_at = time.time_ns()
        self.listed = {directory: _listing_status(directory) for directory in discovery.listed}
        self.unsettled = any(
            max(s[4], s[5]) >= self.listed_at - SETTLED_NS
            for status in self.listed.values()
            for s in status
            if s is not None
        )

    def sync(self, changes: WorkspaceChanges) -> None:
        """Take in what changed on disk since the last job (see the module docstring)."""
        watched = self._watched(changes)
        missed = changes.start > self.seq or not self.watched
        fresh = changes.paths[max(0, self.seq - changes.start) :]
        self.seq = changes.end
        self.watched = watched
        if not watched or missed:
            self.digests.doubt()
            if self.unsettled or any(
                _listing_status(directory) != status for directory, status in self.listed.items()
            ):
                self._list()
            return
        relist = False
        for path, listing in fresh:
            self.digests.forget(path)
            relist = relist or listing or Path(path) not in self.by_path
        if relist:
            self._list()

    def _watched(self, changes: WorkspaceChanges) -> bool:
        return changes.watched is not None and self.key.root.is_relative_to(changes.watched)

    def context(self, path: Path, contents: dict[Path, bytes]) -> list[Task]:
        """:func:`~distlint.engine.tasks.context_tasks` of the file ``path`` (absolute
        display paths), ``contents`` overriding files on disk."""
        related = related_in({path}, self.imports.asking(contents))
        if self.cache is not None and not self.scans_kept:
            # for the next analysis process's first check of the project (and the hook's)
            self.cache.put(scans_key(self.cache), self.scans.kept())
            self.scans_kept = True
        found = []
        for file in related:
            if file not in self.tasks:
                self.tasks[file] = context_task(
                    file, self.by_path, self.resolver, self.overrides, True, self.memo
                )
            task = self.tasks[file]
            if task is not None:
                found.append(task)
        return found

    def before_run(self) -> None:
        if self.cache is not None:
            self.cache.use_digests(self.digests)

    def after_run(self) -> None:
        self.digests.settle()


def _listing_status(directory: Path) -> tuple[Status | None, Status | None]:
    """What says that a directory's listing, or what its ``.gitignore`` ignores, changed."""
    found: list[Status | None] = []
    for path in (directory, directory / ".gitignore"):
        try:
            found.append(status_of(os.stat(path)))
        except OSError:
            found.append(None)
    return found[0], found[1]


class Workspaces:
    """The project indexes of an analysis process: a few, the most recently used kept."""

    def __init__(self, projects: int = 4) -> None:
        self.projects = projects
        self._by_key: dict[IndexKey, ProjectIndex] = {}

    def index(
        self, key: IndexKey, resolver: ConfigResolver, changes: WorkspaceChanges
    ) -> ProjectIndex:
        """The index of ``key``'s project, up to date with ``changes``."""
        for old in [k for k in self._by_key if k.generation != key.generation]:
            del self._by_key[old]  # another configuration: listed and set up again
        index = self._by_key.pop(key, None)
        if index is None:
            index = ProjectIndex(key, resolver, changes)
        else:
            index.sync(changes)
        self._by_key[key] = index  # the most recent last
        while len(self._by_key) > self.projects:
            del self._by_key[next(iter(self._by_key))]
        return index
