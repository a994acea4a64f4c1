"""GitHub without SARIF upload (``--format github``), and the example code-scanning workflow.

``--format github`` prints workflow commands that GitHub's runner must parse back to what was
meant.
The runner (actions/runner ``src/Runner.Common/ActionCommand.cs``, ``TryParseV2``) reads one
line at a time, takes the text between the leading ``::`` and the next ``::`` as the command
and its properties, splits the properties on ``,`` and each on the first ``=``, and then undoes
the escapes: ``%0D`` ``%0A`` ``%25`` in the message, and also ``%3A`` ``%2C`` in property values.
:func:`parse_workflow_command` is a port of that parser; the tests check that what distlint
prints comes back unchanged through it, for paths and messages full of those characters.

``examples/github/distlint.yml`` (shown verbatim in ``docs/github-code-scanning.md``) must keep
its permissions and steps, and its distlint step (the composite action in ``action.yml``, run
here step by step as the runner would: tests/github_action.py) must write the valid SARIF,
under the category, that its upload step names.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from distlint.cli import main
from distlint.findings import Finding, Severity, Span, make_position
from distlint.output.render import render
from distlint.output.report import Report
from distlint.rules.registry import all_rules
from tests.github_action import load_action, run_step, step_named
from tests.sarif_validation import assert_valid_sarif

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = REPO_ROOT / "examples" / "github" / "distlint.yml"
DOC = REPO_ROOT / "docs" / "github-code-scanning.md"

DATA_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
PROPERTY_ESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))


def _unescape(value: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for escaped, plain in escapes:  # in the runner's order: %25 last
        value = value.replace(escaped, plain)
    return value


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """(command, properties, message) as the Actions runner reads ``line``."""
    line = line.lstrip()
    assert line.startswith("::"), line
    end = line.index("::", 2)
    info = line[2:end]
    name, _, properties_text = info.partition(" ")
    properties = {}
    for item in properties_text.strip().split(","):
        key, sep, value = item.partition("=")
        if item and sep and key and value:
            properties[key] = _unescape(value, PROPERTY_ESCAPES)
    return name, properties, _unescape(line[end + 2 :], DATA_ESCAPES)


SOURCE = (
    "import torch\n"
    "\n"
    "\n"
    "def f(x):\n"
    "    return x\n"
    "\n"
    "\n"
    'g = torch.compile(f, backend="nv%fuser:,x")\n'
    'h = torch.compile(f, mode="max%0Aautotune")\n'
)

# Names that would break the command line unescaped: ',' ends a property, '::' ends the
# properties, a newline ends the command, '%xx' looks like an escape already.
NAMES = ["a,b:c.py", "x::y,z%2C%25.py"]
if sys.platform != "win32":
    NAMES.append("new\nline\r.py")


@pytest.mark.skipif(sys.platform == "win32", reason="':' is not allowed in Windows file names")
@pytest.mark.parametrize("name", NAMES)
def test_cli_annotations_survive_the_runners_parser(tmp_path, monkeypatch, name):
    directory = tmp_path / "we,ird:dir"
    directory.mkdir()
    (directory / name).write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    github = runner.invoke(main, ["check", "--format", "github", "--jobs", "1", "."])
    as_json = runner.invoke(main, ["check", "--format", "json", "--jobs", "1", "."])
    assert github.exit_code == as_json.exit_code == 1, github.output + as_json.output
    expected = json.loads(as_json.stdout)
    lines = github.stdout.splitlines()
    assert len(lines) == len(expected) == 2  # one line per finding: nothing broke a line
    for line, finding in zip(lines, expected, strict=True):
        command, properties, message = parse_workflow_command(line)
        start, end = finding["range"]["start"], finding["range"]["end"]
        assert command == "error"
        assert properties == {
            "file": f"we,ird:dir/{name}",
            "line": str(start["line"]),
            "col": str(start["column"]),
            "endLine": str(end["line"]),
            "endColumn": str(end["column"]),
            "title": f"{finding['code']} {finding['name']}",
        }
        assert finding["path"] == properties["file"]
        assert message == finding["message"]
    first = lines[0]
    assert first.startswith("::error file=we%2Cird%3Adir/")
    assert "%25" in first.split("::")[2]  # the '%' of the backend name, escaped
    assert "nv%25fuser%3A%2Cx" not in first  # ':' and ',' are escaped in properties only


def finding(message: str, start: tuple[int, int], end: tuple[int, int]) -> Finding:
    lines = ["x = 1"] * 3
    return Finding(
        code="DL502",
        name=all_rules()["DL502"].name,
        severity=Severity.WARNING,
        message=message,
        path="dir,1/a:b.py",
        span=Span(make_position(lines, *start), make_position(lines, *end)),
    )


def github(*findings: Finding) -> str:
    report = Report(list(findings), [], 1, [], Path("/r"), Path("/r"), {}.get)
    return render(report, "github")


@pytest.mark.parametrize(
    "message",
    [
        "one\ntwo\r\nthree\rfour",
        "100% sure, 50%25 escaped already, a %0A that is text",
        "key=value, other=thing :: not the end :: of the command",
    ],
)
def test_messages_keep_newlines_percent_signs_and_colons(message):
    text = github(finding(message, (1, 0), (1, 5)))
    assert text.endswith("\n") and text.count("\n") == 1  # one command line
    assert "\r" not in text
    command, properties, parsed = parse_workflow_command(text.rstrip("\n"))
    assert (command, parsed) == ("warning", message)
    assert properties["file"] == "dir,1/a:b.py"
    assert text.startswith("::warning file=dir%2C1/a%3Ab.py,line=1,col=1,endLine=1,endColumn=6,")


def test_multi_line_ranges_leave_out_columns():
    command, properties, _ = parse_workflow_command(github(finding("m", (1, 2), (3, 1))))
    assert command == "warning"
    assert properties == {
        "file": "dir,1/a:b.py",
        "line": "1",
        "endLine": "3",
        "title": "DL502 invalid-compile-option",
    }


def test_severities_map_to_error_warning_and_notice():
    commands = []
    for severity in Severity:
        base = finding("m", (1, 0), (1, 1))
        line = github(Finding(**{**base.__dict__, "severity": severity}))
        commands.append(parse_workflow_command(line)[0])
    assert commands == ["error", "warning", "notice"]


def test_parser_port_is_not_fooled_by_unescaped_text():
    """Negative control: unescaped ',' or '::' in a path really does break the runner's parse."""
    _, properties, message = parse_workflow_command("::error file=a,b.py,line=1::m")
    assert properties["file"] == "a"
    _, properties, message = parse_workflow_command("::error file=x::y.py,line=1::m")
    assert properties == {"file": "x"} and message == "y.py,line=1::m"


# -- the example code-scanning workflow -------------------------------------------------------


def _load_yaml(text: str) -> dict:
    return yaml.safe_load(text)


@pytest.fixture(scope="module")
def workflow() -> dict:
    return _load_yaml(WORKFLOW.read_text(encoding="utf-8"))


def _steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def _step_using(steps: list[dict], action: str) -> dict:
    (step,) = [step for step in steps if step.get("uses", "").partition("@")[0] == action]
    return step


ACTION_REF = "distlint/distlint@<commit>"  # the action in this repository, at a commit


def _distlint_step(steps: list[dict]) -> dict:
    (step,) = [step for step in steps if step.get("uses", "").startswith("distlint/distlint@")]
    return step


def test_example_workflow_permissions_and_triggers(workflow):
    assert workflow["permissions"] == {
        "contents": "read",
        "security-events": "write",
        "actions": "read",
    }
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert {"push", "pull_request"} <= set(triggers)
    assert triggers["push"]["branches"] == ["main"]


def test_example_workflow_steps(workflow):
    steps = _steps(workflow)
    checkout = _step_using(steps, "actions/checkout")
    setup = _step_using(steps, "actions/setup-python")
    upload = _step_using(steps, "github/codeql-action/upload-sarif")
    distlint = _distlint_step(steps)
    assert distlint["uses"] == ACTION_REF
    assert distlint["with"] == {"args": "--exit-zero", "src": "."}
    assert set(distlint["with"]) <= set(load_action()["inputs"])
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"
    assert upload["with"] == {
        "sarif_file": f"${{{{ steps.{distlint['id']}.outputs.sarif-file }}}}",
        "category": "distlint",
    }
    assert "if" not in upload  # distlint failing (exit 2) must not upload a partial analysis
    assert not [step for step in steps if "pip install" in step.get("run", "")]
    order = [steps.index(step) for step in (checkout, setup, distlint, upload)]
    assert order == sorted(order)
    version = tuple(int(part) for part in setup["with"]["python-version"].split("."))
    assert version >= (3, 10)  # distlint's requires-python


def _run_action_check(step: dict, workdir: Path, runner_temp: Path):
    """The action's check step, with distlint as the install step would leave it."""
    action = load_action()
    bin_dir = runner_temp / "distlint-venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "distlint").symlink_to(Path(sys.executable).with_name("distlint"))
    return run_step(
        action,
        step_named(action, "Run distlint"),
        step.get("with", {}),
        cwd=workdir,
        runner_temp=runner_temp,
        action_path=REPO_ROOT,
    )


def test_example_workflow_writes_the_sarif_it_uploads(workflow, tmp_path):
    steps = _steps(workflow)
    upload = _step_using(steps, "github/codeql-action/upload-sarif")
    workdir = tmp_path / "repo"
    workdir.mkdir()
    (workdir / "train.py").write_text(SOURCE, encoding="utf-8")
    proc, outputs = _run_action_check(_distlint_step(steps), workdir, tmp_path / "runner")
    assert proc.returncode == 0, proc.stdout  # --exit-zero: findings do not fail the step
    assert "train.py:" in proc.stdout and "DL502" in proc.stdout  # the text report in the log
    action_output = load_action()["outputs"]["sarif-file"]["value"]
    assert action_output == "${{ steps.check.outputs.sarif-file }}"
    assert outputs == {"sarif-file": "distlint.sarif"}
    log = assert_valid_sarif((workdir / outputs["sarif-file"]).read_text("utf-8"))
    (run,) = log["runs"]
    assert run["automationDetails"] == {"id": upload["with"]["category"] + "/"}
    assert [r["ruleId"] for r in run["results"]] == ["DL502", "DL502"]
    assert {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    } == {"train.py"}


def test_the_action_fails_the_step_on_findings_without_exit_zero(tmp_path):
    workdir = tmp_path / "repo"
    workdir.mkdir()
    (workdir / "train.py").write_text(SOURCE, encoding="utf-8")
    step = {"with": {"args": "", "src": "train.py", "sarif-file": "out/x.sarif"}}
    (workdir / "out").mkdir()
    proc, outputs = _run_action_check(step, workdir, tmp_path / "runner")
    assert proc.returncode == 1, proc.stdout
    assert outputs == {"sarif-file": "out/x.sarif"}
    assert_valid_sarif((workdir / "out" / "x.sarif").read_text("utf-8"))


def test_the_action_keeps_exit_code_2_for_a_bad_configuration(tmp_path):
    workdir = tmp_path / "repo"
    workdir.mkdir()
    (workdir / "train.py").write_text(SOURCE, encoding="utf-8")
    (workdir / "pyproject.toml").write_text('[tool.distlint]\nselekt = ["DL"]\n', "utf-8")
    proc, _ = _run_action_check({"with": {}}, workdir, tmp_path / "runner")
    assert proc.returncode == 2, proc.stdout
    assert "selekt" in proc.stdout


def _yaml_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", markdown, re.MULTILINE | re.DOTALL)


def test_docs_show_the_example_workflow_verbatim():
    assert WORKFLOW.read_text(encoding="utf-8") in _yaml_blocks(DOC.read_text(encoding="utf-8"))


def test_docs_monorepo_example_gives_distlint_and_the_upload_the_same_category():
    (monorepo,) = [
        block for block in _yaml_blocks(DOC.read_text(encoding="utf-8")) if "matrix" in block
    ]
    steps = _steps(_load_yaml(monorepo))
    distlint = _distlint_step(steps)
    assert distlint["uses"] == ACTION_REF
    assert set(distlint["with"]) <= set(load_action()["inputs"])
    assert distlint["with"]["src"] == "${{ matrix.part }}"
    category = re.search(r"--sarif-category (\S*\$\{\{.*?\}\}|\S+)", distlint["with"]["args"])
    assert category is not None
    upload = _step_using(steps, "github/codeql-action/upload-sarif")
    assert upload["with"]["category"] == category.group(1)
    assert upload["with"]["sarif_file"] == "${{ steps.distlint.outputs.sarif-file }}"
    assert "${{ matrix.part }}" in category.group(1)  # one category per part


def test_annotation_paths_are_relative_to_the_repository_root(tmp_path, monkeypatch) -> None:
    """GitHub places annotations by repository path, whatever directory distlint ran in."""
    from click.testing import CliRunner

    from distlint.cli import main

    (tmp_path / ".git").mkdir()
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "train.py").write_text('import torch\ntorch.compile(f, backend="nvfuser")\n')
    monkeypatch.chdir(sub)
    result = CliRunner().invoke(main, ["check", "--format", "github", "train.py"])
    assert result.exit_code == 1
    assert result.output.startswith("::error file=pkg/train.py,line=2,")


@pytest.mark.slow
def test_the_action_installs_distlint_from_its_checkout_and_checks(hook_repo, tmp_path):
    """Both steps for real: pip-installs the snapshot of this tree (as the action's checkout)."""
    action_path, _ = hook_repo
    action = load_action()
    workdir = tmp_path / "repo"
    workdir.mkdir()
    (workdir / "train.py").write_text(SOURCE, encoding="utf-8")
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    given = {"python": sys.executable}
    install, _ = run_step(
        action,
        step_named(action, "Install distlint from the action's checkout"),
        given,
        cwd=workdir,
        runner_temp=runner_temp,
        action_path=action_path,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout
    assert re.search(r"^distlint, version \S+$", install.stdout, re.MULTILINE), install.stdout
    check, outputs = run_step(
        action,
        step_named(action, "Run distlint"),
        given,
        cwd=workdir,
        runner_temp=runner_temp,
        action_path=action_path,
    )
    assert check.returncode == 0, check.stdout
    log = assert_valid_sarif((workdir / outputs["sarif-file"]).read_text("utf-8"))
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["DL502", "DL502"]
