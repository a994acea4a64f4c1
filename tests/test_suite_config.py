"""The suite's own set-up: markers, warning filters and the dev extra (pyproject.toml)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_torch_marker_is_declared() -> None:
    markers = PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]
    assert any(marker.startswith("torch:") for marker in markers)


PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")


def test_not_torch_selects_no_proof_test() -> None:
    proc = subprocess.run(
        [*PYTEST, "--collect-only", "-q", "-m", "not torch", str(REPO / "tests" / "proof")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 5, proc.stdout + proc.stderr  # 5: no test selected
    assert re.search(r"no tests collected \(\d+ deselected\)", proc.stdout), proc.stdout


def test_a_warning_from_distlint_fails_the_test() -> None:
    with pytest.raises(UserWarning, match="ours"):
        warnings.warn_explicit(
            "ours", UserWarning, "distlint/engine/checker.py", 1, module="distlint.x"
        )


@pytest.mark.parametrize("module", ["torch", "torch.jit._script"])
def test_warnings_from_torch_itself_are_filtered(module: str) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.warn_explicit(
            "torch.jit.script is deprecated", DeprecationWarning, "x.py", 1, module=module
        )
    assert seen == []


def test_warnings_from_other_packages_are_still_shown() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.warn_explicit("theirs", UserWarning, "torchvision/x.py", 1, module="torchvision.x")
    assert [str(w.message) for w in seen] == ["theirs"]


def test_dev_extra_brings_numpy_and_pins_torch() -> None:
    dev = PYPROJECT["project"]["optional-dependencies"]["dev"]
    names = {re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0] for requirement in dev}
    assert {"numpy", "torch", "pyyaml", "pre-commit"} <= names
    assert "torch==2.13.0" in dev


def test_the_catalog_restored_after_a_test_keeps_the_built_in_rules(tmp_path: Path) -> None:
    """A process whose first test is the first to import the rule modules (a single proof file,
    tests/proof/test_proof_fixes.py): the tests after it still check with every built-in rule.
    Restoring a snapshot taken before that import dropped them for good (each rule module
    registers its rules once, on import), and every later check found nothing."""
    (tmp_path / "test_order.py").write_text(
        "from distlint.engine.checker import FileSource, check_file\n"
        "from distlint.file_settings import FileSettings\n"
        "\n"
        "SOURCE = 'import torch.distributed as dist\\n\\ndist.barrier(timout=5)\\n'\n"
        "\n"
        "\n"
        "def codes(*enabled):\n"
        "    settings = FileSettings(enabled=frozenset(enabled))\n"
        "    return [f.code for f in check_file(FileSource(SOURCE, 't.py'), settings).findings]\n"
        "\n"
        "\n"
        "def test_first():\n"
        "    assert codes('DL501') == ['DL501']\n"
        "\n"
        "\n"
        "def test_second():  # other rules than the first test's check looked up\n"
        "    assert codes('DL501', 'DL503') == ['DL501']\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [*PYTEST, "-q", "-p", "tests.conftest", str(tmp_path / "test_order.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout
