"""What the reporters print for confirm mode (called by distlint/reporters/*).

* text: :func:`headline_tag` after the severity (``[confirmed]``, ``[not observed]``,
  ``[not reached]``) and :func:`summary_lines` at the end; :func:`notification_lines` (failed
  targets) go to stderr, once, from :mod:`distlint.confirm.cli`;
* JSON: :func:`json_properties` as the finding's ``properties`` object;
* SARIF: :func:`json_properties` merged into ``result.properties`` and
  :func:`sarif_invocation` as the run's second ``invocation``.
"""

from __future__ import annotations

from typing import Any

from distlint.confirm.match import CONFIRMED, NOT_OBSERVED, NOT_REACHED, ConfirmRun
from distlint.findings import Finding

_TAGS = {CONFIRMED: "confirmed", NOT_OBSERVED: "not observed", NOT_REACHED: "not reached"}


def confirmation(finding: Finding) -> str | None:
    return dict(finding.properties).get("confirmation")  # type: ignore[return-value]


def headline_tag(finding: Finding) -> str:
    """``" [confirmed]"`` etc. for a finding with a status, else ``""``."""
    status = confirmation(finding)
    return f" [{_TAGS[status]}]" if status in _TAGS else ""


def json_properties(finding: Finding) -> dict[str, Any]:
    """The finding's extra properties (``confirmation``, ``gbId``, ...), None values left out."""
    return {key: value for key, value in finding.properties if value is not None}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_lines(run: ConfirmRun) -> list[str]:
    """Short text summary, then one line per target that did not run to the end."""
    counts = run.counts
    head = (
        f"Confirm: {_plural(len(run.targets), 'target')}, "
        f"{_plural(run.roots_compiled, 'root')} compiled, {_plural(run.graphs, 'graph')}, "
        f"{_plural(run.breaks, 'break')}"
    )
    if run.compile_errors:
        head += f", {_plural(run.compile_errors, 'compile error')}"
    head += (
        f"; {counts.get(CONFIRMED, 0)} confirmed, {counts.get(NOT_OBSERVED, 0)} not observed, "
        f"{counts.get(NOT_REACHED, 0)} not reached"
    )
    if run.observed_only:
        head += f", {run.observed_only} observed only (DL901/DL902)"
    failed = len(run.notifications)
    if failed:  # each failure is printed once, on stderr (see distlint.confirm.cli)
        head += f"; {failed} of {_plural(len(run.targets), 'target')} did not run to the end"
    return [head + "."]


def notification_lines(run: ConfirmRun) -> list[str]:
    """One line per target that did not run to the end, and the run's own notes."""
    lines = [f"confirm: {note}" for note in run.notes]
    lines += [f"confirm target {t.name}: {t.status}: {t.message}" for t in run.notifications]
    return lines


def run_properties(run: ConfirmRun) -> dict[str, Any]:
    return {
        "targets": [
            {
                "name": t.name,
                "status": t.status,
                "seconds": t.seconds,
                "graphs": t.graphs,
                "breaks": t.breaks,
                "compileErrors": t.errors,
                **({"message": t.message} if t.message else {}),
            }
            for t in run.targets
        ],
        "rootsCompiled": run.roots_compiled,
        "graphs": run.graphs,
        "breaks": run.breaks,
        "compileErrors": run.compile_errors,
        "libraryBreaks": run.library_breaks,
        "confirmed": run.counts.get(CONFIRMED, 0),
        "notObserved": run.counts.get(NOT_OBSERVED, 0),
        "notReached": run.counts.get(NOT_REACHED, 0),
        "observedOnly": run.observed_only,
        **({"notes": list(run.notes)} if run.notes else {}),
    }


def sarif_invocation(run: ConfirmRun) -> Any:
    """The confirm run as a SARIF ``invocation`` (sarif_om), one notification per failed target.

    Targets are named in the message text, not as locations: an entry such as
    ``pkg.module:make`` is not a file.
    """
    import sarif_om as om

    notifications = [
        om.Notification(
            level="error",
            message=om.Message(text=f"confirm target {t.name}: {t.status}: {t.message}"),
            descriptor=om.ReportingDescriptorReference(id=f"confirm/{t.status}"),
        )
        for t in run.notifications
    ]
    return om.Invocation(
        execution_successful=run.successful,
        command_line="distlint check --confirm",
        tool_execution_notifications=notifications or None,
        properties={"confirm": run_properties(run)},
    )
