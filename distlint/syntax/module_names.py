"""A file's importable module name from its package layout (no parsing: a re-check answered
from the cache names its files without importing LibCST)."""

from __future__ import annotations

from pathlib import Path

from distlint.syntax.regular_files import resolved


def module_name_for(path: Path, folders: PackageFolders | None = None) -> tuple[str | None, bool]:
    """The importable module name of a file from its package layout, and whether it is a package.

    Walks up while the directory holds an ``__init__.py``; a file outside any package is a
    top-level module named after its stem. ``folders``: kept by a caller that asks for many
    files, so that each folder is resolved and looked at once.
    """
    folders = folders if folders is not None else PackageFolders()
    known = folders.names.get(path)
    if known is None:
        known = folders.names[path] = _module_name(path, folders)
    return known


def _module_name(path: Path, folders: PackageFolders) -> tuple[str | None, bool]:
    path = folders.resolve(path) if path.is_absolute() else path
    is_package = path.stem == "__init__"
    parts = [] if is_package else [path.stem]
    parts += folders.packages(path.parent)
    if not parts:
        return None, is_package
    return ".".join(reversed(parts)), is_package


class PackageFolders:
    """What :func:`module_name_for` learns of folders: each one's real path, and the names
    of the packages it is in (itself first), so that the files of one folder share them."""

    def __init__(self) -> None:
        self._real: dict[Path, Path] = {}
        self._packages: dict[Path, list[str]] = {}
        self.names: dict[Path, tuple[str | None, bool]] = {}  # module_name_for's, by path

    def resolve(self, path: Path) -> Path:
        """``path.resolve()``, each folder's real path made once (:func:`resolved`)."""
        return resolved(path, self._real)

    def packages(self, directory: Path) -> list[str]:
        """The names of ``directory`` and of its parents up to the first that is no package
        (holds no ``__init__.py``), innermost first."""
        known = self._packages.get(directory)
        if known is None:
            known = []
            if (directory / "__init__.py").is_file():
                known.append(directory.name)
                if directory.parent != directory:
                    known += self.packages(directory.parent)
            self._packages[directory] = known
        return known
