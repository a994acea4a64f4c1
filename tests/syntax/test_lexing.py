"""The linear source scan (distlint/syntax/lexing.py): tokens as Python sees them, in linear
time."""

from __future__ import annotations

import contextlib
import time

import pytest

from distlint.syntax.lexing import tokens
from distlint.syntax.source import SourceError, check_nesting
from distlint.syntax.suppressions import scan
from distlint.syntax.text import LineInfo


def kinds(text: str, structure: bool = True) -> list[tuple[str, str]]:
    return [(k, text[s:e]) for k, s, e in tokens(text, structure=structure)]


def test_strings_comments_brackets_and_line_ends() -> None:
    text = "f(a, \"x)#\", '''doc\n(''')  # c(\nb = r\"\\\"\" \\\n+ [1]\n"
    assert kinds(text) == [
        ("open", "("),
        ("string", '"x)#"'),
        ("string", "'''doc\n('''"),
        ("close", ")"),
        ("comment", "# c("),
        ("newline", "\n"),
        ("string", 'r"\\""'),
        ("continuation", "\\\n"),
        ("open", "["),
        ("close", "]"),
        ("newline", "\n"),
    ]


def test_escaped_quotes_and_prefixes() -> None:
    text = "x = b'\\'' + '''a\\''''  + f\"{y}\" + \"\"\"q\\\"\"\"\" + 'a\\\\'"
    strings = [t for k, t in kinds(text, structure=False) if k == "string"]
    assert strings == ["b'\\''", "'''a\\''''", 'f"{y}"', '"""q\\""""', "'a\\\\'"]


def test_unterminated_strings_end_at_the_line_or_the_file() -> None:
    assert kinds("x = 'abc\ny = 1\n", structure=False) == [("string", "'abc")]
    assert kinds("x = '''abc\ny = (1\n", structure=False) == [("string", "'''abc\ny = (1\n")]


ADVERSARIAL = [
    # each unterminated ''' used to rescan to the end of the file (quadratic)
    lambda n: ")(" + "()" * 200 + "'''\n\\" * n,
    lambda n: "# noqa\n" + "x = ('''\\\n" * n,
    lambda n: "# distlint: ignore\n" + '"""' + '\\"""' * n,
    lambda n: "# noqa\n" + "'" * n,
]


@pytest.mark.parametrize("make", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_inputs_take_linear_time(make) -> None:  # type: ignore[no-untyped-def]
    """400 KB of each shape: well under a second per scan (the old regexes took minutes)."""
    text = make(400_000 // 5)
    for step in (
        lambda: list(tokens(text)),
        lambda: scan(text),
        lambda: LineInfo(text, text.splitlines()),
    ):
        started = time.perf_counter()
        step()
        assert time.perf_counter() - started < 2.0
    started = time.perf_counter()
    with contextlib.suppress(SourceError):  # deep or not: only the time is checked here
        check_nesting(text)
    assert time.perf_counter() - started < 2.0


def test_deep_nesting_is_still_found_after_strings() -> None:
    text = "x = ')' + " + "(" * 300 + "1" + ")" * 300 + "\n"
    with pytest.raises(SourceError, match="too many nested parentheses") as caught:
        check_nesting(text)
    assert caught.value.line == 1


_OPENS = "([{" * 67  # 201 deep
_CLOSES = "}])" * 67


@pytest.mark.parametrize(
    "text",
    [
        # unbalanced brackets in strings and comments around deep code: the code's brackets
        # decide (check_nesting strips strings and comments when the whole text is unbalanced)
        "x = ')' + " + _OPENS + "1" + _CLOSES + "  # 1) :)\n",
        "'''(((''' ; x = " + _OPENS + "1" + _CLOSES + "\n",
        "# ]]]]\nx = " + _OPENS + "'('" + _CLOSES + "\n",
        'x = f"{(1)}" + r"\\\\" + ' + _OPENS + "1" + _CLOSES + "\r\n",
        "x = " + "(" * 201 + "\\\n1" + ")" * 201 + "  # (\n",
    ],
)
def test_deep_code_is_found_whatever_strings_and_comments_hold(text: str) -> None:
    with pytest.raises(SourceError, match="too many nested parentheses"):
        check_nesting(text)


@pytest.mark.parametrize(
    "text",
    [
        "x = ')' * 300 + " + "(" * 150 + "1" + ")" * 150 + "  # 1) :)\n",
        '"""' + "(" * 300 + '"""\nx = ' + "[" * 190 + "]" * 190 + "\n",
        "# " + "{" * 300 + "\nx = 1\n",
    ],
)
def test_brackets_in_strings_and_comments_do_not_make_code_deep(text: str) -> None:
    check_nesting(text)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "lambda: " * 6000 + "1\n",
        "x = (" + "-\n" * 20000 + "y)\n",
        "x = " + "~" * 8000 + "y\n",
        "x = " + "a ** " * 3000 + "a\n",
    ],
    ids=["lambdas", "unary-minus-lines", "invert", "power"],
)
def test_chains_cpython_refuses_are_reported_before_parsing(text: str) -> None:
    """CPython's parser refuses these ("too complex"); LibCST parsed 6,000 lambdas in 20 s and
    6.8 GB, 20,000 unary minuses in 100 s and 21 GB. Reported at once instead."""
    started = time.perf_counter()
    with pytest.raises(SourceError, match="too complex for Python's parser"):
        check_nesting(text)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "lambda: " * 900 + "1\n",  # CPython parses it
        "x = (" + "a +\n" * 8000 + "a)\n",  # deep only for AST objects: LibCST decides
        "# " + "-" * 5000 + "\nx = 1\n",  # dashes in a comment
        "x = '" + "-" * 5000 + "'\n",
    ],
)
def test_long_runs_cpython_parses_are_left_to_the_parser(text: str) -> None:
    check_nesting(text)
