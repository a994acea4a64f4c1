"""Applying fixes to source text: ``check --fix``, ``--diff``, ``--fix-only`` and the editor's
fix-all.

The model is Ruff's. A fix is *safe* (it keeps the program's meaning) or *unsafe* (it may
change it); only safe fixes are applied unless unsafe ones are asked for. Fixes are applied
in rounds: each round takes the fixes of the current findings in document order (by their
first edit, then rule code), skips a fix whose edits overlap an edit already taken (it is
tried again in the next round, against the new text), and checks the project again. Rounds
stop when no fix applies, or after :data:`MAX_ROUNDS`. A round whose result does not parse
is rolled back for that file, which is then left as it was before that round and not fixed
further: a fix never leaves a file that does not parse.

Positions are the engine's: 1-based lines split like :data:`distlint.syntax.source.NEWLINES`,
1-based columns in code points of the decoded text.
"""

from __future__ import annotations

import codecs
import difflib
import io
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from distlint.findings import Applicability, Finding, Fix
from distlint.syntax.source import NEWLINES, compile_quietly

MAX_ROUNDS = 10
"""Rounds of fixing and re-checking before giving up on reaching a fixed point."""


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    """Whether ``fix`` is applied: it has edits and is safe, or unsafe fixes were asked for."""
    if fix is None or not fix.edits:
        return False
    return fix.applicability is Applicability.SAFE or unsafe


@dataclass(frozen=True)
class Applied:
    """The outcome of one round on one text."""

    text: str
    fixed: tuple[Finding, ...]  # findings whose fix was applied (or already was, identically)


def line_offsets(text: str) -> list[int]:
    """Offset in ``text`` where each line starts (index 0 = line 1)."""
    return [0] + [match.end() for match in NEWLINES.finditer(text)]


def _offsets(
    text: str, starts: list[int], fix: Fix
) -> list[tuple[int, int, str]] | None:  # (start, end, content), None: a span outside the text
    found = []
    for edit in fix.edits:
        bounds = []
        for position in (edit.span.start, edit.span.end):
            line, column = position.line - 1, position.column - 1
            if not 0 <= line < len(starts) or column < 0:
                return None
            line_end = starts[line + 1] if line + 1 < len(starts) else len(text)
            line_text = text[starts[line] : line_end].rstrip("\r\n")
            if column > len(line_text):
                return None
            bounds.append(starts[line] + column)
        if bounds[0] > bounds[1]:
            return None
        found.append((bounds[0], bounds[1], edit.content))
    return sorted(found)


def _overlap(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a[0] == a[1] == b[0] == b[1]:
        return True  # two insertions at one place: their order would be arbitrary
    return a[0] < b[1] and b[0] < a[1]


def apply_fixes(text: str, findings: Iterable[Finding], unsafe: bool = False) -> Applied:
    """Apply as many of the findings' fixes as do not overlap, in a deterministic order.

    Fixes are taken by the position of their first edit, then rule code, then message; a fix
    is taken whole or not at all. A fix identical to one already taken (two findings asking
    for the same edit) counts as applied without being applied twice.
    """
    starts = line_offsets(text)
    candidates = []
    for finding in findings:
        if not applicable(finding.fix, unsafe):
            continue
        edits = _offsets(text, starts, finding.fix)  # type: ignore[arg-type]
        if edits:
            candidates.append(
                (edits[0][0], edits[0][1], finding.code, finding.message, edits, finding)
            )
    candidates.sort(key=lambda c: c[:4])
    taken: list[tuple[int, int, str]] = []
    taken_sets: set[tuple[tuple[int, int, str], ...]] = set()
    fixed: list[Finding] = []
    for *_, edits, finding in candidates:
        key = tuple(edits)
        if key in taken_sets:
            fixed.append(finding)
            continue
        if any(_overlap(edit, other) for edit in edits for other in taken):
            continue
        taken.extend(edits)
        taken_sets.add(key)
        fixed.append(finding)
    if not taken:
        return Applied(text, ())
    parts = []
    cursor = len(text)
    for start, end, content in sorted(taken, reverse=True):
        parts.append(text[end:cursor])
        parts.append(content)
        cursor = start
    parts.append(text[:cursor])
    return Applied("".join(reversed(parts)), tuple(fixed))


def parse_error(text: str) -> str | None:
    """Why ``text`` is not a Python file distlint can read, or None when it is one."""
    import libcst as cst

    from distlint.syntax.source import SourceError, check_nesting, parse_source

    try:
        compile_quietly(text)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        check_nesting(text)
        parse_source(text)
    except SourceError as exc:
        return str(exc)
    except cst.ParserSyntaxError as exc:
        return f"LibCST cannot parse it: {exc.message.splitlines()[0]}"
    except Exception as exc:  # LibCST's validation errors
        return f"LibCST cannot parse it: {type(exc).__name__}: {exc}"
    return None


# -- rounds over a project -------------------------------------------------------------------------


@dataclass
class FixRun:
    """What ``check --fix`` (and ``--diff``) did, over every round."""

    texts: dict[str, str] = field(default_factory=dict)  # display path -> fixed text
    originals: dict[str, str] = field(default_factory=dict)  # display path -> text before
    fixed: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (path, code, name)
    rolled_back: dict[str, str] = field(default_factory=dict)  # path -> why (rules, error)
    unconverged: list[str] = field(default_factory=list)  # paths still changing at the end
    findings: list[Finding] = field(default_factory=list)  # of the last check

    @property
    def total(self) -> int:
        return sum(self.fixed.values())

    def changed(self) -> list[str]:
        """Display paths whose text differs from the original, sorted."""
        return sorted(p for p, t in self.texts.items() if t != self.originals.get(p))


def fix_project(
    check: Callable[[dict[str, str]], Sequence[Finding]],
    read: Callable[[str], str | None],
    unsafe: bool = False,
    max_rounds: int = MAX_ROUNDS,
) -> FixRun:
    """Fix a project in rounds until no fix applies (see the module docstring).

    ``check`` checks the project with the given texts (display path -> text) in place of
    the files' and returns the findings; ``read`` gives a file's original text.
    """
    run = FixRun()
    blocked: set[str] = set()
    findings = list(check({}))
    for _ in range(max_rounds):
        by_path: dict[str, list[Finding]] = {}
        for finding in findings:
            if finding.path not in blocked and applicable(finding.fix, unsafe):
                by_path.setdefault(finding.path, []).append(finding)
        progress = False
        for path in sorted(by_path):
            text = run.texts.get(path)
            if text is None:
                text = read(path)
                if text is None:
                    continue
                run.originals[path] = text
            applied = apply_fixes(text, by_path[path], unsafe)
            if not applied.fixed or applied.text == text:
                continue
            error = parse_error(applied.text)
            if error is not None:
                codes = ", ".join(sorted({f.code for f in applied.fixed}))
                run.rolled_back[path] = f"fixes for {codes} would not parse ({error})"
                blocked.add(path)
                continue
            run.texts[path] = applied.text
            run.fixed.update((path, f.code, f.name) for f in applied.fixed)
            progress = True
        if not progress:
            run.findings = findings
            return run
        findings = list(check(dict(run.texts)))
    run.findings = findings
    run.unconverged = sorted(
        {f.path for f in findings if f.path not in blocked and applicable(f.fix, unsafe)}
    )
    return run


# -- writing back ----------------------------------------------------------------------------------


def source_encoding(data: bytes) -> str:
    """The encoding Python reads ``data`` with (``utf-8-sig`` when it starts with a BOM)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
    except (SyntaxError, LookupError):
        return "utf-8"
    return encoding


def encode_like(original: bytes, text: str) -> bytes:
    """``text`` in the encoding of ``original`` (its BOM kept); raises UnicodeEncodeError."""
    return text.encode(source_encoding(original))


def unified_diff(path: str, before: str, after: str) -> str:
    """A unified diff of one file, ``--- path`` / ``+++ path``, every line newline-terminated."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), path, path
    )
    out = []
    for line in lines:
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def fixable_counts(findings: Iterable[Finding]) -> tuple[int, int]:
    """(findings with a safe fix, findings with only an unsafe one)."""
    tally: Counter[bool] = Counter()
    for finding in findings:
        if applicable(finding.fix, unsafe=False):
            tally[True] += 1
        elif applicable(finding.fix, unsafe=True):
            tally[False] += 1
    return tally[True], tally[False]
