"""Plugins: the example plugin (examples/plugin) loaded locally from the configuration and as
an installed entry point, its codes handled by select/ignore/noqa/DL001/SARIF like built-in
codes, in-process and in spawned workers; a broken plugin is an exit-2 error naming it.

Each check runs distlint in a subprocess: loading a plugin adds its rules to the process's
catalog, which must not leak into the other tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin"
BAD = "from acme import launch\n\nlaunch.launch(main)\n"


def distlint(cwd: Path, *args: str, site: Path | None = None, **env: str):
    paths = [str(site)] if site else []
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*paths, str(ROOT)]),
        "DISTLINT_CACHE_DIR": str(cwd / ".cache"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "distlint", "check", "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


def findings(proc: subprocess.CompletedProcess) -> list[tuple[str, str, int]]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [(f["path"], f["code"], f["range"]["start"]["line"]) for f in json.loads(proc.stdout)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE / "lint_rules", tmp_path / "lint_rules")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.distlint]\nplugins = ["lint_rules"]\nextend-select = ["XYZ"]\n'
    )
    (tmp_path / "train.py").write_text(BAD)
    return tmp_path


def test_a_local_plugin_reports_with_its_own_code(project: Path) -> None:
    proc = distlint(project, "--format", "json", "train.py")
    assert proc.returncode == 1, proc.stderr
    assert findings(proc) == [("train.py", "XYZ001", 3)]


def test_select_and_ignore_take_plugin_codes_and_prefixes(project: Path) -> None:
    (project / "compiled.py").write_text(
        'import torch\ng = torch.compile(print, backend="nvfuser")\n'
    )
    both = findings(distlint(project, "--format", "json", "."))
    assert [code for _, code, _ in both] == ["DL502", "XYZ001"]
    only = findings(distlint(project, "--format", "json", "--select", "XYZ", "."))
    assert [code for _, code, _ in only] == ["XYZ001"]
    ignored = findings(distlint(project, "--format", "json", "--ignore", "XYZ001", "."))
    assert [code for _, code, _ in ignored] == ["DL502"]
    unknown = distlint(project, "--select", "XYZ9", ".")
    assert unknown.returncode == 2
    assert "unknown rule selector" in unknown.stderr


@pytest.mark.parametrize("comment", ["# noqa: XYZ001", "# distlint: ignore[XYZ]"])
def test_suppressions_take_plugin_codes(project: Path, comment: str) -> None:
    (project / "train.py").write_text(BAD.rstrip("\n") + "  " + comment + "\n")
    proc = distlint(project, "--format", "json", "--extend-select", "DL001", "train.py")
    assert findings(proc) == []


def test_dl001_reports_an_unused_plugin_code_as_unused(project: Path) -> None:
    (project / "ok.py").write_text("x = 1  # distlint: ignore[XYZ001]\n")
    proc = distlint(project, "--format", "json", "--extend-select", "DL001", "ok.py")
    [finding] = json.loads(proc.stdout)
    assert finding["code"] == "DL001"
    assert finding["message"] == "Unused suppression: `XYZ001` suppressed nothing; remove it."


def test_sarif_describes_the_plugin_rule(project: Path) -> None:
    proc = distlint(project, "--format", "sarif", "train.py")
    run = json.loads(proc.stdout)["runs"][0]
    [rule] = [r for r in run["tool"]["driver"]["rules"] if r["id"] == "XYZ001"]
    assert rule["name"] == "launcher-without-timeout"
    assert rule["helpUri"] == "https://example.invalid/lint/XYZ001"
    assert [r["ruleId"] for r in run["results"]] == ["XYZ001"]


def test_spawned_workers_load_the_local_plugin(project: Path) -> None:
    for index in range(6):
        (project / f"job{index}.py").write_text(BAD)
    proc = distlint(project, "--format", "json", "--jobs", "2", ".", DISTLINT_START_METHOD="spawn")
    assert [code for _, code, _ in findings(proc)] == ["XYZ001"] * 7


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
        (
            "from distlint.api import Rule, Severity\n"
            "class Mine(Rule):\n"
            "    code = 'DL777'\n    name = 'mine'\n"
            "    severity = Severity.NOTE\n    summary = 'x'\n",
            "DL codes are distlint's own",
        ),
        (
            "from distlint.api import Rule, Severity\n"
            "class Mine(Rule):\n"
            "    code = 'DL000'\n    name = 'mine'\n"
            "    severity = Severity.NOTE\n    summary = 'x'\n",
            "DL codes are distlint's own",
        ),
    ],
)
def test_a_broken_local_plugin_is_an_exit_2_error_naming_it(
    tmp_path: Path, source: str, message: str
) -> None:
    (tmp_path / "broken.py").write_text(source)
    (tmp_path / "pyproject.toml").write_text('[tool.distlint]\nplugins = ["broken.py"]\n')
    (tmp_path / "train.py").write_text("x = 1\n")
    proc = distlint(tmp_path, "train.py")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "key 'plugins' in [tool.distlint]" in proc.stderr
    assert "broken.py" in proc.stderr and message in proc.stderr


def test_a_missing_local_plugin_is_an_exit_2_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.distlint]\nplugins = ["nowhere"]\n')
    (tmp_path / "train.py").write_text("x = 1\n")
    proc = distlint(tmp_path, "train.py")
    assert proc.returncode == 2
    assert "nowhere: no such Python file or package folder" in proc.stderr


def _install(site: Path, target: str) -> None:
    """An installed distribution whose entry point (group distlint.plugins) is ``target``."""
    info = site / "acme_lint-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-lint\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[distlint.plugins]\nacme = {target}\n")


def test_an_installed_plugin_needs_no_configuration(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(EXAMPLE / "lint_rules", site / "lint_rules")
    _install(site, "lint_rules")
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(BAD)
    proc = distlint(work, "--format", "json", "train.py", site=site)
    assert findings(proc) == [("train.py", "XYZ001", 3)]


def test_a_broken_installed_plugin_is_an_exit_2_error_naming_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install(site, "acme_missing_module")
    (tmp_path / "train.py").write_text("x = 1\n")
    proc = distlint(tmp_path, "train.py", site=site)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "plugin error: installed plugin 'acme' (acme_missing_module)" in proc.stderr


def test_the_example_plugin_tests_itself_with_distlint_testing() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


REGION_PLUGIN = """
import libcst as cst
from distlint.api import RegionRule, Severity, in_region


class AssertInCompiledCode(RegionRule):
    code = "XYZ101"
    name = "assert-in-compiled-code"
    severity = Severity.WARNING
    summary = "An assert in compiled code."

    @in_region
    def visit_Assert(self, node: cst.Assert, region) -> None:
        self.report(node, f"assert in compiled code ({region.where})")
"""
REGION_TRAIN = """import torch


@torch.compile
def step(x):
    assert x.ndim == 2
    return x * 2


def eager(x):
    assert x.ndim == 2
    return x
"""


def test_a_plugin_region_rule_runs_only_in_compiled_code(tmp_path: Path) -> None:
    """``in_region`` (distlint.api) guards a plugin's visitor and hands it the region."""
    (tmp_path / "region_rules.py").write_text(REGION_PLUGIN)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.distlint]\nplugins = ["region_rules.py"]\nselect = ["XYZ"]\n'
    )
    (tmp_path / "train.py").write_text(REGION_TRAIN)
    proc = distlint(tmp_path, "--format", "json", "train.py")
    assert findings(proc) == [("train.py", "XYZ101", 6)]
    assert "assert in compiled code (train.py:4)" in json.loads(proc.stdout)[0]["message"]
