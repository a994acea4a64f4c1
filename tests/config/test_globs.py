"""Tests for distlint.config.globs: the per-directory matcher a walk uses agrees with
``matches_name``, whatever the patterns and wherever the directory is."""

from __future__ import annotations

import posixpath
import re

import pytest

from distlint.config.globs import PathPatterns

BASE = "/p/base"
PATTERN_SETS = [
    ("build", "dist", "__pycache__"),
    ("*_pb2.py", "a?c", "[!x]*.pyi", "brk[1]"),
    ("src/gen/*.py", "/top", "./docs/", "tests/**"),
    ("**/*",),
    ("x\\y", " spaced ", "deep/"),
]
DIRECTORIES = [BASE, f"{BASE}/src", f"{BASE}/src/gen", f"{BASE}/deep/src/gen", "/p", "/elsewhere"]
NAMES = ["build", "dist", "x_pb2.py", "abc", "y.pyi", "x.pyi", "brk1", "g.py", "top", "docs"]
NAMES += ["tests", "x\\y", "spaced", "deep", "base", "gen", "src"]


@pytest.mark.parametrize("patterns", PATTERN_SETS)
def test_in_directory_agrees_with_matches_name(patterns: tuple[str, ...]) -> None:
    globs = PathPatterns(patterns, BASE)
    for directory in DIRECTORIES:
        matches = globs.in_directory(directory)
        for name in NAMES:
            expected = globs.matches_name(name, posixpath.join(directory, name)) is not None
            assert matches(name) == expected, (patterns, directory, name)


def test_in_directory_matches_paths_relative_to_the_base() -> None:
    globs = PathPatterns(("src/gen/*.py", "**/*"), BASE)
    assert globs.in_directory(f"{BASE}/src/gen")("g.py")
    assert PathPatterns(("src/gen/*.py",), BASE).in_directory(f"{BASE}/x/src/gen")("g.py") is False
    assert globs.in_directory("/p")("base")  # the base itself, met in its parent: "."
    assert not globs.in_directory("/p")("other")


def test_a_broken_glob_raises_only_where_matches_name_reaches_it() -> None:
    globs = PathPatterns(("build", "[z-a]"), BASE)
    matches = globs.in_directory(BASE)
    assert matches("build")  # the first pattern decides, as in matches_name
    with pytest.raises(re.error):
        matches("other.py")
