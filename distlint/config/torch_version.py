"""Which torch a project supports, read from its own metadata (as Ruff reads
``requires-python`` for ``target-version``).

When ``torch-version`` is not configured, the folders from the checked file's up to the project
root (the nearest folder with a ``pyproject.toml`` or ``distlint.toml``, else the git work
tree) are searched, the nearest first; in each, the first match wins:

1. ``pyproject.toml``: ``[project] dependencies``;
2. ``requirements*.txt`` (and ``requirements/*.txt``), in name order;
3. ``setup.cfg``: ``[options] install_requires``;
4. ``setup.py``: a literal ``install_requires=[...]`` in ``setup(...)`` (or a module-level name
   bound to a literal list), read with ``ast``, never run;
5. ``environment.yml`` / ``environment.yaml`` (conda: ``pytorch`` or ``torch``, also in ``pip:``).

The *lowest* supported version is the highest lower bound of the requirement (``>=``, ``==``,
``~=``, ``>``, conda's ``=`` and bare versions), as ``major.minor``. A requirement without a
lower bound (``torch``, ``torch<3``) gives no version. The *highest* is the lowest upper bound
(``<2.14`` -> 2.13, ``<=2.12.1`` / ``<2.12.1`` / ``==2.12.*`` / ``~=2.12.0`` -> 2.12); none
when the requirement has no upper bound below the next major release. Nothing here imports
torch.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from distlint.syntax.regular_files import read_regular_text

_NAME = re.compile(r"^\s*(?:pytorch::)?(?P<name>pytorch|torch)(?![\w.-])\s*(?:\[[^\]]*\])?", re.I)
_SPEC = re.compile(r"^\s*(?P<op>===|~=|==|>=|<=|!=|>|<|=)?\s*(?P<version>\d+(?:\.[\w*+!-]+)*)\s*$")
_LOWER_OPS = {None, "===", "~=", "==", ">=", ">", "="}


@dataclass(frozen=True)
class TorchRequirement:
    """The project's torch requirement and where it was found."""

    lowest: str | None  # "2.4"; None when the requirement has no lower bound
    requirement: str  # as written, e.g. "torch>=2.4,<2.7"
    source: str  # e.g. "pyproject.toml [project] dependencies"
    highest: str | None = None  # "2.6"; None when the requirement has no usable upper bound

    def describe(self) -> str:
        return f"{self.source}: {self.requirement!r}"


def lowest_version(requirement: str) -> tuple[bool, str | None]:
    """(whether it names torch, the lowest ``major.minor`` it allows or None)."""
    names_torch, lowest, _ = version_bounds(requirement)
    return names_torch, lowest


def version_bounds(requirement: str) -> tuple[bool, str | None, str | None]:
    """(whether it names torch, the lowest and the highest ``major.minor`` it allows)."""
    text = requirement.split(";", 1)[0].split("#", 1)[0]
    match = _NAME.match(text)
    if match is None:
        return False, None, None
    rest = text[match.end() :].strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    if not rest:
        return True, None, None
    rest = re.sub(r"^=([^=\s]+)=.*$", r"=\1", rest)  # conda's name=version=build
    lowest: tuple[int, int] | None = None
    highest: tuple[int, int] | None = None
    for part in re.split(r"[,|]", rest):
        spec = _SPEC.match(part.replace(" ", "") if "=" in part or "<" in part else part)
        if spec is None:
            continue
        numbers = [int(n) for n in re.findall(r"\d+", spec["version"].split("+", 1)[0])]
        if not numbers:
            continue
        key = (numbers[0], numbers[1] if len(numbers) > 1 else 0)
        if spec["op"] in _LOWER_OPS:
            lowest = key if lowest is None else max(lowest, key)
        top = _upper(spec["op"], numbers, spec["version"])
        if top is not None:
            highest = top if highest is None else min(highest, top)
    return (
        True,
        f"{lowest[0]}.{lowest[1]}" if lowest is not None else None,
        f"{highest[0]}.{highest[1]}" if highest is not None else None,
    )


def _upper(op: str | None, numbers: list[int], version: str) -> tuple[int, int] | None:
    """The highest ``(major, minor)`` one specifier allows, or None (no bound, or above the
    minor releases of this major: ``<3``, ``~=2.4``)."""
    minor = numbers[1] if len(numbers) > 1 else None
    patch = numbers[2] if len(numbers) > 2 else 0
    if op == "<":
        if minor is None:
            return None
        if patch > 0:
            return numbers[0], minor
        return (numbers[0], minor - 1) if minor > 0 else None
    if op == "<=":
        return (numbers[0], minor) if minor is not None else None
    if op in (None, "==", "===", "="):
        return (numbers[0], minor) if minor is not None else None
    if op == "~=":
        return (numbers[0], minor) if len(numbers) > 2 and minor is not None else None
    return None


def _first(requirements: list[str], source: str) -> TorchRequirement | None:
    for requirement in requirements:
        names_torch, lowest, highest = version_bounds(requirement)
        if names_torch:
            return TorchRequirement(lowest, " ".join(requirement.split()), source, highest)
    return None


def _pyproject(root: Path) -> TorchRequirement | None:
    path = root / "pyproject.toml"
    try:
        data = tomllib.loads(read_regular_text(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    dependencies = data.get("project", {}).get("dependencies")
    if not isinstance(dependencies, list):
        return None
    strings = [d for d in dependencies if isinstance(d, str)]
    return _first(strings, "pyproject.toml [project] dependencies")


def _requirements_files(root: Path) -> TorchRequirement | None:
    files = sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements/*.txt"))
    for path in files:
        try:
            lines = read_regular_text(path).splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        wanted = [line for line in lines if line.strip() and not line.lstrip().startswith("-")]
        found = _first(wanted, path.relative_to(root).as_posix())
        if found is not None:
            return found
    return None


def _setup_cfg(root: Path) -> TorchRequirement | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_regular_text(root / "setup.cfg"))
        raw = parser.get("options", "install_requires", fallback="")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    lines = [line for line in raw.splitlines() if line.strip()]
    return _first(lines, "setup.cfg [options] install_requires")


def _setup_py(root: Path) -> TorchRequirement | None:
    try:
        tree = ast.parse(read_regular_text(root / "setup.py"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    literals: dict[str, list[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            strings = _string_list(stmt.value)
            if isinstance(target, ast.Name) and strings is not None:
                literals[target.id] = strings
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "install_requires":
                continue
            value = keyword.value
            strings = _string_list(value)
            if strings is None and isinstance(value, ast.Name):
                strings = literals.get(value.id)
            if strings is not None:
                return _first(strings, "setup.py install_requires")
    return None


def _string_list(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


_YAML_ITEM = re.compile(r"^\s*-\s*(?P<item>[^#]+?)\s*(?:#.*)?$")


def _environment(root: Path) -> TorchRequirement | None:
    for name in ("environment.yml", "environment.yaml"):
        try:
            lines = read_regular_text(root / name).splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        items = [m["item"].strip("'\"") for line in lines if (m := _YAML_ITEM.match(line))]
        found = _first(items, f"{name} dependencies")
        if found is not None:
            return found
    return None


SOURCES = (_pyproject, _requirements_files, _setup_cfg, _setup_py, _environment)


@lru_cache(maxsize=256)
def infer_requirement(root: Path) -> TorchRequirement | None:
    """The torch requirement declared in the project at ``root`` (see the module docstring)."""
    for source in SOURCES:
        found = source(root)
        if found is not None:
            return found
    return None


@lru_cache(maxsize=4096)
def requirement_for_dir(directory: Path) -> TorchRequirement | None:
    """The torch requirement of the project that ``directory`` belongs to: the first folder
    from ``directory`` up to the project root (or, without one, up to the file system's root)
    whose metadata names torch."""
    from distlint.config.project_files import project_root

    root = project_root(directory)
    for folder in (directory, *directory.parents):
        found = infer_requirement(folder)
        if found is not None or folder == root:
            return found
    return None


def clear_caches() -> None:
    """Forget what was read (a new run, or the editor reloading its configuration)."""
    infer_requirement.cache_clear()
    requirement_for_dir.cache_clear()
