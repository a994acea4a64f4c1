"""SARIF 2.1.0 output, shaped for GitHub code scanning (see docs/github-code-scanning.md).

The log is built from ``sarif_om`` classes and serialized by :func:`to_json_dict` rather than
``jschema_to_python``: that one drops every value equal to its attrs default, including an
explicit ``level: "warning"``, which then silently falls back to the rule's default level.

Paths become URIs relative to ``%SRCROOT%`` (``report.root``); a file outside the root gets an
absolute ``file://`` URI. Columns are UTF-16 code units (``run.columnKind``). Nothing depends on
the machine or the clock, so rendering the same report twice gives the same text.

GitHub rejects a whole upload that exceeds one of its limits (docs/github-code-scanning.md,
*Limits*), so the log stays within them and says what it left out: at most 25,000 results per
run (the most severe are kept, and a warning notification counts the rest), 25,000 rules per run
(rules without results go first), one location and at most 10 related locations per result (the
message and ``properties.omittedRelatedLocations`` count the others), and 10 tags per rule.

With ``--confirm`` each result it concerns carries ``properties.confirmation`` and
``properties.gbId``, and the confirm run is the run's second ``invocation``.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from functools import cache
from pathlib import Path, PurePosixPath
from urllib.parse import quote

import attr
import sarif_om as om

from distlint import meta
from distlint.findings import Finding, Location, Severity, Span, ToolError
from distlint.output.docs import markdown_to_text, rule_doc
from distlint.output.fingerprint import line_hashes
from distlint.output.headline import headline
from distlint.output.report import Report
from distlint.rules.base import Rule
from distlint.rules.registry import get_rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
MAX_DESCRIPTION = 1024  # GitHub's limit for shortDescription / fullDescription
MAX_TAGS = 10  # GitHub keeps 20 tags per rule but shows only 10
MAX_RESULTS = 25_000  # per run; GitHub rejects a run with more
MAX_RULES = 25_000  # per run; GitHub rejects a run with more
MAX_RELATED = 10  # per result; GitHub's limit is 1,000 locations, but a message links only a few
PROBLEM_SEVERITY = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.NOTE: "recommendation",
}
KEEP_DEFAULT = frozenset({"level"})  # attrs defaults that are meaningful when set explicitly
# sarif-om orders fields required-first, then alphabetically; these keys go first, for readers.
FIRST_KEYS = (
    *("$schema", "version", "id", "name", "ruleId", "ruleIndex", "level", "message"),
    *("startLine", "startColumn", "endLine", "endColumn"),
)


def render_sarif(report: Report, category: str | None = None) -> str:
    """The report as a SARIF 2.1.0 log with one run (``category`` names the upload)."""
    log = _SarifBuilder(report).log(category)
    return json.dumps(to_json_dict(log), indent=2, sort_keys=False) + "\n"


def to_json_dict(obj: object) -> object:
    """sarif-om objects to JSON values: schema names, no None, no sarif-om sentinel defaults."""
    fields = _json_fields(type(obj))  # type: ignore[arg-type]  # classes hash: mypy#11470
    if fields is not None:
        out: dict[str, object] = {}
        for name, key, default in fields:
            value = getattr(obj, name)
            if value is None or (default is not attr.NOTHING and value == default):
                continue
            out[key] = to_json_dict(value)
        return out
    if isinstance(obj, dict):
        return {key: to_json_dict(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json_dict(value) for value in obj]
    return obj


@cache
def _json_fields(cls: type) -> tuple[tuple[str, str, object], ...] | None:
    """(attribute, JSON key, default to leave out) of a sarif-om class, in output key order.

    ``None`` for anything that is not an attrs class. Computed once per class: a log with
    25,000 results serializes some 400,000 objects.
    """
    if not attr.has(cls):
        return None
    fields = []
    for field in attr.fields(cls):
        default = attr.NOTHING if field.name in KEEP_DEFAULT else field.default
        if isinstance(default, attr.Factory):  # type: ignore[arg-type]
            default = default.factory()  # type: ignore[union-attr]
        fields.append((field.name, field.metadata.get("schema_property_name", field.name), default))
    return tuple(sorted(fields, key=_key_rank))  # stable: the others keep sarif-om's order


def _key_rank(field: tuple[str, str, object]) -> int:
    key = field[1]
    return FIRST_KEYS.index(key) if key in FIRST_KEYS else len(FIRST_KEYS)


class _SarifBuilder:
    def __init__(self, report: Report) -> None:
        self.report = report
        self.root = Path(os.path.normpath(report.root))
        self.cwd = Path(os.path.normpath(report.cwd))
        self.findings, self.dropped = most_severe(report.findings, MAX_RESULTS)
        self.rules: list[type[Rule]] = list(report.rules)
        listed = {rule.code for rule in self.rules}
        for finding in self.findings:  # a result's rule must be in driver.rules
            rule = get_rule(finding.code)
            if finding.code not in listed and rule is not None:
                self.rules.append(rule)
                listed.add(finding.code)
        self.rules, self.dropped_rules = cap_rules(
            self.rules, {finding.code for finding in self.findings}, MAX_RULES
        )
        self.rule_index = {rule.code: index for index, rule in enumerate(self.rules)}
        self._hashes: dict[str, dict[int, str] | None] = {}
        self._artifacts: dict[str, om.ArtifactLocation] = {}

    def log(self, category: str | None) -> om.SarifLog:
        run = om.Run(
            tool=om.Tool(driver=self.driver()),
            automation_details=om.RunAutomationDetails(id=f"{category or meta.TOOL_NAME}/"),
            column_kind="utf16CodeUnits",
            original_uri_base_ids={
                SRCROOT: om.ArtifactLocation(description=om.Message(text="The repository root"))
            },
            invocations=self.invocations(),
            results=[self.result(finding) for finding in self.findings],
        )
        return om.SarifLog(schema_uri=SCHEMA_URI, version="2.1.0", runs=[run])

    # -- tool ---------------------------------------------------------------------------------

    def driver(self) -> om.ToolComponent:
        return om.ToolComponent(
            name=meta.TOOL_NAME,
            version=meta.VERSION,
            semantic_version=meta.VERSION,
            information_uri=meta.HOMEPAGE,
            rules=[self.descriptor(rule) for rule in self.rules],
        )

    def descriptor(self, rule: type[Rule]) -> om.ReportingDescriptor:
        doc = rule_doc(rule.code)
        description = unwrap(doc.description if doc else "") or rule.summary
        help_text = markdown_to_text(doc.markdown).strip() if doc else rule.summary
        tags = [tag for tag in dict.fromkeys(rule.tags) if tag != "pytorch"][: MAX_TAGS - 1]
        return om.ReportingDescriptor(
            id=rule.code,
            name=rule.name,
            short_description=om.MultiformatMessageString(text=truncate(rule.summary)),
            full_description=om.MultiformatMessageString(text=truncate(description)),
            help=om.MultiformatMessageString(
                text=help_text, markdown=doc.markdown if doc else None
            ),
            help_uri=rule.url(),
            default_configuration=om.ReportingConfiguration(level=rule.severity.value),
            properties={
                "tags": [*tags, "pytorch"],
                "precision": rule.precision,
                "problem.severity": PROBLEM_SEVERITY[rule.severity],
            },
        )

    # -- results ------------------------------------------------------------------------------

    def result(self, finding: Finding) -> om.Result:
        result = om.Result(
            rule_id=finding.code,
            rule_index=self.rule_index.get(finding.code, -1),
            level=finding.severity.value,
            message=_message(finding),
            locations=[self.location(finding.path, finding.span)],
        )
        if finding.related:
            result.related_locations = [
                self.related(index, related)
                for index, related in enumerate(finding.related[:MAX_RELATED], start=1)
            ]
            omitted = len(finding.related) - MAX_RELATED
            if omitted > 0:
                result.properties = {"omittedRelatedLocations": omitted}
        if finding.properties:
            from distlint.confirm.report import json_properties

            result.properties = {**(result.properties or {}), **json_properties(finding)}
        if self.report.baselined is not None:  # a baseline left out the findings it holds
            result.baseline_state = "new"
        line_hash = self.line_hash(finding.path, finding.span.start.line)
        if line_hash is not None:
            result.partial_fingerprints = {"primaryLocationLineHash": line_hash}
        if finding.fix is not None:
            artifact = self.artifact(finding.path)
            result.fixes = [
                om.Fix(
                    description=om.Message(text=finding.fix.title),
                    artifact_changes=[
                        om.ArtifactChange(
                            artifact_location=artifact,
                            replacements=[
                                om.Replacement(
                                    deleted_region=region(edit.span),
                                    inserted_content=om.ArtifactContent(text=edit.content),
                                )
                                for edit in finding.fix.edits
                            ],
                        )
                    ],
                    properties={"applicability": finding.fix.applicability.value},
                )
            ]
        return result

    def related(self, index: int, related: Location) -> om.Location:
        location = self.location(related.path, related.span)
        location.id = index
        if related.message:
            location.message = om.Message(text=related.message)
        return location

    def location(self, path: str, span: Span | None = None) -> om.Location:
        return om.Location(
            physical_location=om.PhysicalLocation(
                artifact_location=self.artifact(path),
                region=region(span) if span is not None else None,
            )
        )

    def artifact(self, path: str) -> om.ArtifactLocation:
        """Repo-relative, percent-encoded posix URI under %SRCROOT%; else an absolute file URI."""
        if path not in self._artifacts:
            self._artifacts[path] = self._artifact(path)
        return self._artifacts[path]

    def _artifact(self, path: str) -> om.ArtifactLocation:
        # the file's real name: a display path escapes bytes that are not UTF-8 ("bad\\xff.py"),
        # the URI percent-encodes them ("bad%FF.py", RFC 3986)
        absolute = Path(os.path.normpath(self.report.files.get(path) or self.cwd / path))
        for base, target in ((self.root, absolute), (self.root.resolve(), absolute.resolve())):
            try:
                relative = target.relative_to(base).as_posix()
            except ValueError:
                continue
            return om.ArtifactLocation(uri=quote(os.fsencode(relative)), uri_base_id=SRCROOT)
        return om.ArtifactLocation(uri=PurePosixPath(absolute.as_posix()).as_uri())

    def line_hash(self, path: str, line: int) -> str | None:
        if path not in self._hashes:
            text = self.report.read_source(path)
            self._hashes[path] = line_hashes(text) if text is not None else None
        hashes = self._hashes[path]
        return hashes.get(line) if hashes is not None else None

    # -- invocation ---------------------------------------------------------------------------

    def invocations(self) -> list[om.Invocation]:
        invocations = [self.invocation()]
        if self.report.confirm is not None:
            from distlint.confirm.report import sarif_invocation

            invocations.append(sarif_invocation(self.report.confirm))
        return invocations

    def invocation(self) -> om.Invocation:
        notifications = [self.error_notification(error) for error in self.report.errors]
        notifications += [
            om.Notification(
                level="error",
                message=om.Message(text=f"file was not analysed: {finding.message}"),
                locations=[self.location(finding.path, finding.span)],
            )
            for finding in self.report.findings
            if finding.code == "DL000"
        ]
        notifications += self.limit_notifications()
        configuration = [
            om.Notification(level="warning", message=om.Message(text=notice))
            for notice in self.report.notices
        ]
        return om.Invocation(
            execution_successful=not self.report.errors,
            tool_execution_notifications=notifications or None,
            tool_configuration_notifications=configuration or None,
        )

    def limit_notifications(self) -> list[om.Notification]:
        """Warnings that GitHub's limits made the log leave something out."""
        notes = []
        if self.dropped:
            total = len(self.findings) + len(self.dropped)
            tally = Counter(finding.severity for finding in self.dropped)
            left_out = ", ".join(
                _plural(tally[severity], severity.value) for severity in Severity if tally[severity]
            )
            notes.append(
                f"Only the {len(self.findings):,} most severe of {total:,} results are included "
                f"({left_out} left out): GitHub code scanning rejects a run with more than "
                f"{MAX_RESULTS:,} results. Run distlint with --format text or json to see every "
                "finding."
            )
        if self.dropped_rules:
            total = len(self.rules) + self.dropped_rules
            notes.append(
                f"tool.driver.rules lists {len(self.rules):,} of the {total:,} enabled rules "
                f"(every rule with results, then the others in code order): GitHub code scanning "
                f"rejects a run with more than {MAX_RULES:,} rules."
            )
        return [om.Notification(level="warning", message=om.Message(text=note)) for note in notes]

    def error_notification(self, error: ToolError) -> om.Notification:
        notification = om.Notification(
            level="error",
            message=om.Message(text=error.message),
            locations=[self.location(error.path)],
        )
        if error.rule:
            notification.associated_rule = om.ReportingDescriptorReference(
                id=error.rule, index=self.rule_index.get(error.rule, -1)
            )
        return notification


def most_severe(findings: list[Finding], limit: int) -> tuple[list[Finding], list[Finding]]:
    """The ``limit`` most severe findings and the rest, each in the report's order.

    Errors go before warnings before notes; within a severity the report's (deterministic)
    order decides, so the same report always keeps the same findings.
    """
    if len(findings) <= limit:
        return list(findings), []
    ranked = sorted(range(len(findings)), key=lambda i: findings[i].severity.rank)  # stable
    kept = set(ranked[:limit])
    return (
        [finding for i, finding in enumerate(findings) if i in kept],
        [finding for i, finding in enumerate(findings) if i not in kept],
    )


def cap_rules(rules: list[type[Rule]], used: set[str], limit: int) -> tuple[list[type[Rule]], int]:
    """At most ``limit`` of ``rules``, in order: those in ``used`` first, then others that fit."""
    if len(rules) <= limit:
        return rules, 0
    room = max(limit - sum(rule.code in used for rule in rules), 0)
    kept = []
    for rule in rules:
        if rule.code in used:
            kept.append(rule)
        elif room:
            kept.append(rule)
            room -= 1
    return kept, len(rules) - len(kept)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def region(span: Span) -> om.Region:
    """A SARIF region in UTF-16 columns; ``endColumn`` is exclusive, as in :class:`Span`."""
    return om.Region(
        start_line=span.start.line,
        start_column=span.start.column_utf16,
        end_line=span.end.line,
        end_column=span.end.column_utf16,
    )


_BRACKET = re.compile(r"([\[\]])")


def _escape_brackets(text: str) -> str:
    return _BRACKET.sub(r"\\\1", text)


def _message(finding: Finding) -> om.Message:
    """``text``: the whole message (what GitHub shows); ``markdown``: the one-line headline in
    bold, then the whole message, for viewers that render Markdown."""
    text = _message_text(finding)
    return om.Message(text=text, markdown=f"**{headline(finding.message)}**\n\n{text}")


def _message_text(finding: Finding) -> str:
    """The message, with related locations linked the GitHub way: ``[label](id)``."""
    text = finding.message
    if "](" in text:  # would read as an embedded link (SARIF §3.11.6): escape the brackets
        text = _escape_brackets(text)
    if not finding.related:
        return text
    links = ", ".join(
        f"[{_escape_brackets(related.message) or 'related location'}]({index})"
        for index, related in enumerate(finding.related[:MAX_RELATED], start=1)
    )
    omitted = len(finding.related) - MAX_RELATED
    if omitted > 0:
        links += f", and {_plural(omitted, 'more related location')} not listed"
    return f"{text} ({links})"


_SOFT_BREAK = re.compile(r"(?<=\S)[ \t]*\n(?![ \t]*(?:\n|[-*+] |\d+\. ))[ \t]*")


def unwrap(text: str) -> str:
    """Join hard-wrapped lines of Markdown prose; paragraph breaks and list items stay."""
    return _SOFT_BREAK.sub(" ", text.strip())


def truncate(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """``text`` cut to ``limit`` characters at a sentence end, else a word, marked with '…'."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    sentence_end = head.rfind(". ")
    if sentence_end >= limit // 2:
        return head[: sentence_end + 1]
    return head.rsplit(None, 1)[0].rstrip(" ,;:") + "…"
