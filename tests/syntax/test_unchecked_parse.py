"""The parse that skips LibCST's per-node checks gives the checked parse's tree or error,
and leaves the checks on for every node built after it."""

from __future__ import annotations

import libcst as cst
import pytest

from distlint.syntax.unchecked_parse import parse_unchecked

TEXT = """\
import torch.distributed as dist
x = 1if y else(2)
@decorator(a, *b, **c)
async def f(a, /, b=1, *, c: int = 2) -> None:
    async with lock as (p, q):
        await dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return [i for i in(1, 2)if i], {k: v for k, v in d.items()}, lambda: 0
class C(Base, metaclass=M):
    '''doc'''
    def g(self): yield from (not a and b or c)
"""


def test_the_tree_is_the_checked_parse() -> None:
    unchecked = parse_unchecked(TEXT)
    assert unchecked.deep_equals(cst.parse_module(TEXT))
    assert unchecked.code == TEXT


def _count_name_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every check of a ``Name`` node from now on, by its value."""
    checked: list[str] = []
    check = cst.Name._validate

    def counting(node: cst.Name) -> None:
        checked.append(node.value)
        check(node)

    monkeypatch.setattr(cst.Name, "_validate", counting)
    return checked


def test_no_node_is_checked_during_the_parse_and_every_node_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked = _count_name_checks(monkeypatch)
    cst.parse_module("x = y\n")
    assert checked == ["x", "y"]  # this LibCST checks in the constructor: the skip has a use
    checked.clear()
    parse_unchecked("x = y\n")
    assert checked == []
    cst.Name("z")
    assert checked == ["z"]
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


@pytest.mark.parametrize(
    "text",
    [
        "x = (\n",  # the grammar's
        "x = 'a' b'b'\n",  # the node check's: str and bytes concatenated
        "x = b'a' f'b'\n",
        "x = 'a' rb'b'\n",
        "x = 'a' t'b'\n",  # str and a template string
    ],
)
def test_an_error_is_the_checked_parse_error_and_the_checks_come_back(text: str) -> None:
    with pytest.raises(Exception) as checked:
        cst.parse_module(text)
    with pytest.raises(Exception) as unchecked:
        parse_unchecked(text)
    assert type(unchecked.value) is type(checked.value)
    assert str(unchecked.value) == str(checked.value)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


@pytest.mark.parametrize(
    "text",
    [
        "f(a=1, b)\n",
        "def f(a=1, b): pass\n",
        "f(**k, *a)\n",
        "class C(x=1, B): pass\n",
        "x = ('a') 'b'\n",
        "x = 0b12\n",
        "def f(*, **k): pass\n",
        "f(a for a in b, c)\n",
        "x = u'a' 'b' f'c'\n",
        "x = 1if y else(2)\n",
    ],
)
def test_texts_near_what_the_node_checks_reject_parse_as_checked(text: str) -> None:
    """Rejected by the grammar, or accepted by both: the skipped checks decide none of them."""
    try:
        expected: object = cst.parse_module(text)
    except Exception as error:  # whichever the checked parse raises
        expected = (type(error), str(error))
    try:
        got: object = parse_unchecked(text)
    except Exception as error:
        got = (type(error), str(error))
    if isinstance(expected, cst.Module):
        assert isinstance(got, cst.Module) and got.deep_equals(expected)
    else:
        assert got == expected
