"""Indentation CPython reads and LibCST does not: rewritten as spaces, mapped back."""

from __future__ import annotations

import libcst as cst
import pytest

from distlint.syntax.indentation import expand_indentation
from distlint.syntax.positions import node_ranges
from distlint.syntax.source import parse_source

# ``if y:`` is indented by four spaces, its body by a tab and four spaces: 12 columns for
# CPython, and not an extension of the parent's indentation string for LibCST.
MIXED = "if x:\n    if y:\n\t    z = 1\n    w = 2\n"


def test_libcst_alone_rejects_what_cpython_reads() -> None:
    compile(MIXED, "mixed.py", "exec")
    with pytest.raises(cst.ParserSyntaxError):
        cst.parse_module(MIXED)


def test_a_file_without_tabs_is_left_alone() -> None:
    assert expand_indentation("if x:\n    y = 1\n") is None
    module, columns = parse_source("if x:\n\ty = 1\n")  # LibCST reads consistent tabs
    assert columns is None and module.code == "if x:\n\ty = 1\n"


def test_indentation_of_logical_lines_becomes_spaces_of_its_width() -> None:
    expanded = expand_indentation(MIXED)
    assert expanded is not None
    text, columns = expanded
    assert text == "if x:\n    if y:\n            z = 1\n    w = 2\n"
    assert columns.original(3, 12) == 5  # `z` is the sixth character as written
    assert columns.original(3, 14) == 7
    assert columns.original(3, 0) == 0
    assert columns.original(3, 8) == 1  # inside the indentation: the character covering it
    assert columns.original(2, 7) == 7  # lines not rewritten keep their columns


def test_strings_brackets_comments_and_continuations_keep_their_tabs() -> None:
    source = (
        "if x:\n"
        "    if y:\n"
        "\t    s = '''\n"
        "\tdocstring text\n"  # inside a string: its value
        "'''\n"
        "\t    t = (1,\n"
        "\t\t2)\n"  # inside brackets: not an indentation
        "\t    u = 1 + \\\n"
        "\t\t2\n"  # after a backslash: not an indentation
        "\t# a comment\n"
        "    w = 2\n"
    )
    compile(source, "mixed.py", "exec")
    expanded = expand_indentation(source)
    assert expanded is not None
    text, _ = expanded
    assert text.splitlines() == [
        "if x:",
        "    if y:",
        "            s = '''",
        "\tdocstring text",
        "'''",
        "            t = (1,",
        "\t\t2)",
        "            u = 1 + \\",
        "\t\t2",
        "\t# a comment",
        "    w = 2",
    ]


def test_a_form_feed_restarts_the_count() -> None:
    source = "if x:\n    if y:\n\t\f  \t  z = 1\n    w = 2\n"
    compile(source, "feed.py", "exec")
    expanded = expand_indentation(source)
    assert expanded is not None
    text, columns = expanded
    assert text.splitlines()[2] == "          z = 1"  # form feed: 0, two spaces, tab: 8, +2
    assert columns.original(3, 10) == 7  # `z` follows the 7 characters as written


def test_parse_source_reads_the_file_and_measures_it_as_written() -> None:
    module, columns = parse_source(MIXED)
    assert columns is not None
    outer = module.body[0]
    assert isinstance(outer, cst.If)
    inner = outer.body.body[0]
    assert isinstance(inner, cst.If)
    assignment = inner.body.body[0]
    (found,) = node_ranges(module, [assignment], columns).values()
    line = MIXED.splitlines()[found.start_line - 1]
    assert line[found.start_column : found.end_column] == "z = 1"


@pytest.mark.parametrize(
    "source",
    [
        "if x:\n\ty = 1\n        z = 2\n",  # inconsistent use of tabs and spaces
        "if x:\n    y = 1\n\tz = 2\n",
        "if x:\n    if y:\n\t    z = (\n",  # a syntax error elsewhere
    ],
)
def test_what_cpython_rejects_is_never_made_readable(source: str) -> None:
    with pytest.raises(SyntaxError):
        compile(source, "bad.py", "exec")
    with pytest.raises(cst.ParserSyntaxError):
        parse_source(source)
