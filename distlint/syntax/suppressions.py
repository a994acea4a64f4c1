"""Inline suppressions: ``# noqa``, ``# distlint: ignore[...]``, ``# distlint: file-ignore[...]``.

The one grammar of suppression comments, read by the engine and by the language server
(:func:`parse_comment`): a comment without a code list silences every code; a list silences
the distlint codes (and prefixes) it names. Other tools' codes in a list (``E501``) silence
nothing: in ``# noqa: E501`` they belong to the other tool, in a ``# distlint:`` comment they
are a mistake that DL001 reports.

Comments are found with a linear scan of the source text (:mod:`distlint.syntax.lexing`: strings,
comments, brackets, line continuations), which also gives the logical lines that a
suppression covers: a suppression anywhere on a multi-line statement applies to findings
that start in it. The
scan only runs for files whose text mentions ``noqa`` or ``distlint:``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distlint.syntax.lexing import tokens

if TYPE_CHECKING:
    from distlint.findings import Span

_MAY_SUPPRESS = re.compile(r"#.*?(?:noqa|distlint\s*:)", re.IGNORECASE)

_NOQA = re.compile(
    r"#\s*noqa(?![\w-])(?::\s*(?P<codes>[A-Za-z]+\d*(?:[\s,]+[A-Za-z]+\d*)*))?", re.I
)
_DISTLINT = re.compile(
    r"#\s*distlint\s*:\s*(?P<kind>file-ignore|ignore)\b(?:\[(?P<codes>[^\]]*)\])?", re.I
)
_CODE_TOKEN = re.compile(r"[^\s,]+")
# distlint's codes (plugins add their own prefixes); anything else in a list is another tool's
DEFAULT_PREFIXES: tuple[str, ...] = ("DL",)


@dataclass(frozen=True)
class SuppressionComment:
    """What one suppression comment says, with where its codes are (offsets in the comment)."""

    kind: str  # "noqa", "ignore" or "file-ignore"
    blanket: bool  # no code list (or an empty one): every code
    codes: tuple[str, ...]  # the distlint codes and prefixes listed, upper-cased
    foreign: tuple[str, ...]  # listed tokens that are not distlint codes (E501), upper-cased
    list_span: tuple[int, int] | None  # [start, end) of the list's text, None without a list
    code_spans: tuple[tuple[int, int, str], ...]  # every listed token: (start, end, UPPER)

    def covers(self, code: str) -> str | None:
        """The selector that silences ``code`` (``"*"`` for a blanket comment), else None."""
        if self.blanket:
            return "*"
        code = code.upper()
        for selector in self.codes:
            if code.startswith(selector):
                return selector
        return None


def parse_comment(
    comment: str, prefixes: tuple[str, ...] = DEFAULT_PREFIXES
) -> SuppressionComment | None:
    """The suppression a ``#`` comment holds, or None when it holds none.

    ``prefixes``: the code prefixes that are ours (``DL`` and the plugins').
    """
    match = _DISTLINT.search(comment)
    kind = match.group("kind").lower() if match is not None else "noqa"
    if match is None:
        match = _NOQA.search(comment)
        if match is None:
            return None
    raw = match.group("codes")
    if raw is None:
        return SuppressionComment(kind, True, (), (), None, ())
    base = match.start("codes")
    spans = tuple(
        (base + token.start(), base + token.end(), token.group().upper())
        for token in _CODE_TOKEN.finditer(raw)
    )
    listed = [code for _, _, code in spans]
    codes = tuple(code for code in listed if code.startswith(prefixes))
    foreign = tuple(code for code in listed if not code.startswith(prefixes))
    span = (base, match.end("codes"))
    return SuppressionComment(kind, not listed, codes, foreign, span, spans)


@dataclass
class Suppression:
    """One suppression comment and which of its codes were used."""

    line: int
    column: int  # 0-based code-point column of the '#'
    end_column: int  # 0-based, exclusive: the end of the comment
    comment: SuppressionComment
    own_line: bool  # the comment stands alone on its line
    used: set[str] = field(default_factory=set)
    span: Span | None = None  # the comment's span, measured with the file's lines (DL001)

    @property
    def kind(self) -> str:
        return self.comment.kind

    @property
    def codes(self) -> tuple[str, ...]:
        """The distlint codes or prefixes listed (none for a blanket comment)."""
        return self.comment.codes

    def matches(self, code: str) -> str | None:
        """The selector that covers ``code`` (``"*"`` for a blanket one), else None."""
        return self.comment.covers(code)


@dataclass
class SuppressionIndex:
    """The suppressions of one file and the logical-line spans needed to apply them."""

    suppressions: list[Suppression]
    logical_start: dict[int, int]
    logical_end: dict[int, int]

    def suppressor(self, code: str, line: int) -> tuple[Suppression, str] | None:
        """The suppression (and its matching selector) that silences ``code`` at ``line``."""
        first = self.logical_start.get(line, line)
        last = self.logical_end.get(line, line)
        for supp in self.suppressions:
            if supp.kind == "file-ignore" or first <= supp.line <= last:
                applies = True
            else:  # a `# distlint: ignore[...]` line right above the statement
                applies = supp.kind == "ignore" and supp.own_line and supp.line == first - 1
            if applies:
                selector = supp.matches(code)
                if selector is not None:
                    return supp, selector
        return None

    def is_suppressed(self, code: str, line: int) -> bool:
        """Whether ``code`` at ``line`` is silenced; records the use for unused-suppression."""
        hit = self.suppressor(code, line)
        if hit is None:
            return False
        supp, selector = hit
        supp.used.add(selector)
        return True


_KEYWORD = re.compile(r"noqa|distlint", re.IGNORECASE)


def _may_hold_suppression(source: str, prefixes: tuple[str, ...]) -> bool:
    """Whether some ``#`` on a line that mentions ``noqa`` or ``distlint`` starts a text, to
    the line's end, that :func:`_parse_comment` keeps. Without one, :func:`scan` finds no
    suppression: every comment the lexer finds is such a text (a ``#`` up to the next line
    break, ``\\r`` or ``\\n``) and holds the keyword of its suppression. Strings are not
    told apart here, so this may say yes when the lexer finds none (``"# noqa"`` in a
    string), never no when it finds one. It spares the lexing of files whose ``noqa``
    comments are all other tools' (``# noqa: F401``)."""
    breaks = ("\n", "\r") if "\r" in source else ("\n",)
    line_end = -1
    for keyword in _KEYWORD.finditer(source):
        at = keyword.start()
        if at < line_end:
            continue  # a line already looked at
        begin = max(source.rfind(mark, 0, at) for mark in breaks) + 1
        ends = [end for end in (source.find(mark, at) for mark in breaks) if end >= 0]
        line_end = min(ends) if ends else len(source)
        text = source[begin:line_end]
        start = text.find("#")
        while start >= 0:
            if _parse_comment(text[start:], 1, 0, False, prefixes) is not None:
                return True
            start = text.find("#", start + 1)
    return False


def scan(source: str, prefixes: tuple[str, ...] = DEFAULT_PREFIXES) -> SuppressionIndex | None:
    """Suppressions of ``source``, or None when it has none (the common, cheap case)."""
    if _MAY_SUPPRESS.search(source) is None or not _may_hold_suppression(source, prefixes):
        return None
    suppressions: list[Suppression] = []
    logical_start: dict[int, int] = {}
    logical_end: dict[int, int] = {}
    line = 1
    line_offset = 0  # index in source where the current physical line starts
    depth = 0
    start_line = 1
    for kind, begin, end in tokens(source):
        if kind == "string":
            text = source[begin:end]
            newlines = _count_newlines(text)
            if newlines:
                line += newlines
                line_offset = begin + max(text.rfind("\n"), text.rfind("\r")) + 1
        elif kind == "comment":
            prefix = source[line_offset:begin]
            supp = _parse_comment(
                source[begin:end], line, len(prefix), not prefix.strip(), prefixes
            )
            if supp is not None:
                suppressions.append(supp)
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        else:  # newline or backslash continuation
            if kind == "newline" and depth == 0:
                if start_line != line:
                    for covered in range(start_line, line + 1):
                        logical_start[covered] = start_line
                        logical_end[covered] = line
                start_line = line + 1
            line += 1
            line_offset = end
    if start_line < line:
        for covered in range(start_line, line + 1):
            logical_start[covered] = start_line
            logical_end[covered] = line
    if not suppressions:
        return None
    return SuppressionIndex(suppressions, logical_start, logical_end)


def _count_newlines(text: str) -> int:
    if "\r" not in text:
        return text.count("\n")
    return text.replace("\r\n", "\n").replace("\r", "\n").count("\n")


def _parse_comment(
    comment: str, line: int, column: int, own_line: bool, prefixes: tuple[str, ...]
) -> Suppression | None:
    parsed = parse_comment(comment, prefixes)
    if parsed is None:
        return None
    # A noqa listing only other tools' codes (E501) is theirs: nothing of ours to track.
    if parsed.kind == "noqa" and not parsed.blanket and not parsed.codes:
        return None
    return Suppression(line, column, column + len(comment), parsed, own_line)
