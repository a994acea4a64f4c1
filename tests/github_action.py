"""Run the steps of the composite action (``action.yml``) the way the Actions runner does.

The runner runs each ``shell: bash`` step as ``bash --noprofile --norc -eo pipefail FILE``, with
the step's ``env:`` (its ``${{ inputs.NAME }}`` expressions evaluated, defaults filled in),
``GITHUB_ACTION_PATH`` (the action's checkout), ``RUNNER_TEMP`` and ``GITHUB_OUTPUT`` (a file
of ``name=value`` lines). The action keeps every expression in ``env:`` (none in ``run:``, where
an input would be pasted into the script), so that is all there is to evaluate here.

Usage: ``from tests.github_action import load_action, run_step``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ACTION = REPO / "action.yml"
INPUT_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}")


def load_action(path: Path = ACTION) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def step_named(action: dict, name: str) -> dict:
    (step,) = [step for step in action["runs"]["steps"] if step.get("name") == name]
    return step


def evaluate(text: str, action: dict, given: dict[str, str]) -> str:
    """``text`` with each ``${{ inputs.NAME }}`` replaced by the given value or its default."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in action["inputs"], f"{name!r} is not an input of the action"
        return str(given.get(name, action["inputs"][name].get("default", "")))

    evaluated = INPUT_EXPRESSION.sub(value, text)
    assert "${{" not in evaluated, f"an expression this runner does not evaluate: {text!r}"
    return evaluated


def run_step(
    action: dict,
    step: dict,
    given: dict[str, str],
    *,
    cwd: Path,
    runner_temp: Path,
    action_path: Path,
    timeout: float = 60,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """(the finished step, the outputs it wrote to ``GITHUB_OUTPUT``)."""
    assert step.get("shell") == "bash", step
    given = dict(given)
    unknown = set(given) - set(action["inputs"])
    assert not unknown, f"inputs the action does not declare: {sorted(unknown)}"
    script = runner_temp / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    output = runner_temp / "github_output"
    output.write_text("", encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env.update(
        {key: evaluate(str(value), action, given) for key, value in step.get("env", {}).items()},
        GITHUB_ACTION_PATH=str(action_path),
        RUNNER_TEMP=str(runner_temp),
        GITHUB_OUTPUT=str(output),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    outputs = dict(
        line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines() if line
    )
    return proc, outputs
