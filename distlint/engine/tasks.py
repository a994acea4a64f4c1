"""What a check is asked to do (its tasks, its budgets, the files linked for context) and
what the cache already holds for it, without the checker: a re-check where nothing changed
is answered here from one cache entry (:func:`look_up`) without importing LibCST, the
semantic layer or any rule (:mod:`distlint.engine.runner` runs everything else).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from distlint.config.discovery import DiscoveredFile, Discovery
from distlint.config.project_files import (
    IMPORT_SCANS,
    ImportScans,
    project_root,
    related_files,
    related_inputs,
)
from distlint.config.settings import (
    CliOverrides,
    Config,
    ConfigError,
    ConfigResolver,
    FileSettings,
    FolderMemo,
)
from distlint.engine.cache import FirstPassCache, Identities, identity_of
from distlint.engine.results import PROJECT, PROJECT_TIMEOUT, FileResult
from distlint.findings import Finding
from distlint.rules.registry import rule_catalog
from distlint.syntax.module_names import PackageFolders, module_name_for
from distlint.syntax.regular_files import content_digest, read_regular_file

if TYPE_CHECKING:
    from distlint.engine.checker import FileSource
    from distlint.engine.project_reuse import ReadOfFile


FILE_TIMEOUT = 20.0  # seconds: the command line's default budget for one file's analysis


@dataclass(frozen=True)
class Task:
    path: Path
    display: str
    settings: FileSettings
    module_name: str | None = None
    is_package: bool = False
    second: bool = False  # the second pass: its input comes with the pass (see _run_pass)
    report: bool = True  # False: a file of the project linked for context, not reported on
    data: bytes | None = None  # the file's content when it is not read from disk (stdin)
    measure: tuple[tuple, ...] = ()  # lazily located nodes its first pass measures (keys)

    @property
    def source(self) -> FileSource:
        """What the check reads: ``data`` when given, else the file on disk."""
        from distlint.engine.checker import FileSource

        origin = self.data if self.data is not None else self.path
        return FileSource(origin, self.display, self.module_name, self.is_package)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class NativeSource:
    """A C/C++/CUDA file that registers torch ops, and the rules enabled for it."""

    display: str
    text: str
    enabled: frozenset[str]


def native_sources(
    files: Sequence[DiscoveredFile], resolver: ConfigResolver, overrides: CliOverrides
) -> list[NativeSource]:
    """The native files worth scanning: those that mention ``TORCH_LIBRARY`` (read once)."""
    found = []
    for file in files:
        try:
            data = read_regular_file(file.path)
        except OSError:
            continue
        if b"TORCH_LIBRARY" not in data:
            continue
        settings = resolver.file_settings(file.path, overrides)
        found.append(NativeSource(file.display, data.decode("utf-8", "replace"), settings.enabled))
    return found


def file_budget(option: float | None, config: Config) -> float | None:
    """The per-file budget in seconds: the option, else the configuration's ``file-timeout``,
    else :data:`FILE_TIMEOUT`; None (no budget) for 0."""
    chosen = option if option is not None else config.file_timeout
    chosen = FILE_TIMEOUT if chosen is None else chosen
    return chosen or None


def project_budget(option: float | None, config: Config) -> float | None:
    """The project stage's budget in seconds: the option, else the configuration's
    ``project-timeout``, else :data:`~distlint.engine.PROJECT_TIMEOUT`; None for 0."""
    chosen = option if option is not None else config.project_timeout
    chosen = PROJECT_TIMEOUT if chosen is None else chosen
    return chosen or None


def context_tasks(
    named: Sequence[Path],
    given: Sequence[Path],
    resolver: ConfigResolver,
    overrides: CliOverrides,
    cwd: Path,
    contents: dict[Path, bytes] | None = None,
    absolute: bool = False,
    cache: FirstPassCache | None = None,
) -> list[Task]:
    """The other files of the named files' projects that they import or are imported by, to
    link with them (not reported on): ``check train.py`` finds what ``check .`` finds in
    ``train.py``. They keep the settings ``check .`` gives them, so that its cached first
    passes serve them, but only project-scope rules run on them (:func:`linked_only`).
    ``given`` are the paths as named (a project inside a named directory is walked already);
    ``contents`` overrides files on disk (stdin, an editor's buffer); ``absolute`` shows
    their paths absolute (the language server); ``cache`` keeps the files' import scans
    between runs. A configuration error met on the way (another folder's broken
    ``distlint.toml``) leaves out what it governs: the files named were not asked about it."""
    try:
        return _context_tasks(named, given, resolver, overrides, cwd, contents, absolute, cache)
    except ConfigError:
        return []


def _context_tasks(
    named: Sequence[Path],
    given: Sequence[Path],
    resolver: ConfigResolver,
    overrides: CliOverrides,
    cwd: Path,
    contents: dict[Path, bytes] | None,
    absolute: bool,
    cache: FirstPassCache | None,
) -> list[Task]:
    roots = context_roots(named, given, cwd)
    if not roots:
        return []
    candidates, _ = Discovery(resolver, cwd).files(roots)
    by_path = {c.path: c for c in candidates}
    if cache is None:
        related = related_files(set(named), by_path, contents)
    else:
        related = _related_cached(set(named), by_path, contents or {}, cache)
    memo = FolderMemo()
    return [
        task
        for path in related
        if (task := context_task(path, by_path, resolver, overrides, absolute, memo)) is not None
    ]


def context_roots(named: Sequence[Path], given: Sequence[Path], cwd: Path) -> list[Path]:
    """The project roots whose files :func:`context_tasks` links with the named files: those
    of the named files' folders, but for a root inside a directory named (walked already)."""
    if not named:
        return []
    paths = [Path(os.path.normpath(p if p.is_absolute() else cwd / p)) for p in given]
    # one look-up per folder (the named files of a run share a few folders)
    folders = {path if path.is_dir() else path.parent for path in named}
    roots = sorted({root for folder in folders if (root := project_root(folder)) is not None})
    return [r for r in roots if not any(g.is_dir() and r.is_relative_to(g) for g in paths)]


def context_task(
    path: Path,
    by_path: dict[Path, DiscoveredFile],
    resolver: ConfigResolver,
    overrides: CliOverrides,
    absolute: bool,
    memo: FolderMemo,
) -> Task | None:
    """The task of a file linked for context (None: its configuration is broken)."""
    try:
        settings = resolver.file_settings(path, overrides, memo)
    except ConfigError:
        return None
    display = path.as_posix() if absolute else by_path[path].display
    return Task(path, display, settings, report=False)


RELATED = "(related files)"


@dataclass(frozen=True)
class RelatedFiles:
    """:func:`related_files`'s answer as the cache keeps it (:func:`_related_cached`)."""

    path: str  # RELATED: the cache checks that an entry is what was asked for
    files: tuple[str, ...]


def _related_cached(
    named: set[Path],
    candidates: dict[Path, DiscoveredFile],
    contents: dict[Path, bytes],
    cache: FirstPassCache,
) -> list[Path]:
    """:func:`related_files`, its answer cached under all it answers from
    (:func:`related_inputs`: what the named files import, the other files' digests), so that
    a hook on a staged file edited but for its imports (the usual commit) scans nothing;
    else the import scans of an earlier run serve the files whose bytes did not change."""
    named_scans = ImportScans()
    inputs = related_inputs(named, candidates, contents, cache.digests, named_scans)
    key = cache.key(b"", ("related files", inputs))
    kept = cache.get(key, RELATED)
    if isinstance(kept, RelatedFiles):
        return [Path(path) for path in kept.files]
    scans = cached_scans(cache)
    scans.used.update(named_scans.used)
    related = related_files(named, candidates, contents, scans, cache.digests)
    if scans.used.keys() != scans.known.keys():
        cache.put(scans_key(cache), scans.kept())
    cache.put(key, RelatedFiles(RELATED, tuple(str(path) for path in related)))
    return related


def scans_key(cache: FirstPassCache) -> str:
    """The cache entry of the files' import scans (one for every run)."""
    return cache.key(b"", ("import scans",))


def cached_scans(cache: FirstPassCache) -> ImportScans:
    """The import scans the cache keeps (those of the last run that found related files)."""
    known = cache.get(scans_key(cache), IMPORT_SCANS)
    return ImportScans(known.known if isinstance(known, ImportScans) else {})


def linked_only(settings: FileSettings) -> FileSettings:
    """The settings a file linked for context (not reported on) is analysed with: only the
    project-scope rules, which record what the project rules need. Its summary and records
    are those of a pass with every rule (a test checks it), so a cached full pass serves too."""
    project = {code for code, rule in rule_catalog().items() if rule.scope == "project"}
    return replace(settings, enabled=settings.enabled & project)


@dataclass(frozen=True)
class ProjectResults:
    """What the stages after the first pass gave for a project, cached under a key of every
    file's first-pass key (:func:`_project_key`): a re-check where no file changed reuses it.
    In a check of a few files (:data:`REUSE_MAX_REPORTED`) the key leaves out the reported
    files' contents, and ``read`` says what the stages read of each of them: an edit of one
    that leaves that the same reuses the entry too (:mod:`.project_reuse`)."""

    path: str  # PROJECT: the cache checks that an entry is what was asked for
    found: dict[str, list[Finding]]  # project findings by file
    second: dict[str, FileResult]  # second-pass results by display path
    read: dict[str, ReadOfFile] | None = None  # by display path: the reported files
    # the results of the check that made the entry: a re-check where nothing changed (no
    # reported file either) reads this entry alone
    settled: tuple[FileResult, ...] | None = None


# The most reported files whose summaries and records an entry keeps (pickled before the
# project stage, a few milliseconds each): a commit's or an editor's files, not a whole tree.
REUSE_MAX_REPORTED = 64


def _project_key(
    cache: FirstPassCache,
    tasks: Sequence[Task],
    keys: Sequence[tuple[str, ...] | None],
    native: Sequence[tuple[str, str, frozenset[str]]],
    wrappers: Sequence[str],
) -> str | None:
    """The project stage's cache key: every file's key (its bytes, path, module and
    settings), which files are reported, the native sources and the compile wrappers; for
    the reported files of a check of a few files, their path, module and settings only. None
    when a file could not be read (not cacheable)."""
    few = _keeps_reads(tasks)
    files: list[tuple[str, bool, object]] = []
    for task, key in zip(tasks, keys, strict=True):
        if key is None:
            return None
        if few and task.report:
            files.append((task.display, True, _identity(task, task.settings)))
        else:
            files.append((task.display, task.report, key[0]))
    natives = tuple((path, text, tuple(sorted(codes))) for path, text, codes in native)
    return cache.key(b"", ("project", tuple(files), natives, tuple(wrappers), few))


def _keeps_reads(tasks: Sequence[Task]) -> bool:
    """Whether the project stage's entry keeps what it read of each reported file."""
    return sum(task.report for task in tasks) <= REUSE_MAX_REPORTED


def _identity(task: Task, settings: FileSettings) -> str:
    return identity_of(task.display, task.module_name, task.is_package, settings)


def _keys(
    tasks: Sequence[Task], cache: FirstPassCache
) -> tuple[list[tuple[str, ...] | None], list[bytes | None]]:
    """Each file's first-pass keys, in the order they are looked up (None: unreadable): the
    key of its settings; for a file linked for context, then the key of the pass that runs
    on it (:func:`linked_only`), so that the full pass ``check .`` cached serves it first.
    And the digest of each file on disk they were made from (None: not on disk, unreadable)."""
    found: list[tuple[str, ...] | None] = []
    digests: list[bytes | None] = []
    identities = Identities()
    narrowed: dict[int, tuple[FileSettings, FileSettings]] = {}  # by id: linked_only's, once
    for task in tasks:
        try:
            digest = (
                content_digest(task.data)
                if task.data is not None
                else cache.digests.digest(task.path)
            )
        except OSError:
            found.append(None)  # the pass reports the unreadable file
            digests.append(None)
            continue
        digests.append(digest if task.data is None else None)
        chosen = [task.settings]
        if not task.report:
            pair = narrowed.get(id(task.settings))
            if pair is None or pair[0] is not task.settings:
                pair = narrowed[id(task.settings)] = (task.settings, linked_only(task.settings))
            chosen.append(pair[1])
        found.append(
            tuple(
                cache.key_of(
                    digest, identities.of(task.display, task.module_name, task.is_package, s)
                )
                for s in chosen
            )
        )
    return found, digests


def unchanged_since_keyed(
    tasks: Sequence[Task], digests: Sequence[bytes | None], cache: FirstPassCache
) -> bool:
    """Whether every file on disk of ``tasks`` still has the digest its key was made from
    (:func:`_keys`): a file written while the check ran was analysed as it was when a worker
    read it, maybe not as it was keyed, and what the check made of it must not be cached
    under that key (a later run of the keyed bytes would be given the other bytes' findings).
    Each file's status is looked at (:class:`~distlint.syntax.regular_files.FileDigests`:
    one ``stat``, and a read only where the status changed). Not caught: a file written and
    written back to the keyed bytes while the check ran, a worker having read it in between."""
    for task, digest in zip(tasks, digests, strict=True):
        if digest is None:
            continue
        try:
            if cache.digests.digest(task.path) != digest:
                return False
        except OSError:
            return False
    return True


def _nothing_changed(
    kept: ProjectResults, tasks: Sequence[Task], keys: Sequence[tuple[str, ...] | None]
) -> bool:
    """Whether the check that made ``kept`` checked exactly what this one checks: its key
    holds every file's contents, or each reported file's is the one the stage read."""
    if kept.settled is None:
        return False
    if kept.read is None:
        return True
    for task, key in zip(tasks, keys, strict=True):
        read = kept.read.get(task.display) if task.report else None
        if task.report and (read is None or key is None or read.key != key[0]):
            return False
    return True


def _with_module_names(tasks: Sequence[Task], folders: PackageFolders | None = None) -> list[Task]:
    """Give each task its module name; files whose names collide are keyed by path instead."""
    named = []
    folders = folders if folders is not None else PackageFolders()
    for task in tasks:
        module_name, is_package = module_name_for(task.path, folders)
        named.append((task, module_name, is_package))
    counts: dict[str | None, int] = {}
    for _, module_name, _ in named:
        counts[module_name] = counts.get(module_name, 0) + 1
    return [
        replace(
            task,
            module_name=module_name if counts[module_name] == 1 else None,
            is_package=is_package,
        )
        for task, module_name, is_package in named
    ]


@dataclass(frozen=True)
class ProjectLookup:
    """What the cache holds for a check before any file is checked (:func:`look_up`)."""

    tasks: list[Task]  # with their module names
    wrappers: list[str]  # the compile wrappers of every file's settings
    native: list[tuple[str, str, frozenset[str]]]  # (display, text, enabled) of native files
    keys: list[tuple[str, ...] | None]  # each file's first-pass keys (None: unreadable)
    digests: list[bytes | None]  # each file's digest its keys were made from (None: not on disk)
    project_key: str | None  # the project stage's entry (None: a file could not be read)
    kept: ProjectResults | None  # what that entry holds

    @cached_property  # the session asks, then the runner it hands the look-up to
    def settled(self) -> list[FileResult] | None:
        """The results of the check that made the entry, when it checked exactly what this
        one checks; None when this one must run."""
        kept = self.kept
        if kept is None or not _nothing_changed(kept, self.tasks, self.keys):
            return None
        return list(kept.settled or ())


def look_up(
    tasks: Sequence[Task],
    native: Sequence[NativeSource],
    cache: FirstPassCache | None,
    folders: PackageFolders | None = None,
) -> ProjectLookup:
    """The tasks with their module names, and (with a cache) their keys and the project
    stage's entry found under them. ``folders``: the files' module names as a caller that
    runs many checks of one project keeps them (the language server)."""
    tasks = _with_module_names(tasks, folders)
    wrappers = sorted({w for task in tasks for w in task.settings.compile_wrappers})
    natives = [(source.display, source.text, source.enabled) for source in native]
    if cache is None:
        return ProjectLookup(tasks, wrappers, natives, [], [], None, None)
    keys, digests = _keys(tasks, cache)
    project_key = _project_key(cache, tasks, keys, natives, wrappers)
    kept = cache.get(project_key, PROJECT) if project_key else None
    kept = kept if isinstance(kept, ProjectResults) else None
    return ProjectLookup(tasks, wrappers, natives, keys, digests, project_key, kept)
