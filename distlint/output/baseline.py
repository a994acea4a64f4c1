"""Baselines: record today's findings once, then report only new ones.

``distlint check --baseline FILE`` writes every current finding to FILE; a configuration with
``baseline = "FILE"`` (relative to the configuration file) then leaves out the findings that
FILE holds. A finding is matched by its fingerprint, not its line number: the rule code, the
file (relative to the baseline's folder) and a hash of the flagged source text and of its whole
line, both with whitespace collapsed. Code that moves (lines added above it, a re-indent) stays
matched; changing the flagged line makes the finding new. Equal fingerprints are counted: a
baseline holding one ``dist.barrier()`` finding hides one of two identical lines, not both.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from distlint.findings import Finding
from distlint.output.headline import headline
from distlint.syntax.regular_files import read_regular_text
from distlint.syntax.source import NEWLINES

VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be read or is not one; the message names the file."""


def fingerprint(finding: Finding, text: str | None) -> str:
    """The finding's fingerprint: a hash of its code, flagged text and line, never its place."""
    flagged = line = ""
    if text is not None:
        lines = NEWLINES.split(text)
        start, end = finding.span.start, finding.span.end
        if 0 < start.line <= len(lines):
            line = lines[start.line - 1]
            if end.line == start.line:
                flagged = line[start.column - 1 : end.column - 1]
            else:
                last = lines[end.line - 1] if end.line <= len(lines) else ""
                middle = lines[start.line : end.line - 1]
                flagged = "\n".join([line[start.column - 1 :], *middle, last[: end.column - 1]])
    digest = hashlib.sha256()
    for part in (finding.code, " ".join(flagged.split()), " ".join(line.split())):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:20]


def relative_path(display: str, cwd: Path, folder: Path) -> str:
    """A reported path (relative to ``cwd``, or absolute) relative to ``folder``, posix style."""
    absolute = Path(os.path.normpath(cwd / display))
    try:
        return PurePosixPath(Path(os.path.relpath(absolute, folder))).as_posix()
    except ValueError:  # another drive (Windows)
        return absolute.as_posix()


@dataclass(frozen=True)
class Entry:
    code: str
    path: str
    fingerprint: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.code, self.path, self.fingerprint)


def entries(
    findings: Iterable[Finding], read: Callable[[str], str | None], cwd: Path, folder: Path
) -> list[tuple[Finding, Entry]]:
    """Each finding with its baseline entry (paths relative to ``folder``)."""
    return [
        (f, Entry(f.code, relative_path(f.path, cwd, folder), fingerprint(f, read(f.path))))
        for f in findings
    ]


def write(
    target: Path, findings: Iterable[Finding], read: Callable[[str], str | None], cwd: Path
) -> int:
    """Write the baseline of ``findings`` to ``target``; how many it holds."""
    folder = Path(os.path.normpath(cwd / target)).parent
    rows = [
        {
            "code": entry.code,
            "path": entry.path,
            "fingerprint": entry.fingerprint,
            "line": finding.span.start.line,
            "headline": headline(finding.message),
        }
        for finding, entry in entries(findings, read, cwd, folder)
        if finding.code != "DL000"  # a file that was not checked is never a known finding
    ]
    rows.sort(key=lambda row: (row["path"], row["line"], row["code"], row["fingerprint"]))
    data = {"version": VERSION, "tool": "distlint", "findings": rows}
    try:
        (cwd / target).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"{target}: cannot write the baseline: {exc.strerror or exc}") from None
    return len(rows)


def load(path: Path) -> Counter[tuple[str, str, str]]:
    """The entries of a baseline file, counted."""
    try:
        data = json.loads(read_regular_text(path))
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: baseline file not found (write it with `distlint check --baseline {path}`)"
        ) from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"{path}: not a distlint baseline (invalid JSON: {exc})") from None
    rows = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(rows, list) or data.get("version") != VERSION:
        raise BaselineError(
            f'{path}: not a distlint baseline (expected an object with "version": {VERSION} '
            'and a "findings" list)'
        )
    found: Counter[tuple[str, str, str]] = Counter()
    for row in rows:
        if not isinstance(row, dict) or not all(
            isinstance(row.get(key), str) for key in ("code", "path", "fingerprint")
        ):
            raise BaselineError(
                f"{path}: not a distlint baseline (each finding needs string code, path and "
                f"fingerprint; got {row!r:.80})"
            )
        found[(row["code"], row["path"], row["fingerprint"])] += 1
    return found


def split(
    findings: list[Finding],
    baseline_of: Callable[[Finding], Path | None],
    read: Callable[[str], str | None],
    cwd: Path,
) -> tuple[list[Finding], list[Finding]]:
    """(new findings, findings the baseline holds), each in the report's order.

    ``baseline_of`` names the baseline that governs a finding's file (None: no baseline).
    """
    loaded: dict[Path, Counter[tuple[str, str, str]]] = {}
    new: list[Finding] = []
    known: list[Finding] = []
    for finding in findings:
        path = baseline_of(finding)
        if path is None or finding.code == "DL000":
            new.append(finding)
            continue
        if path not in loaded:
            loaded[path] = load(path)
        ((_, entry),) = entries([finding], read, cwd, path.parent)
        remaining = loaded[path]
        if remaining[entry.key] > 0:
            remaining[entry.key] -= 1
            known.append(finding)
        else:
            new.append(finding)
    return new, known
