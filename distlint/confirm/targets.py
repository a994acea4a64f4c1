"""What confirm mode runs: entry factories from the configuration, or one training script.

Configuration (``[tool.distlint.confirm]`` in ``pyproject.toml``, ``[confirm]`` in
``distlint.toml``)::

    [tool.distlint.confirm]
    entries = ["pkg.module:make_example"]   # factories returning (callable, args, kwargs)
    timeout = 120          # seconds per target (wall clock)
    memory-limit = 8192    # MiB of address space per target
    backend = "aot_eager"  # backend compiled regions use; "keep" keeps the script's own
    world-size = 2         # fake process group, script mode
    rank = 0
    max-steps = 3          # script mode: optimizer steps before the script is stopped
    time-limit = 60        # script mode: seconds before the script is stopped (then timeout)
    map-cuda-to-cpu = false

Command-line options override these.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_TIMEOUT = 120.0
DEFAULT_MEMORY_MB = 8192
DEFAULT_BACKEND = "aot_eager"
DEFAULT_MAX_STEPS = 3


class ConfirmConfigError(Exception):
    """A bad ``[tool.distlint.confirm]`` value; the message names the file and key."""


@dataclass(frozen=True)
class ConfirmSettings:
    """Resolved confirm-mode settings (configuration, then command-line overrides)."""

    entries: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int | None = DEFAULT_MEMORY_MB
    backend: str = DEFAULT_BACKEND
    world_size: int = 2
    rank: int = 0
    max_steps: int | None = DEFAULT_MAX_STEPS
    time_limit: float | None = None
    map_cuda_to_cpu: bool = False
    base: Path = field(default_factory=Path.cwd)  # where relative entries and imports start
    config_path: Path | None = None

    def with_overrides(self, **values: Any) -> ConfirmSettings:
        return replace(self, **{k: v for k, v in values.items() if v is not None})


@dataclass(frozen=True)
class Target:
    """One thing to run in a child process."""

    kind: str  # "entry" | "script"
    name: str  # shown to the user: the entry spec or the script path
    entry: str | None = None
    script: str | None = None
    argv: tuple[str, ...] = ()

    def spec(self, settings: ConfirmSettings) -> dict[str, Any]:
        """The JSON the child reads (see :mod:`distlint.confirm.child`)."""
        sys_path = [str(settings.base)]
        if self.script:
            sys_path.append(str(Path(self.script).resolve().parent))
        return {
            "kind": self.kind,
            "entry": self.entry,
            "script": self.script,
            "argv": list(self.argv),
            "sys_path": sys_path,
            "backend": settings.backend,
            "rank": settings.rank,
            "world_size": settings.world_size,
            "map_cuda_to_cpu": settings.map_cuda_to_cpu,
            "max_steps": settings.max_steps if self.kind == "script" else None,
            "time_limit": settings.time_limit if self.kind == "script" else None,
        }


_KEYS = {
    "entries": "list",
    "timeout": "number",
    "memory-limit": "int",
    "backend": "str",
    "world-size": "int",
    "rank": "int",
    "max-steps": "int",
    "time-limit": "number",
    "map-cuda-to-cpu": "bool",
}


def load_settings(config_path: Path | None, base: Path | None = None) -> ConfirmSettings:
    """Settings from the confirm table of ``config_path`` (defaults when there is none)."""
    if config_path is None:
        return ConfirmSettings(base=(base or Path.cwd()).resolve())
    try:
        data = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfirmConfigError(f"{config_path}: cannot read: {exc}") from None
    if config_path.name == "pyproject.toml":
        table = data.get("tool", {}).get("distlint", {}).get("confirm", {})
        where = "[tool.distlint.confirm]"
    else:
        table = data.get("confirm", {})
        where = "[confirm]"
    return parse_table(table, config_path, where)


def parse_table(table: Any, config_path: Path, where: str) -> ConfirmSettings:
    if not isinstance(table, dict):
        raise ConfirmConfigError(f"{config_path}: {where} must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        kind = _KEYS.get(key)
        if kind is None:
            import difflib

            hint = difflib.get_close_matches(key, list(_KEYS), n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            raise ConfirmConfigError(
                f"{config_path}: unknown key '{key}' in {where}{suggestion} "
                f"(valid keys: {', '.join(_KEYS)})"
            )
        values[key] = _check(config_path, where, key, kind, value)
    if values.get("timeout") is not None and values["timeout"] <= 0:
        raise ConfirmConfigError(f"{config_path}: key 'timeout' in {where} must be positive")
    settings = ConfirmSettings(base=config_path.parent.resolve(), config_path=config_path)
    mapping = {
        "entries": ("entries", tuple),
        "timeout": ("timeout", float),
        "memory-limit": ("memory_mb", int),
        "backend": ("backend", str),
        "world-size": ("world_size", int),
        "rank": ("rank", int),
        "max-steps": ("max_steps", int),
        "time-limit": ("time_limit", float),
        "map-cuda-to-cpu": ("map_cuda_to_cpu", bool),
    }
    updates = {mapping[k][0]: mapping[k][1](v) for k, v in values.items()}
    return replace(settings, **updates)


def _check(path: Path, where: str, key: str, kind: str, value: Any) -> Any:
    ok = {
        "list": isinstance(value, list) and all(isinstance(v, str) for v in value),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
    }[kind]
    if not ok:
        wanted = {"list": "a list of strings", "number": "a number", "int": "an integer"}.get(
            kind, f"a {kind}"
        )
        raise ConfirmConfigError(
            f"{path}: key '{key}' in {where} must be {wanted}, got {type(value).__name__} {value!r}"
        )
    return value


def entry_targets(entries: tuple[str, ...]) -> list[Target]:
    targets = []
    for entry in dict.fromkeys(entries):
        if ":" not in entry:
            raise ConfirmConfigError(
                f"confirm entry '{entry}' must look like 'pkg.module:make_example'"
            )
        targets.append(Target(kind="entry", name=entry, entry=entry))
    return targets


def script_target(script: Path, argv: tuple[str, ...]) -> Target:
    return Target(kind="script", name=str(script), script=str(script.resolve()), argv=argv)
