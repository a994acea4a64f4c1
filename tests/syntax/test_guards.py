"""ByAncestor (distlint/syntax/guards.py): a test of a walk's ancestor stack, remembered for
each ancestor, answers as the test of the whole stack does, asked at every node in any order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import libcst as cst
import pytest

from distlint.rules.api.deprecated_torch_api import DeprecatedTorchApi
from distlint.syntax.guards import (
    ByAncestor,
    is_feature_guarded,
    is_version_test,
    probed_keywords,
)
from distlint.syntax.source import parse_module
from distlint.syntax.walker import walk

ROOT = Path(__file__).resolve().parents[2]

GUARDED = """\
import torch
import warnings

if torch.__version__ >= "2.1":
    x = torch.distributed.all_gather_into_tensor
elif hasattr(torch, "foo"):
    y = torch.foo()
else:
    if rank == 0:
        z = torch.bar()

try:
    from torch.distributed import _functional_collectives as funcol
except ImportError:
    funcol = None


def f(t):
    if hasattr(funcol, "all_gather_tensor_autograd"):
        return funcol.all_gather_tensor_autograd(t)
    return torch.distributed.all_gather(t)


def g(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.distributed._all_gather_base(t)


def h(t):
    return t.sum()
"""


def _stacks(module: cst.Module) -> list[list[cst.CSTNode]]:
    """The ancestor stack at every node of a walk, in walk order."""
    found: list[list[cst.CSTNode]] = []
    parents: list[cst.CSTNode] = []
    every = {kind: [lambda _node: found.append(list(parents))] for kind in _kinds(module)}
    walk(module, every, {}, parents)
    return found


def _kinds(module: cst.Module) -> set[type]:
    kinds: set[type] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        kinds.add(type(node))
        stack.extend(node.children)
    return kinds


def _check(test, module: cst.Module, order: Sequence[int] | None = None) -> int:  # type: ignore[no-untyped-def]
    stacks = _stacks(module)
    remembered = ByAncestor(test)
    positions = order if order is not None else range(len(stacks))
    true = 0
    for i in positions:
        expected = test(stacks[i])
        assert remembered(stacks[i]) == expected, [type(n).__name__ for n in stacks[i]]
        true += expected
    return true


def test_feature_guards_as_the_whole_stack_says() -> None:
    module = parse_module(GUARDED)
    assert _check(is_feature_guarded, module) > 0  # some nodes are guarded, some not
    assert _check(is_feature_guarded, module) < len(_stacks(module))


def test_a_test_of_each_node_with_its_parent() -> None:
    """DL504's excuses read a block with the statement below it (after an early-return
    guard), and a ``with`` that silences warnings: windows of two."""
    module = parse_module(GUARDED)
    excused = DeprecatedTorchApi._excused
    assert _check(excused, module) > _check(is_feature_guarded, module)  # after the guard too


def test_asked_out_of_walk_order() -> None:
    """Asked first deep in the tree, then above, then elsewhere: what is remembered for an
    ancestor holds for every stack through it."""
    module = parse_module(GUARDED)
    count = len(_stacks(module))
    order = [*range(count - 1, -1, -3), *range(0, count, 2), *range(count)]
    _check(DeprecatedTorchApi._excused, module, order)


def test_the_fixtures_of_the_rules_that_use_it() -> None:
    for path in sorted((ROOT / "fixtures").glob("DL50[14]/*.py")):
        module = parse_module(path.read_text())
        _check(is_feature_guarded, module)
        _check(DeprecatedTorchApi._excused, module)


def test_an_elif_chain_asks_each_test_a_bounded_number_of_times() -> None:
    """Linear in the chain: each ancestor is tested once, in a window of at most two."""
    chain = "".join(
        f"{'elif' if i else 'if'} rank == {i}:\n    x = torch.f(t)\n" for i in range(300)
    )
    module = parse_module(chain)
    stacks = _stacks(module)
    asked: list[int] = []

    def counted(ancestors: Sequence[cst.CSTNode]) -> bool:
        asked.append(len(ancestors))
        return is_feature_guarded(ancestors)

    remembered = ByAncestor(counted)
    for stack in stacks:
        remembered(stack)
    assert max(asked) <= 2
    assert len(asked) <= len(stacks)  # once per node at most


def test_a_dir_membership_test_is_a_feature_probe() -> None:
    """Samba's backward-compatibility alias runs only on a torch without the new name."""
    probe = cst.parse_expression('"all_gather_into_tensor" not in dir(torch.distributed)')
    assert is_version_test(probe)
    assert not is_version_test(cst.parse_expression('"x" not in names'))


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('A = "k" in inspect.signature(f).parameters\n', {"k"}),
        ('A = "k" in getfullargspec (f).args\n', {"k"}),
        ('A = "k" in inspect.getargspec(  # why\n  # more ## #\n    f).args\n', {"k"}),
        ('A = ("k" in inspect.signature\\\n(f).parameters)\n', {"k"}),
        ('A = ("k" in inspect.signature\r\n(f).parameters)\r\n', {"k"}),
        ('"""The signature of f."""\nA = "k" in dir(f)\n', set()),
        ("# signature # ####" + "#" * 60 + "\nx = 1\n", set()),
    ],
)
def test_probed_keywords_reads_every_spelling_of_a_reader_call(source: str, found: set) -> None:
    """The text gate (a reader's name, then its call's ``(``) lets each probe through."""
    assert probed_keywords(parse_module(source), source) == found
