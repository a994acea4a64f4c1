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
import re
import time

import pytest

from distlint.cli import check
from tests.precommit_util import (
    BAD,
    GOOD,
    MANIFEST,
    REPO_ROOT,
    _commit,
    _explain,
    _git,
    _init_repo,
    _pre_commit,
    needs_git,
)

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
    "no-entry": (
        "\n  entry: distlint check --force-exclude\n",
        "\n",
        "Missing required key: entry",
    ),
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

    hooks = load_manifest(str(MANIFEST))  # pre-commit's own parser, defaults filled in
    assert [hook["id"] for hook in hooks] == ["distlint", "distlint-fix"]
    for hook in hooks:
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
        assert ("--fix" in options) == (hook["id"] == "distlint-fix")


# -- end to end -------------------------------------------------------------------------------


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


@pytest.mark.slow
@needs_git
def test_the_hook_on_one_file_finds_what_a_project_check_finds(hook_repo, pre_commit_dir, tmp_path):
    """pre-commit passes only the changed file; its helper in another module still counts."""
    repo, sha = hook_repo
    project = tmp_path / "project"
    _init_repo(project)
    (project / "pkg").mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "comm.py").write_text(
        "import torch.distributed as dist\n\n\ndef synchronize():\n    dist.barrier()\n"
    )
    train = project / "pkg" / "train.py"
    train.write_text("def finish():\n    return 0\n")
    _commit(project, "start")
    train.write_text(
        "import torch.distributed as dist\nfrom pkg.comm import synchronize\n\n\n"
        "def finish():\n    if dist.get_rank() == 0:\n        synchronize()\n"
    )
    _git("add", "pkg/train.py", cwd=project)
    config = pre_commit_dir / f"config-{sha[:12]}.yaml"
    config.write_text(
        json.dumps({"repos": [{"repo": str(repo), "rev": sha, "hooks": [{"id": "distlint"}]}]})
    )
    args = ("run", "--color", "never", "--config", str(config), "--files", "pkg/train.py")
    proc = _pre_commit(*args, cwd=project, home=pre_commit_dir / "home")
    assert proc.returncode == 1, _explain(proc)
    assert "pkg/train.py:7:9: DL201 " in proc.stdout, _explain(proc)
    assert re.search(r"\(1 file checked\)", proc.stdout), _explain(proc)


@pytest.mark.slow
@needs_git
def test_fix_hook_fixes_and_fails_then_passes(hook_repo, pre_commit_dir, tmp_path):
    """distlint-fix writes the safe fixes (pre-commit fails: files changed), then passes."""
    repo, sha = hook_repo
    project = tmp_path / "project"
    _init_repo(project)
    fixable = project / "fixable.py"
    fixable.write_text(BAD.replace("nvfuser", "Inductor"))
    _commit(project, "start")
    config = pre_commit_dir / f"config-fix-{sha[:12]}.yaml"
    hooks = [{"id": "distlint-fix"}]
    config.write_text(json.dumps({"repos": [{"repo": str(repo), "rev": sha, "hooks": hooks}]}))
    args = ("run", "--all-files", "--color", "never", "--config", str(config))
    first = _pre_commit(*args, cwd=project, home=pre_commit_dir / "home")
    assert first.returncode == 1, _explain(first)
    assert "files were modified by this hook" in first.stdout, _explain(first)
    assert fixable.read_text() == GOOD
    _git("add", "fixable.py", cwd=project)
    second = _pre_commit(*args, cwd=project, home=pre_commit_dir / "home")
    assert second.returncode == 0, _explain(second)
