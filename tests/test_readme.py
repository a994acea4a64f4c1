"""The README's set-up commands and CI stay in step."""

from __future__ import annotations

import re
from pathlib import Path

from distlint.reporters import FORMATS

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
TEST_COMMAND = "python -m pytest"


def _first_code_block() -> list[str]:
    match = re.search(r"```sh\n(.*?)```", README, re.DOTALL)
    assert match is not None, "README must start with a sh code block"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_setup_commands() -> None:
    assert README.index("```sh") < README.index("\n## ")
    commands = _first_code_block()
    assert len(commands) == 2
    install_and_run, install_dev_and_test = commands
    assert "pip install ." in install_and_run and "distlint check fixtures/" in install_and_run
    assert "'.[dev]'" in install_dev_and_test
    assert install_dev_and_test.endswith(TEST_COMMAND)


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(TEST_COMMAND)}$", ci, re.MULTILINE)
    assert "set -euo pipefail" in ci


def test_dev_extra_pins_torch_for_the_proof_tests() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"torch==2.13.0"' in pyproject


def test_readme_documents_every_output_format() -> None:
    for fmt in FORMATS:
        assert f"| `{fmt}`" in README
