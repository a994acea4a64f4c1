"""The text prefilter of sharded tests (``sharded.may_hold_sharded_test``): a file whose text
cannot hold one skips the search for sharded predicates and the test of every branch; a file
that holds one must still find it, however its names are spelt."""

from __future__ import annotations

import pytest

from distlint.semantic.sharded import may_hold_sharded_test
from tests.semantic.conftest import summary

_SAVE = """
import torch
import torch.distributed as dist
{imports}


{predicate}


def save(path, model):
    if {test}:
        dist.barrier()
    torch.save(model.state_dict(), path)
"""


def _guard(imports: str, predicate: str, test: str) -> str:
    """The name the summary gives the branch of ``save``: "sharded", "unsharded" or ""."""
    source = _SAVE.format(imports=imports, predicate=predicate, test=test)
    [branch] = [e for e in summary(source).functions["m:save"].effects if e.kind == "branch"]
    return branch.name


@pytest.mark.parametrize(
    ("imports", "predicate", "test", "guard"),
    [
        # the type only in an import, under an alias: resolved through it
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as Wrapped",
            "def is_wrapped(m):\n    return isinstance(m, Wrapped)",
            "is_wrapped(model)",
            "sharded",
        ),
        # a predicate calling a predicate, negated at the test
        (
            "from torch.distributed.fsdp import FSDPModule",
            "def a(m):\n    return isinstance(m, FSDPModule)\n\n\ndef b(m):\n    return a(m)",
            "not b(model)",
            "unsharded",
        ),
        # returns inside blocks count; a nested def's do not
        (
            "from torch.distributed.fsdp import FSDPModule",
            "def holds_shards(m):\n"
            "    def inner():\n"
            "        return m\n"
            "    try:\n"
            "        return isinstance(m, FSDPModule)\n"
            "    except TypeError:\n"
            "        return False",
            "holds_shards(model)",
            "sharded",
        ),
        # a bare ``return`` on one path: not a predicate
        (
            "from torch.distributed.fsdp import FSDPModule",
            "def holds_shards(m):\n"
            "    if m is None:\n"
            "        return\n"
            "    return isinstance(m, FSDPModule)",
            "holds_shards(model)",
            "",
        ),
        # the type's name only as an escaped string: no type name anywhere in the text
        (
            "",
            "def on_mesh(m):\n"
            "    return any(type(p).__name__ == 'D\\x54ensor' for p in m.parameters())",
            "on_mesh(model)",
            "sharded",
        ),
    ],
)
def test_a_file_with_a_sharded_test_still_finds_it(
    imports: str, predicate: str, test: str, guard: str
) -> None:
    assert _guard(imports, predicate, test) == guard


def test_the_name_only_in_a_comment_or_a_string_is_still_searched_and_not_a_test() -> None:
    """A match the prefilter lets through is analysed as before: nothing is sharded."""
    imports = "# FSDP is not used here\nNOTE = 'DTensor'"
    predicate = "def is_wrapped(m):\n    return isinstance(m, torch.nn.Module)"
    assert may_hold_sharded_test(_SAVE.format(imports=imports, predicate=predicate, test="x"))
    assert _guard(imports, predicate, "is_wrapped(model)") == ""


@pytest.mark.parametrize(
    ("text", "may"),
    [
        ("if isinstance(m, nn.Module):\n    pass\n", False),
        ("log = getLogger(__name__)\n", False),  # ``__name__`` but no escape, no type name
        ("log = getLogger(__name__)\nSEP = '\\n'\n", True),  # an escape could spell a type
        ("from torch.distributed.tensor import DTensor\n", True),
        ("from x import ShardTensor\n", True),
        ("from torch.distributed.fsdp import FSDPModule\n", True),
        ("from torch.distributed.fsdp import FullyShardedDataParallel\n", True),
    ],
)
def test_which_texts_may_hold_a_sharded_test(text: str, may: bool) -> None:
    assert may_hold_sharded_test(text) is may
