"""``[tool.distlint]`` configuration: discovery, validation and per-file settings.

The nearest config wins, walking up from each checked file: ``distlint.toml`` (top-level keys)
beats ``pyproject.toml`` (``[tool.distlint]``) in the same directory, and a ``pyproject.toml``
without that table is skipped. Mistakes are reported with the file, the key and the closest
valid key, and exit 2: a typo in a linter config must not silently turn rules off.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distlint.config.globs import PathPatterns, glob_regex
from distlint.config.selection import (
    enabled_codes,
    is_valid_selector,
    normalize_selector,
    suggest_code,
)
from distlint.file_settings import FileSettings
from distlint.rules.removed import removed_rule
from distlint.syntax.regular_files import read_regular_text, resolved

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".eggs",
    "build",
    "dist",
    "node_modules",
    "__pycache__",
    "__pypackages__",
    "site-packages",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".distlint_cache",
)

_LIST_KEYS = (
    "select",
    "extend-select",
    "ignore",
    "exclude",
    "extend-exclude",
    "compile-wrappers",
    "collective-wrappers",
    "rank-predicates",
)
VALID_KEYS = (
    *_LIST_KEYS,
    "per-file-ignores",
    "torch-version",
    "baseline",
    "file-timeout",
    "project-timeout",
    "confirm",
    "plugins",
)


class ConfigError(Exception):
    """Configuration problems the user must fix; each message names the file and the key.

    One error may hold several problems (every bad key of a file is reported in one run); its
    text is one problem per line.
    """

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Config:
    """One validated configuration file (or the defaults when ``path`` is None)."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    torch_version: str | None = None
    compile_wrappers: tuple[str, ...] = ()
    collective_wrappers: tuple[str, ...] = ()
    rank_predicates: tuple[str, ...] = ()
    confirm: tuple[tuple[str, Any], ...] = ()  # the validated [tool.distlint.confirm] table
    baseline: str | None = None  # report only findings this file does not hold (see baseline.py)
    file_timeout: float | None = None  # seconds per file (None: the default; 0: no budget)
    project_timeout: float | None = None  # seconds for linking and project rules (as above)
    has_table: bool = True  # False for a pyproject.toml without [tool.distlint]
    plugins: tuple[str, ...] = ()  # local plugins: absolute paths (see distlint.rules.plugins)
    # what was dropped from it, and why (a removed rule's code): shown as warnings
    warnings: tuple[str, ...] = ()

    @property
    def base(self) -> Path:
        """Directory that relative patterns in this config are anchored at."""
        return self.path.parent if self.path is not None else Path.cwd()

    @property
    def baseline_path(self) -> Path | None:
        """The baseline file, relative to the configuration file's folder."""
        return self.base / self.baseline if self.baseline is not None else None

    def exclude_patterns(self) -> PathPatterns:
        return PathPatterns((*self.exclude, *self.extend_exclude), self.base.as_posix())

    def as_dict(self) -> dict[str, Any]:
        """The resolved settings, for ``--show-settings``."""
        return {
            "config-file": str(self.path) if self.path else None,
            "select": list(self.select) if self.select is not None else None,
            "extend-select": list(self.extend_select),
            "ignore": list(self.ignore),
            "per-file-ignores": {glob: list(codes) for glob, codes in self.per_file_ignores},
            "exclude": list(self.exclude),
            "extend-exclude": list(self.extend_exclude),
            "torch-version": self.torch_version,
            "baseline": str(self.baseline_path) if self.baseline_path is not None else None,
            "compile-wrappers": list(self.compile_wrappers),
            "collective-wrappers": list(self.collective_wrappers),
            "rank-predicates": list(self.rank_predicates),
            "file-timeout": self.file_timeout,
            "project-timeout": self.project_timeout,
            "confirm": {k: list(v) if isinstance(v, tuple) else v for k, v in self.confirm},
            "plugins": list(self.plugins),
        }


@dataclass(frozen=True)
class CliOverrides:
    """Selection options given on the command line; they layer over the config file."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def settings_for(config: Config, overrides: CliOverrides, file_path: Path) -> FileSettings:
    """Per-file settings: selection (config + CLI) minus matching per-file-ignores."""
    return _settings(config, overrides, file_path, per_file_ignores_of(config, file_path))


def per_file_ignores_of(config: Config, file_path: Path) -> tuple[tuple[str, ...], ...]:
    """The codes of each per-file-ignores entry of ``config`` that matches ``file_path``: the
    one part of a file's settings that its path, not its folder, decides."""
    return tuple(
        codes
        for glob, codes in config.per_file_ignores
        if PathPatterns((glob,), config.base.as_posix()).matches(file_path.as_posix())
    )


def _settings(
    config: Config,
    overrides: CliOverrides,
    file_path: Path,
    ignored: tuple[tuple[str, ...], ...],
) -> FileSettings:
    from distlint.rules.registry import add_local_plugins, rule_catalog

    if config.plugins:  # a process that got the configuration already read (a worker): its rules
        add_local_plugins(config.plugins)  # are in the catalog before the selectors are resolved
    rules = {code: rule.default_enabled for code, rule in rule_catalog().items()}
    for option, chosen in (
        ("--select", overrides.select or ()),
        ("--extend-select", overrides.extend_select),
        ("--ignore", overrides.ignore),
    ):
        for selector in chosen:  # those of plugins could not be checked before loading them
            # a removed rule's code selects nothing (the command line warned and dropped it)
            if not is_valid_selector(selector, rules) and removed_rule(selector) is None:
                raise ConfigError(f"{option}: unknown rule selector '{selector}'")
    select = overrides.select if overrides.select is not None else config.select
    enabled = set(
        enabled_codes(
            rules,
            select,
            (*config.extend_select, *overrides.extend_select),
            (*config.ignore, *overrides.ignore),
        )
    )
    for codes in ignored:
        enabled = {c for c in enabled if c == "DL000" or not _covered(c, codes)}
    lowest, highest, _ = torch_range(config, file_path)
    return FileSettings(
        enabled=frozenset(enabled),
        torch_floor=lowest,
        torch_ceiling=highest,
        torch_version=config.torch_version,
        compile_wrappers=config.compile_wrappers,
        collective_wrappers=config.collective_wrappers,
        rank_predicates=config.rank_predicates,
        plugins=config.plugins,
    )


def torch_floor(config: Config, path: Path) -> tuple[str | None, str]:
    """(the lowest torch the project of ``path`` supports, where that comes from)."""
    lowest, _, source = torch_range(config, path)
    return lowest, source


def torch_range(config: Config, path: Path) -> tuple[str | None, str | None, str]:
    """(the lowest and the highest torch the project of ``path`` supports, where they come
    from). The lowest is the configured ``torch-version``, else the lowest lower bound that the
    project's torch requirements state; the highest is the highest upper bound they state (see
    distlint/config/torch_version.py). None: not known (the lowest: judged on the newest known
    torch; the highest: up to the newest)."""
    from distlint.config.torch_version import requirement_for_dir

    directory = path if path.is_dir() else path.parent
    found = requirement_for_dir(directory.resolve())
    highest = found.highest if found is not None else None
    if config.torch_version is not None:
        if highest is not None and _key(highest) < _key(config.torch_version):
            highest = None  # a requirement below the configured torch: the configured wins
        source = f"torch-version in {config.path}"
        if highest is not None:
            source += f"; up to torch {highest} from {found.describe_highest()}"  # type: ignore[union-attr]
        return config.torch_version, highest, source
    if found is None:
        return (
            None,
            None,
            ("no torch-version and no torch requirement found: the newest known torch"),
        )
    ceiling = ""  # where the highest comes from, when another requirement gives it
    if highest is not None and found.highest_from is not None:
        ceiling = f" from {found.highest_from}"
    if found.lowest is None:
        newest = "the newest known torch" + (f" up to {highest}{ceiling}" if highest else "")
        return None, highest, f"{found.describe()}, no lower bound: {newest}"
    return (
        found.lowest,
        highest,
        found.describe() + (f"; up to torch {highest}{ceiling}" if ceiling else ""),
    )


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def _covered(code: str, selectors: tuple[str, ...]) -> bool:
    return any(sel == "ALL" or code.startswith(sel) for sel in selectors)


# -- loading -------------------------------------------------------------------------------------


def load_config_file(path: Path) -> Config:
    """Read and validate one config file; raises ConfigError with a precise message."""
    try:
        raw = read_regular_text(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: config file is not valid UTF-8") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("distlint")
        prefix = "[tool.distlint]"
        if table is None:
            return Config(path=path, has_table=False)
    else:
        table = data
        prefix = "top level"
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {prefix} must be a table")
    return _validate(path, prefix, table)


def _validate(path: Path, prefix: str, table: dict[str, Any]) -> Config:
    from distlint.rules.registry import rule_catalog

    values: dict[str, Any] = {}
    problems: list[str] = []
    if "plugins" in table:  # first: the codes of their rules are valid selectors below
        try:
            values["plugins"] = _plugins(
                f"{path}: key 'plugins' in {prefix}", table["plugins"], path
            )
        except ConfigError as exc:
            problems.extend(exc.problems)
    known_codes = tuple(rule_catalog())
    for key, value in table.items():
        if key == "plugins":
            continue
        if key not in VALID_KEYS:
            hint = difflib.get_close_matches(key, VALID_KEYS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            valid = ", ".join(VALID_KEYS)
            problems.append(
                f"{path}: unknown key '{key}' in {prefix}{suggestion} (valid keys: {valid})"
            )
            continue
        where = f"{path}: key '{key}' in {prefix}"
        try:
            values[key] = _value(key, value, where, path, prefix, known_codes)
        except ConfigError as exc:
            problems.extend(exc.problems)
    for key in ("select", "extend-select", "ignore"):
        for selector in values.get(key, ()):
            try:
                _check_selector(f"{path}: key '{key}' in {prefix}", selector, known_codes)
            except ConfigError as exc:
                problems.extend(exc.problems)
    warnings = _drop_removed_codes(values, path, prefix)
    globs = [
        (key, pattern) for key in ("exclude", "extend-exclude") for pattern in values.get(key, ())
    ]
    globs += [("per-file-ignores", pattern) for pattern, _ in values.get("per-file-ignores", ())]
    for key, pattern in globs:
        try:
            glob_regex(pattern)
        except re.error as exc:
            problems.append(f"{path}: key '{key}' in {prefix}: invalid pattern '{pattern}': {exc}")
    if problems:
        raise ConfigError(*problems)
    return Config(
        path=path,
        select=_norm(values["select"]) if "select" in values else None,
        extend_select=_norm(values.get("extend-select", ())),
        ignore=_norm(values.get("ignore", ())),
        per_file_ignores=values.get("per-file-ignores", ()),
        exclude=tuple(values.get("exclude", DEFAULT_EXCLUDES)),
        extend_exclude=tuple(values.get("extend-exclude", ())),
        torch_version=values.get("torch-version"),
        compile_wrappers=tuple(values.get("compile-wrappers", ())),
        collective_wrappers=tuple(values.get("collective-wrappers", ())),
        rank_predicates=tuple(values.get("rank-predicates", ())),
        confirm=values.get("confirm", ()),
        baseline=values.get("baseline"),
        file_timeout=values.get("file-timeout"),
        project_timeout=values.get("project-timeout"),
        plugins=values.get("plugins", ()),
        warnings=warnings,
    )


def _drop_removed_codes(values: dict[str, Any], path: Path, prefix: str) -> tuple[str, ...]:
    """Take removed rules' codes out of the selector lists in ``values`` (in place), with a
    warning for each: the code selects nothing now (see distlint.rules.removed)."""
    warnings = []

    def kept(where: str, selectors: tuple[str, ...]) -> tuple[str, ...]:
        left = []
        for selector in selectors:
            removed = removed_rule(selector)
            if removed is None:
                left.append(selector)
            else:
                warnings.append(f"{where}: {removed.notice()}")
        return tuple(left)

    for key in ("select", "extend-select", "ignore"):
        if key in values:
            values[key] = kept(f"{path}: key '{key}' in {prefix}", values[key])
    if "per-file-ignores" in values:
        where = f"{path}: key 'per-file-ignores' in {prefix}"
        values["per-file-ignores"] = tuple(
            (glob, kept(f"{where}, entry '{glob}'", codes))
            for glob, codes in values["per-file-ignores"]
        )
    return tuple(warnings)


def _plugins(where: str, value: Any, path: Path) -> tuple[str, ...]:
    """Local plugin paths, absolute, after loading them (a broken plugin is an error here)."""
    from distlint.rules.plugins import PluginError
    from distlint.rules.registry import add_local_plugins

    paths = tuple(str((path.parent / item).resolve()) for item in _string_list(where, value))
    try:
        add_local_plugins(paths)
    except PluginError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return paths


def _value(
    key: str, value: Any, where: str, path: Path, prefix: str, known_codes: tuple[str, ...]
) -> Any:
    """One key's validated value; raises ConfigError naming the file and the key."""
    if key in _LIST_KEYS:
        return _string_list(where, value)
    if key == "per-file-ignores":
        return _per_file_ignores(where, value, known_codes)
    if key == "torch-version":
        return _torch_version(where, value)
    if key in ("file-timeout", "project-timeout"):
        return _file_timeout(where, value)
    if key == "baseline":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(
                f'{where} must be a file name such as "distlint-baseline.json", '
                f"got {_describe(value)}"
            )
        return value
    return _confirm_table(path, prefix, value)  # "confirm"


def _confirm_table(path: Path, prefix: str, value: Any) -> tuple[tuple[str, Any], ...]:
    """Validate ``[tool.distlint.confirm]`` (``[confirm]`` in distlint.toml) up front.

    Confirm mode reads the table itself (:mod:`distlint.confirm.targets`) and only when asked
    to (``--confirm``); checking it here makes a typo an exit-2 error on every run, and lists
    it in ``--show-settings``. Nothing here imports torch.
    """
    from distlint.confirm.targets import ConfirmConfigError, parse_table

    where = "[confirm]" if prefix == "top level" else f"{prefix[:-1]}.confirm]"
    try:
        parse_table(value, path, where)
    except ConfirmConfigError as exc:
        raise ConfigError(str(exc)) from None
    for entry in value.get("entries", ()):
        module, _, function = entry.rpartition(":")
        if not module.strip() or not function.strip():
            raise ConfigError(
                f"{path}: key 'entries' in {where}: entry {entry!r} must look like "
                "'pkg.module:function' or 'path/to/file.py:function'"
            )
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in value.items())


def _norm(selectors: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(normalize_selector(s) for s in selectors)


def _string_list(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where} must be a list of strings, got {_describe(value)}")
    return tuple(value)


def _per_file_ignores(
    where: str, value: Any, known_codes: tuple[str, ...]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table of glob = [codes], got {_describe(value)}")
    entries = []
    problems: list[str] = []
    for glob, codes in value.items():
        try:
            codes = _string_list(f"{where}, entry '{glob}',", codes)
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        for selector in codes:
            try:
                _check_selector(f"{where}, entry '{glob}'", selector, known_codes)
            except ConfigError as exc:
                problems.extend(exc.problems)
        entries.append((glob, _norm(codes)))
    if problems:
        raise ConfigError(*problems)
    return tuple(entries)


def _torch_version(where: str, value: Any) -> str:
    from distlint.knowledge.torch_tables import available_versions

    if not isinstance(value, str):
        raise ConfigError(f'{where} must be a string such as "2.13", got {_describe(value)}')
    versions = available_versions()
    wanted = ".".join(value.strip().split(".")[:2])
    if wanted not in versions:
        raise ConfigError(
            f"{where}: torch {value} is not known; supported versions: {', '.join(versions)}"
        )
    return wanted


def _file_timeout(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConfigError(
            f"{where} must be a number of seconds (0: no limit), got {_describe(value)}"
        )
    return float(value)


def _check_selector(where: str, selector: str, known_codes: tuple[str, ...]) -> None:
    normalized = normalize_selector(selector)
    if removed_rule(normalized) is None and not is_valid_selector(normalized, known_codes):
        hint = suggest_code(normalized, known_codes)
        suggestion = f"; did you mean '{hint}'?" if hint else ""
        raise ConfigError(f"{where}: unknown rule selector '{selector}'{suggestion}")


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


# -- discovery -------------------------------------------------------------------------------------


@dataclass
class FolderMemo:
    """What the files of one folder share in their settings (see
    :meth:`ConfigResolver.file_settings`), for one caller's loop over many files: kept no
    longer, so that nothing outlives a change on disk."""

    configs: dict[Path, Config] = field(default_factory=dict)
    # by (folder, overrides, per-file-ignores matched): the catalog they were made with, them
    settings: dict[
        tuple[Path, CliOverrides, tuple[tuple[str, ...], ...]], tuple[object, FileSettings]
    ] = field(default_factory=dict)


class ConfigResolver:
    """Finds the config that governs each path; caches per directory."""

    def __init__(self, forced: Path | None = None, collect: bool = False) -> None:
        """``collect``: a broken config file does not raise; its problems go to
        :attr:`problems` and its folder gets the defaults, so that a run can report every
        broken file at once (and then stop)."""
        from distlint.config.torch_version import clear_caches

        clear_caches()  # project metadata is read again for each new view of the configuration
        self._forced = load_config_file(forced) if forced is not None else None
        self._by_dir: dict[Path, Config] = {}
        self._loaded: dict[Path, Config] = {}
        self._real: dict[Path, Path] = {}  # folders' real paths (see resolved)
        self._collect = collect
        self.problems: list[str] = []

    def raise_problems(self, options: Sequence[str] = ()) -> None:
        """Raise every problem collected so far as one ConfigError (nothing if none): the
        config files' (by file, each file's own in table order), then ``options``, the
        command line's (``--select: unknown rule selector ...``)."""
        if self.problems or options:
            unique = dict.fromkeys(self.problems)
            by_file = sorted(unique, key=lambda problem: problem.split(": ", 1)[0])
            raise ConfigError(*by_file, *options)

    def for_path(self, path: Path) -> Config:
        if self._forced is not None:
            return self._forced
        directory = path if path.is_dir() else path.parent
        return self._for_dir(resolved(directory, self._real))

    def file_settings(
        self, path: Path, overrides: CliOverrides, folders: FolderMemo | None = None
    ) -> FileSettings:
        """The settings of the file at ``path``: its configuration's, with the command line's
        ``overrides`` (:func:`settings_for`). ``folders``: kept by a caller that asks for many
        files, so that the files of one folder with the same per-file-ignores share their
        settings (a file's settings depend on its path only through those, see
        :func:`settings_for` and :func:`torch_range`)."""
        if folders is None:
            return settings_for(self.for_path(path), overrides, path)
        from distlint.rules.registry import add_local_plugins, rule_catalog

        directory = path if path.is_dir() else path.parent  # what for_path and torch_range use
        config = folders.configs.get(directory)
        if config is None:
            config = folders.configs[directory] = self.for_path(path)
        ignored = per_file_ignores_of(config, path)
        if config.plugins:
            add_local_plugins(config.plugins)  # as settings_for does, before reading the catalog
        key = (directory, overrides, ignored)
        known = folders.settings.get(key)
        if known is not None and known[0] is rule_catalog():  # no plugin loaded since
            return known[1]
        settings = _settings(config, overrides, path, ignored)
        folders.settings[key] = (rule_catalog(), settings)
        return settings

    def _for_dir(self, directory: Path) -> Config:
        cached = self._by_dir.get(directory)
        if cached is not None:
            return cached
        config = self._config_in(directory)
        if config is None:
            parent = directory.parent
            config = Config() if parent == directory else self._for_dir(parent)
        self._by_dir[directory] = config
        return config

    def _config_in(self, directory: Path) -> Config | None:
        for name in ("distlint.toml", "pyproject.toml"):
            candidate = directory / name
            if candidate.is_file():
                config = self._loaded.get(candidate)
                if config is None:
                    try:
                        config = load_config_file(candidate)
                    except ConfigError as exc:
                        if not self._collect:
                            raise
                        self.problems.extend(exc.problems)
                        config = Config(path=candidate)
                    self._loaded[candidate] = config
                if config.has_table:
                    return config
        return None

    def warnings(self) -> list[str]:
        """What the configuration files loaded so far had dropped, each once (a removed
        rule's code in a selector list)."""
        loaded = [*self._loaded.values(), *([self._forced] if self._forced is not None else [])]
        return list(dict.fromkeys(w for config in loaded for w in config.warnings))

    def config_files(self) -> list[Path]:
        """Config files that were loaded (for reports and the LSP server's reloads)."""
        return sorted(self._loaded)
