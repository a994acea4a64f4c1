"""Parsing a large file a few top-level statements at a time, joined into the file's tree.

While it runs, LibCST's native parser holds about 550 bytes per character of the text it
parses (its tokens and memo tables; all freed when it returns), on top of the tree it builds:
torch's ``common_methods_invocations.py`` (1.4 MB) took 767 MiB to parse, the largest process
of a check of torch. Parsed in pieces of about :data:`PIECE_CHARS` characters, the parse holds
only what its largest piece needs (a statement is never cut: that file's 11,000-line ``op_db``
list alone took 367 MiB).

The joined tree is the one the whole text gives, so cuts are made only where a piece's parse
cannot tell the difference: before a run of empty lines and column-0 comments (possibly none)
that leads to a statement starting at column 0 (not ``else``/``elif``/``except``/``finally``),
after a line of code that is not a decorator. What a piece's parse puts in its module's
header (the lines before its first statement) are that statement's leading lines in the whole
file: no indented line lies between, so none belongs to the footer of the block above (LibCST
gives a block's footer the lines up to the last one indented at its level). A piece's parse
writes its newlines and indented blocks relative to defaults it takes from its own text (its
first newline, its first indented block): the pieces are joined only when all took the same
ones, the whole file's (else the whole text is parsed at once). The module's other fields
come from the first piece (header) and the last (footer, trailing newline). Strings, comments and
brackets are found by :func:`distlint.syntax.lexing.tokens`; a cut it misplaces (inside a
string it misread) leaves a piece that does not parse, and any piece that does not parse
makes the whole text parsed at once, so errors are the whole parse's.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

import libcst as cst

from distlint.syntax.lexing import tokens

PIECE_CHARS = 64 * 1024  # a text longer than two of these is parsed in pieces about this long
_GOES_ON = re.compile(r"(?:else|elif|except|finally)\b")  # a clause of the statement above
_NOT_CODE = " \t\f\\#\r\n"  # a line starting with one of these is not code at column 0


def parse_in_pieces(text: str, parse: Callable[[str], cst.Module]) -> cst.Module:
    """The tree of ``text`` as ``parse`` (LibCST's ``parse_module``) gives it, computed piece
    by piece when ``text`` is long (see the module docstring)."""
    cuts = cut_points(text, PIECE_CHARS) if len(text) > 2 * PIECE_CHARS else []
    if not cuts:
        return parse(text)
    bounds = [0, *cuts, len(text)]
    try:
        pieces = [parse(text[start:end]) for start, end in itertools.pairwise(bounds)]
    except cst.ParserSyntaxError:
        return parse(text)  # the error as the whole file's parse reports it
    return _joined(pieces) or parse(text)


def cut_points(text: str, size: int) -> list[int]:
    """Offsets where ``text`` may be cut into pieces that parse to parts of its tree, the
    first at least ``size`` characters in and each at least ``size`` after the one before."""
    starts = _line_starts(text)
    cuts: list[int] = []
    last = 0
    code = -1  # index in ``starts`` of the last line of code seen
    for index, start in enumerate(starts):
        first = text[start : start + 1]
        if first in ("", "\n", "\r", "#"):
            continue  # an empty line or a comment at column 0: no code
        if (
            first not in _NOT_CODE
            and code >= 0
            and text[starts[code]] != "@"
            and _GOES_ON.match(text, start) is None
            and _blank_or_comments(text, starts, code + 1, index)
        ):
            cut = starts[code + 1]
            if cut - last >= size:
                cuts.append(cut)
                last = cut
        if text[start] not in " \t\f" or text[start:].lstrip(" \t\f")[:1] not in ("#", "\r", "\n"):
            code = index  # a line of code (not a whitespace-only line or indented comment)
        else:
            code = -1  # an indented comment or a whitespace-only line: no cut before the next
    return cuts


def _blank_or_comments(text: str, starts: Sequence[int], first: int, end: int) -> bool:
    """Whether lines ``first``..``end - 1`` are all empty lines or comments at column 0."""
    return all(text[starts[i] : starts[i] + 1] in ("\n", "\r", "#") for i in range(first, end))


def _line_starts(text: str) -> list[int]:
    """Where each logical line starts: at 0 and after each line end outside brackets and
    strings that is not a backslash continuation."""
    starts = [0]
    depth = 0
    for kind, _, end in tokens(text):
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "newline" and depth == 0 and end < len(text):
            starts.append(end)
    return starts


def _joined(pieces: Sequence[cst.Module]) -> cst.Module | None:
    """One module of the pieces' statements, as the whole text's parse gives it; None when
    the pieces' parses took different defaults (a newline, an indentation), which their nodes
    are written relative to."""
    first, last = pieces[0], pieces[-1]
    indents = {p.default_indent for p in pieces if _has_indented_block(p)}
    newlines = {p.default_newline for p in pieces}
    if len(indents) > 1 or len(newlines) > 1:
        return None
    body: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = list(first.body)
    for piece in pieces[1:]:
        lead, *rest = piece.body
        if piece.header:
            lead = lead.with_changes(leading_lines=(*piece.header, *lead.leading_lines))
        body += (lead, *rest)
    return cst.Module(
        body=tuple(body),
        header=first.header,
        footer=last.footer,
        encoding=first.encoding,
        default_indent=indents.pop() if indents else first.default_indent,
        default_newline=first.default_newline,
        has_trailing_newline=last.has_trailing_newline,
    )


def _has_indented_block(module: cst.Module) -> bool:
    """Whether ``module`` has an indented block (its parse took its default indentation from
    the first one). Only a compound statement at the top holds one, possibly in a clause."""
    for statement in module.body:
        if not isinstance(statement, cst.BaseCompoundStatement):
            continue
        stack: list[cst.CSTNode] = [statement]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.IndentedBlock):
                return True
            stack.extend(node.children)
    return False
