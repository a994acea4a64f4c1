"""Which torch a project supports, read from its own metadata (as Ruff reads
``requires-python`` for ``target-version``).

When ``torch-version`` is not configured, the folders from the checked file's up to the project
root (the nearest folder with a ``pyproject.toml`` or ``distlint.toml``, else the git work
tree) are searched, the nearest first. In each folder every torch requirement of every source
is read:

1. ``pyproject.toml``: ``[project] dependencies``, ``[project.optional-dependencies]`` and
   ``[dependency-groups]``;
2. ``requirements*.txt`` / ``requirements*.in`` and ``requirements/**/*.txt`` / ``*.in``, in
   name order;
3. ``setup.cfg``: ``[options] install_requires`` and ``[options.extras_require]``;
4. ``setup.py``: literal ``install_requires=[...]`` / ``extras_require={...}`` in a call (or
   module-level names bound to literal lists), read with ``ast``, never run;
5. ``environment.yml`` / ``environment.yaml`` (conda: ``pytorch`` or ``torch``, also in ``pip:``).

One requirement's *lowest* version is the highest lower bound it states (``>=``, ``==``,
``~=``, ``>``, conda's ``=`` and bare versions), as ``major.minor``; its *highest* is the lowest
upper bound (``<2.14`` -> 2.13, ``<=2.12.1`` / ``<2.12.1`` / ``==2.12.*`` / ``~=2.12.0`` ->
2.12), none when it has no upper bound below the next major release.

The project's lowest torch is the *lowest* lower bound any of its requirements states: a pin
for a type checker or a docs build (``torch==2.9.1`` in ``requirements/typing.txt``) does not
raise the floor that ``torch>=2.1`` in ``requirements/base.txt`` states. A requirement without
a bound (``torch``, ``torch!=2.5.0``, a URL) says nothing and is ignored. The highest is the
highest upper bound they state, none (up to the newest) when one of them bounds torch without
an upper bound. A folder whose requirements state no lower bound does not decide: the next
folder up is searched; when none states one, the nearest folder naming torch gives the result
(no lowest: the newest known torch). Nothing here imports torch.
"""

from __future__ import annotations

import ast
import configparser
import os
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
from distlint.syntax.source import python_ast

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
    # where ``highest`` comes from, when another requirement than ``requirement`` gives it
    highest_from: str | None = None
    stated: int = 1  # how many of the folder's torch requirements state a lower bound

    def describe(self) -> str:
        """The source and the requirement (of the lowest torch, or of none)."""
        text = f"{self.source}: {self.requirement!r}"
        if self.lowest is not None and self.stated > 1:
            text += f" (the lowest lower bound of {self.stated} torch requirements)"
        return text

    def describe_highest(self) -> str:
        """The source and the requirement of ``highest``."""
        return self.highest_from or f"{self.source}: {self.requirement!r}"


def lowest_version(requirement: str) -> tuple[bool, str | None]:
    """(whether it names torch, the lowest ``major.minor`` it allows or None)."""
    names_torch, lowest, _ = version_bounds(requirement)
    return names_torch, lowest


def version_bounds(requirement: str) -> tuple[bool, str | None, str | None]:
    """(whether it names torch, the lowest and the highest ``major.minor`` it allows)."""
    return _bounds(requirement)[:3]


def _bounds(requirement: str) -> tuple[bool, str | None, str | None, bool]:
    """:func:`version_bounds` and whether the requirement bounds torch at all (a lower or an
    upper bound: ``torch<3`` does, ``torch`` and ``torch!=2.5.0`` do not)."""
    text = requirement.split(";", 1)[0].split("#", 1)[0]
    match = _NAME.match(text)
    if match is None:
        return False, None, None, False
    rest = text[match.end() :].strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    if not rest:
        return True, None, None, False
    rest = re.sub(r"^=([^=\s]+)=.*$", r"=\1", rest)  # conda's name=version=build
    lowest: tuple[int, int] | None = None
    highest: tuple[int, int] | None = None
    bounded = False
    for part in re.split(r"[,|]", rest):
        spec = _SPEC.match(part.replace(" ", "") if "=" in part or "<" in part else part)
        if spec is None:
            continue
        numbers = [int(n) for n in re.findall(r"\d+", spec["version"].split("+", 1)[0])]
        if not numbers:
            continue
        key = (numbers[0], numbers[1] if len(numbers) > 1 else 0)
        bounded = bounded or spec["op"] in _LOWER_OPS or spec["op"] in ("<", "<=")
        if spec["op"] in _LOWER_OPS:
            lowest = key if lowest is None else max(lowest, key)
        top = _upper(spec["op"], numbers, spec["version"])
        if top is not None:
            highest = top if highest is None else min(highest, top)
    return (
        True,
        f"{lowest[0]}.{lowest[1]}" if lowest is not None else None,
        f"{highest[0]}.{highest[1]}" if highest is not None else None,
        bounded,
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


def _named(requirements: list[str], source: str) -> list[tuple[str, str]]:
    """(requirement as written, source) for each requirement that names torch."""
    return [(" ".join(r.split()), source) for r in requirements if lowest_version(r)[0]]


def _string_items(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _pyproject(root: Path) -> list[tuple[str, str]]:
    path = root / "pyproject.toml"
    try:
        data = tomllib.loads(read_regular_text(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    project = data.get("project")
    project = project if isinstance(project, dict) else {}
    found = _named(
        _string_items(project.get("dependencies")), f"{path.name} [project] dependencies"
    )
    for table, groups in (
        ("project.optional-dependencies", project.get("optional-dependencies")),
        ("dependency-groups", data.get("dependency-groups")),
    ):
        if isinstance(groups, dict):
            for group, items in groups.items():
                found += _named(_string_items(items), f"{path.name} [{table}] {group}")
    return found


def requirement_files(root: Path) -> list[Path]:
    """The requirement files of the folder ``root``: ``requirements*.txt`` / ``.in`` and those
    under ``requirements/`` (at any depth), each group in name order."""
    files: list[Path] = []
    for pattern in ("requirements*.txt", "requirements*.in"):
        files += root.glob(pattern)
    nested: list[Path] = []
    for pattern in ("requirements/**/*.txt", "requirements/**/*.in"):
        nested += root.glob(pattern)
    return sorted(files) + sorted(nested)


def _requirements_files(root: Path) -> list[tuple[str, str]]:
    found = []
    for path in requirement_files(root):
        try:
            lines = read_regular_text(path).splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        wanted = [line for line in lines if line.strip() and not line.lstrip().startswith("-")]
        found += _named(wanted, path.relative_to(root).as_posix())
    return found


def _setup_cfg(root: Path) -> list[tuple[str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read_regular_text(root / "setup.cfg"))
        raw = parser.get("options", "install_requires", fallback="")
        extras = (
            dict(parser.items("options.extras_require"))
            if parser.has_section("options.extras_require")
            else {}
        )
    except (OSError, configparser.Error, UnicodeDecodeError):
        return []
    found = _named(raw.splitlines(), "setup.cfg [options] install_requires")
    for group, value in extras.items():
        found += _named(value.splitlines(), f"setup.cfg [options.extras_require] {group}")
    return found


def _setup_py(root: Path) -> list[tuple[str, str]]:
    try:
        tree = python_ast(read_regular_text(root / "setup.py"))
    except (OSError, UnicodeDecodeError):
        return []
    if not isinstance(tree, ast.Module):
        return []
    literals: dict[str, list[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            strings = _string_list(stmt.value)
            if isinstance(target, ast.Name) and strings is not None:
                literals[target.id] = strings

    def strings_of(value: ast.expr) -> list[str] | None:
        strings = _string_list(value)
        if strings is None and isinstance(value, ast.Name):
            strings = literals.get(value.id)
        return strings

    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "install_requires":
                found += _named(strings_of(value) or [], "setup.py install_requires")
            elif keyword.arg == "extras_require" and isinstance(value, ast.Dict):
                for key, item in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        label = f"setup.py extras_require {key.value}"
                        found += _named(strings_of(item) or [], label)
    return found


def _string_list(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


_YAML_ITEM = re.compile(r"^\s*-\s*(?P<item>[^#]+?)\s*(?:#.*)?$")


def _environment(root: Path) -> list[tuple[str, str]]:
    found = []
    for name in ("environment.yml", "environment.yaml"):
        try:
            lines = read_regular_text(root / name).splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        items = [m["item"].strip("'\"") for line in lines if (m := _YAML_ITEM.match(line))]
        found += _named(items, f"{name} dependencies")
    return found


SOURCES = (_pyproject, _requirements_files, _setup_cfg, _setup_py, _environment)
# the names of the files SOURCES read (the requirement files: any name that starts so)
_METADATA = ("pyproject.toml", "setup.cfg", "setup.py", "environment.yml", "environment.yaml")


def _may_declare(root: Path) -> bool:
    """Whether the folder holds a file one of :data:`SOURCES` reads: one listing of it, where
    each source would look for its own (most folders of a project hold none). Names compare
    case-insensitively: a case-insensitive file system opens ``Setup.py`` as ``setup.py``."""
    try:
        names = os.listdir(root)
    except OSError:
        return True  # each source finds out on its own
    for name in names:
        folded = name.casefold()
        if folded in _METADATA or folded.startswith("requirements"):
            return True
    return False


@lru_cache(maxsize=256)
def infer_requirement(root: Path) -> TorchRequirement | None:
    """The torch range declared in the folder ``root`` (see the module docstring): None when
    none of its sources names torch."""
    if not _may_declare(root):
        return None
    # (requirement, source, lowest, highest) of each requirement that bounds torch
    stated: list[tuple[str, str, str | None, str | None]] = []
    first: tuple[str, str] | None = None  # the first one naming torch, bounded or not
    for source in SOURCES:
        for requirement, where in source(root):
            first = first or (requirement, where)
            _, lowest, highest, bounded = _bounds(requirement)
            if bounded:
                stated.append((requirement, where, lowest, highest))
    if first is None:
        return None
    floors = [(_key(low), s) for s in stated if (low := s[2]) is not None]
    if floors:
        chosen = min(floors, key=lambda f: f[0])[1]  # the first of equal ones
    else:  # no lower bound anywhere: the newest known torch (up to a stated upper bound)
        chosen = stated[0] if stated else (*first, None, None)
    ceiling = None  # the versions any source allows: no ceiling when one bound has none
    if stated and all(s[3] is not None for s in stated):
        ceilings = [(_key(high), s) for s in stated if (high := s[3]) is not None]
        top = max(key for key, _ in ceilings)
        ceiling = next(s for key, s in ceilings if key == top)
    requirement, where, lowest, _ = chosen
    highest_from = None
    if ceiling is not None and ceiling[:2] != chosen[:2]:
        highest_from = f"{ceiling[1]}: {ceiling[0]!r}"
    return TorchRequirement(
        lowest,
        requirement,
        where,
        ceiling[3] if ceiling is not None else None,
        highest_from=highest_from,
        stated=len(floors),
    )


def _key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


@lru_cache(maxsize=4096)
def requirement_for_dir(directory: Path) -> TorchRequirement | None:
    """The torch requirement of the project that ``directory`` belongs to: from ``directory``
    up to the project root (or, without one, up to the file system's root), the first folder
    whose metadata states a lower bound for torch; else the first whose metadata names torch."""
    from distlint.config.project_files import project_root

    root = project_root(directory)
    fallback = None
    for folder in (directory, *directory.parents):
        found = infer_requirement(folder)
        if found is not None and found.lowest is not None:
            return found
        fallback = fallback or found
        if folder == root:
            break
    return fallback


def clear_caches() -> None:
    """Forget what was read (a new run, or the editor reloading its configuration)."""
    infer_requirement.cache_clear()
    requirement_for_dir.cache_clear()
