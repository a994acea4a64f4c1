"""A linear scan of Python source for strings, comments, brackets and line ends.

Several places need to know where strings and comments are without a full tokenizer, which
rejects broken files: the bracket-depth check before parsing, the suppression comments and
their logical lines, the editor's placement of ``# noqa`` comments. One regex doing all of it
backtracks: each unterminated ``'''`` rescans to the end of the file, so a file of many of
them took quadratic time (100 KB: 30 s). Here a regex finds only where the next token starts,
and a string's end is found with ``str.find``, so every character is looked at a bounded
number of times.

Unterminated strings end at the end of the file (triple-quoted) or of the line; Python
rejects such files anyway, and the parser reports them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

# Line breaks as Python and LibCST count them (positions, snippets, LSP ranges).
NEWLINES = re.compile(r"\r\n|\r|\n")


class Token(NamedTuple):
    kind: str  # string | comment | open | close | continuation | newline
    start: int
    end: int


_PREFIX = r"[rRbBuUfFtT]{0,2}"
_STRUCTURE = re.compile(
    _PREFIX
    + r"""(?P<quote>\"\"\"|'''|"|')
    |(?P<comment>\#[^\r\n]*)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<continuation>\\(?:\r\n|\r|\n))
    |(?P<newline>\r\n|\r|\n)""",
    re.VERBOSE,
)
_STRINGS_AND_COMMENTS = re.compile(
    _PREFIX + r"""(?P<quote>\"\"\"|'''|"|')|(?P<comment>\#[^\r\n]*)""", re.VERBOSE
)
# the rest of a one-line string: escaped characters (a backslash-newline included) or
# anything but its quote, a backslash or a line end
_SINGLE_BODY = {
    '"': re.compile(r'(?:\\.|[^"\\\r\n])*', re.DOTALL),
    "'": re.compile(r"(?:\\.|[^'\\\r\n])*", re.DOTALL),
}


def tokens(text: str, *, structure: bool = True) -> Iterator[Token]:
    """Strings and comments in source order, with brackets, backslash continuations and
    line ends too when ``structure`` is set."""
    pattern = _STRUCTURE if structure else _STRINGS_AND_COMMENTS
    position = 0
    while True:
        match = pattern.search(text, position)
        if match is None:
            return
        kind = match.lastgroup
        if kind == "quote":
            end = _string_end(text, match.end(), match.group("quote"))
            yield Token("string", match.start(), end)
            position = end
        else:
            assert kind is not None
            yield Token(kind, match.start(), match.end())
            position = match.end()


def _string_end(text: str, body: int, quote: str) -> int:
    """Where the string whose body starts at ``body`` ends (just past its closing quote)."""
    if len(quote) == 3:
        search = body
        while True:
            found = text.find(quote, search)
            if found < 0:
                return len(text)  # unterminated: the rest of the file
            if _escaped(text, found, body):
                search = found + 1
                continue
            return found + 3
    rest = _SINGLE_BODY[quote].match(text, body)
    assert rest is not None  # the pattern matches the empty string
    end = rest.end()
    return end + 1 if text.startswith(quote, end) else end


def _escaped(text: str, index: int, floor: int) -> bool:
    """Whether the character at ``index`` follows an odd run of backslashes (after ``floor``)."""
    run = 0
    while index - run - 1 >= floor and text[index - run - 1] == "\\":
        run += 1
    return run % 2 == 1
