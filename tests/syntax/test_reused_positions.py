"""Positions of an edited buffer's tree that reuse its earlier trees' measures
(``ReusedPieces.positions``) are the positions a fresh measure of that tree gives."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from distlint.syntax import pieces
from distlint.syntax.positions import Positions
from distlint.syntax.walker import descendants

ROOT = Path(__file__).resolve().parents[2]


def _blocks(count: int) -> str:
    return "".join(
        f"@dec({i})\ndef f{i}(x):\n    if x:\n        return [\n            {i},\n        ]\n"
        f"    # c {i}\n\n\nclass C{i}:\n    y = f{i}(  # é {i}\n        x)\n\n"
        for i in range(count)
    )


def _edits(text: str) -> list[str]:
    """The texts of a buffer edited again and again: lines added and removed at the top, in
    the middle and at the end, a line's text changed, an edit that does not parse and the
    one that fixes it, and other newlines (another default: measured afresh)."""
    middle = text.index("\n", len(text) // 2) + 1
    quarter = text.index("\n", len(text) // 4) + 1
    edits = [
        text,
        "import os\n" + text,
        "import os\n" + text[:middle] + "z = 1\n\n" + text[middle:],
        "import os\n" + text[:middle] + "z = 1\n" + text[middle:],
        text[:quarter] + text[text.index("\n", quarter) + 1 :],  # a line removed
        text.replace("= 1", "= 1000", 1),  # longer on one line, nothing moves
        text[:middle] + "x = (\n" + text[middle:],  # does not parse
        text + "# edit\n",
        text + "# edit\n\n\ndef g():\n    return f1(2)\n",
        text.replace("\n", "\r\n"),
        text,
    ]
    return edits


def _check_every_edit(text: str) -> int:
    reused = pieces.ReusedPieces(size=200)
    measured = 0
    for edit in _edits(text):
        try:
            module = reused.parse(edit)
        except cst.ParserSyntaxError:
            continue
        positions = reused.positions(module, None)
        nodes = list(descendants(module))
        # two measures of the same tree (a first pass, then a second), as a check makes them
        for part in (nodes[1::5], nodes[2::3]):
            got = positions.ranges(part)
            assert got == Positions(module).ranges(part)
            measured += len(got)
        assert positions.ranges([module]) == Positions(module).ranges([module])
    return measured


def test_reused_measures_are_those_of_a_fresh_measure_after_each_edit() -> None:
    assert _check_every_edit(_blocks(40)) > 1_000


def test_reused_measures_of_a_real_file() -> None:
    text = (ROOT / "distlint" / "semantic" / "collect.py").read_text(encoding="utf-8")
    assert _check_every_edit(text) > 10_000


def test_an_edit_measures_again_only_what_it_changed(monkeypatch) -> None:
    """After an edit, only the statements it changed are generated again."""
    from distlint.syntax import reused_positions

    text = _blocks(40)
    reused = pieces.ReusedPieces(size=200)
    module = reused.parse(text)
    nodes = list(descendants(module))[1:]  # not the module: its own range is measured whole
    reused.positions(module, None).ranges(nodes)
    generated: list[cst.CSTNode] = []
    real = reused_positions._ReusingPositions._generate

    def counting(self, index, wanted, whole):  # type: ignore[no-untyped-def]
        generated.append(self._statements[index].node)
        return real(self, index, wanted, whole)

    monkeypatch.setattr(reused_positions._ReusingPositions, "_generate", counting)
    middle = text.index("class C20")
    edited = reused.parse(text[:middle] + "z = 1\n\n" + text[middle:])
    nodes = list(descendants(edited))[1:]
    assert reused.positions(edited, None).ranges(nodes) == Positions(edited).ranges(nodes)
    # the new statement and the others of the pieces the edit changed (a cut near it moves)
    assert 1 <= len({id(node) for node in generated}) <= 10
    assert len(edited.body) > 80
