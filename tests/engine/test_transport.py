"""Results as deep as the code they summarise cross process pipes and the cache: pickling that
hits Python's recursion limit is redone on the parser's large stack."""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from distlint.engine import transport
from distlint.engine.cache import FirstPassCache
from distlint.engine.runner import process_context


@dataclass(frozen=True)
class Nested:
    """As a summary's if-effect: one level per ``elif``."""

    orelse: tuple


def _chain(depth: int) -> Nested:
    value = Nested(())
    for _ in range(depth):
        value = Nested((value,))
    return value


def _depth(value: Nested) -> int:
    depth = 0
    while value.orelse:
        value, depth = value.orelse[0], depth + 1
    return depth


DEEP = 3_000  # levels: past what pickle can take under Python's default limit of 1,000 frames


def test_plain_pickle_fails_at_this_depth_so_the_test_means_something() -> None:
    """At Python's default limit (set here: a parse thread that timed out earlier in the run may
    still hold the large stack's raised limit; the other tests leave the limit alone, since
    lowering it under such a thread would keep on_large_stack from raising it again)."""
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)
    try:
        with pytest.raises(RecursionError):
            pickle.dumps(_chain(DEEP))
    finally:
        sys.setrecursionlimit(saved)


def test_dumps_and_loads_round_trip_a_deep_value() -> None:
    assert _depth(transport.loads(transport.dumps(_chain(DEEP)))) == DEEP


def test_a_deep_value_crosses_a_pipe() -> None:
    receiver, sender = process_context().Pipe(duplex=False)
    transport.send(sender, _chain(DEEP))
    assert _depth(transport.receive(receiver)) == DEEP


def test_the_cache_keeps_a_deep_result(tmp_path: Path) -> None:
    cache = FirstPassCache.open(tmp_path / "cache")
    assert cache is not None
    key = "ab" + "0" * 38
    cache.put(key, _Result("x.py", _chain(DEEP)))
    got = cache.get(key, "x.py")
    assert isinstance(got, _Result) and _depth(got.summary) == DEEP


@dataclass(frozen=True)
class _Result:
    path: str
    summary: Nested
