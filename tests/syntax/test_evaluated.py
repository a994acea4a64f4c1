"""``evaluated`` reads plain strings without ``literal_eval``: the value must be Python's."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from distlint.syntax.walker import evaluated

_STRINGS = [
    "'abc'",
    '"abc"',
    "''",
    '""',
    '""""""',
    "''''''",
    "'''a\nb'''",
    '"""it\'s "quoted" """',
    "\"'''\"",
    "'ünïcode ✓'",
    "u'prefixed'",
    "r'raw\\d'",
    "b'bytes'",
    "'tab\\there'",
    "'''crlf\r\nline'''",
]


@pytest.mark.parametrize("code", _STRINGS)
def test_evaluated_string_is_what_python_reads(code: str) -> None:
    module = cst.parse_module(f"x = {code}\n")
    statement = module.body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    node = assign.value
    assert isinstance(node, cst.SimpleString)
    assert node.value == code  # the tree keeps the text as written
    expected = ast.literal_eval(code)
    got = evaluated(node)
    assert got == expected
    assert type(got) is type(expected)
