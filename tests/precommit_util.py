"""pre-commit and git helpers shared by the pre-commit and README tests.

``hook_repo`` (session): a one-commit git repository holding this working tree's package (tracked
and untracked files that git does not ignore, the test-only folders left out), and its commit.
``target``: a git repository with one bad Python file, good ones, and bad code in a non-Python
file. Both are registered for every test module by tests/conftest.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = REPO_ROOT / ".pre-commit-hooks.yaml"
# Folders that do not go into the installed package. Leaving them out of the hook repository
# keeps its commit, and so the cached hook environment, the same while only tests change.
# Test-only trees; docs/ is left out except docs/rules/ (the wheel ships the rule pages).
NOT_PACKAGED = ("tests/", "fixtures/", "bench/", "scripts/", "examples/", ".ci/")
NOT_PACKAGED_DOCS = "docs/"
PACKAGED_DOCS = "docs/rules/"
FIXED_DATE = "2000-01-01T00:00:00+0000"
IDENTITY = {"user.name": "distlint tests", "user.email": "tests@distlint.invalid"}
PRE_COMMIT_TIMEOUT = 900  # the first run pip-installs distlint and its dependencies

BAD = 'import torch\n\n\ndef f(x):\n    return x\n\n\ng = torch.compile(f, backend="nvfuser")\n'
GOOD = 'import torch\n\n\ndef f(x):\n    return x\n\n\ng = torch.compile(f, backend="inductor")\n'
STUB = "def f(x: int) -> int: ...\n"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")


def _env(**extra: str) -> dict[str, str]:
    """The environment without anything that would point git or pre-commit elsewhere."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PRE_COMMIT")) and key != "FORCE_COLOR"
    }
    env.update(NO_COLOR="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env=env or _env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def _git(*args: str, cwd: Path, **env: str) -> str:
    proc = _run("git", *args, cwd=cwd, env=_env(**env))
    assert proc.returncode == 0, f"git {' '.join(args)} failed:\n{proc.stdout}"
    return proc.stdout.strip()


def _pre_commit(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess:
    env = _env(PRE_COMMIT_HOME=str(home)) if home else _env()
    return _run(
        sys.executable, "-m", "pre_commit", *args, cwd=cwd, env=env, timeout=PRE_COMMIT_TIMEOUT
    )


def _explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit code {proc.returncode}; output (tail):\n{proc.stdout[-6000:]}"


def _init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    _git("init", "--quiet", cwd=path)
    for key, value in {
        **IDENTITY,
        "commit.gpgsign": "false",
        "core.hooksPath": ".git/no-hooks",
        "core.autocrlf": "false",
    }.items():
        _git("config", key, value, cwd=path)


def _commit(path: Path, message: str) -> str:
    _git("add", "--all", cwd=path)
    dates = {"GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE}
    _git("commit", "--quiet", "--no-verify", "--allow-empty", "-m", message, cwd=path, **dates)
    return _git("rev-parse", "HEAD", cwd=path)


@pytest.fixture(scope="session")
def pre_commit_dir(request, tmp_path_factory) -> Path:
    cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    return cache.mkdir("pre-commit") if cache is not None else tmp_path_factory.mktemp("pc")


@pytest.fixture(scope="session")
def hook_repo(pre_commit_dir: Path):
    """(path, commit) of a one-commit git repository holding this working tree's package."""
    top = _run("git", "rev-parse", "--show-toplevel", cwd=REPO_ROOT)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != REPO_ROOT:
        pytest.skip("needs a git checkout of distlint")
    listing = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=REPO_ROOT)
    build = pre_commit_dir / f"hook-build-{os.getpid()}"
    shutil.rmtree(build, ignore_errors=True)
    _init_repo(build)
    for name in sorted(set(filter(None, listing.split("\0")))):
        source = REPO_ROOT / name
        test_only = name.startswith(NOT_PACKAGED) or (
            name.startswith(NOT_PACKAGED_DOCS) and not name.startswith(PACKAGED_DOCS)
        )
        if test_only or not (source.is_file() or source.is_symlink()):
            continue  # test-only, deleted in the working tree, or a submodule
        target = build / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    sha = _commit(build, "distlint working tree")
    final = pre_commit_dir / f"hook-{sha[:12]}"
    if final.is_dir() and _run("git", "rev-parse", "HEAD", cwd=final).stdout.strip() == sha:
        shutil.rmtree(build)  # an earlier session left this very commit: reuse its environment
    else:
        shutil.rmtree(final, ignore_errors=True)
        build.rename(final)
    yield final, sha
    # Forget the snapshots of other trees; `pre-commit gc` then drops their environments.
    for stale in pre_commit_dir.glob("hook-*"):
        if stale != final:
            shutil.rmtree(stale, ignore_errors=True)
    for stale in pre_commit_dir.glob("config-*.yaml"):
        if stale.name != f"config-{sha[:12]}.yaml":
            stale.unlink()
    _pre_commit("gc", cwd=pre_commit_dir, home=pre_commit_dir / "home")


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A git repository with one bad Python file, good ones, and bad code in a non-Python file."""
    repo = tmp_path / "target"
    _init_repo(repo)
    (repo / "bad.py").write_text(BAD, encoding="utf-8")
    (repo / "good.py").write_text(GOOD, encoding="utf-8")
    (repo / "stubs.pyi").write_text(STUB, encoding="utf-8")
    (repo / "notes.txt").write_text(BAD, encoding="utf-8")  # types_or: never passed to the hook
    _commit(repo, "target")
    return repo
