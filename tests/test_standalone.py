"""The repository stands alone: no file of it refers to anything beside it.

distlint is developed next to a folder of team notes and schemas, but a clone has nothing
beside it: a test, doc or comment that points there breaks (tests) or cannot be followed
(docs). Every file of the project (``git ls-files``: tracked, plus untracked ones git does not
ignore, so a new file is caught before it is committed) is searched for a reference to that
folder or to the notes by name. The vendored SARIF schemas must be here, unchanged.

The patterns are built from pieces so that this file does not match itself.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import sarif_validation

REPO = Path(__file__).resolve().parents[1]
_SHARED = "sha" + "red"
_MD = r"\.md\b"
FORBIDDEN = {
    "the folder beside the repository": re.compile(r"\.\./+" + _SHARED + r"\b"),
    "the shared schemas or notes folder": re.compile(
        r"\b" + _SHARED + r"[/\\]+(?:schemas|docs|hooks)\b"
    ),
    "a path built to the folder beside the repository": re.compile(
        r"parents?\[\d+\]\s*/\s*[\"']" + _SHARED + r"[\"']"
    ),
    "the team's torch notes": re.compile(r"\bdynamo" + "-facts"),
    "the team's integration notes": re.compile(r"\bintegrations" + _MD),
    "the team's notes on peer tools": re.compile(r"\bpeers" + _MD),
    "the team's rule catalog": re.compile(r"(?<![\w/.-])rules" + _MD),
}
# Folders that are not the project's files even when git does not ignore them.
NOT_PROJECT = {
    ".git",
    ".venv",
    ".ci-venv",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
}
SCHEMAS = {
    "sarif-schema-2.1.0.json": "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e",
    "sarif-schema-2.1.0.github.json": (
        "46d4203e43b978a433943881354db1e40e81437d4b46c00f05016110c6b14693"
    ),
}


def project_files(root: Path) -> list[Path]:
    """The project's files: git's list where ``root`` is a checkout, else every file below."""
    if shutil.which("git") and (root / ".git").exists():
        listing = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout.decode("utf-8", "surrogateescape")
        names = sorted(set(filter(None, listing.split("\0"))))
        return [root / name for name in names if (root / name).is_file()]
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and not NOT_PROJECT.intersection(path.relative_to(root).parts)
    )


def references(root: Path) -> list[str]:
    """``path:line: what`` for every reference to something outside the repository."""
    found = []
    for path in project_files(root):
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for what, pattern in FORBIDDEN.items():
                if pattern.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {what}: {line.strip()}")
    return found


def test_no_file_refers_to_anything_beside_the_repository() -> None:
    files = project_files(REPO)
    assert REPO / "pyproject.toml" in files and Path(__file__) in files
    found = references(REPO)
    assert not found, (
        "the repository must stand alone; state the fact itself (with the torch version) and "
        "point to the test that re-observes it:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "line",
    [
        "SCHEMA_DIR = ROOT / '..' / '" + _SHARED + "'  # ../" + _SHARED + "/schemas",
        "see " + _SHARED + "/docs/notes",
        'Path(__file__).resolve().parents[2] / "' + _SHARED + '" / "x"',
        "observed in dynamo" + "-facts §B",
        "see docs/integrations" + ".md §1.4",
        "see peers" + ".md",
        "the catalog (rules" + ".md), DL201",
    ],
)
def test_each_kind_of_reference_is_caught(tmp_path: Path, line: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(f"intro\n{line}\n", encoding="utf-8")
    found = references(tmp_path)
    assert found
    assert all(f.startswith(str(Path("docs") / "page.md") + ":2: ") for f in found)


@pytest.mark.parametrize(
    "line",
    [
        'os.environ["TRITON_CACHE_DIR"] = "/' + _SHARED + '/cache/triton"',
        "see docs/rules/DL201.md and docs/github-code-scanning.md",
        "peers stuck in the barrier",
        'write(project / "' + _SHARED + '" / "strict.toml")',
    ],
)
def test_look_alikes_are_not_references(tmp_path: Path, line: str) -> None:
    (tmp_path / "train.py").write_text(line + "\n", encoding="utf-8")
    assert references(tmp_path) == []


def test_the_vendored_sarif_schemas_are_used_and_unchanged() -> None:
    schema_dir = Path(sarif_validation.SCHEMA_DIR).resolve()
    assert schema_dir == REPO / "tests" / "schemas"
    assert set(sarif_validation.SCHEMA_FILES) == set(SCHEMAS)
    for name, digest in SCHEMAS.items():
        data = (schema_dir / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} differs from its source"
    notes = (schema_dir / "README.md").read_text(encoding="utf-8")
    for name, digest in SCHEMAS.items():
        assert f"`{name}`" in notes and digest in notes
    for licence in ("NOTICE-OASIS.md", "LICENSE-codeql-action.txt"):
        assert (schema_dir / licence).is_file() and f"`{licence}`" in notes
