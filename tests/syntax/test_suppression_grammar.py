"""The one suppression grammar (distlint.syntax.suppressions.parse_comment), and that the
language server's edits and hovers read comments exactly as the engine does."""

from __future__ import annotations

import pytest

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.syntax.suppressions import parse_comment
from distlint.syntax.text import LineInfo, apply_edits, code_at, noqa_edit, split_lines

SETTINGS = FileSettings(enabled=frozenset({"DL000", "DL502"}))
LINE = 'g = torch.compile(print, backend="nvfuser")'  # DL502


def test_parse_comment_kinds_codes_and_spans() -> None:
    assert parse_comment("# just prose") is None
    blanket = parse_comment("# noqa")
    assert blanket is not None and blanket.blanket and blanket.covers("DL101") == "*"
    listed = parse_comment("# distlint: ignore[dl1, E501]")
    assert listed is not None
    assert (listed.kind, listed.blanket, listed.codes, listed.foreign) == (
        "ignore",
        False,
        ("DL1",),
        ("E501",),
    )
    assert listed.covers("DL101") == "DL1" and listed.covers("DL201") is None
    assert listed.code_spans == ((19, 22, "DL1"), (24, 28, "E501"))
    assert listed.list_span == (19, 28)
    foreign = parse_comment("# distlint: file-ignore[E501]")
    assert foreign is not None and foreign.kind == "file-ignore"
    assert not foreign.blanket and foreign.covers("DL502") is None


COMMENTS = [
    "",
    "  # noqa",
    "  # noqa: E501",
    "  # noqa: DL502",
    "  # noqa: DL5",
    "  # noqa: DL101",
    "  # distlint: ignore",
    "  # distlint: ignore[]",
    "  # distlint: ignore[E501]",
    "  # distlint: ignore[DL502]",
    "  # distlint: ignore[DL1, E501]",
    "  # type: ignore",
]


def _codes(text: str) -> list[str]:
    return [
        f.code
        for f in check_file(FileSource("import torch\n" + text + "\n", "s.py"), SETTINGS).findings
    ]


@pytest.mark.parametrize("comment", COMMENTS)
def test_the_editor_and_the_engine_agree(comment: str) -> None:
    """The editor offers a noqa edit exactly when the engine shows the finding, and the
    edited line silences it."""
    text = LINE + comment
    shown = _codes(text) == ["DL502"]
    edit = noqa_edit(LineInfo(text, split_lines(text)), 0, "DL502")
    assert (edit is not None) == shown
    if edit is not None:
        assert _codes(apply_edits(text, [edit])) == []


def test_hover_finds_codes_in_every_kind_of_list() -> None:
    assert code_at("# noqa: DL101, E501", 16) == (15, 19, "E501")
    assert code_at("# distlint: file-ignore[DL2]", 25) == (24, 27, "DL2")
    assert code_at("# distlint: ignore", 5) is None


# Texts whose suppressions the pre-check (_may_hold_suppression) must let the lexing see: one
# per spelling, line break and place; and texts it may skip (no suppression of ours).
_SCANNED = [
    "x = 1  # noqa\n",
    "x = 1  #NOQA:DL101\n",
    "x = 1  # noqa: E501, DL203\n",
    "# distlint: file-ignore\nx = 1\n",
    "x = (\n    1,  # distlint : ignore[DL5]\n)\n",
    'x = "#"  # noqa: DL203\n',
    'x = "# noqa: E501"  # noqa\n',
    "x = 1  # noqa: F401 # noqa: DL1",
    "x = 1\r\ny = 2  # noqa: DL1\r\n",
    "x = 1\ry = 2  # distlint: ignore[DL1]\rz = 3\r",
    "x = 1 # noqa: F401\r# noqa\n",
    "# noqa: F401\nx = 1  # noqa: DL101\n",
    'x = """\n# noqa\n"""\n',
    "x = 1  # noqa: F401\n",
    "x = 1  # noqa: E501, W291\r\n",
    "noqa = distlint  # no: DL1\n",
    'x = "# distlint: ignore"\n',
]


@pytest.mark.parametrize("text", _SCANNED)
def test_the_pre_check_never_hides_a_suppression(text: str, monkeypatch) -> None:
    from distlint.syntax import suppressions

    gated = suppressions.scan(text, ("DL",))
    monkeypatch.setattr(suppressions, "_may_hold_suppression", lambda *_: True)
    lexed = suppressions.scan(text, ("DL",))
    assert gated == lexed
