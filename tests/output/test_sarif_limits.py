"""GitHub code scanning's SARIF limits (docs/github-code-scanning.md, *Limits*), past each one.

GitHub rejects a whole upload that exceeds a limit, so ``render_sarif`` cuts the log down and
says what it cut: 25,000 results per run (the most severe kept, a warning notification counts
the rest), 25,000 rules per run, one location and 10 related locations per result, 10 tags per
rule. Every log rendered here goes through ``assert_valid_sarif``; for the 25,000-result logs
the fast test validates a sample of the results (see :func:`assert_valid_sample`) and a slow
test validates all of them; the 25,000-rule log is validated on a sample of its rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

import distlint.output.sarif as sarif
from distlint.findings import Finding, Location, Severity, Span, make_position
from distlint.output.report import Report
from distlint.rules.registry import all_rules
from tests.sarif_validation import assert_valid_sarif

ROOT = Path("/home/ci/checkout")
RULES = all_rules()
SOURCE = "import torch\ng = torch.compile(f, backend='nvfuser')\n"
LINES = SOURCE.splitlines()
SPAN = Span(make_position(LINES, 2, 30), make_position(LINES, 2, 39))
OVER = sarif.MAX_RESULTS + 10


def finding(
    index: int,
    severity: Severity = Severity.ERROR,
    related: tuple[Location, ...] = (),
    path: str = "train.py",
) -> Finding:
    """A DL502 finding told apart by its message; the frozen span is shared, so it is cheap."""
    return Finding(
        code="DL502",
        name=RULES["DL502"].name,
        severity=severity,
        message=f"finding {index}",
        path=path,
        span=SPAN,
        related=related,
    )


def report(findings: list[Finding], rules: list[object] | None = None) -> Report:
    return Report(
        findings=findings,
        errors=[],
        files_checked=1,
        rules=[RULES["DL000"], RULES["DL502"]] if rules is None else rules,  # type: ignore[list-item]
        root=ROOT,
        cwd=ROOT,
        read_source={"train.py": SOURCE}.get,
    )


def render_run(rep: Report) -> dict:
    """Render, validate in full, and return the only run."""
    return assert_valid_sarif(sarif.render_sarif(rep))["runs"][0]


def assert_valid_sample(text: str) -> dict:
    """``assert_valid_sarif`` on the log with its results cut to a sample; returns the full log.

    Validating 25,000 results against both schemas takes about 45 s. Neither schema relates
    one result to another (and the GitHub checks look at each result alone), so the sample
    (the first and last result and the first of each level) stands for the rest;
    ``test_the_whole_log_past_the_result_limit_is_valid`` (slow) validates every one.
    """
    log = json.loads(text)
    results = log["runs"][0]["results"]
    firsts = {result["level"]: result for result in reversed(results)}
    sample = [results[0], *firsts.values(), results[-1]] if results else []
    assert_valid_sarif(json.dumps({**log, "runs": [{**log["runs"][0], "results": sample}]}))
    return log


def notifications(run: dict) -> list[dict]:
    return run["invocations"][0].get("toolExecutionNotifications", [])


def message_number(result: dict) -> int:
    return int(result["message"]["text"].split()[1])


# -- 25,000 results per run -------------------------------------------------------------------


def severity_of(index: int) -> Severity:
    """26 notes spread through the report, every 7th other finding a warning, the rest errors."""
    if index % 1000 == 0:
        return Severity.NOTE
    return Severity.WARNING if index % 7 == 0 else Severity.ERROR


@pytest.fixture(scope="module")
def over_limit() -> str:
    """The SARIF of 25,010 findings (26 of them notes), rendered once for the module."""
    return sarif.render_sarif(report([finding(i, severity_of(i)) for i in range(OVER)]))


def test_results_past_the_limit_keep_the_most_severe(over_limit):
    run = assert_valid_sample(over_limit)["runs"][0]
    results = run["results"]
    assert len(results) == sarif.MAX_RESULTS == 25_000
    kept = [message_number(result) for result in results]
    notes = [i for i in range(OVER) if severity_of(i) is Severity.NOTE]
    assert len(notes) == 26
    dropped = notes[-10:]  # within a severity the report's order decides
    assert kept == [i for i in range(OVER) if i not in dropped]  # and the order is the report's
    for result in results:
        assert result["level"] == severity_of(message_number(result)).value
        assert len(result["locations"]) == 1
    (notification,) = notifications(run)
    assert notification["level"] == "warning"
    text = notification["message"]["text"]
    assert text.startswith("Only the 25,000 most severe of 25,010 results are included")
    assert "(10 notes left out)" in text
    assert "GitHub code scanning rejects a run with more than 25,000 results" in text
    assert run["invocations"][0]["executionSuccessful"] is True


@pytest.mark.slow
def test_the_whole_log_past_the_result_limit_is_valid(over_limit):
    log = assert_valid_sarif(over_limit)
    assert len(log["runs"][0]["results"]) == 25_000


def test_at_the_result_limit_nothing_is_dropped(monkeypatch):
    monkeypatch.setattr(sarif, "MAX_RESULTS", 5)
    run = render_run(report([finding(i, Severity.NOTE) for i in range(5)]))
    assert [message_number(result) for result in run["results"]] == [0, 1, 2, 3, 4]
    assert notifications(run) == []
    assert run["invocations"] == [{"executionSuccessful": True}]


def test_dropped_results_are_counted_by_severity(monkeypatch):
    monkeypatch.setattr(sarif, "MAX_RESULTS", 3)
    severities = [
        Severity.NOTE,
        Severity.WARNING,
        Severity.ERROR,
        Severity.NOTE,
        Severity.ERROR,
        Severity.WARNING,
    ]
    run = render_run(report([finding(i, s) for i, s in enumerate(severities)]))
    # both errors, then the first warning; in the report's order
    assert [message_number(result) for result in run["results"]] == [1, 2, 4]
    (notification,) = notifications(run)
    assert notification["message"]["text"].startswith(
        "Only the 3 most severe of 6 results are included (1 warning, 2 notes left out): "
    )


def test_dl000_notifications_stay_beside_the_limit_warning(monkeypatch):
    monkeypatch.setattr(sarif, "MAX_RESULTS", 1)
    broken = Finding(
        code="DL000",
        name=RULES["DL000"].name,
        severity=Severity.ERROR,
        message="invalid syntax",
        path="broken.py",
        span=SPAN,
    )
    run = render_run(report([broken, finding(1, Severity.WARNING)]))
    assert [result["ruleId"] for result in run["results"]] == ["DL000"]
    levels = [(n["level"], n["message"]["text"][:21]) for n in notifications(run)]
    assert levels == [("error", "file was not analysed"), ("warning", "Only the 1 most sever")]


# -- related locations ------------------------------------------------------------------------


def related(count: int) -> tuple[Location, ...]:
    return tuple(Location("train.py", SPAN, f"site {n}") for n in range(1, count + 1))


def test_related_locations_are_capped_at_ten_and_the_rest_counted():
    (result,) = render_run(report([finding(0, related=related(15))]))["results"]
    assert len(result["locations"]) == 1
    assert [location["id"] for location in result["relatedLocations"]] == list(range(1, 11))
    assert [location["message"]["text"] for location in result["relatedLocations"]] == [
        f"site {n}" for n in range(1, 11)
    ]
    text = result["message"]["text"]
    assert re.findall(r"\]\((\d+)\)", text) == [str(n) for n in range(1, 11)]  # links to 1..10
    assert text.endswith("[site 10](10), and 5 more related locations not listed)")
    assert result["properties"] == {"omittedRelatedLocations": 5}


def test_exactly_ten_related_locations_are_all_kept():
    (result,) = render_run(report([finding(0, related=related(10))]))["results"]
    assert len(result["relatedLocations"]) == 10
    assert result["message"]["text"].endswith("[site 10](10))")
    assert "properties" not in result


def test_one_related_location_too_many_is_singular():
    (result,) = render_run(report([finding(0, related=related(11))]))["results"]
    assert len(result["relatedLocations"]) == 10
    assert result["message"]["text"].endswith(", and 1 more related location not listed)")
    assert result["properties"] == {"omittedRelatedLocations": 1}


# -- rules and tags ---------------------------------------------------------------------------


def fake_rule(index: int) -> SimpleNamespace:
    """Quacks like a Rule class as far as the SARIF reporter asks (no registry side effects)."""
    code = f"XX{index:05d}"
    return SimpleNamespace(
        code=code,
        name=f"fake-rule-{index}",
        severity=Severity.WARNING,
        summary=f"Fake rule {index}.",
        tags=("fake",),
        precision="high",
        url=lambda: f"https://example.com/rules/{code}",
    )


def test_rules_past_the_limit_keep_those_with_results(monkeypatch):
    monkeypatch.setattr(sarif, "MAX_RULES", 3)
    rules = [RULES["DL000"], RULES["DL001"], RULES["DL203"], RULES["DL502"]]
    run = render_run(report([finding(0)], rules=rules))
    ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert ids == ["DL000", "DL001", "DL502"]  # DL502 has a result; then code order
    assert run["results"][0]["ruleIndex"] == 2
    (notification,) = notifications(run)
    assert notification["level"] == "warning"
    assert notification["message"]["text"].startswith(
        "tool.driver.rules lists 3 of the 4 enabled rules"
    )


@pytest.mark.slow
def test_25010_rules_are_cut_to_25000(monkeypatch):
    monkeypatch.setattr(sarif, "rule_doc", lambda code: None)
    rules = [fake_rule(i) for i in range(25_010)]
    rules.append(RULES["DL502"])
    log = json.loads(sarif.render_sarif(report([finding(0)], rules=rules)))
    run = log["runs"][0]
    descriptors = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in descriptors]
    assert len(ids) == len(set(ids)) == sarif.MAX_RULES == 25_000
    assert ids[-1] == "DL502" and ids[:-1] == [f"XX{i:05d}" for i in range(24_999)]
    assert run["results"][0]["ruleIndex"] == 24_999
    (notification,) = notifications(run)
    assert "lists 25,000 of the 25,011 enabled rules" in notification["message"]["text"]
    # The schema's uniqueItems on driver.rules makes jsonschema compare every pair of the
    # 25,000 descriptors (it ran for more than ten minutes): uniqueness is checked above,
    # the shape of the descriptors on a sample here.
    run["tool"]["driver"]["rules"] = [*descriptors[:5], descriptors[-1]]
    run["results"][0]["ruleIndex"] = 5
    assert_valid_sarif(json.dumps(log))


def test_tags_past_githubs_maximum_are_cut_to_the_ten_it_shows(monkeypatch):
    monkeypatch.setattr(RULES["DL502"], "tags", tuple(f"tag-{i}" for i in range(25)))
    (rule,) = render_run(report([], rules=[RULES["DL502"]]))["tool"]["driver"]["rules"]
    assert rule["properties"]["tags"] == [f"tag-{i}" for i in range(9)] + ["pytorch"]
