"""A set of names grown until nothing more is added, for rules that follow names through a
function's statements (DL204's live names, DL123's tainted locals)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

_Item = TypeVar("_Item")


def grow_until_stable(
    found: set[str], items: Sequence[_Item], step: Callable[[_Item, set[str]], set[str]]
) -> set[str]:
    """Add ``step(item, found)`` to ``found`` for every item, again and again until a whole
    pass adds nothing (the order of ``items`` does not matter); ``found`` itself grows."""
    changed = True
    while changed:
        changed = False
        for item in items:
            new = step(item, found) - found
            if new:
                found |= new
                changed = True
    return found
