"""``check --add-noqa``: silence every current finding with a ``# noqa: CODE`` comment.

Each finding gets its code on the physical line that ends the statement's first line (after a
multi-line string or a backslash continuation, as the editor's "suppress" action places it:
:func:`distlint.syntax.text.noqa_edit`). An existing ``# noqa: A`` or ``# distlint: ignore[A]``
gets the code added to its list; any other comment is kept and the noqa comment follows it.
Running it again changes nothing: every finding is then suppressed.
"""

from __future__ import annotations

from collections.abc import Iterable

from distlint.findings import Finding
from distlint.syntax.text import LineInfo, TextEdit, apply_edits, noqa_edit, split_lines

NOT_SUPPRESSIBLE = frozenset({"DL000", "DL001"})  # a file that was not checked; unused noqa


def add_noqa(text: str, findings: Iterable[Finding]) -> tuple[str, int]:
    """``text`` with noqa comments for ``findings``, and how many codes were added."""
    lines = split_lines(text)
    info = LineInfo(text, lines)
    codes_by_row: dict[int, list[str]] = {}
    for finding in findings:
        if finding.code in NOT_SUPPRESSIBLE:
            continue
        row = info.target_row(finding.span.start.line - 1)
        codes = codes_by_row.setdefault(row, [])
        if finding.code not in codes:
            codes.append(finding.code)
    edits: list[TextEdit] = []
    added = 0
    for row, codes in sorted(codes_by_row.items()):
        first: TextEdit | None = None
        extra: list[str] = []
        for code in sorted(codes):
            if first is None:
                first = noqa_edit(info, row, code)
                if first is not None:
                    added += 1
            elif noqa_edit(info, row, code) is not None:  # not already covered by the line
                extra.append(code)
                added += 1
        if first is not None:
            suffix = "".join(f", {code}" for code in extra)
            edits.append(TextEdit(first.start, first.end, first.new_text + suffix))
    if not edits:
        return text, 0
    return apply_edits(text, edits), added
