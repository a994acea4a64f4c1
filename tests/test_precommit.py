"""pre-commit end to end: the real client installs this working tree as a hook and runs it.

* The manifest ``.pre-commit-hooks.yaml`` passes ``pre-commit validate-manifest`` (and a broken
  one fails it: negative control), and says what the README and the CLI promise.
* The hook repository is a snapshot of this working tree (tracked and untracked files that git
  does not ignore, the test-only folders left out) committed to a one-commit git repository.
  ``pre-commit try-repo .`` is not used on the checkout itself: its shadow repository takes only
  *tracked* changes (``git add -u``), so a new, not yet committed module would be missing.
* ``pre-commit run --all-files`` in a scratch repository with a ``.pre-commit-config.yaml``
  pointing at that snapshot must fail on a DL502 file and pass once only good files are left.
  ``PRE_COMMIT_HOME`` is one directory per test session under the pytest cache, so the hook
  environment (a virtualenv with distlint and its dependencies pip-installed from the package
  index, 20-60 s) is built once; the snapshot's commit is reproducible (fixed dates), so an
  unchanged tree reuses it in later sessions too, and stale environments are collected.
* ``pre-commit try-repo <snapshot> distlint --all-files``, the command a developer types,
  fails on the same file. try-repo always builds a fresh environment in a throwaway store
  (it ignores ``PRE_COMMIT_HOME``), so it runs once only.

The timings of the first and second ``run`` are recorded as test properties (``--junitxml``)
and printed (``-rP`` or ``-s``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distlint.cli import check

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = REPO_ROOT / ".pre-commit-hooks.yaml"
# Folders that do not go into the installed package. Leaving them out of the hook repository
# keeps its commit, and so the cached hook environment, the same while only tests change.
NOT_PACKAGED = ("tests/", "fixtures/", "bench/", "scripts/", "docs/", "examples/", ".ci/")
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


# -- the manifest -----------------------------------------------------------------------------


def test_manifest_passes_validate_manifest():
    proc = _pre_commit("validate-manifest", str(MANIFEST), cwd=REPO_ROOT)
    assert proc.returncode == 0, _explain(proc)


BROKEN_MANIFESTS = {
    "unknown-type-tag": (
        "types_or: [python, pyi]",
        "types_or: [python, pythn]",
        "Type tag 'pythn' is not recognized",
    ),
    "no-entry": ("\n  entry: distlint check --force-exclude", "", "Missing required key: entry"),
    "unknown-language": ("language: python", "language: pythn", "but got: 'pythn'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_MANIFESTS))
def test_a_broken_manifest_fails_validate_manifest(tmp_path, case):
    old, new, complaint = BROKEN_MANIFESTS[case]
    text = MANIFEST.read_text(encoding="utf-8")
    assert old in text, f"the negative control no longer matches the manifest: {old!r}"
    broken = tmp_path / ".pre-commit-hooks.yaml"
    broken.write_text(text.replace(old, new), encoding="utf-8")
    proc = _pre_commit("validate-manifest", str(broken), cwd=tmp_path)
    assert proc.returncode == 1, _explain(proc)
    assert complaint in proc.stdout


def test_manifest_runs_the_distlint_console_script_the_way_pre_commit_needs():
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(MANIFEST))  # pre-commit's own parser, defaults filled in
    assert hook["id"] == "distlint"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert hook["require_serial"] is True  # distlint parallelises itself (--jobs)
    assert hook["pass_filenames"] is True
    executable, command, *options = hook["entry"].split()
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(rf'^{executable} = "distlint\.cli:main"$', pyproject, re.MULTILINE)
    assert command == check.name
    known = {opt for param in check.params for opt in getattr(param, "opts", ())}
    assert set(options) <= known
    assert "--force-exclude" in options  # pre-commit names files; excludes must still apply


# -- end to end -------------------------------------------------------------------------------


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
        if name.startswith(NOT_PACKAGED) or not (source.is_file() or source.is_symlink()):
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


@pytest.mark.slow
@needs_git
def test_hook_fails_on_a_finding_and_passes_without_it(
    hook_repo, pre_commit_dir, target, record_property
):
    repo, sha = hook_repo
    config = pre_commit_dir / f"config-{sha[:12]}.yaml"
    hooks = [{"id": "distlint"}]
    config.write_text(json.dumps({"repos": [{"repo": str(repo), "rev": sha, "hooks": hooks}]}))
    home = pre_commit_dir / "home"
    args = ("run", "--all-files", "--color", "never", "--config", str(config))

    start = time.perf_counter()
    first = _pre_commit(*args, cwd=target, home=home)
    first_s = time.perf_counter() - start
    assert first.returncode == 1, _explain(first)
    assert "- hook id: distlint" in first.stdout, _explain(first)
    assert "bad.py:8:30: DL502 " in first.stdout, _explain(first)
    assert re.search(r"\b1 finding\b.*\(3 files checked\)", first.stdout), _explain(first)
    assert "notes.txt" not in first.stdout

    _git("rm", "--quiet", "bad.py", cwd=target)
    _commit(target, "only good files")
    start = time.perf_counter()
    second = _pre_commit(*args, cwd=target, home=home)
    second_s = time.perf_counter() - start
    assert second.returncode == 0, _explain(second)
    assert re.search(r"^distlint\.+Passed$", second.stdout, re.MULTILINE), _explain(second)
    assert "Installing environment" not in second.stdout  # the environment was cached

    built = "Installing environment" in first.stdout
    record_property("pre_commit_first_run_s", round(first_s, 1))
    record_property("pre_commit_first_run_built_env", built)
    record_property("pre_commit_second_run_s", round(second_s, 1))
    how = "built the hook environment" if built else "environment cached by an earlier session"
    print(f"pre-commit run: first {first_s:.1f} s ({how}), second {second_s:.1f} s (cached)")


@pytest.mark.slow
@needs_git
def test_try_repo_runs_the_working_tree_as_a_hook(hook_repo, target, record_property):
    repo, sha = hook_repo
    start = time.perf_counter()
    proc = _pre_commit(
        "try-repo", str(repo), "distlint", "--all-files", "--color", "never", cwd=target
    )
    seconds = time.perf_counter() - start
    assert proc.returncode == 1, _explain(proc)
    assert f"rev: {sha}" in proc.stdout, _explain(proc)
    assert "bad.py:8:30: DL502 " in proc.stdout, _explain(proc)
    record_property("pre_commit_try_repo_s", round(seconds, 1))
    print(f"pre-commit try-repo: {seconds:.1f} s (always builds a fresh environment)")
