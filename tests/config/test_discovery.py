"""Which files ``distlint check PATHS`` looks at, and how their paths are shown."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.config.discovery import Discovery, display_path
from distlint.config.settings import ConfigResolver

SRC = 'import torch\n\ng = torch.compile(print, backend="nvfuser")\n'  # one DL502


def cli(args: list[str], **kwargs):
    env = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
    return CliRunner().invoke(main, args, env=env, **kwargs)


def touch(root: Path, *names: str, text: str = SRC) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def discovered(root: Path, *paths: str, force_exclude: bool = False) -> list[str]:
    discovery = Discovery(ConfigResolver(), root, force_exclude=force_exclude)
    files, missing = discovery.files([Path(p) for p in paths or (".",)])
    assert missing == []
    return [f.display for f in files]


def checked(*args: str) -> list[str]:
    """Paths with findings from ``distlint check --format json ARGS`` (every file has one)."""
    result = cli(["check", "--jobs", "1", "--format", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return sorted({f["path"] for f in json.loads(result.stdout)})


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def git_init(root: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)


# -- what a directory walk finds -------------------------------------------------------------------


def test_py_and_pyi_files_only(root: Path) -> None:
    touch(root, "a.py", "b.pyi", "c.pyx", "d.txt", "e.py.bak", "f.pyc", "pkg/g.py", "pkg/h.pyi")
    assert discovered(root) == ["a.py", "b.pyi", "pkg/g.py", "pkg/h.pyi"]


def test_pyi_files_are_checked(root: Path) -> None:
    touch(root, "stub.pyi")
    assert checked(".") == ["stub.pyi"]


@pytest.mark.parametrize(
    "folder",
    [
        ".git",
        ".venv",
        "venv",
        "build",
        "dist",
        "node_modules",
        "__pycache__",
        ".distlint_cache",
        "pkg/build",
        "pkg/__pycache__",
        "pkg/node_modules/dep",
    ],
)
def test_default_excludes(root: Path, folder: str) -> None:
    touch(root, "keep.py", f"{folder}/skipped.py")
    assert discovered(root) == ["keep.py"]


def test_any_directory_holding_pyvenv_cfg_is_excluded(root: Path) -> None:
    touch(root, "keep.py", "envs/py311/lib/site.py", "envs/py311/bin/tool.py")
    (root / "envs" / "py311" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    touch(root, "envs/readme.py")
    assert discovered(root) == ["envs/readme.py", "keep.py"]


def test_file_named_like_an_excluded_directory_is_still_a_file(root: Path) -> None:
    touch(root, "build.py", "dist.py")
    assert discovered(root) == ["build.py", "dist.py"]


def test_gitignore_is_honoured(root: Path) -> None:
    git_init(root)
    (root / ".gitignore").write_text("ignored.py\ngenerated/\n*_pb2.py\n/top_only.py\n")
    touch(
        root,
        "kept.py",
        "ignored.py",
        "sub/ignored.py",
        "generated/model.py",
        "api_pb2.py",
        "top_only.py",
        "sub/top_only.py",
    )
    assert discovered(root) == ["kept.py", "sub/top_only.py"]


def test_nested_gitignore_and_negation(root: Path) -> None:
    git_init(root)
    (root / ".gitignore").write_text("*.gen.py\n")
    touch(root, "pkg/a.gen.py", "pkg/keep.gen.py", "pkg/b.py", "pkg/local.py")
    (root / "pkg" / ".gitignore").write_text("!keep.gen.py\nlocal.py\n")
    assert discovered(root) == ["pkg/b.py", "pkg/keep.gen.py"]


def test_gitignore_is_honoured_when_checking_a_subdirectory(root: Path) -> None:
    git_init(root)
    (root / ".gitignore").write_text("skip.py\n")
    touch(root, "sub/skip.py", "sub/keep.py")
    assert checked("sub") == ["sub/keep.py"]


def test_extend_exclude_adds_to_the_defaults(root: Path) -> None:
    (root / "distlint.toml").write_text('extend-exclude = ["gen", "legacy/*.py"]\n')
    touch(root, "keep.py", "gen/a.py", "pkg/gen/b.py", "legacy/old.py", "build/c.py")
    assert discovered(root) == ["keep.py"]


def test_exclude_replaces_the_defaults(root: Path) -> None:
    (root / "pyproject.toml").write_text('[tool.distlint]\nexclude = ["third_party"]\n')
    touch(root, "keep.py", "third_party/x.py", "build/y.py")
    assert discovered(root) == ["build/y.py", "keep.py"]


def test_exclude_globs_on_files(root: Path) -> None:
    (root / "distlint.toml").write_text('extend-exclude = ["*_gen.py", "conftest.py"]\n')
    touch(root, "a_gen.py", "pkg/b_gen.py", "pkg/conftest.py", "keep.py")
    assert discovered(root) == ["keep.py"]


def test_exclude_of_a_nested_config_applies_below_it(root: Path) -> None:
    touch(root, "skip_me/a.py", "sub/skip_me/b.py", "sub/keep.py")
    (root / "sub" / "distlint.toml").write_text('extend-exclude = ["skip_me"]\n')
    assert discovered(root) == ["skip_me/a.py", "sub/keep.py"]


# -- explicit paths --------------------------------------------------------------------------------


def test_explicit_files_are_checked_even_if_excluded(root: Path) -> None:
    (root / "distlint.toml").write_text('extend-exclude = ["gen"]\n')
    touch(root, "build/a.py", ".venv/b.py", "gen/c.py")
    assert checked("build/a.py", ".venv/b.py", "gen/c.py") == [
        ".venv/b.py",
        "build/a.py",
        "gen/c.py",
    ]


def test_explicit_files_are_checked_even_if_gitignored(root: Path) -> None:
    git_init(root)
    (root / ".gitignore").write_text("ignored.py\nout/\n")
    touch(root, "ignored.py", "out/x.py")
    assert checked("ignored.py", "out/x.py") == ["ignored.py", "out/x.py"]


def test_force_exclude_filters_explicit_files(root: Path) -> None:
    git_init(root)
    (root / ".gitignore").write_text("ignored.py\nout/\n")
    (root / "distlint.toml").write_text('extend-exclude = ["gen"]\n')
    touch(root, "build/a.py", "gen/c.py", "ignored.py", "out/x.py", "keep.py")
    args = ["--force-exclude", "build/a.py", "gen/c.py", "ignored.py", "out/x.py", "keep.py"]
    assert checked(*args) == ["keep.py"]
    result = cli(["check", "--force-exclude", "build/a.py", "gen/c.py"])
    assert result.exit_code == 0, result.output
    assert "0 files checked" in result.stdout


def test_force_exclude_applies_to_an_explicit_excluded_directory(root: Path) -> None:
    touch(root, "build/a.py", "keep.py")
    assert checked("--force-exclude", "build", "keep.py") == ["keep.py"]
    assert checked("build") == ["build/a.py"]


def test_nonexistent_path_is_reported_and_exits_2(root: Path) -> None:
    result = cli(["check", "nope.py"])
    assert result.exit_code == 2
    assert "nope.py" in result.stderr
    assert "Traceback" not in result.output


def test_nonexistent_path_next_to_real_ones_still_checks_them_and_exits_2(root: Path) -> None:
    touch(root, "a.py")
    result = cli(["check", "--format", "json", "a.py", "missing_dir"])
    assert result.exit_code == 2
    assert "missing_dir" in result.stderr
    assert [f["path"] for f in json.loads(result.stdout)] == ["a.py"]


def test_nonexistent_path_with_exit_zero_still_exits_2(root: Path) -> None:
    assert cli(["check", "--exit-zero", "nope.py"]).exit_code == 2


def test_files_are_unique_and_sorted(root: Path) -> None:
    touch(root, "b.py", "a.py", "pkg/c.py")
    assert discovered(root, "pkg", "b.py", ".", "a.py", "pkg/c.py") == ["a.py", "b.py", "pkg/c.py"]


# -- how paths are shown ---------------------------------------------------------------------------


def test_output_paths_are_relative_with_forward_slashes(root: Path) -> None:
    touch(root, "pkg/sub/m.py")
    assert checked(".") == ["pkg/sub/m.py"]
    assert checked("pkg") == ["pkg/sub/m.py"]
    assert checked("./pkg/sub/../sub/m.py") == ["pkg/sub/m.py"]
    assert checked(str(root / "pkg" / "sub" / "m.py")) == ["pkg/sub/m.py"]
    assert checked(str(root)) == ["pkg/sub/m.py"]


def test_default_path_is_the_working_directory(root: Path) -> None:
    touch(root, "pkg/m.py", "top.py")
    assert checked() == ["pkg/m.py", "top.py"]


def test_paths_are_relative_to_the_working_directory_not_the_argument(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(root, "proj/pkg/m.py")
    monkeypatch.chdir(root / "proj" / "pkg")
    assert checked(".") == ["m.py"]
    monkeypatch.chdir(root)
    assert checked("proj") == ["proj/pkg/m.py"]


def test_display_path() -> None:
    cwd = Path("/work/project")
    assert display_path(cwd / "a" / "b.py", cwd) == "a/b.py"
    assert display_path(Path("/elsewhere/c.py"), cwd) == "/elsewhere/c.py"


def test_a_named_directory_with_nothing_to_check_is_said_and_exits_2(root: Path) -> None:
    """A directory that a .gitignore above it ignores once gave "No findings (0 files)"."""
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("generated/\n")
    touch(root, "generated/model.py", "keep.py")
    result = cli(["check", "--jobs", "1", "generated"])
    assert result.exit_code == 2
    assert "generated: no Python file to check (all excluded or ignored)" in result.stderr
    both = cli(["check", "--jobs", "1", "--format", "json", "generated", "keep.py"])
    assert both.exit_code == 2
    assert [f["path"] for f in json.loads(both.stdout)] == ["keep.py"]


def test_an_unreadable_directory_is_reported_and_skipped(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subdirectory without read permission (simulated: the test may run as root, for whom
    permissions do not apply): a warning names it, the other files are still checked, and the
    exit code is the findings' (not 2)."""
    import distlint.config.discovery as discovery_module

    touch(root, "a.py", "locked/b.py")
    locked = root / "locked"
    real_scandir = discovery_module.os.scandir
    real_is_file = Path.is_file

    def scandir(path):  # type: ignore[no-untyped-def]
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def is_file(self: Path) -> bool:
        if self.parent == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(discovery_module.os, "scandir", scandir)
    monkeypatch.setattr(Path, "is_file", is_file)
    result = cli(["check", "--jobs", "1", "--no-cache", "."])
    assert result.exit_code == 1, result.output  # a.py's finding
    assert "a.py" in result.stdout and "b.py" not in result.stdout
    assert "distlint: warning: locked: cannot read the directory (Permission denied); skipped" in (
        result.stderr
    )


def test_native_files_follow_the_same_excludes_and_are_sorted(root: Path) -> None:
    """C/C++/CUDA files are kept by path while walking and shown when asked for: the same
    excludes and ignore files apply, a file named is kept, and a folder holding only such
    files is not said to hold nothing to check."""
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("gen/\n*.hpp\n")
    touch(root, "csrc/b.cu", "csrc/a.cpp", "csrc/x.hpp", "gen/c.h", "build/d.cc", "ops/e.h")
    touch(root, "csrc/ops.py", "notes.txt")
    discovery = Discovery(ConfigResolver(), root)
    files, missing = discovery.files([Path("csrc"), Path("ops"), root / "gen" / "c.h"])
    assert [f.display for f in files] == ["csrc/ops.py"]
    assert missing == []
    natives = discovery.native_files()
    assert [f.display for f in natives] == ["csrc/a.cpp", "csrc/b.cu", "gen/c.h", "ops/e.h"]
    assert all(f.path == root / f.display for f in natives)


def test_a_repository_inside_the_walked_tree_has_its_own_ignore_files(root: Path) -> None:
    """Each folder's repository is its parent's while walking down, unless it holds ``.git``
    itself (a nested clone, a submodule's ``.git`` file): there the outer ignore files stop."""
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("ignored.py\n")
    touch(root, "sub/ignored.py", "sub/kept.py", "inner/ignored.py", "inner/deep/ignored.py")
    touch(root, "module/ignored.py")
    (root / "inner" / ".git").mkdir()
    (root / "module" / ".git").write_text("gitdir: ../.git/modules/module\n")
    assert discovered(root) == [
        "inner/deep/ignored.py",
        "inner/ignored.py",
        "module/ignored.py",
        "sub/kept.py",
    ]


def test_an_entry_whose_type_cannot_be_read_is_reported_and_skipped(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry removed while the walk lists its folder (its type cannot be read): neither a
    folder nor a file, so it is said and skipped, even where a later look would succeed."""
    import distlint.config.discovery as discovery_module

    touch(root, "a.py")
    real_scandir = discovery_module.os.scandir

    class Vanished:
        name = "gone.py"
        path = str(root / "gone.py")

        def is_dir(self, follow_symlinks: bool = True) -> bool:
            raise FileNotFoundError(2, "No such file or directory", self.path)

        def is_file(self) -> bool:
            return True

    def scandir(path):  # type: ignore[no-untyped-def]
        entries = list(real_scandir(path))
        return [*entries, Vanished()] if Path(path) == root else entries

    monkeypatch.setattr(discovery_module.os, "scandir", scandir)
    discovery = Discovery(ConfigResolver(), root)
    files, missing = discovery.files([Path(".")])
    assert [f.display for f in files] == ["a.py"]
    assert discovery.skipped == ["gone.py: no such file or directory; skipped"]
    assert missing == []
