"""bench/realworld/export.py: the files distlint reads (sources, configuration, and the files
the project's torch range is read from) are exported from a commit; nothing else is."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from distlint.config.torch_version import clear_caches, infer_requirement

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "realworld" / "export.py"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _export_module():
    spec = importlib.util.spec_from_file_location("realworld_export", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KEPT = {
    "pkg/train.py": "import torch\n",
    "pkg/stubs.pyi": "x: int\n",
    "setup.py": "from setuptools import setup\nsetup(install_requires=['torch>=2.6'])\n",
    "pyproject.toml": '[project]\nname = "x"\ndynamic = ["dependencies"]\n',
    "setup.cfg": "[metadata]\nname = x\n",
    "distlint.toml": 'ignore = ["DL101"]\n',
    ".gitignore": "build/\n",
    "requirements.txt": "torch>=2.4\n",
    "requirements-dev.txt": "torch==2.12.1\n",
    "requirements.in": "torch>=2.3\n",
    "requirements/typing.txt": "torch==2.9.1\n",
    "requirements/fabric/base.txt": "torch >=2.1.0\n",
    "requirements/fabric/base.in": "torch\n",
    "examples/requirements_cuda.txt": "torch>=2.5\n",
    "environment.yml": "dependencies:\n  - pytorch=2.8\n",
    "docs/environment.yaml": "dependencies:\n  - pytorch\n",
}
DROPPED = {
    "README.md": "# x\n",
    "data/labels.txt": "a\n",
    "docs/requirements.md": "torch\n",
    "requirements/README.md": "read me\n",
    "weights.bin": "\0\1",
}


def _commit(repo: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    for name, text in {**KEPT, **DROPPED}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git("add", "-A")
    git("commit", "-q", "-m", "tree")
    return git("rev-parse", "HEAD")


def test_exports_sources_configuration_and_requirement_files(tmp_path: Path) -> None:
    repo, out = tmp_path / "repo", tmp_path / "out"
    repo.mkdir()
    commit = _commit(repo)
    count = _export_module().export(repo / ".git", commit, out)
    exported = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert exported == set(KEPT)
    assert count == len(KEPT)
    assert all((out / name).read_text() == text for name, text in KEPT.items())
    # the exported tree gives the torch range the checkout gives
    clear_caches()
    on_checkout = infer_requirement(repo.resolve())
    clear_caches()
    on_export = infer_requirement(out.resolve())
    assert on_checkout is not None and on_checkout == on_export
    assert on_export.lowest == "2.1"
    assert on_export.source == "requirements/fabric/base.txt"
