"""grow_until_stable: names followed through statements until a pass adds nothing."""

from __future__ import annotations

from distlint.rules._fixed_point import grow_until_stable


def test_a_later_item_feeds_an_earlier_one_on_the_next_pass() -> None:
    # b = a; c = b, listed in the wrong order: the first pass reaches b only
    flows = [("c", "b"), ("b", "a")]
    found = {"a"}
    result = grow_until_stable(found, flows, lambda f, live: {f[0]} if f[1] in live else set())
    assert result == {"a", "b", "c"}
    assert found is result  # the callers' set grows in place


def test_nothing_reached_leaves_the_seed() -> None:
    assert grow_until_stable({"x"}, [("y", "z")], lambda f, live: set()) == {"x"}
