"""Checking some files of a project gives them the findings a check of the whole project
gives them: the files they import, and those importing them, are linked too (issue: the
pre-commit hook and ``distlint check train.py`` lost every cross-file finding)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from distlint.config.project_files import project_root, related_files

DISTLINT = (sys.executable, "-m", "distlint", "check")

COMM = """\
import torch.distributed as dist


def is_main_process():
    return dist.get_rank() == 0


def all_reduce_mean(t):
    dist.all_reduce(t)
    return t / dist.get_world_size()
"""
TRAIN = """\
import torch
from pkg.utils.comm import all_reduce_mean, is_main_process


def log_loss(loss):
    if is_main_process():
        print(all_reduce_mean(loss))
"""
OPS = """\
import torch


@torch.library.custom_op("demo::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.compile(fullgraph=True)
def step(x):
    return scale(x) + 1
"""
FAKES = """\
import torch
from pkg.ops import scale


@scale.register_fake
def _(x):
    return torch.empty_like(x)
"""
UNRELATED = "import os\nprint(os.sep)\n"


def _project(root: Path) -> Path:
    files = {
        "pyproject.toml": "[project]\nname = 'demo'\n",
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "",
        "pkg/utils/comm.py": COMM,
        "pkg/train.py": TRAIN,
        "pkg/ops.py": OPS,
        "pkg/fakes.py": FAKES,
        "pkg/unrelated.py": UNRELATED,
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _check(cwd: Path, *paths: str) -> list[tuple[str, str, int]]:
    proc = subprocess.run(
        [*DISTLINT, "--select", "DL201,DL401", "--format", "json", "--exit-zero", "-j1", *paths],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return [(f["path"], f["code"], f["range"]["start"]["line"]) for f in json.loads(proc.stdout)]


def test_one_file_gets_its_cross_file_dl201_as_in_a_project_check(tmp_path: Path) -> None:
    root = _project(tmp_path)
    whole = _check(root, ".")
    assert ("pkg/train.py", "DL201", 7) in whole
    assert _check(root, "pkg/train.py") == [f for f in whole if f[0] == "pkg/train.py"]
    # from a subdirectory, paths relative to it
    assert _check(root / "pkg", "train.py") == [("train.py", "DL201", 7)]


def test_a_fake_registered_in_another_module_is_seen_from_the_op_file(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert not [f for f in _check(root, ".") if f[1] == "DL401"]
    assert _check(root, "pkg/ops.py") == []  # fakes.py imports ops.py: it is linked


def test_only_the_named_files_are_reported(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "pkg" / "utils" / "comm.py").write_text(
        COMM + "\n\ndef bad(t):\n    if dist.get_rank() == 0:\n        dist.barrier()\n"
    )
    assert ("pkg/utils/comm.py", "DL201", 15) in _check(root, ".")
    assert all(path == "pkg/train.py" for path, _, _ in _check(root, "pkg/train.py"))


def test_the_files_linked_are_the_imports_and_the_importers(tmp_path: Path) -> None:
    root = _project(tmp_path)
    files = sorted(root.rglob("*.py"))
    linked = related_files([root / "pkg" / "train.py"], files)
    assert [p.relative_to(root).as_posix() for p in linked] == [
        "pkg/__init__.py",
        "pkg/utils/__init__.py",
        "pkg/utils/comm.py",
    ]
    linked = related_files([root / "pkg" / "ops.py"], files)
    assert [p.relative_to(root).as_posix() for p in linked] == ["pkg/fakes.py"]


def test_what_a_file_imports_is_each_project_file_once_first_named_first(tmp_path: Path) -> None:
    """A file naming the same module many ways (absolute, relative, from a package) links it
    once; its own name leaves it out; the absolute imports come first, in name order."""
    from distlint.config.project_files import ImportScans, ModuleIndex

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    for name in ("__init__", "a", "b", "c"):
        (pkg / f"{name}.py").write_text("")
    (pkg / "c.py").write_text(
        "import pkg.b\nimport pkg.b as again\nfrom pkg import b, a\nfrom . import b, c\n"
        "from .a import x\nimport pkg.c\n"
    )
    index = ModuleIndex(sorted(pkg.glob("*.py")), {}, ImportScans())
    found = [p.name for p in index.imports_of(pkg / "c.py")]
    assert found == ["__init__.py", "a.py", "b.py"]


def test_relative_imports_name_the_files_path_rules_give(tmp_path: Path) -> None:
    """Identifiers are joined as text, anything else goes through Path, as before: a broken
    file's ``from . import (./b)`` names ``pkg/b.py``, as Path drops the ``.`` part; a
    ``from . import x`` names the package's ``pkg.py`` sibling too."""
    root = tmp_path
    names = ["pkg.py", "pkg/__init__.py", "pkg/a.py", "pkg/sub/x.py", "pkg/sub/y/__init__.py"]
    names += ["pkg/sub/é.py", "pkg/sub/z.py", "pkg/b.py", "other.py"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / "pkg/a.py").write_text("from .sub import (x, y, é)\nfrom . import (./b)\n")
    (root / "pkg/sub/z.py").write_text("from ..b import (*)\nfrom ... import other\n")
    files = [root / name for name in names]
    linked = related_files([root / "pkg/a.py"], files)
    assert [p.relative_to(root).as_posix() for p in linked] == [
        "pkg/__init__.py",
        "pkg/b.py",
        "pkg/sub/x.py",
        "pkg/sub/y/__init__.py",
        "pkg/sub/é.py",
        "pkg.py",
    ]
    linked = related_files([root / "pkg/sub/z.py"], files)
    assert [p.relative_to(root).as_posix() for p in linked] == ["other.py", "pkg/b.py"]


def test_a_relative_import_of_an_excluded_file_is_not_linked(tmp_path: Path) -> None:
    """A named file whose relative import names a file the discovery leaves out (excluded by
    the configuration) ended the run with an internal KeyError; the excluded file stays out."""
    root = _project(tmp_path)
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n\n[tool.distlint]\nextend-exclude = ['pkg/hidden.py']\n"
    )
    (root / "pkg" / "hidden.py").write_text("import torch.distributed as dist\n")
    (root / "pkg" / "visible.py").write_text(
        "import torch.distributed as dist\nfrom .hidden import dist as _d\n\n\n"
        "def f():\n    if dist.get_rank() == 0:\n        dist.barrier()\n"
    )
    assert _check(root, "pkg/visible.py", "pkg/train.py") == [
        ("pkg/train.py", "DL201", 7),
        ("pkg/visible.py", "DL201", 7),
    ]
    files = sorted(p for p in root.rglob("*.py") if p.name != "hidden.py")
    assert root / "pkg" / "hidden.py" not in related_files([root / "pkg" / "visible.py"], files)


@pytest.mark.parametrize(
    ("markers", "expected"),
    [(("pyproject.toml",), "repo/proj"), (("distlint.toml",), "repo/proj"), ((), "repo")],
)
def test_the_project_root(tmp_path: Path, markers, expected) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    project = tmp_path / "repo" / "proj"
    (project / "src").mkdir(parents=True)
    for marker in markers:
        (project / marker).write_text("")
    assert project_root(project / "src" / "a.py") == tmp_path / expected


def test_stdin_with_a_file_name_is_that_file_of_its_project(tmp_path: Path) -> None:
    """An editor piping an unsaved buffer gets the cross-file findings too."""
    root = _project(tmp_path)
    again = "\n\ndef again(loss):\n    if is_main_process():\n        all_reduce_mean(loss)\n"
    buffer = TRAIN + again
    name = "--stdin-filename=pkg/train.py"
    proc = subprocess.run(
        [*DISTLINT, "--select=DL201", "--format=json", "--exit-zero", name, "-"],
        cwd=root,
        input=buffer,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    found = [(f["path"], f["code"], f["range"]["start"]["line"]) for f in json.loads(proc.stdout)]
    assert found == [("pkg/train.py", "DL201", 7), ("pkg/train.py", "DL201", 12)]


def test_a_file_outside_any_project_has_no_project_context(tmp_path: Path) -> None:
    (tmp_path / "alone.py").write_text("x = 1\n")
    assert project_root(tmp_path / "alone.py") is None


REPOSITORY = Path(__file__).resolve().parents[2]


def test_a_file_linked_for_context_summarises_as_in_a_full_pass() -> None:
    """Files linked for context run only the project-scope rules (``linked_only``), and take
    the cached entry of a full pass when ``check .`` left one: both must give the same
    summary and records. Checked on every fixture and example."""
    import pickle
    from dataclasses import replace

    from distlint.engine.checker import FileSource, analyze_file
    from distlint.engine.tasks import linked_only
    from distlint.syntax.module_names import module_name_for
    from tests.project_util import settings

    full = settings()
    files = sorted((REPOSITORY / "fixtures").rglob("*.py"))
    files += sorted((REPOSITORY / "examples").rglob("*.py"))
    assert len(files) > 100
    for path in files:
        name, package = module_name_for(path)
        results = [
            analyze_file(FileSource(path, path.name, name, package), chosen)
            for chosen in (full, linked_only(full))
        ]
        # as pickled (the cache's form): lazy spans compare by identity
        linked = [
            pickle.dumps((r.summary and replace(r.summary, enabled=frozenset()), r.records))
            for r in results
        ]
        assert linked[0] == linked[1], path


def test_a_warm_run_scans_the_imports_of_changed_files_only(tmp_path: Path, monkeypatch) -> None:
    """What each file imports is cached by the digest of its bytes: a warm run scans only
    the named file (what it imports decides what is linked), an edited file is scanned, and
    what it imports now is linked."""
    import distlint.config.project_files as project_files
    from distlint.config.settings import CliOverrides, ConfigResolver
    from distlint.engine.cache import FirstPassCache
    from distlint.engine.tasks import context_tasks

    root = _project(tmp_path / "project")
    (tmp_path / "cache").mkdir()
    cache = FirstPassCache(tmp_path / "cache", b"key")
    scanned: list[str] = []
    real_scan = project_files.scan_imports

    def scan_imports(text: str) -> project_files.ImportScan:
        scanned.append(text)
        return real_scan(text)

    monkeypatch.setattr(project_files, "scan_imports", scan_imports)
    train = root / "pkg" / "train.py"

    def linked() -> list[str]:
        tasks = context_tasks([train], [train], ConfigResolver(), CliOverrides(), root, cache=cache)
        return [task.display for task in tasks]

    cold = linked()
    assert cold == ["pkg/__init__.py", "pkg/utils/__init__.py", "pkg/utils/comm.py"]
    # the named file and what it imports (the empty __init__s: one text); of the other files,
    # none spells an import of train.py (see the next test)
    assert len(scanned) == 3
    scanned.clear()
    assert linked() == cold
    assert scanned == [train.read_text()]
    scanned.clear()
    comm = root / "pkg" / "utils" / "comm.py"
    comm.write_text(comm.read_text() + "\nfrom pkg import ops\n")
    assert linked() == sorted([*cold, "pkg/ops.py"])
    # the named file; comm.py, changed, and ops.py, which it imports now (never scanned: it
    # does not spell an import of train.py)
    assert len(scanned) == 3 and "from pkg import ops" in scanned[1]


def test_only_files_that_spell_a_named_module_are_read_for_their_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The importers of the named files are found among every file of the project on each
    check (each keystroke in the editor): a file whose bytes cannot spell an import of them
    is not decoded and scanned (most of a project's files)."""
    from distlint.config import project_files

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "pkg/__init__.py": "",
        "pkg/train.py": "import os\n",
        "pkg/user.py": "from pkg.train import main\n",
        "pkg/sibling.py": "from .train import main\n",
        "pkg/parent.py": "from . import other\n",  # pkg/__init__.py: not the named file
        "pkg/sub/__init__.py": "",
        "pkg/sub/up.py": "from .. import other\n",
        "pkg/unrelated.py": "import json\n\n\ndef f():\n    return json\n",
        "pkg/sub/also_unrelated.py": "import os.path\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    scanned: list[str] = []  # the texts scanned
    real = project_files.scan_imports

    def noting(text: str) -> project_files.ImportScan:
        scanned.append(text)
        return real(text)

    monkeypatch.setattr(project_files, "scan_imports", noting)
    paths = sorted(tmp_path / name for name in files)
    linked = related_files([pkg / "train.py"], paths)
    assert [p.relative_to(tmp_path).as_posix() for p in linked] == [
        "pkg/sibling.py",
        "pkg/user.py",
    ]
    assert files["pkg/unrelated.py"] not in scanned
    assert files["pkg/sub/also_unrelated.py"] not in scanned
    # a package's __init__ is imported by its folder's name, or by a relative import alone
    linked = related_files([pkg / "__init__.py"], paths)
    assert [p.relative_to(tmp_path).as_posix() for p in linked] == [
        "pkg/parent.py",
        "pkg/sub/up.py",
        "pkg/user.py",
    ]


def test_an_importer_of_a_module_named_in_other_letters_is_found(tmp_path: Path) -> None:
    (tmp_path / "módulo.py").write_text("X = 1\n")
    user = "# -*- coding: latin-1 -*-\nfrom módulo import X\n"
    (tmp_path / "user.py").write_text(user, "latin-1")
    files = sorted(tmp_path.glob("*.py"))
    assert related_files([tmp_path / "módulo.py"], files) == [tmp_path / "user.py"]
