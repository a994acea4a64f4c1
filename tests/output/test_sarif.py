"""SARIF output (distlint.output.sarif): schema-valid and shaped for GitHub code scanning.

Every log rendered here goes through ``assert_valid_sarif`` (both SARIF schemas, formats on).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from urllib.parse import unquote

import pytest
import sarif_om as om

import distlint.output.sarif as sarif
from distlint.findings import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Location,
    Severity,
    Span,
    ToolError,
    make_position,
)
from distlint.output.docs import parse_doc
from distlint.output.fingerprint import line_hashes
from distlint.output.render import render
from distlint.output.report import Report
from distlint.rules.registry import all_rules
from tests.sarif_validation import assert_valid_sarif

ROOT = Path("/home/ci/checkout")
RULES = all_rules()
SOURCE = (
    "import torch.distributed as dist\n"
    "\n"
    "@torch.compile\n"
    "def step(x):\n"
    '    label = "😀 naïve"; dist.all_gather_object(out, x)\n'
    "    return x\n"
)
LINES = SOURCE.splitlines()


def span(line: int, start0: int, end0: int, lines: list[str] = LINES) -> Span:
    """A one-line span from 0-based code-point columns."""
    return Span(make_position(lines, line, start0), make_position(lines, line, end0))


def finding(
    code: str = "DL203",
    path: str = "train.py",
    where: Span | None = None,
    message: str = "`dist.all_gather_object` inside a compiled region crashes compilation.",
    severity: Severity | None = None,
    **extra: object,
) -> Finding:
    rule = RULES[code]
    return Finding(
        code=code,
        name=rule.name,
        severity=severity or rule.severity,
        message=message,
        path=path,
        span=where or span(5, 24, 46),
        **extra,  # type: ignore[arg-type]
    )


def report(
    findings: list[Finding] = (),  # type: ignore[assignment]
    errors: list[ToolError] = (),  # type: ignore[assignment]
    rules: list[str] = ("DL000", "DL203"),  # type: ignore[assignment]
    sources: dict[str, str] | None = None,
    root: Path = ROOT,
    cwd: Path | None = None,
    notices: list[str] = (),  # type: ignore[assignment]
) -> Report:
    texts = {"train.py": SOURCE} if sources is None else sources
    return Report(
        findings=list(findings),
        errors=list(errors),
        files_checked=1,
        rules=[RULES[code] for code in rules],
        root=root,
        cwd=cwd or root,
        read_source=texts.get,
        notices=list(notices),
    )


def render_log(rep: Report, **options: object) -> dict:
    """Render, validate against both schemas, and return the parsed log's only run."""
    log = assert_valid_sarif(sarif.render_sarif(rep, **options))  # type: ignore[arg-type]
    return log["runs"][0]


def rule_ids(run: dict) -> list[str]:
    return [rule["id"] for rule in run["tool"]["driver"]["rules"]]


# -- the log and the run ----------------------------------------------------------------------


def test_empty_run_lists_all_rules_and_an_empty_results_array():
    run = render_log(report(rules=["DL000", "DL001", "DL203"]))
    assert run["results"] == []
    assert rule_ids(run) == ["DL000", "DL001", "DL203"]
    assert run["invocations"] == [{"executionSuccessful": True}]


def test_log_header_and_run_properties():
    text = sarif.render_sarif(report([finding()]))
    log = assert_valid_sarif(text)
    assert list(log) == ["$schema", "version", "runs"]
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    assert run["columnKind"] == "utf16CodeUnits"
    assert run["automationDetails"] == {"id": "distlint/"}
    assert run["originalUriBaseIds"] == {
        "%SRCROOT%": {"description": {"text": "The repository root"}}
    }
    assert str(ROOT) not in text  # nothing machine-specific
    driver = run["tool"]["driver"]
    assert driver["name"] == "distlint"
    assert driver["version"] == driver["semanticVersion"] == sarif.meta.VERSION
    assert driver["informationUri"] == sarif.meta.HOMEPAGE
    # sarif-om's sentinel and schema defaults are not written out
    for noise in ('"language":', '"newlineSequences":', '"contents":', '"kind":', '"rank":'):
        assert noise not in text
    assert 'Time":' not in text  # startTimeUtc, endTimeUtc


def test_category_names_the_automation_details():
    assert render_log(report(), category="gpu-nodes")["automationDetails"] == {"id": "gpu-nodes/"}


def test_rendering_is_deterministic_and_machine_independent():
    findings = [
        finding(related=(Location("train.py", span(3, 0, 14), "compiled here"),)),
        finding("DL000", path="broken.py", where=span(1, 0, 0, [""]), message="bad syntax"),
    ]
    sources = {"train.py": SOURCE, "broken.py": "def (\n"}
    first = sarif.render_sarif(report(findings, sources=sources))
    assert sarif.render_sarif(report(findings, sources=sources)) == first
    elsewhere = report(findings, sources=sources, root=Path("/tmp/x/other"))
    assert sarif.render_sarif(elsewhere) == first
    assert_valid_sarif(first)


def test_render_dispatches_sarif():
    rep = report([finding()])
    assert render(rep, "sarif") == sarif.render_sarif(rep)


# -- rules ------------------------------------------------------------------------------------


def test_every_registered_rule_is_described_for_github():
    run = render_log(report(rules=list(RULES)))
    descriptors = run["tool"]["driver"]["rules"]
    assert [d["id"] for d in descriptors] == list(RULES)
    expected_severity = {"error": "error", "warning": "warning", "note": "recommendation"}
    for descriptor, rule in zip(descriptors, RULES.values(), strict=True):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"] == {"text": rule.summary}
        assert descriptor["fullDescription"]["text"]
        assert len(descriptor["fullDescription"]["text"]) <= 1024
        assert descriptor["help"]["text"]
        assert descriptor["helpUri"] == rule.url()
        assert descriptor["defaultConfiguration"] == {"level": rule.severity.value}
        properties = descriptor["properties"]
        assert set(properties) == {"tags", "precision", "problem.severity"}
        assert "pytorch" in properties["tags"]
        assert len(properties["tags"]) <= 10
        assert len(set(properties["tags"])) == len(properties["tags"])
        assert properties["precision"] == rule.precision
        assert properties["problem.severity"] == expected_severity[rule.severity.value]


def test_problem_severity_of_a_note_rule_is_recommendation():
    assert RULES["DL001"].severity is Severity.NOTE
    run = render_log(report(rules=["DL001"]))
    descriptor = run["tool"]["driver"]["rules"][0]
    assert descriptor["properties"]["problem.severity"] == "recommendation"
    assert descriptor["defaultConfiguration"]["level"] == "note"


def test_tags_are_capped_at_ten_and_keep_pytorch(monkeypatch):
    many = (*(f"tag-{i}" for i in range(15)), "pytorch", "tag-0")
    monkeypatch.setattr(RULES["DL203"], "tags", many)
    tags = render_log(report(rules=["DL203"]))["tool"]["driver"]["rules"][0]["properties"]["tags"]
    assert len(tags) == 10
    assert tags == [f"tag-{i}" for i in range(9)] + ["pytorch"]


DOC_PAGE = """# DL203 object-collective-in-compiled-region

| Severity | Default | Fix |
|---|---|---|
| error | on | none |

## What it does

Flags **object collectives** such as `all_gather_object` inside a
[compiled](https://pytorch.org) region. {padding}

## Why is this bad?

It crashes.
"""


@pytest.mark.parametrize("padding_words", [0, 400])
def test_docs_page_gives_descriptions_and_help(monkeypatch, padding_words):
    page = DOC_PAGE.format(padding="Another sentence here. " * (padding_words // 3))
    monkeypatch.setattr(sarif, "rule_doc", lambda code: parse_doc(page))
    descriptor = render_log(report(rules=["DL203"]))["tool"]["driver"]["rules"][0]
    full = descriptor["fullDescription"]["text"]
    assert full.startswith(
        "Flags object collectives such as all_gather_object inside a compiled "
        "(https://pytorch.org) region."
    )
    assert len(full) <= 1024
    assert full.endswith((".", "…"))
    assert descriptor["help"]["markdown"] == page
    assert "`" not in descriptor["help"]["text"] and "**" not in descriptor["help"]["text"]
    assert "It crashes." in descriptor["help"]["text"]
    assert descriptor["shortDescription"]["text"] == RULES["DL203"].summary


def test_without_docs_page_the_summary_is_used(monkeypatch):
    monkeypatch.setattr(sarif, "rule_doc", lambda code: None)
    descriptor = render_log(report(rules=["DL203"]))["tool"]["driver"]["rules"][0]
    summary = RULES["DL203"].summary
    assert descriptor["fullDescription"] == {"text": summary}
    assert descriptor["help"] == {"text": summary}


def test_unwrap_joins_soft_line_breaks_only():
    text = "one\ntwo  \nthree\n\nnext paragraph\n- item\n  continued\n1. step\n"
    assert sarif.unwrap(text) == "one two three\n\nnext paragraph\n- item continued\n1. step"


def test_truncate_cuts_at_a_sentence_then_a_word():
    assert sarif.truncate("  short.  ") == "short."
    sentences = "This is one sentence. " * 100
    cut = sarif.truncate(sentences)
    assert len(cut) <= 1024 and cut.endswith("sentence.")
    words = "word " * 400
    cut = sarif.truncate(words)
    assert len(cut) <= 1024 and cut.endswith("word…")
    assert len(sarif.truncate("x" * 2000)) <= 1024


# -- results ----------------------------------------------------------------------------------


def test_result_location_uses_utf16_columns():
    line = LINES[4]
    start0 = line.index("dist.")
    end0 = line.index("(out")
    where = span(5, start0, end0)
    # the emoji before the call is one code point but two UTF-16 code units
    assert where.start.column_utf16 == where.start.column + 1
    result = render_log(report([finding(where=where)]))["results"][0]
    assert result["locations"] == [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
                "region": {
                    "startLine": 5,
                    "startColumn": start0 + 2,
                    "endLine": 5,
                    "endColumn": end0 + 2,
                },
            }
        }
    ]
    text = line.encode("utf-16-le")
    region = result["locations"][0]["physicalLocation"]["region"]
    selected = text[(region["startColumn"] - 1) * 2 : (region["endColumn"] - 1) * 2]
    assert selected.decode("utf-16-le") == "dist.all_gather_object"


def test_result_level_is_explicit_even_when_it_is_warning():
    findings = [
        finding(severity=Severity.WARNING),
        finding(severity=Severity.NOTE, where=span(6, 4, 10)),
        finding(where=span(4, 0, 3)),
    ]
    run = render_log(report(findings))
    assert [r["level"] for r in run["results"]] == ["warning", "note", "error"]
    assert run["tool"]["driver"]["rules"][1]["defaultConfiguration"] == {"level": "error"}


def test_rule_index_matches_driver_rules():
    findings = [
        finding("DL203"),
        finding("DL001", where=span(1, 0, 6), message="Unused suppression."),
        finding("DL000", where=span(2, 0, 0), message="cannot parse"),
    ]
    run = render_log(report(findings, rules=["DL000", "DL001", "DL203"]))
    ids = rule_ids(run)
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
    assert [r["ruleIndex"] for r in run["results"]] == [2, 1, 0]


def test_a_finding_of_an_unlisted_rule_adds_its_rule():
    run = render_log(report([finding("DL203")], rules=["DL000"]))
    assert rule_ids(run) == ["DL000", "DL203"]
    assert run["results"][0]["ruleIndex"] == 1


def test_related_locations_are_numbered_and_linked_from_the_message():
    related = (
        Location("train.py", span(3, 0, 14), "compiled here"),
        Location("other.py", span(1, 0, 1, ["x"])),
    )
    message = "`dist.all_gather_object` inside a compiled region crashes. Move it out."
    result = render_log(report([finding(message=message, related=related)]))["results"][0]
    assert result["message"]["text"] == (f"{message} ([compiled here](1), [related location](2))")
    assert [loc["id"] for loc in result["relatedLocations"]] == [1, 2]
    first, second = result["relatedLocations"]
    assert first["message"] == {"text": "compiled here"}
    assert first["physicalLocation"]["region"] == {
        "startLine": 3,
        "startColumn": 1,
        "endLine": 3,
        "endColumn": 15,
    }
    assert "message" not in second
    assert second["physicalLocation"]["artifactLocation"]["uri"] == "other.py"


def test_brackets_that_would_read_as_a_link_are_escaped():
    message = "Use x[0](1) instead."
    result = render_log(report([finding(message=message)]))["results"][0]
    assert result["message"]["text"] == "Use x\\[0\\](1) instead."
    plain = render_log(report([finding(message="Index x[0] here.")]))["results"][0]
    assert plain["message"]["text"] == "Index x[0] here."


def test_primary_location_line_hash_matches_line_hashes():
    findings = [finding(), finding(where=span(4, 0, 3)), finding(path="gone.py")]
    results = render_log(report(findings))["results"]
    hashes = line_hashes(SOURCE)
    assert results[0]["partialFingerprints"] == {"primaryLocationLineHash": hashes[5]}
    assert results[1]["partialFingerprints"] == {"primaryLocationLineHash": hashes[4]}
    assert "partialFingerprints" not in results[2]  # source unreadable: the Action fills it in


def test_fix_is_a_replacement_in_utf16_columns():
    line = LINES[4]
    start0 = line.index("dist.")
    fix = Fix(
        title="Gather tensors instead",
        edits=(
            Edit(span(5, start0, start0 + len("dist.all_gather_object")), "dist.all_gather"),
            Edit(span(6, 4, 4), ""),
        ),
        applicability=Applicability.UNSAFE,
    )
    result = render_log(report([finding(fix=fix)]))["results"][0]
    assert result["fixes"] == [
        {
            "description": {"text": "Gather tensors instead"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {
                            "deletedRegion": {
                                "startLine": 5,
                                "startColumn": start0 + 2,
                                "endLine": 5,
                                "endColumn": start0 + 2 + len("dist.all_gather_object"),
                            },
                            "insertedContent": {"text": "dist.all_gather"},
                        },
                        {
                            "deletedRegion": {
                                "startLine": 6,
                                "startColumn": 5,
                                "endLine": 6,
                                "endColumn": 5,
                            },
                            "insertedContent": {"text": ""},
                        },
                    ],
                }
            ],
            "properties": {"applicability": "unsafe"},
        }
    ]


def test_result_without_fix_or_related_has_neither():
    result = render_log(report([finding()]))["results"][0]
    assert "fixes" not in result and "relatedLocations" not in result


# -- paths ------------------------------------------------------------------------------------


def test_uri_is_percent_encoded_and_relative_to_srcroot():
    path = "src/my dir/a#b ü 😀.py"
    run = render_log(report([finding(path=path)], sources={}))
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {
        "uri": "src/my%20dir/a%23b%20%C3%BC%20%F0%9F%98%80.py",
        "uriBaseId": "%SRCROOT%",
    }
    assert unquote(artifact["uri"]) == path


def test_display_paths_are_rebased_from_cwd_to_root():
    findings = [finding(path="pkg/a.py"), finding(path="../top.py")]
    run = render_log(report(findings, cwd=ROOT / "sub", sources={}))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert uris == [
        {"uri": "sub/pkg/a.py", "uriBaseId": "%SRCROOT%"},
        {"uri": "top.py", "uriBaseId": "%SRCROOT%"},
    ]


def test_file_outside_root_gets_an_absolute_file_uri():
    findings = [finding(path="/opt/other repo/x.py"), finding(path="../../elsewhere.py")]
    run = render_log(report(findings, sources={}))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert uris == [
        {"uri": "file:///opt/other%20repo/x.py"},
        {"uri": "file:///home/elsewhere.py"},
    ]


# -- invocation -------------------------------------------------------------------------------


def test_tool_errors_make_the_run_unsuccessful():
    errors = [
        ToolError("train.py", "DL203 crashed: KeyError 'x'", rule="DL203"),
        ToolError("my file.py", "could not read the file"),
    ]
    run = render_log(report([finding()], errors=errors))
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    first, second = invocation["toolExecutionNotifications"]
    assert first == {
        "message": {"text": "DL203 crashed: KeyError 'x'"},
        "level": "error",
        "associatedRule": {"id": "DL203", "index": 1},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
                }
            }
        ],
    }
    assert second["level"] == "error"
    assert "associatedRule" not in second
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "my%20file.py"
    assert len(run["results"]) == 1


def test_unparsable_file_is_a_result_and_a_notification():
    lines = ["def f(:"]
    dl000 = finding("DL000", path="broken.py", where=span(1, 6, 6, lines), message="invalid syntax")
    run = render_log(report([dl000], sources={"broken.py": "def f(:\n"}))
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is True  # not a failure of distlint itself
    (notification,) = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error"
    assert notification["message"] == {"text": "file was not analysed: invalid syntax"}
    location = notification["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "broken.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 1, "startColumn": 7, "endLine": 1, "endColumn": 7}
    (result,) = run["results"]
    assert (result["ruleId"], result["ruleIndex"], result["level"]) == ("DL000", 0, "error")


def test_notices_are_configuration_notifications():
    run = render_log(report(notices=["missing.py: no such file or directory"]))
    assert run["invocations"][0]["toolConfigurationNotifications"] == [
        {"message": {"text": "missing.py: no such file or directory"}, "level": "warning"}
    ]


# -- the serializer ---------------------------------------------------------------------------


def test_serializer_drops_sentinels_but_keeps_explicit_levels():
    result = om.Result(message=om.Message(text="m"), level="warning", rule_id="DL203")
    assert sarif.to_json_dict(result) == {
        "ruleId": "DL203",
        "level": "warning",
        "message": {"text": "m"},
    }
    config = om.ReportingConfiguration(level="warning")
    assert sarif.to_json_dict(config) == {"level": "warning"}
    assert sarif.to_json_dict(om.Result(message=om.Message(text="m"), rule_index=0)) == {
        "ruleIndex": 0,
        "level": "warning",
        "message": {"text": "m"},
    }
    assert sarif.to_json_dict({"problem.severity": "error", "tags": ("a",)}) == {
        "problem.severity": "error",
        "tags": ["a"],
    }


# -- the validation helper itself -------------------------------------------------------------


def _valid_log() -> dict:
    return json.loads(sarif.render_sarif(report([finding()])))


@pytest.mark.parametrize(
    ("mutate", "complaint"),
    [
        (lambda run: run["tool"]["driver"].update(informationUri="not a uri at all"), "'uri'"),
        (lambda run: run["results"][0].update(level="fatal"), "fatal"),
        (
            lambda run: run["results"][0]["locations"][0]["physicalLocation"]["region"].update(
                startLine=0
            ),
            "minimum",
        ),
        (lambda run: run["results"][0].update(ruleIndex=0), "ruleIndex 0"),
        (lambda run: run.pop("results"), "results is missing"),
        (
            lambda run: run["tool"]["driver"]["rules"][0]["properties"].update(
                {"problem.severity": "note"}
            ),
            "problem.severity",
        ),
    ],
)
def test_validation_helper_rejects_bad_logs(mutate, complaint):
    log = _valid_log()
    mutate(log["runs"][0])
    with pytest.raises(AssertionError, match="invalid SARIF") as excinfo:
        assert_valid_sarif(json.dumps(log))
    assert complaint in str(excinfo.value)


def test_validation_helper_fails_loudly_without_schemas(monkeypatch):
    from tests import sarif_validation

    monkeypatch.setattr(sarif_validation, "SCHEMA_DIR", Path("/nonexistent/schemas"))
    sarif_validation._validators.cache_clear()
    try:
        with pytest.raises(AssertionError, match="vendored in tests/schemas/"):
            assert_valid_sarif(json.dumps(_valid_log()))
    finally:
        monkeypatch.undo()
        sarif_validation._validators.cache_clear()
    assert_valid_sarif(json.dumps(copy.deepcopy(_valid_log())))
