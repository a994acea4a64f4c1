"""Results between processes and in the cache: pickles that survive deep summaries.

A summary's effects nest as the code does (an ``elif`` chain of 300 branches is 300 levels of
``orelse``), and pickling recurses once per level: past Python's limit of 1,000 frames (and,
from CPython 3.12, past the C pickler's own fixed limit, whatever the stack and
``sys.setrecursionlimit``), a worker could not hand its result back and the file went
unchecked. A value that hits the limit is pickled in pieces of bounded depth instead
(:class:`_Pieces`): the common case pays nothing, and no pickle made here recurses deeper than
a piece, on any stack (a stage that timed out may run on holding the raised limit of the large
stack, under which a deep pickle on a normal stack would not stop at a RecursionError but run
off the end of the stack: SIGSEGV).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

from distlint.syntax.source import limit_raised, on_large_stack

# links followed within one piece: each is a few C frames of the pickler, well under its limit
_PIECE_HEIGHT = 100
_LEAVES = (str, bytes, int, float, complex, bool, type(None), type)


def dumps(value: object) -> bytes:
    if not limit_raised():
        try:
            return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except RecursionError:
            pass
    return pickle.dumps(_Pieces.of(value), protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> Any:
    if limit_raised():
        value = on_large_stack(pickle.loads, data)  # a deep pickle from an older version
    else:
        try:
            value = pickle.loads(data)
        except RecursionError:
            value = on_large_stack(pickle.loads, data)
    return value.load() if isinstance(value, _Pieces) else value


def send(conn: Connection, value: object) -> None:
    conn.send_bytes(dumps(value))


def receive(conn: Connection) -> Any:
    return loads(conn.recv_bytes())


class _Pieces:
    """A value too deep for one pickle, as pickles of bounded depth.

    Every object whose height (the longest chain of references below it) is a multiple of
    ``_PIECE_HEIGHT`` is pickled on its own, and the pieces above refer to it by its index.
    Heights fall by at least one a link, so no chain within a piece is longer than that. The
    deepest pieces come first: loading them in order never recurses into another piece."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    @classmethod
    def of(cls, value: object) -> _Pieces:
        heights = _heights(value)
        cuts = [obj for obj, height in heights.values() if height and height % _PIECE_HEIGHT == 0]
        cuts.sort(key=lambda obj: heights[id(obj)][1])
        if not cuts or cuts[-1] is not value:
            cuts.append(value)
        index = {id(obj): number for number, obj in enumerate(cuts)}
        pieces = []
        for number, obj in enumerate(cuts):
            buffer = io.BytesIO()
            _PiecePickler(buffer, index, number).dump(obj)
            pieces.append(buffer.getvalue())
        return cls(pieces)

    def load(self) -> object:
        loaded: list[object] = []
        for piece in self.pieces:
            loaded.append(_PieceUnpickler(io.BytesIO(piece), loaded).load())
        return loaded[-1]


class _PiecePickler(pickle.Pickler):
    """Refers to the pieces before this one (``number``) by their index; a reference to a later
    one (a cycle back up) is pickled in place, as deep as it goes (summaries have no such
    cycles). An object that is not a piece and is referred to from several pieces is copied
    into each."""

    def __init__(self, file: io.BytesIO, index: dict[int, int], number: int) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._index = index
        self._number = number

    def persistent_id(self, obj: object) -> int | None:
        found = self._index.get(id(obj))
        return found if found is not None and found < self._number else None


class _PieceUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, loaded: list[object]) -> None:
        super().__init__(file)
        self._loaded = loaded

    def persistent_load(self, pid: Any) -> object:
        return self._loaded[pid]


def _references(obj: object) -> Iterator[object]:
    """What pickling ``obj`` goes into (its items, or its attributes), leaves left out."""
    if isinstance(obj, (list, tuple, set, frozenset)):
        items: Any = obj
    elif isinstance(obj, dict):
        items = [*obj.keys(), *obj.values()]
    else:
        items = list(getattr(obj, "__dict__", {}).values())
        for klass in type(obj).__mro__:
            for slot in klass.__dict__.get("__slots__", ()):
                if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                    items.append(getattr(obj, slot))
    return (item for item in items if not isinstance(item, _LEAVES))


def _heights(value: object) -> dict[int, tuple[object, int]]:
    """Each object reachable from ``value`` (by id, with the object) and its height, found
    without recursion; a reference back to an object still being measured counts as a leaf."""
    heights: dict[int, tuple[object, int]] = {}
    open_: set[int] = set()
    # (object, None) to open it; (object, its references) to close it once they are measured
    stack: list[tuple[object, list[object] | None]] = [(value, None)]
    while stack:
        obj, references = stack.pop()
        key = id(obj)
        if references is not None:
            open_.discard(key)
            below = [heights[id(r)][1] + 1 for r in references if id(r) in heights]
            heights[key] = (obj, max(below, default=0))
        elif key not in heights and key not in open_:
            open_.add(key)
            found = list(_references(obj))
            stack.append((obj, found))
            stack.extend((r, None) for r in found)
    return heights
