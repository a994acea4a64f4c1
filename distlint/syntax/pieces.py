"""Parsing a large file a few top-level statements at a time, joined into the file's tree.

While it runs, LibCST's native parser holds 500 to 1,200 bytes per character of the text it
parses (its tokens and memo tables; all freed when it returns), on top of the tree it builds:
torch's ``common_methods_invocations.py`` (1.4 MB) took 767 MiB to parse, and
``sparse/_triton_ops_meta.py`` (a 400 KB dict of number tuples) 576 MiB, the largest
processes of a check of torch. Parsed in pieces of about :data:`PIECE_CHARS` characters, the
parse holds only what its largest piece needs: pieces of whole top-level statements, and a
statement that is still large (that file's 11,000-line ``op_db`` list alone took 367 MiB) has
the elements of its largest list, dict or set display parsed in groups (:func:`_piece`).

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
come from the first piece (header) and the last (footer, trailing newline). A display's
elements are cut after the commas between them; a group's last comma, followed by the
group's closing bracket, gets the whitespace that follows its opening one in the next group.
Strings, comments and brackets are found by :func:`distlint.syntax.lexing.tokens`; a cut it
misplaces (inside a string it misread, a comma of a lambda's parameters) leaves a piece that
does not parse, and a piece or group that does not parse, or would not join, is parsed whole
instead, so the tree and the errors are the whole parse's. Checked: the trees of all 2,285
files of torch 2.13, cut at every 2,000 characters, equal the whole parse's.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Callable, Sequence
from typing import cast

import libcst as cst

from distlint.syntax.indentation import IndentColumns
from distlint.syntax.lexing import tokens
from distlint.syntax.positions import Positions
from distlint.syntax.reused_positions import StatementPositions
from distlint.syntax.unchecked_parse import parse_unchecked

PIECE_CHARS = 64 * 1024  # a text longer than two of these is parsed in pieces about this long
_GOES_ON = re.compile(r"(?:else|elif|except|finally)\b")  # a clause of the statement above
_NOT_CODE = " \t\f\\#\r\n"  # a line starting with one of these is not code at column 0


Cuts = Callable[[str, int], list[int]]  # where a text is cut into pieces of about a size


Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement  # of a module's body
Lead = Callable[[cst.Module], Statement]


def parse_in_pieces(
    text: str,
    parse: Callable[[str], cst.Module],
    size: int | None = None,
    cuts: Cuts | None = None,
    lead: Lead | None = None,
) -> cst.Module:
    """The tree of ``text`` as ``parse`` (LibCST's ``parse_module``) gives it, computed piece
    by piece when ``text`` is long (see the module docstring): longer than two pieces of
    ``size`` characters (default :data:`PIECE_CHARS`), cut where ``cuts`` says (default
    :func:`cut_points`). ``lead``: a piece's first statement in the joined tree, its header
    lines its own (default :func:`lead_statement`)."""
    size = PIECE_CHARS if size is None else size
    if len(text) <= 2 * size:
        return parse(text)
    try:
        return _in_pieces(text, parse, (cuts or cut_points)(text, size), lead or lead_statement)
    except (cst.ParserSyntaxError, _NotJoined):
        return parse(text)  # an error as the whole file's parse reports it


class _NotJoined(Exception):
    """Pieces whose trees would not join into the whole parse's."""


def _in_pieces(
    text: str, parse: Callable[[str], cst.Module], cuts: list[int], lead: Lead
) -> cst.Module:
    spans = list(itertools.pairwise([0, *cuts, len(text)]))
    parsed: dict[int, cst.Module] = {}
    # the largest first: its parse is the peak, with no tree of the others held yet
    for index in sorted(range(len(spans)), key=lambda i: spans[i][0] - spans[i][1]):
        start, end = spans[index]
        parsed[index] = _piece(text[start:end], parse)
    joined = _joined([parsed[i] for i in range(len(spans))], lead)
    if joined is None:
        raise _NotJoined
    return joined


EDITOR_PIECE_CHARS = 2_000  # pieces of an editor's buffer (:class:`ReusedPieces`)
_REUSED_MAX_CHARS = 1_000_000  # text whose pieces' trees a ReusedPieces keeps at most


class ReusedPieces:
    """The trees of the pieces of a text parsed before, by the piece's text, for the next
    parse of the same buffer: an edit changes a piece or two of it, and only those reach the
    parser (the language server parses a buffer again after every edit: the parse was a
    third of a check). A piece's tree depends on its text alone, and the joined tree is the
    whole parse's (the module docstring), so it is the tree a fresh parse gives; its nodes
    are shared with the earlier tree, which nothing changes (LibCST's nodes are immutable).

    Holds the pieces of the last text parsed (and, after a text that did not parse, those of
    the one before too), cut every :data:`EDITOR_PIECE_CHARS` characters or so; ``parsed``
    counts the pieces that went to the parser."""

    def __init__(self, size: int = EDITOR_PIECE_CHARS) -> None:
        self.size = size
        self.parsed = 0
        self._trees: dict[str, cst.Module] = {}
        # id(piece's tree) -> (that tree, its first statement as joined): the same object
        # from one text to the next, as the piece's other statements are
        self._leads: dict[int, tuple[cst.Module, Statement]] = {}
        self._statements = StatementPositions()

    def positions(self, module: cst.Module, columns: IndentColumns | None) -> Positions:
        """The positions of the tree :meth:`parse` gave last, measuring again only what
        is new in its statements (:mod:`distlint.syntax.reused_positions`)."""
        return self._statements.positions(module, columns)

    def parse(self, text: str) -> cst.Module:
        """The tree of ``text`` as LibCST's ``parse_module`` gives it (or its error)."""
        kept = self._trees
        used: dict[str, cst.Module] = {}

        def piece(part: str) -> cst.Module:
            tree = used.get(part)
            if tree is None:
                tree = kept.get(part)
            if tree is None:
                self.parsed += 1
                tree = parse_unchecked(part)
            used[part] = tree
            return tree

        try:
            module = parse_in_pieces(text, piece, self.size, content_cut_points, self._lead)
        except BaseException:  # keep both texts' pieces: the next edit may fix it
            both = {**kept, **used}
            self._keep(both if sum(map(len, both)) <= _REUSED_MAX_CHARS else used)
            raise
        self._keep(used if sum(map(len, used)) <= _REUSED_MAX_CHARS else {})
        return module

    def _keep(self, trees: dict[str, cst.Module]) -> None:
        self._trees = trees
        kept = {id(tree) for tree in trees.values()}
        self._leads = {key: lead for key, lead in self._leads.items() if key in kept}

    def _lead(self, piece: cst.Module) -> Statement:
        """:func:`lead_statement`, one object per piece's tree."""
        known = self._leads.get(id(piece))
        if known is None:
            known = self._leads[id(piece)] = (piece, lead_statement(piece))
        return known[1]


_CUT_ODDS = 4  # content_cut_points: one place in this many (by its text) is a cut
_CUT_WINDOW = 64  # characters either side of a place that decide whether it is a cut


def content_cut_points(text: str, size: int) -> list[int]:
    """Places of :func:`cut_points` chosen by the text around them (a hash), at least
    ``size // 2`` characters apart, and where none was chosen for ``2 * size`` characters
    the next place: an edit moves only the cuts near it, so the pieces before and after it
    are the same texts as before the edit (:class:`ReusedPieces`). Cuts at every size
    would all move after an insertion."""
    chosen: list[int] = []
    last = 0
    for cut in cut_points(text, 0):
        length = cut - last
        if length < size // 2:
            continue
        window = text[max(0, cut - _CUT_WINDOW) : cut + _CUT_WINDOW]
        odds = zlib.crc32(window.encode("utf-8", "surrogatepass")) % _CUT_ODDS
        if odds == 0 or length >= 2 * size:
            chosen.append(cut)
            last = cut
    return chosen


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


def _joined(pieces: Sequence[cst.Module], lead: Lead) -> cst.Module | None:
    """One module of the pieces' statements, as the whole text's parse gives it; None when
    the pieces' parses took different defaults (a newline, an indentation), which their nodes
    are written relative to."""
    first, last = pieces[0], pieces[-1]
    indents = {p.default_indent for p in pieces if _has_indented_block(p)}
    newlines = {p.default_newline for p in pieces}
    if len(indents) > 1 or len(newlines) > 1:
        return None
    body: list[Statement] = list(first.body)
    for piece in pieces[1:]:
        body += (lead(piece), *piece.body[1:])
    return cst.Module(
        body=tuple(body),
        header=first.header,
        footer=last.footer,
        encoding=first.encoding,
        default_indent=indents.pop() if indents else first.default_indent,
        default_newline=first.default_newline,
        has_trailing_newline=last.has_trailing_newline,
    )


def lead_statement(piece: cst.Module) -> Statement:
    """The first statement of a piece (not the first) as the joined tree has it: what the
    piece's parse put in its module's header are that statement's leading lines."""
    first = piece.body[0]
    if not piece.header:
        return first
    return first.with_changes(leading_lines=(*piece.header, *first.leading_lines))


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


# -- a statement too large for one parse: its largest display's elements in groups -----------

_HOLE = "_distlint_elements_"  # stands for a display's elements while the rest is parsed
_DISPLAYS = {"[": (cst.List,), "{": (cst.Dict, cst.Set)}


def _piece(text: str, parse: Callable[[str], cst.Module]) -> cst.Module:
    """The tree of a piece; of one that is still large (a single statement: torch's
    ``op_db`` list, 11,000 lines, took 367 MiB to parse; a 400 KB dict of number tuples 576
    MiB), the elements of its largest list, dict or set display are parsed in groups of about
    :data:`PIECE_CHARS` and put in the display of the rest's tree. Only a display at the top
    level of its statement's block: inside an indented block, the lines of a display are
    parsed relative to the block's indentation, which a group parsed alone does not have."""
    found = _display_to_cut(text) if len(text) > 2 * PIECE_CHARS else None
    if found is None:
        return parse(text)
    start, end, cuts = found
    try:
        if _HOLE in text:
            raise _NotJoined
        rest = parse(text[: start + 1] + _HOLE + text[end:])
        hole = _display_of_hole(rest)
        opening, closing = text[start], text[end]
        bounds = itertools.pairwise([start + 1, *cuts, end])
        groups = [_piece(opening + text[a:b] + closing, parse) for a, b in bounds]
        displays = [_group_display(group, opening, rest.default_newline) for group in groups]
        return cast(cst.Module, rest.deep_replace(hole, _display_of_groups(displays, hole)))
    except (cst.ParserSyntaxError, _NotJoined):  # a comma the scan misplaced, a subscript
        return parse(text)


def _display_to_cut(text: str) -> tuple[int, int, list[int]] | None:
    """The largest ``[...]`` or ``{...}`` of ``text`` (where it opens and closes) whose
    elements can be parsed in groups, and where they are cut: after commas between its
    elements (not the last one), each group at least :data:`PIECE_CHARS` long."""
    pairs, commas = _brackets(text)
    for start, end in sorted(pairs, key=lambda pair: pair[0] - pair[1]):
        if text[start] not in _DISPLAYS or end - start <= PIECE_CHARS:
            continue
        cuts: list[int] = []
        last = start
        for comma in commas.get(start, [])[:-1]:
            if comma + 1 - last >= PIECE_CHARS:
                cuts.append(comma + 1)
                last = comma + 1
        if cuts:
            return start, end, cuts
    return None


def _brackets(text: str) -> tuple[list[tuple[int, int]], dict[int, list[int]]]:
    """The bracket pairs of ``text`` (where each opens and closes), and the commas directly
    inside each (by where it opens), outside strings and comments."""
    pairs: list[tuple[int, int]] = []
    commas: dict[int, list[int]] = {}
    open_: list[int] = []
    position = 0
    for kind, start, end in [*tokens(text), ("end", len(text), len(text))]:
        if open_:
            inside = commas.setdefault(open_[-1], [])
            comma = text.find(",", position, start)
            while comma >= 0:
                inside.append(comma)
                comma = text.find(",", comma + 1, start)
        if kind == "open":
            open_.append(start)
        elif kind == "close" and open_:
            pairs.append((open_.pop(), start))
        position = end
    return pairs, commas


def _display_of_hole(rest: cst.Module) -> cst.List | cst.Set:
    """The display that holds only :data:`_HOLE` in ``rest``, outside any indented block."""
    pending: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(rest, ())]
    while pending:
        node, above = pending.pop()
        if type(node) is cst.Name and node.value == _HOLE:
            display = above[-2] if len(above) >= 2 else None
            if (
                type(above[-1]) is not cst.Element
                or not isinstance(display, (cst.List, cst.Set))
                or len(display.elements) != 1
                or any(type(a) is cst.IndentedBlock for a in above)
            ):
                raise _NotJoined
            return display
        pending.extend((child, (*above, node)) for child in node.children)
    raise _NotJoined


def _group_display(group: cst.Module, opening: str, newline: str) -> cst.List | cst.Dict | cst.Set:
    """The display a group's text (an opening bracket, elements, the closing one) is."""
    statement = group.body[0] if len(group.body) == 1 else None
    expression = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
    display = expression.value if isinstance(expression, cst.Expr) else None
    if (
        not isinstance(display, _DISPLAYS[opening])
        or display.lpar
        or group.header
        or group.footer
        or group.default_newline != newline
    ):
        raise _NotJoined
    return display


def _display_of_groups(
    displays: Sequence[cst.List | cst.Dict | cst.Set], hole: cst.List | cst.Set
) -> cst.List | cst.Dict | cst.Set:
    """One display of the groups' elements, as the whole display's parse gives it: the comma
    that ends a group (followed by its closing bracket there) gets the whitespace after the
    next group's opening bracket."""
    kind = type(displays[0])
    elements: list = []
    for group, after in itertools.zip_longest(displays, displays[1:]):
        if type(group) is not kind:
            raise _NotJoined
        items = list(group.elements)
        if after is not None:
            comma = items[-1].comma if items else None
            if (
                not isinstance(comma, cst.Comma)
                or not _empty(comma.whitespace_after)
                or not _empty(_brackets_of(group)[1].whitespace_before)
            ):
                raise _NotJoined
            after_opening = _brackets_of(after)[0].whitespace_after
            items[-1] = items[-1].with_changes(
                comma=comma.with_changes(whitespace_after=after_opening)
            )
        elements += items
    first, last = _brackets_of(displays[0])[0], _brackets_of(displays[-1])[1]
    if kind is cst.List:
        return cst.List(elements, first, last, hole.lpar, hole.rpar)
    return kind(elements, first, last, hole.lpar, hole.rpar)


def _brackets_of(display: cst.List | cst.Dict | cst.Set) -> tuple:
    if isinstance(display, cst.List):
        return display.lbracket, display.rbracket
    return display.lbrace, display.rbrace


def _empty(whitespace: object) -> bool:
    return isinstance(whitespace, cst.SimpleWhitespace) and whitespace.value == ""
