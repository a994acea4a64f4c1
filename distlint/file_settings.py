"""The settings one file is checked with: plain data every layer may read.

Built by :func:`distlint.config.settings.settings_for`; it lives below the layers that read it
(the parsed-file index, the semantic layer, the rules) so that none of them imports config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FileSettings:
    """What the engine needs to check one file: picklable, no paths to config files."""

    enabled: frozenset[str]
    torch_version: str | None = None
    compile_wrappers: tuple[str, ...] = ()
    collective_wrappers: tuple[str, ...] = ()
    rank_predicates: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any], ...] = field(default=())
    # The lowest torch the project supports: the configured torch-version, else the lower bound
    # of the project's own torch requirement (distlint/config/torch_version.py); None: not known.
    torch_floor: str | None = None
    # The highest: the upper bound of the project's torch requirement; None: the newest known.
    torch_ceiling: str | None = None
    # Local plugins (absolute paths) whose rules ``enabled`` may name; a worker process
    # loads them before its first file (distlint.rules.plugins).
    plugins: tuple[str, ...] = ()

    @property
    def torch_range(self) -> tuple[str | None, str | None]:
        """(lowest, highest) torch the file's project supports, for ``tables_between``."""
        return self.torch_floor or self.torch_version, self.torch_ceiling
