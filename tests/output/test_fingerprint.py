"""Tests for the port of codeql-action's primaryLocationLineHash.

The expected values below are copied from github/codeql-action, not produced by this code:
``src/fingerprints.test.ts`` (test "hash", every input it has) and, for two whole files,
``src/testdata/testFile1.js``, ``testFile2.js`` with ``src/testdata/fingerprinting.expected.sarif``.
"""

from __future__ import annotations

import random
import re

import pytest

from distlint.output.fingerprint import line_hash, line_hashes

_PROSE = "Lorem ipsum dolor sit amet.\n"
_NEWLINE_EXPECTED = [
    "e9496ae3ebfced30:1",
    "fb7c023a8b9ccb3f:1",
    "ce8ba1a563dcdaca:1",
    "e20e36e16fcb0cc8:1",
    "b3edc88f2938467e:1",
    "c8e28b0b4002a3a0:1",
    "c129715d7a2bc9a3:1",
]

# (input, expected hashes for lines 1..n) from src/fingerprints.test.ts, test "hash".
UPSTREAM_VECTORS: list[tuple[str, list[str]]] = [
    ("", ["c129715d7a2bc9a3:1"]),
    (
        " a\nb\n  \t\tc\n d",
        ["271789c17abda88f:1", "54703d4cd895b18:1", "180aee12dab6264:1", "a23a3dc5e078b07b:1"],
    ),
    (
        " hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End",
        [
            "8b7cf3e952e7aeb2:1",
            "b1ae1287ec4718d9:1",
            "bff680108adb0fcc:1",
            "c6805c5e1288b612:1",
            "b86d3392aea1be30:1",
            "e6ceba753e1a442:1",
        ],
    ),
    (" hello; \t\nworld!!!\n\n\n  \t\tGreetings\n End\n", _NEWLINE_EXPECTED),
    (" hello; \t\nworld!!!\r\r\r  \t\tGreetings\r End\r", _NEWLINE_EXPECTED),
    (" hello; \t\r\nworld!!!\r\n\r\n\r\n  \t\tGreetings\r\n End\r\n", _NEWLINE_EXPECTED),
    (" hello; \t\nworld!!!\r\n\n\r  \t\tGreetings\r End\r\n", _NEWLINE_EXPECTED),
    (
        _PROSE * 10,
        [
            "a7f2ff13bc495cf2:1",
            "a7f2ff13bc495cf2:2",
            "a7f2ff13bc495cf2:3",
            "a7f2ff13bc495cf2:4",
            "a7f2ff13bc495cf2:5",
            "a7f2ff13bc495cf2:6",
            "a7f2ff1481e87703:1",
            "a9cf91f7bbf1862b:1",
            "55ec222b86bcae53:1",
            "cc97dc7b1d7d8f7b:1",
            "c129715d7a2bc9a3:1",
        ],
    ),
    (
        "x = 2\nx = 1\nprint(x)\nx = 3\nprint(x)\nx = 4\nprint(x)\n",
        [
            "e54938cc54b302f1:1",
            "bb609acbe9138d60:1",
            "1131fd5871777f34:1",
            "5c482a0f8b35ea28:1",
            "54517377da7028d2:1",
            "2c644846cb18d53e:1",
            "f1b89f20de0d133:1",
            "c129715d7a2bc9a3:1",
        ],
    ),
]

# (file contents, line, primaryLocationLineHash) from src/testdata (fingerprinting.expected.sarif).
UPSTREAM_SARIF_VECTORS = [
    ("var a = 0;\nvar b = 0;\nvar c = 0;\nvar d = 0;\n", 1, "5e4d5a9cf1294ad9:1"),
    ("var foo = 0;\nvar bar = 0;\nvar baz = 0;\nvar qux = 0;\n", 2, "f7592a95a9381ac0:1"),
]

_EMPTY_FILE_HASH = "c129715d7a2bc9a3:1"
_MASK_64 = (1 << 64) - 1


@pytest.mark.parametrize(("text", "expected"), UPSTREAM_VECTORS)
def test_upstream_hash_vectors(text: str, expected: list[str]) -> None:
    assert line_hashes(text) == dict(enumerate(expected, start=1))


@pytest.mark.parametrize(("text", "_expected"), UPSTREAM_VECTORS)
def test_line_count_matches_upstream_split(text: str, _expected: list[str]) -> None:
    # Upstream's test also asserts one hash per element of input.split(/\r\n|\r|\n/).
    assert len(line_hashes(text)) == len(re.split(r"\r\n|\r|\n", text))


@pytest.mark.parametrize(("text", "line", "expected"), UPSTREAM_SARIF_VECTORS)
def test_upstream_sarif_fingerprints(text: str, line: int, expected: str) -> None:
    assert line_hash(text, line) == expected


def test_empty_file_has_one_line_with_the_eof_hash() -> None:
    assert line_hashes("") == {1: _EMPTY_FILE_HASH}


def test_trailing_newline_adds_an_empty_last_line() -> None:
    hashes = line_hashes("x = 1\n")
    assert len(hashes) == 2
    assert hashes[2] == _EMPTY_FILE_HASH


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_crlf_and_cr_hash_like_lf(newline: str) -> None:
    lines = ["import torch", "", "    x = torch.ones(3)", "\tprint(x)", ""]
    assert line_hashes(newline.join(lines)) == line_hashes("\n".join(lines))


def test_spaces_and_tabs_do_not_count() -> None:
    assert line_hashes("def f(a, b):\n    return a + b\n") == line_hashes(
        "deff(a,b):\n\t\treturna+b\n"
    )


def test_space_between_cr_and_lf_makes_two_line_breaks() -> None:
    # Upstream only skips a LF *directly* after a CR; the space in between resets that.
    hashes = line_hashes("a\r \nb")
    assert len(hashes) == 3
    assert hashes == line_hashes("a\n\nb")


def test_repeated_identical_windows_count_up() -> None:
    long_line = "a" * 120  # longer than the 100-unit window, so each line's window is identical
    hashes = line_hashes((long_line + "\n") * 3 + "b\n")
    hex_values = {value.split(":")[0] for value in list(hashes.values())[:3]}
    assert len(hex_values) == 1
    assert [value.split(":")[1] for value in list(hashes.values())[:3]] == ["1", "2", "3"]
    assert hashes[4].endswith(":1")


def test_count_is_per_hash_value_across_the_file() -> None:
    # Two runs of identical windows separated by other text: k keeps counting the first value.
    block = ("a" * 120 + "\n") * 2
    hashes = line_hashes(block + "b" * 120 + "\n" + block)
    first_hex = hashes[1].split(":")[0]
    assert [hashes[line] for line in (1, 2, 4)] == [f"{first_hex}:{k}" for k in (1, 2, 3)]


def test_non_bmp_character_counts_as_two_utf16_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16, which is what JS charCodeAt sees.
    units = [0x61, 0xD83D, 0xDE00, 0x62, 0xFFFF] + [0] * 95
    assert line_hashes("a😀b") == {1: f"{_polynomial_hash(units):x}:1"}


def test_non_bmp_character_shifts_later_line_starts_by_two_units() -> None:
    text = "😀\n" + "x" * 150
    assert line_hashes(text) == _literal_port(text)
    # The second line's window starts after 3 units (2 for the emoji, 1 for LF).
    units = [ord("x")] * 100
    assert line_hashes(text)[2] == f"{_polynomial_hash(units):x}:1"


def test_byte_order_mark_is_hashed_like_any_character() -> None:
    assert line_hash("\ufeffx", 1) != line_hash("x", 1)


def test_line_hash_out_of_range_is_none() -> None:
    assert line_hash("a\nb", 0) is None
    assert line_hash("a\nb", 3) is None
    assert line_hash("a\nb", 2) == line_hashes("a\nb")[2]


def test_matches_a_literal_port_on_random_text() -> None:
    # The module computes prefix hashes over normalised text; this checks it against a
    # line-by-line transliteration of upstream's ring-buffer loop on awkward inputs.
    rng = random.Random(20240601)
    alphabet = [*"ab;= \t", "\r", "\n", "\r\n", "😀", "é", "\ufeff", "\uffff", "\x00"]
    texts = ["\n", "\r", "\r\n", " ", "\t\t\n", "x" * 99, "x" * 100, "x" * 101, "y\n" * 250]
    for _ in range(300):
        length = rng.choice([1, 2, 5, 30, 99, 100, 101, 180, 400])
        texts.append("".join(rng.choice(alphabet) for _ in range(length)))
    for text in texts:
        assert line_hashes(text) == _literal_port(text), repr(text)


def test_large_file_hashes_every_line() -> None:
    text = "".join(f"    value_{index} = compute({index})  # step\n" for index in range(2000))
    hashes = line_hashes(text)
    assert len(hashes) == 2001
    assert len({value.split(":")[0] for value in hashes.values()}) == 2001


def _polynomial_hash(units: list[int]) -> int:
    """The documented definition: sum of unit * 37**(99 - i) over a 100-unit window, mod 2**64."""
    assert len(units) == 100
    return sum(unit * 37 ** (99 - index) for index, unit in enumerate(units)) & _MASK_64


def _literal_port(text: str) -> dict[int, str]:
    """Statement-by-statement transliteration of upstream ``hash`` (src/fingerprints.ts)."""
    block_size, mod = 100, 37
    first_mod = pow(mod, block_size) & _MASK_64
    window = [0] * block_size
    line_numbers = [-1] * block_size
    state = {"hash": 0, "index": 0}
    hash_counts: dict[str, int] = {}
    result: dict[int, str] = {}

    def output_hash() -> None:
        index = state["index"]
        hash_value = format(state["hash"], "x")
        hash_counts[hash_value] = hash_counts.get(hash_value, 0) + 1
        result[line_numbers[index]] = f"{hash_value}:{hash_counts[hash_value]}"
        line_numbers[index] = -1

    def update_hash(current: int) -> None:
        index = state["index"]
        begin = window[index]
        window[index] = current
        state["hash"] = (mod * state["hash"] + current - first_mod * begin) & _MASK_64
        state["index"] = (index + 1) % block_size

    raw = text.encode("utf-16-le", "surrogatepass")
    code_units = [int.from_bytes(raw[i : i + 2], "little") for i in range(0, len(raw), 2)]
    line_number, line_start, prev_cr = 0, True, False
    for current in [*code_units, 65535]:
        if current in (0x20, 0x09) or (prev_cr and current == 0x0A):
            prev_cr = False
            continue
        if current == 0x0D:
            current, prev_cr = 0x0A, True
        else:
            prev_cr = False
        if line_numbers[state["index"]] != -1:
            output_hash()
        if line_start:
            line_start = False
            line_number += 1
            line_numbers[state["index"]] = line_number
        if current == 0x0A:
            line_start = True
        update_hash(current)
    for _ in range(block_size):
        if line_numbers[state["index"]] != -1:
            output_hash()
        update_hash(0)
    return result
