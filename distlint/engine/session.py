"""One ``distlint check`` run over files or standard input, re-runnable with edited texts.

``check --fix`` checks the project, applies fixes in memory and checks again until nothing
changes (:mod:`distlint.engine.fixes`); ``--add-noqa`` edits the files once. Both need to check the
same files with some of them replaced by new text, and to write the result back in each
file's own encoding. :class:`CheckSession` holds the discovered files and their tasks, and
does that.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from distlint.config.settings import CliOverrides, ConfigResolver, FolderMemo
from distlint.file_settings import FileSettings
from distlint.findings import Finding, ToolError
from distlint.syntax.regular_files import read_regular_file
from distlint.syntax.source import SourceError, decode_source

if TYPE_CHECKING:
    from distlint.config.discovery import DiscoveredFile
    from distlint.engine.cache import FirstPassCache
    from distlint.engine.results import FileResult
    from distlint.engine.tasks import NativeSource, Task


@dataclass
class CheckSession:
    """The files of one run and how to check them (see the module docstring)."""

    cwd: Path
    tasks: list[Task] = field(default_factory=list)
    native: list[NativeSource] = field(default_factory=list)
    jobs: int = 1
    cache: FirstPassCache | None = None
    file_timeout: float | None = None  # seconds one file's analysis may take (None: no budget)
    project_timeout: float | None = None  # seconds for linking and project rules (None: none)
    files: list[DiscoveredFile] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what discovery skipped, and why
    enabled_union: set[str] = field(default_factory=set)
    # standard input: its display name ("-" when no --stdin-filename), bytes and settings
    stdin_display: str | None = None
    stdin_data: bytes = b""
    stdin_settings: FileSettings | None = None
    stdin_module: tuple[str | None, bool] = (None, False)
    results: list[FileResult] = field(default_factory=list)
    _bytes: dict[str, bytes | None] = field(default_factory=dict)

    @classmethod
    def for_paths(
        cls,
        paths: list[Path],
        resolver: ConfigResolver,
        overrides: CliOverrides,
        cwd: Path,
        *,
        force_exclude: bool,
        jobs: int | None,
        cache: FirstPassCache | None,
        file_timeout: float | None = None,
        project_timeout: float | None = None,
    ) -> CheckSession:
        from distlint.config.discovery import Discovery
        from distlint.engine.tasks import (
            Task,
            context_tasks,
            default_jobs,
            file_budget,
            native_sources,
            project_budget,
        )

        first = Path(os.path.abspath(paths[0])) if paths else cwd
        config = resolver.for_path(first)
        session = cls(
            cwd,
            jobs=jobs or default_jobs(),
            cache=cache,
            file_timeout=file_budget(file_timeout, config),
            project_timeout=project_budget(project_timeout, config),
        )
        discovery = Discovery(resolver, cwd, force_exclude=force_exclude)
        session.files, session.notices = discovery.files(paths)
        session.skipped = discovery.skipped
        folders = FolderMemo()
        for file in session.files:
            settings = resolver.file_settings(file.path, overrides, folders)
            session.enabled_union |= settings.enabled
            session.tasks.append(Task(file.path, file.display, settings))
        session.native = native_sources(discovery.native_files(), resolver, overrides)
        session.tasks += context_tasks(
            [f.path for f in session.files], paths, resolver, overrides, cwd, cache=cache
        )
        return session

    @classmethod
    def for_stdin(
        cls,
        name: str | None,
        resolver: ConfigResolver,
        overrides: CliOverrides,
        cwd: Path,
        cache: FirstPassCache | None,
        file_timeout: float | None = None,
        project_timeout: float | None = None,
    ) -> CheckSession:
        from distlint.config.discovery import display_path
        from distlint.engine.tasks import Task, context_tasks, file_budget, project_budget
        from distlint.syntax.module_names import module_name_for

        name = name or "-"
        target = (cwd / name).resolve()
        display = display_path(target, cwd) if name != "-" else "-"
        settings = resolver.file_settings(target, overrides)
        data = sys.stdin.buffer.read()
        budget = file_budget(file_timeout, resolver.for_path(target))
        session = cls(
            cwd,
            jobs=1,
            cache=cache,
            file_timeout=budget,
            project_timeout=project_budget(project_timeout, resolver.for_path(target)),
            stdin_display=display,
            stdin_data=data,
        )
        session.stdin_settings = settings
        session.enabled_union = set(settings.enabled)
        session._bytes[display] = data
        if name != "-":  # the buffer stands for that file of its project (as in an editor)
            session.stdin_module = module_name_for(target)
            session.tasks = [Task(target, display, settings, data=data)]
            session.tasks += context_tasks(
                [target], [target], resolver, overrides, cwd, {target: data}, cache=cache
            )
        return session

    # -- checking ---------------------------------------------------------------------------------

    def check(self, texts: dict[str, str] | None = None) -> list[Finding]:
        """Check every file, ``texts`` (display path -> text) replacing files' contents;
        the results are kept in :attr:`results`, the findings returned in report order."""
        texts = texts or {}
        if self.stdin_display is not None and not self.tasks:  # plain `-`
            from distlint.engine.runner import check_alone

            data = self.encoded(self.stdin_display, texts.get(self.stdin_display))
            module, is_package = self.stdin_module
            assert self.stdin_settings is not None
            self.results = [
                check_alone(
                    data,
                    self.stdin_display,
                    self.stdin_settings,
                    module,
                    is_package,
                    self.file_timeout,
                )
            ]
        else:
            tasks = [
                replace(task, data=self.encoded(task.display, texts[task.display]))
                if task.report and task.display in texts
                else task
                for task in self.tasks
            ]
            self.results = self._run(tasks)
        return sorted((f for r in self.results for f in r.findings), key=lambda f: f.sort_key)

    def _run(self, tasks: list[Task]) -> list[FileResult]:
        """:func:`~distlint.engine.runner.run`, unless the cache holds the results of a check
        of exactly these files as they are: then those, without importing the checker."""
        from distlint.engine.tasks import look_up

        lookup = look_up(tasks, self.native, self.cache)
        settled = lookup.settled
        if settled is not None and self.cache is not None:
            self.cache.finish()
            return settled
        from distlint.engine.runner import run

        return run(
            tasks,
            self.jobs,
            self.native,
            self.cache,
            self.file_timeout,
            self.project_timeout,
            lookup=lookup,
        )

    @property
    def errors(self) -> list[ToolError]:
        return [e for r in self.results for e in r.errors]

    @property
    def suppressed(self) -> int:
        return sum(r.suppressed for r in self.results)

    # -- file contents ----------------------------------------------------------------------------

    def path_of(self, display: str) -> Path | None:
        """The file on disk behind a reported path (None for standard input)."""
        if display == self.stdin_display:
            return None
        for file in self.files:
            if file.display == display:
                return file.path
        return None

    def paths(self) -> dict[str, Path]:
        """Display path -> file on disk, for every file of the run (the named files, the
        project files linked with them, a named standard input)."""
        found = {task.display: task.path for task in self.tasks}
        found.update((file.display, file.path) for file in self.files)
        return found

    def original_bytes(self, display: str) -> bytes | None:
        if display not in self._bytes:
            path = self.path_of(display)
            try:
                self._bytes[display] = read_regular_file(path) if path is not None else None
            except OSError:
                self._bytes[display] = None
        return self._bytes[display]

    def read(self, display: str) -> str | None:
        """The original text of a reported file (None if it cannot be read or decoded)."""
        data = self.original_bytes(display)
        if data is None:
            return None
        try:
            return decode_source(data)
        except SourceError:
            return None

    def encoded(self, display: str, text: str | None) -> bytes:
        """``text`` as the bytes of that file (its encoding and BOM); the original if None."""
        from distlint.engine.fixes import encode_like

        original = self.original_bytes(display) or b""
        if text is None:
            return original
        try:
            return encode_like(original, text)
        except UnicodeEncodeError:  # an edit the file's encoding cannot hold: checked as UTF-8
            return text.encode("utf-8", "surrogatepass")

    def write(self, display: str, text: str) -> str | None:
        """Write ``text`` to the file behind ``display``; the reason when it cannot be."""
        from distlint.engine.fixes import encode_like

        path = self.path_of(display)
        if path is None:
            return "not a file on disk"
        try:
            data = encode_like(self.original_bytes(display) or b"", text)
        except UnicodeEncodeError as exc:
            return f"the file's encoding cannot hold the fixed text ({exc.reason})"
        try:
            path.write_bytes(data)
        except OSError as exc:
            return f"cannot write: {exc.strerror or exc}"
        self._bytes[display] = data
        return None

    def stdin_text(self) -> str:
        """Standard input as text (decoded as its file would be, else as UTF-8)."""
        try:
            return decode_source(self.stdin_data)
        except SourceError:
            return self.stdin_data.decode("utf-8", "replace")

    def source_texts(self) -> dict[str, str]:
        """Display path -> text of standard input, for reporters' snippets."""
        if self.stdin_display is None:
            return {}
        with contextlib.suppress(UnicodeDecodeError):
            return {self.stdin_display: self.stdin_data.decode("utf-8-sig")}
        return {}
