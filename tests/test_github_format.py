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
its permissions and steps, and its distlint command must write the valid SARIF, under the
category, that its upload step names.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.findings import Finding, Severity, Span, make_position
from distlint.registry import all_rules
from distlint.reporters import Report, render
from tests.sarif_validation import assert_valid_sarif

REPO_ROOT = Path(__file__).resolve().parents[1]
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
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with pre-commit (the dev extra)")
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


def _distlint_run(steps: list[dict]) -> str:
    (command,) = [step["run"] for step in steps if step.get("run", "").startswith("distlint ")]
    return command


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
    assert upload["uses"] == "github/codeql-action/upload-sarif@v4"
    assert upload["with"] == {"sarif_file": "distlint.sarif", "category": "distlint"}
    assert "if" not in upload  # distlint failing (exit 2) must not upload a partial analysis
    (install,) = [step for step in steps if "pip install distlint" in step.get("run", "")]
    check_step = next(step for step in steps if step.get("run", "").startswith("distlint "))
    assert _distlint_run(steps) == (
        "distlint check --format sarif --output distlint.sarif --exit-zero ."
    )
    order = [steps.index(step) for step in (checkout, setup, install, check_step, upload)]
    assert order == sorted(order)
    version = tuple(int(part) for part in setup["with"]["python-version"].split("."))
    assert version >= (3, 10)  # distlint's requires-python


def test_example_workflow_command_writes_the_sarif_it_uploads(workflow, tmp_path, monkeypatch):
    steps = _steps(workflow)
    upload = _step_using(steps, "github/codeql-action/upload-sarif")
    executable, *args = shlex.split(_distlint_run(steps))
    assert executable == "distlint"
    (tmp_path / "train.py").write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [*args, "--jobs", "1"])
    assert result.exit_code == 0, result.output  # --exit-zero: findings do not fail the step
    log = assert_valid_sarif((tmp_path / upload["with"]["sarif_file"]).read_text("utf-8"))
    (run,) = log["runs"]
    assert run["automationDetails"] == {"id": upload["with"]["category"] + "/"}
    assert [r["ruleId"] for r in run["results"]] == ["DL502", "DL502"]
    assert {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    } == {"train.py"}


def _yaml_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", markdown, re.MULTILINE | re.DOTALL)


def test_docs_show_the_example_workflow_verbatim():
    assert WORKFLOW.read_text(encoding="utf-8") in _yaml_blocks(DOC.read_text(encoding="utf-8"))


def test_docs_monorepo_example_gives_distlint_and_the_upload_the_same_category():
    (monorepo,) = [
        block for block in _yaml_blocks(DOC.read_text(encoding="utf-8")) if "matrix" in block
    ]
    steps = _steps(_load_yaml(monorepo))
    (command,) = [step["run"] for step in steps if "--sarif-category" in step.get("run", "")]
    category = re.search(r"--sarif-category (\S*\$\{\{.*?\}\}|\S+)", command)
    assert category is not None
    upload = _step_using(steps, "github/codeql-action/upload-sarif")
    assert upload["with"]["category"] == category.group(1)
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
