"""Validate SARIF the way GitHub code scanning will, for every test that produces SARIF.

``assert_valid_sarif(text)`` checks the text against both copies of the SARIF 2.1.0 schema
vendored in ``tests/schemas`` (provenance and licences in ``tests/schemas/README.md``):

* ``sarif-schema-2.1.0.json``: the normative OASIS errata01 schema (draft-04);
* ``sarif-schema-2.1.0.github.json``: the copy codeql-action's ``upload-sarif`` validates with
  (draft 2020-12; it does not enforce the region ``anyOf``, so it is slightly laxer),

with ``format`` checking on (``uri``, ``uri-reference``, ``date-time``; needs
``jsonschema[format-nongpl]``), and then a few of GitHub's own requirements the schemas do not
express (one run, ``ruleIndex`` consistent with ``driver.rules``, tag and description limits).

Usage: ``from tests.sarif_validation import assert_valid_sarif``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema
import jsonschema.validators

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SCHEMA_FILES = ("sarif-schema-2.1.0.json", "sarif-schema-2.1.0.github.json")
MAX_DESCRIPTION = 1024
MAX_SHOWN_TAGS = 10
GITHUB_LEVELS = {"error", "warning", "note", "none"}
GITHUB_PROBLEM_SEVERITIES = {"error", "warning", "recommendation"}


@cache
def _validators() -> tuple[jsonschema.protocols.Validator, ...]:
    validators = []
    for name in SCHEMA_FILES:
        path = SCHEMA_DIR / name
        if not path.is_file():
            raise AssertionError(
                f"SARIF schema {path} not found: the tests validate SARIF against the schemas "
                "vendored in tests/schemas/ (see tests/schemas/README.md)"
            )
        schema = json.loads(path.read_text(encoding="utf-8"))
        cls = jsonschema.validators.validator_for(schema)
        if name == SCHEMA_FILES[0]:
            # The codeql-action copy fails its own metaschema: its region ``anyOf`` sits inside
            # ``properties`` (a list where a schema belongs), which is also why it is not enforced.
            cls.check_schema(schema)
        checker = cls.FORMAT_CHECKER
        # Negative control: without jsonschema[format-nongpl], "uri" is silently not checked.
        if "uri" not in checker.checkers or checker.conforms("not a uri at all", "uri"):
            raise AssertionError(
                f"{cls.__name__}.FORMAT_CHECKER does not check 'uri'; "
                "install jsonschema[format-nongpl]"
            )
        validators.append(cls(schema, format_checker=checker))
    return tuple(validators)


def schema_errors(log: object) -> list[str]:
    """Every schema violation of ``log`` (a parsed SARIF log), under both schemas."""
    errors = []
    for validator in _validators():
        for error in validator.iter_errors(log):
            where = "/".join(str(part) for part in error.absolute_path)
            errors.append(f"[{type(validator).__name__}] /{where}: {error.message}")
    return errors


def github_errors(log: dict) -> list[str]:
    """Requirements of GitHub code scanning that the schemas leave out."""
    errors = []
    runs = log.get("runs", [])
    if len(runs) != 1:
        errors.append(f"expected exactly one run, got {len(runs)}")
    for r, run in enumerate(runs):
        rules = run["tool"]["driver"].get("rules")
        if rules is None:
            errors.append(f"run {r}: tool.driver.rules is missing")
            rules = []
        if "results" not in run:
            errors.append(f"run {r}: results is missing (a clean run needs results: [])")
        for i, rule in enumerate(rules):
            where = f"run {r} rule {i} ({rule.get('id')})"
            for key in ("shortDescription", "fullDescription", "help"):
                text = rule.get(key, {}).get("text", "")
                if not text.strip():
                    errors.append(f"{where}: {key}.text is missing or empty")
                if key != "help" and len(text) > MAX_DESCRIPTION:
                    errors.append(f"{where}: {key}.text longer than {MAX_DESCRIPTION}")
            properties = rule.get("properties", {})
            if len(properties.get("tags", [])) > MAX_SHOWN_TAGS:
                errors.append(f"{where}: more than {MAX_SHOWN_TAGS} tags")
            severity = properties.get("problem.severity")
            if severity is not None and severity not in GITHUB_PROBLEM_SEVERITIES:
                errors.append(f"{where}: problem.severity {severity!r} is not GitHub's")
            if "security-severity" in properties:
                errors.append(f"{where}: security-severity makes it a security alert")
        for j, result in enumerate(run.get("results", [])):
            where = f"run {r} result {j}"
            index = result.get("ruleIndex")
            if index is not None and (
                index >= len(rules) or rules[index]["id"] != result.get("ruleId")
            ):
                errors.append(f"{where}: ruleIndex {index} does not name {result.get('ruleId')}")
            if not result.get("message", {}).get("text", "").strip():
                errors.append(f"{where}: message.text is empty")
            if not result.get("locations"):
                errors.append(f"{where}: no locations (GitHub cannot display it)")
    return errors


def assert_valid_sarif(text: str) -> dict:
    """Parse ``text``, fail with every problem found, and return the parsed log."""
    log = json.loads(text)
    problems = schema_errors(log) + github_errors(log)
    assert not problems, "invalid SARIF:\n" + "\n".join(problems)
    return log
