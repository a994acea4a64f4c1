"""Parsing in pieces (distlint/syntax/pieces.py): the joined tree is the whole parse's, and a
large text reaches the parser in pieces of bounded size."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from distlint.syntax import pieces
from distlint.syntax.pieces import cut_points, parse_in_pieces

ROOT = Path(__file__).resolve().parents[2]

# texts where a cut could go wrong: what belongs to the block above, the clause or the
# decorated def below, strings and brackets over several lines, newlines and indentations
CASES = {
    "crlf": "x = 1\r\ny = 2\r\n\r\nz = 3\r\n\r\n# c\r\nif x:\r\n    w = 4\r\n",
    "mixed newlines": "x = 1\r\ny = 2\n\nz = 3\r\n\r\n# c\r\nw = 4\n",
    "carriage returns": "x = 1\ry = 2\r\rz = 3\r",
    "tabs in a later piece": "x = 1\n\nif a:\n\tpass\n\ny = 2\n\ndef f():\n    return 1\n",
    "two spaces, then tabs": "def f():\n  return 1\n\nx = 1\n\nif a:\n\tpass\n",
    "two spaces throughout": "def f():\n  return 1\n\nx = 1\n\nif a:\n  pass\n"
    "  if b:\n      pass\n",
    "decorators": "x = 1\n@dec\ndef f():\n    pass\n\n@dec(\n  1)\n\n# c\ndef g():\n"
    "    pass\ny = 2\n",
    "indented comment after a block": "def f():\n    x = 1\n    # in\n\n# out\ny = 2\n\nz = 3\n",
    "blank lines after a block": "def f():\n    x = 1\n\n\n\ny = 2\n",
    "whitespace-only line": "def f():\n    x = 1\n    \n\ny = 2\n",
    "clauses": "if a:\n    x = 1\nelse:\n    x = 2\ny = 3\ntry:\n    pass\n"
    "except E:\n    pass\nfinally:\n    pass\nz = 1\n",
    "no final newline": "x = 1\n\ny = 2",
    "header": '#!/usr/bin/env python\n# c\n\n"""doc\n\nx = 1\n"""\nimport os\n\n# lead\nx = 1\n',
    "strings and brackets": "s = '''\n\nfoo = 1\n'''\nt = (\n\nbar)\nu = 1\n",
    "continuation": "x = 1 + \\\n2\ny = 3\n",
    "form feed": "x = 1\n\f\ny = 2\n",
    "one-line statements": "x = 1; y = 2\nif a: b = 1\nz = 3\n",
    "column-0 comment after a class": "class A:\n    x = 1\n# c\n\nclass B:\n    pass\n",
    "nested blocks": "def f():\n    if x:\n        return 1\n        # deep\n    # mid\n"
    "# top\ny = 2\n",
    "a string the scan misreads": "x = f\"{a['''\n\ny = 1\n''']}\"\nz = 2\n",
}


# one large statement: the elements of a display at the top level are parsed in groups
DISPLAYS = {
    "list": "x = [\n    1,  # one\n    2,\n\n    # gap\n    f(a, b),\n    [3, 4],\n]\n",
    "no trailing comma": "op_db: list[Op] = [Op('a', x=1), Op('b'),\n    Op('c')]\n",
    "dicts in a dict": "d: dict = {\n    ('k', 1): {\n        (1, 2, True): (3, 4),\n"
    "        (5, 6, False): (7, 8),\n    },\n    ('j', 2): {(1,): (2,), (3,): (4,)},\n}\n",
    "spread": "d = {**a, 'b': 1, **c,\n 'd': 2}\n",
    "set": "s = {1, 2, 3,\n  4}\n",
    "parenthesized": "x = ([1, 2,\n 3])\n",
    "in a call": "foo([1, 2, 3], key={'a': 1, 'b': 2})\n",
    "crlf": "x = [\r\n    1,\r\n    2,\r\n]\r\n",
    "spaces before commas": "x = [1 , 2 ,3]\n",
    "strings": "x = ['a,b', \"c,d\", '''e,\nf''', 3]\n",
    "one-line suite": "if a: x = [1, 2, 3]\n",
    "decorator": "@dec([1, 2, 3])\ndef f():\n    pass\n",
}
# where the commas are not between elements, or the display is not at the top level
NOT_IN_GROUPS = {
    "lambdas": "x = [lambda a, b: 0, lambda c, d=1: 1]\n",
    "list comprehension": "x = [v for k, v in y]\n",
    "dict comprehension": "z = {k: v for k, v in w}\n",
    "subscript": "x = y[1, 2, 3]\n",
    "in a function": "def f():\n    return [\n        1,\n        2,\n    ]\n",
    "in a block": "if a:\n    x = [\n        1,\n   2]\n",
}


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text is cut wherever it may be."""
    monkeypatch.setattr(pieces, "PIECE_CHARS", 0)


def test_cut_texts_parse_to_the_whole_tree(tiny_pieces: None) -> None:
    cut = 0
    for name, text in CASES.items():
        cut += bool(cut_points(text, 0))
        assert parse_in_pieces(text, cst.parse_module).deep_equals(cst.parse_module(text)), name
    assert cut >= len(CASES) - 3  # almost every case is cut somewhere


def test_displays_parsed_in_groups_give_the_whole_tree(tiny_pieces: None) -> None:
    for name, text in {**DISPLAYS, **NOT_IN_GROUPS}.items():
        parsed: list[str] = []

        def parse(piece: str, parsed: list[str] = parsed) -> cst.Module:
            parsed.append(piece)
            return cst.parse_module(piece)

        assert parse_in_pieces(text, parse).deep_equals(cst.parse_module(text)), name
        joined = text not in parsed  # the whole text was parsed only when groups failed
        assert joined == (name in DISPLAYS), name


def test_the_fixtures_parse_to_the_whole_tree(tiny_pieces: None) -> None:
    paths = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    assert len(paths) > 150
    for path in paths:
        text = path.read_text(encoding="utf-8")
        try:
            whole = cst.parse_module(text)
        except cst.ParserSyntaxError:
            continue
        assert parse_in_pieces(text, cst.parse_module).deep_equals(whole), path


def test_where_texts_are_not_cut() -> None:
    text = (
        "@dec\ndef f():\n    pass\n"  # between a decorator and its def
        "if a:\n    pass\nelse:\n    pass\n"  # before a clause
        "s = '''\ny = 1\n'''\n"  # in a string
        "t = (\ny)\n"  # in brackets
        "def g():\n    x = 1\n    # c\nz = 1\n"  # after an indented comment
    )
    assert [text[c : c + 5] for c in cut_points(text, 0)] == ["if a:", "s = '", "t = (", "def g"]


def test_a_syntax_error_is_the_whole_parse_error(tiny_pieces: None) -> None:
    text = "x = 1\n\ny = (\n\nz = 2\n"
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(text)
    with pytest.raises(cst.ParserSyntaxError) as cut:
        parse_in_pieces(text, cst.parse_module)
    assert str(cut.value) == str(whole.value)


def test_a_large_text_reaches_the_parser_in_bounded_pieces() -> None:
    """What bounds the parser's memory: no piece of a text of many small statements is
    longer than twice the piece size."""
    statement = "x = call(a, b=[1, 2, 3])  # a comment\n\n"
    text = statement * (8 * pieces.PIECE_CHARS // len(statement))
    parsed: list[int] = []

    def parse(piece: str) -> cst.Module:
        parsed.append(len(piece))
        return cst.parse_module(piece)

    module = parse_in_pieces(text, parse)
    assert len(parsed) >= 4
    assert max(parsed) < 2 * pieces.PIECE_CHARS
    assert module.code == text


def _blocks(count: int) -> str:
    return "".join(
        f"@dec({i})\ndef f{i}(x):\n    if x:\n        return [\n            {i},\n        ]\n"
        f"    # c {i}\n\n\nclass C{i}:\n    y = {i}\n\n"
        for i in range(count)
    )


def test_reused_pieces_give_the_tree_of_each_edited_text() -> None:
    """An edit anywhere (top, middle, end, one that joins two statements, one that does not
    parse) gives the tree a fresh parse of the new text gives, or its error."""
    text = _blocks(60)
    middle = text.index("class C30")
    edits = [
        text,
        "import os\n" + text,
        text[:middle] + "z = 1\n" + text[middle:],
        text[:middle] + "    w = 2\n" + text[middle:],  # into the block above
        text[:middle] + "x = (\n" + text[middle:],  # does not parse
        text[:middle] + "x = ('''\n" + text[middle:] + "''')\n",  # the rest is a string
        text + "# edit\n",
        text.replace("\n", "\r\n"),
    ]
    reused = pieces.ReusedPieces(size=200)
    for index, edited in enumerate(edits):
        try:
            whole = cst.parse_module(edited)
        except cst.ParserSyntaxError as error:
            with pytest.raises(cst.ParserSyntaxError) as raised:
                reused.parse(edited)
            assert str(raised.value) == str(error), index
            continue
        assert reused.parse(edited).deep_equals(whole), index


def test_an_edit_reparses_only_the_pieces_it_changed() -> None:
    text = _blocks(60)
    reused = pieces.ReusedPieces(size=200)
    reused.parse(text)
    first = reused.parsed
    assert first >= 20  # the text was cut into many pieces
    middle = text.index("class C30")
    reused.parse(text[:middle] + "z = 1\n" + text[middle:])
    assert reused.parsed - first <= 3
    before = reused.parsed
    reused.parse(text + "# edit\n")  # the pieces of the text before the last are gone...
    assert 1 <= reused.parsed - before <= 4  # ...but for the ones that edit did not change
