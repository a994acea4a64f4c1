"""Collection (one file's summary) and linking (the project's facts), without rules."""

from __future__ import annotations

from distlint.semantic.link import link
from tests.semantic.conftest import summary

STEP = """
import torch
from helpers import scale

@torch.compile(fullgraph=True)
def step(x):
    return scale(x)

def eager(x):
    return scale(x)
"""
HELPERS = """
def scale(x):
    return x * 2
"""


def test_collection_records_functions_exports_and_compile_roots() -> None:
    found = summary(STEP, "train")
    assert sorted(found.functions) == ["train:<module>", "train:eager", "train:step"]
    assert found.exports["scale"] == ("g", "helpers.scale")
    assert found.exports["step"] == ("f", "train:step")


def test_linking_follows_calls_across_modules_into_the_region() -> None:
    facts = link([summary(STEP, "train"), summary(HELPERS, "helpers")])
    assert facts.edges["train:step"] == ("helpers:scale",)
    assert facts.edges["train:eager"] == ("helpers:scale",)
    assert sorted(facts.regions) == ["helpers:scale", "train:step"]
    [root] = facts.roots
    assert (root.target, root.kind, root.fullgraph) == ("train:step", "decorator", True)


def test_linking_is_independent_of_the_order_of_summaries() -> None:
    one = link([summary(STEP, "train"), summary(HELPERS, "helpers")])
    other = link([summary(HELPERS, "helpers"), summary(STEP, "train")])
    assert one.edges == other.edges and one.regions == other.regions


def test_without_the_index_walk_calls_are_not_known() -> None:
    """Collection reads the calls the walk noted: the index is what links call sites."""
    import libcst as cst

    from distlint.file_settings import FileSettings
    from distlint.semantic.collect import Collector
    from distlint.syntax.parsed_file import ParsedFile

    text = STEP.lstrip()
    bare = ParsedFile("train.py", text, cst.parse_module(text), FileSettings(frozenset()), "train")
    facts = link([Collector(bare).collect(), summary(HELPERS, "helpers")])
    assert facts.edges["train:step"] == ()
