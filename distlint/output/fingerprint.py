"""GitHub code scanning's ``primaryLocationLineHash``, ported from github/codeql-action.

GitHub matches an alert to the same alert in earlier uploads by
``partialFingerprints.primaryLocationLineHash``. When a SARIF file lacks it, codeql-action's
``upload-sarif`` fills it in with the function ``hash`` of ``src/fingerprints.ts``; a tool
that uploads by other means must compute the very same value, or every alert looks new
after each push. This module is a bit-for-bit port of that function.

What upstream computes, per line: a rolling polynomial hash (base 37, wrapping at 64 bits)
of the 100 UTF-16 code units that start at the beginning of the line, after dropping spaces
and tabs and turning CR and CRLF into LF. The window runs on into the following lines; past
the end of the file it sees one 65535 sentinel and then zeros. The value is written as
unpadded lowercase hex of the unsigned result, followed by ``:k``, where k counts how many
lines so far (this one included) had that same hex value.

Instead of upstream's character-at-a-time ring buffer this port normalises the text with
``str.replace``, computes prefix hashes once and reads every line's window hash off them,
which gives the same numbers (tests check it against a literal port) at a fraction of the
cost in Python.
"""

from __future__ import annotations

import sys
from array import array
from itertools import accumulate

WINDOW_UNITS = 100
"""How many hashed code units make up one line's window (upstream ``BLOCK_SIZE``)."""

_BASE = 37
_MASK_64 = (1 << 64) - 1
_BASE_POW_WINDOW = pow(_BASE, WINDOW_UNITS, 1 << 64)
_EOF_SENTINEL = 0xFFFF
_LF = 0x0A


def line_hashes(text: str) -> dict[int, str]:
    """Map each 1-based line number to its ``"<hex>:<k>"`` fingerprint.

    `text` should be the file's contents decoded the way Node decodes them: UTF-8, a
    byte-order mark kept (not ``utf-8-sig``), undecodable bytes replaced. A text that ends
    with a newline has one more "line" than an editor shows (the empty one after the final
    newline), exactly as upstream reports it.
    """
    hashed_text = _drop_unhashed_characters(text)
    units = _code_units(hashed_text)
    prefix_hashes = _prefix_hashes(units)
    hashes: dict[int, str] = {}
    times_seen: dict[str, int] = {}
    for line_number, start in enumerate(_line_starts(hashed_text, units), start=1):
        window_hash = prefix_hashes[start + WINDOW_UNITS] - prefix_hashes[start] * _BASE_POW_WINDOW
        hex_value = format(window_hash & _MASK_64, "x")
        count = times_seen.get(hex_value, 0) + 1
        times_seen[hex_value] = count
        hashes[line_number] = f"{hex_value}:{count}"
    return hashes


def line_hash(text: str, line: int) -> str | None:
    """Fingerprint of one 1-based line, or None when the text has no such line.

    It hashes the whole text (``:k`` depends on every earlier line), so call
    :func:`line_hashes` once instead when several lines of one file are needed.
    """
    return line_hashes(text).get(line)


def _drop_unhashed_characters(text: str) -> str:
    """The text as upstream's loop sees it: no spaces or tabs, every line ending a lone LF.

    Upstream drops a LF only when it *directly* follows a CR (a space or tab in between
    resets that, so ``"\\r \\n"`` is two line breaks), hence CRLF is folded before spaces and
    tabs go.
    """
    return text.replace("\r\n", "\n").replace("\r", "\n").replace(" ", "").replace("\t", "")


def _code_units(hashed_text: str) -> array[int]:
    """UTF-16 code units of the text, then the EOF sentinel and the zero padding.

    JS strings are UTF-16, so a character outside the BMP is two units (a surrogate pair);
    surrogatepass keeps a lone surrogate (e.g. from surrogateescape) as the one unit JS has.
    """
    units = array("H", hashed_text.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()
    units.append(_EOF_SENTINEL)
    units.extend([0] * WINDOW_UNITS)
    return units


def _prefix_hashes(units: array[int]) -> list[int]:
    """``prefix[j]`` is the hash of ``units[:j]``, so any window's hash is two lookups away.

    A plain loop with local names: in CPython it beats ``accumulate`` with a lambda.
    """
    base, mask = _BASE, _MASK_64
    prefix = [0]
    append = prefix.append
    running = 0
    for unit in units:
        running = (running * base + unit) & mask
        append(running)
    return prefix


def _line_starts(hashed_text: str, units: array[int]) -> list[int]:
    """Code-unit offsets where lines begin: 0, and just after every LF.

    A text ending in LF starts one last, empty line at the EOF sentinel, as upstream does.
    """
    lines_before_last = hashed_text.split("\n")[:-1]
    all_bmp = len(units) - 1 - WINDOW_UNITS == len(hashed_text)
    if all_bmp:
        line_lengths = [len(line) + 1 for line in lines_before_last]
    else:
        line_lengths = [_utf16_length(line) + 1 for line in lines_before_last]
    return list(accumulate(line_lengths, initial=0))


def _utf16_length(line: str) -> int:
    """Length in UTF-16 code units, where characters beyond U+FFFF count twice."""
    return len(line.encode("utf-16-le", "surrogatepass")) // 2
