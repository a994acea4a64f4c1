"""The project's torch range from its own metadata, and DL504 judged against its lowest torch."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from distlint.config.torch_version import (
    clear_caches,
    infer_requirement,
    lowest_version,
    requirement_for_dir,
    version_bounds,
)
from distlint.knowledge.torch_tables import load_table
from tests.test_cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        ("torch>=2.4", (True, "2.4")),
        ("torch >= 2.4.1, <2.7", (True, "2.4")),
        ("torch==2.5.1+cu121", (True, "2.5")),
        ("torch~=2.3", (True, "2.3")),
        ("torch>2.2", (True, "2.2")),
        ("torch>=2.1,>=2.4", (True, "2.4")),
        ("torch[opt]>=2.1; python_version > '3.9'", (True, "2.1")),
        ("torch (>=2.3)", (True, "2.3")),
        ("Torch>=2", (True, "2.0")),
        ("torch", (True, None)),
        ("torch<3", (True, None)),
        ("pytorch=2.4=py3.10_cuda12.1_cudnn9_0", (True, "2.4")),
        ("pytorch 2.4.*", (True, "2.4")),
        ("pytorch::pytorch>=2.2", (True, "2.2")),
        ("torchvision>=0.19", (False, None)),
        ("torch-tb-profiler", (False, None)),
    ],
)
def test_lowest_version(requirement: str, expected: tuple[bool, str | None]) -> None:
    assert lowest_version(requirement) == expected


@pytest.mark.parametrize(
    ("requirement", "lowest", "highest"),
    [
        ("torch>=2.4,<2.14", "2.4", "2.13"),
        ("torch>=2.4,<3", "2.4", None),
        ("torch==2.5.1", "2.5", "2.5"),
        ("torch==2.12.*", "2.12", "2.12"),
        ("torch~=2.4.1", "2.4", "2.4"),
        ("torch~=2.4", "2.4", None),
        ("torch<=2.12", None, "2.12"),
        ("torch<2.12.1", None, "2.12"),
        ("torch>2.6,<2.9", "2.6", "2.8"),
        ("pytorch=2.8=py3.11_cuda12.1", "2.8", "2.8"),
        ("torch", None, None),
    ],
)
def test_version_bounds(requirement: str, lowest: str | None, highest: str | None) -> None:
    assert version_bounds(requirement) == (True, lowest, highest)


SOURCES = {
    "pyproject.toml": (
        '[project]\nname = "x"\ndependencies = ["numpy", "torch>=2.4,<2.14"]\n',
        "pyproject.toml [project] dependencies: 'torch>=2.4,<2.14'",
    ),
    "requirements-train.txt": (
        "-r base.txt\n# torch>=1.0 (a comment)\nnumpy\ntorch==2.5.1  # pinned\n",
        "requirements-train.txt: 'torch==2.5.1 # pinned'",
    ),
    "setup.cfg": (
        "[metadata]\nname = x\n\n[options]\ninstall_requires =\n    numpy\n    torch>=2.6\n",
        "setup.cfg [options] install_requires: 'torch>=2.6'",
    ),
    "setup.py": (
        "from setuptools import setup\n\nREQUIRES = ['numpy', 'torch>=2.7']\n"
        "setup(name='x', install_requires=REQUIRES)\n",
        "setup.py install_requires: 'torch>=2.7'",
    ),
    "environment.yml": (
        "name: train\nchannels: [pytorch]\ndependencies:\n  - python=3.11\n"
        "  - pytorch=2.8=py3.11_cuda12.1\n  - pip:\n    - accelerate\n",
        "environment.yml dependencies: 'pytorch=2.8=py3.11_cuda12.1'",
    ),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_source(tmp_path: Path, name: str) -> None:
    text, described = SOURCES[name]
    (tmp_path / name).write_text(text)
    found = infer_requirement(tmp_path)
    assert found is not None and found.describe() == described


def test_sources_in_order_and_nothing_found(tmp_path: Path) -> None:
    assert infer_requirement(tmp_path) is None
    for name in ("environment.yml", "setup.py", "setup.cfg", "requirements-train.txt"):
        (tmp_path / name).write_text(SOURCES[name][0])
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndynamic = ["dependencies"]\n')
    infer_requirement.cache_clear()
    assert infer_requirement(tmp_path).source == "requirements-train.txt"  # type: ignore[union-attr]


def test_setup_py_is_never_run(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(
        "import sys\nsys.exit(3)\nsetup(install_requires=[f'torch>={sys.version}'])\n"
    )
    assert infer_requirement(tmp_path) is None


@pytest.fixture
def dl504(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "DL504" / "bad.py", tmp_path / "train.py")
    return tmp_path


def _dl504(args: list[str] | None = None) -> list[dict]:
    result = cli(["check", "--select", "DL504", "--format", "json", *(args or []), "train.py"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


_USE = re.compile(r"Use `([\w.]+)` instead")


def test_a_project_declaring_torch_2_4_gets_no_replacement_torch_2_4_lacks(dl504: Path) -> None:
    newest = _dl504()  # no metadata: judged against the newest known torch
    (dl504 / "pyproject.toml").write_text(SOURCES["pyproject.toml"][0].replace("2.14", "3"))
    findings = _dl504()
    assert findings and len(findings) < len(newest)
    on_2_4 = load_table("2.4")
    for finding in findings:
        proposed = _USE.search(finding["message"])
        if proposed is not None and proposed[1].startswith("torch"):
            assert on_2_4.has(proposed[1]), finding["message"]
        for edit in (finding.get("fix") or {}).get("edits", ()):
            assert "all_gather_single" not in edit["content"]
    (gather,) = [f for f in findings if f["message"].startswith("`dist._all_gather_base`")]
    assert gather["message"].endswith(
        "torch names `torch.distributed.all_gather_single` instead, which the project's lowest "
        "torch, 2.4, does not have: keep this call until the project's lowest torch has it."
    )
    assert not gather.get("fix")
    settings = json.loads(cli(["check", "--show-settings", "train.py"]).stdout)
    assert settings["lowest-torch"] == "2.4"
    assert settings["highest-torch"] is None
    assert settings["lowest-torch-from"] == (
        "pyproject.toml [project] dependencies: 'torch>=2.4,<3'"
    )
    assert settings["torch-range"] == "2.4-2.14"


def _messages(findings: list[dict]) -> dict[int, str]:
    return {f["range"]["start"]["line"]: f["message"] for f in findings}


def test_torch_2_4_and_torch_2_10_projects_get_different_advice(dl504: Path) -> None:
    (dl504 / "requirements.txt").write_text("torch>=2.4\n")
    old = _messages(_dl504())
    (dl504 / "requirements.txt").write_text("torch>=2.10,<2.12\n")
    new = _messages(_dl504())
    settings = json.loads(cli(["check", "--show-settings", "train.py"]).stdout)
    assert (settings["lowest-torch"], settings["highest-torch"]) == ("2.10", "2.11")
    assert settings["torch-range"] == "2.10-2.11"
    # deprecations from 2.5 to 2.10 are reported to the 2.10 project only
    assert set(old) < set(new)
    assert any("since torch 2.4 or earlier" not in new[row] for row in set(new) - set(old))


def test_explicit_torch_version_wins_and_2_13_floor_reports(dl504: Path) -> None:
    (dl504 / "requirements.txt").write_text("torch>=2.13\n")
    on_2_13 = _dl504()
    (dl504 / "requirements.txt").write_text("torch>=2.4\n")
    assert len(_dl504()) < len(on_2_13)
    (dl504 / "pyproject.toml").write_text('[tool.distlint]\ntorch-version = "2.13"\n')
    assert _dl504() == on_2_13
    settings = json.loads(cli(["check", "--show-settings", "train.py"]).stdout)
    assert settings["lowest-torch"] == "2.13"
    assert settings["lowest-torch-from"] == f"torch-version in {dl504 / 'pyproject.toml'}"
    assert settings["torch-range"] == "2.13-2.14"


def test_no_lower_bound_means_the_newest_known_torch(dl504: Path) -> None:
    (dl504 / "requirements.txt").write_text("torch<3\n")
    assert len(_dl504()) > 20
    settings = json.loads(cli(["check", "--show-settings", "train.py"]).stdout)
    assert settings["lowest-torch"] is None
    assert "no lower bound" in settings["lowest-torch-from"]


# -- several sources: the lowest lower bound any of them states ----------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_type_checker_pin_does_not_raise_the_floor(tmp_path: Path) -> None:
    """Lightning's layout: ``requirements/typing.txt`` pins torch for mypy, the runtime files
    under ``requirements/<package>/`` state the floor."""
    _tree(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "x"\ndynamic = ["dependencies"]\n',
            "requirements/typing.txt": "mypy==1.11.0\ntorch==2.9.1\n",
            "requirements/fabric/base.txt": "numpy >=1.21.0\ntorch >=2.1.0\n",
            "requirements/pytorch/base.txt": "-r ../fabric/base.txt\ntorch >=2.1.0\n",
            "requirements/docs.txt": "sphinx\n",
        },
    )
    found = infer_requirement(tmp_path)
    assert found is not None
    assert (found.lowest, found.highest) == ("2.1", None)
    assert found.describe() == (
        "requirements/fabric/base.txt: 'torch >=2.1.0' "
        "(the lowest lower bound of 3 torch requirements)"
    )


def test_a_requirement_without_a_bound_says_nothing(tmp_path: Path) -> None:
    """lmdeploy's layout: ``requirements/readthedocs.txt`` names torch without a bound (sorted
    first), ``requirements/runtime_cuda.txt`` states the floor."""
    _tree(
        tmp_path,
        {
            "requirements/readthedocs.txt": "markdown>=3.4.0\ntorch\n",
            "requirements/runtime_cuda.txt": "numpy<2.0.0\ntorch>=2.0.0,<=2.8.0\n",
        },
    )
    found = infer_requirement(tmp_path)
    assert found is not None
    assert (found.lowest, found.highest) == ("2.0", "2.8")
    assert found.describe() == "requirements/runtime_cuda.txt: 'torch>=2.0.0,<=2.8.0'"


def test_dev_and_docs_pins_above_the_runtime_floor(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "x"\ndependencies = ["torch>=2.4,<2.8"]\n'
                '[project.optional-dependencies]\ndocs = ["torch==2.6.0"]\n'
            ),
            "requirements-dev.txt": "torch==2.7.1\n",
        },
    )
    found = infer_requirement(tmp_path)
    assert found is not None
    assert (found.lowest, found.highest, found.highest_from) == ("2.4", "2.7", None)
    assert found.source == "pyproject.toml [project] dependencies"
    # a dev pin above the runtime's upper bound widens the range, and says where from
    (tmp_path / "requirements-dev.txt").write_text("torch==2.9.1\n")
    infer_requirement.cache_clear()
    found = infer_requirement(tmp_path)
    assert found is not None
    assert (found.lowest, found.highest) == ("2.4", "2.9")
    assert found.highest_from == "requirements-dev.txt: 'torch==2.9.1'"


def test_a_runtime_floor_without_an_upper_bound_has_no_ceiling(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "setup.cfg": "[options]\ninstall_requires =\n    torch>=2.5\n"
            "[options.extras_require]\ntest =\n    torch==2.11.0\n",
            "environment.yml": "dependencies:\n  - pytorch=2.12\n",
        },
    )
    found = infer_requirement(tmp_path)
    assert found is not None
    assert (found.lowest, found.highest) == ("2.5", None)
    assert found.source == "setup.cfg [options] install_requires"


def test_setup_py_extras_are_read(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(
        "from setuptools import setup\nDOCS = ['torch>=2.3']\n"
        "setup(install_requires=['torch==2.8.0'], extras_require={'docs': DOCS})\n"
    )
    found = infer_requirement(tmp_path)
    assert found is not None and found.lowest == "2.3"
    assert found.source == "setup.py extras_require docs"


def test_no_bound_anywhere_falls_back_to_the_newest(tmp_path: Path) -> None:
    _tree(tmp_path, {"requirements/docs.txt": "torch\n", "requirements.in": "torch!=2.5.0\n"})
    found = infer_requirement(tmp_path)
    assert found is not None
    assert (found.lowest, found.highest) == (None, None)
    assert found.describe() == "requirements.in: 'torch!=2.5.0'"


def test_a_folder_without_a_floor_defers_to_the_project_root(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.2"]\n',
            "pkg/requirements.txt": "torch\n",
        },
    )
    found = requirement_for_dir((tmp_path / "pkg").resolve())
    assert found is not None and found.lowest == "2.2"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    clear_caches()
    found = requirement_for_dir((tmp_path / "pkg").resolve())
    assert found is not None and found.lowest is None
    assert found.source == "requirements.txt"


def test_show_settings_names_the_file_of_the_floor(dl504: Path) -> None:
    _tree(
        dl504,
        {
            "requirements/typing.txt": "torch==2.9.1\n",
            "requirements/pytorch/base.txt": "torch >=2.4.0, <2.9.0\n",
            "requirements/readthedocs.txt": "torch\n",
        },
    )
    settings = json.loads(cli(["check", "--show-settings", "train.py"]).stdout)
    assert (settings["lowest-torch"], settings["highest-torch"]) == ("2.4", "2.9")
    assert settings["lowest-torch-from"] == (
        "requirements/pytorch/base.txt: 'torch >=2.4.0, <2.9.0' (the lowest lower bound of 2 "
        "torch requirements); up to torch 2.9 from requirements/typing.txt: 'torch==2.9.1'"
    )
    on_2_4 = _dl504()
    (dl504 / "pyproject.toml").write_text('[tool.distlint]\ntorch-version = "2.13"\n')
    assert len(_dl504()) > len(on_2_4)  # the configured torch-version still wins
    settings = json.loads(cli(["check", "--show-settings", "train.py"]).stdout)
    assert settings["lowest-torch"] == "2.13"
    assert settings["lowest-torch-from"] == f"torch-version in {dl504 / 'pyproject.toml'}"
