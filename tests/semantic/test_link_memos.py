"""The linker's memos (``call_targets`` by evaluation, ``mro``, names' exports) give the
answers a fresh computation gives, and keep nothing read through a cycle guard."""

from __future__ import annotations

from distlint.semantic.link import _MAX_DEPTH, _PENDING, ProjectFacts, link
from tests.semantic.conftest import summary

PACKAGE = {
    "pkg": "from pkg.models import Net as Model\nfrom pkg import models\n",
    "pkg.models": """
        import torch.nn as nn

        class Base(nn.Module):
            def __init__(self): super().__init__()
            def forward(self, x): return x

        class Block(nn.Module):
            def __call__(self, x): return x

        class Net(Base):
            def __init__(self):
                super().__init__()
                self.blocks = nn.Sequential(Block(), Block())
            def forward(self, x):
                self.blocks(x)
                return super().forward(x)

        class Leaf(Base):
            pass

        def helper(): pass
        """,
    "pkg.train": """
        import torch
        import pkg
        from pkg.models import Net, helper

        def build():
            return pkg.Model()

        def step(x):
            model = build()
            model(x)
            Net()
            helper()
            helper()
            pkg.models.helper()
            torch.distributed.barrier()
        """,
}


def _facts() -> ProjectFacts:
    return link([summary(source, name) for name, source in PACKAGE.items()])


def _forget(facts: ProjectFacts) -> None:
    """Drop every evaluation and memo: what a freshly linked project has not yet asked."""
    for memo in (facts._cache, facts._results, facts._targets, facts._mros, facts._exports):
        memo.clear()


def test_memoised_call_targets_are_what_a_fresh_computation_gives() -> None:
    facts = _facts()
    asked = [
        (value, fid) for fid, s in sorted(facts.functions.items()) for value in s.calls if value
    ]
    kept = [facts.call_targets(value, fid) for value, fid in asked]
    assert facts._targets  # answered from the memo
    for (value, fid), answer in zip(asked, kept, strict=True):
        _forget(facts)
        assert facts.call_targets(value, fid) == answer
    assert {t.split(":")[1] for t in facts.edges["pkg.train:step"]} == {
        "build",
        "Net.forward",
        "Net.__init__",
        "helper",
    }
    assert facts.edges["pkg.models:Net.forward"] == (
        "pkg.models:Block.__call__",
        "pkg.models:Base.forward",
    )


def test_an_answer_read_through_a_cycle_guard_is_not_kept() -> None:
    facts = _facts()
    _forget(facts)
    base = facts.classes["pkg.models:Leaf"].bases[0]
    facts._cache[(base, None)] = _PENDING  # Leaf's base is being evaluated
    before = facts._unsettled
    assert facts.evaluate(base, None) == frozenset()
    assert facts._unsettled == before + 1
    assert facts.mro("pkg.models:Leaf") == ("pkg.models:Leaf",)
    assert facts.call_targets(("f", "pkg.models:Leaf"), "pkg.train:step") == ()
    assert "pkg.models:Leaf" not in facts._mros
    assert not facts._targets
    del facts._cache[(base, None)]  # its evaluation is done: the whole lineage now
    assert facts.mro("pkg.models:Leaf") == ("pkg.models:Leaf", "pkg.models:Base")
    assert facts.call_targets(("f", "pkg.models:Leaf"), "pkg.train:step") == (
        "pkg.models:Base.__init__",
    )
    assert facts._mros["pkg.models:Leaf"] == ("pkg.models:Leaf", "pkg.models:Base")
    assert list(facts._targets.values()) == [("pkg.models:Base.__init__",)]


def test_settled_answers_do_not_change_when_asked_again_under_a_guard() -> None:
    facts = _facts()
    lineage = facts.mro("pkg.models:Net")
    base = facts.classes["pkg.models:Net"].bases[0]
    facts._cache[(base, None)] = _PENDING
    assert facts.mro("pkg.models:Net") == lineage  # kept before: what it settled to


def test_names_resolve_alike_before_and_after_their_export_is_kept() -> None:
    facts = _facts()
    names = {
        "pkg.Model": frozenset({("class", "pkg.models:Net")}),
        "pkg.models.Net.forward": frozenset({("func", "pkg.models:Net.forward")}),
        "pkg.models.helper": frozenset({("func", "pkg.models:helper")}),
        "pkg.models": frozenset(),  # a module
        "pkg.models.missing": frozenset({("ext", "pkg.models.missing")}),  # not exported
        "torch.distributed.barrier": frozenset({("ext", "torch.distributed.barrier")}),
    }
    for dotted, meaning in names.items():
        _forget(facts)
        assert facts.resolve_global(dotted) == meaning, dotted
        assert dotted in facts._exports
        assert facts.resolve_global(dotted) == meaning, dotted
    assert facts.resolve_global("pkg.models.helper", _MAX_DEPTH + 1) == frozenset()  # cut off


def test_memos_are_not_sent_to_workers() -> None:
    facts = _facts()
    state = facts.__getstate__()
    assert state["_targets"] == state["_mros"] == state["_exports"] == {}
    assert state["_unsettled"] == 0


def test_rank_functions_reach_through_calls_defined_before_what_they_call() -> None:
    """Each pass adds one more caller: the later passes read what the first one asked."""
    facts = link(
        [
            summary(
                """
                import torch.distributed as dist

                def outermost(): return middle()
                def middle(): return pick(inner(), 1)
                def inner(): return innermost()
                def innermost(): return rank()
                def rank(): return dist.get_rank()
                def world(): return dist.get_world_size()
                def sized(): return world()
                def pick(a, b): return a
                """,
                "m",
            )
        ]
    )
    assert facts.rank_functions == {
        "m:rank",
        "m:innermost",
        "m:inner",
        "m:middle",
        "m:outermost",
    }
