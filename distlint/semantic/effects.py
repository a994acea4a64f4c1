"""Collective effects across functions, and where ranks stop issuing the same ones.

A function's *signature* is the ordered list of collectives it issues on its main path:
explicit ones, implicit ones (a wrapped model's forward, library barriers), and those of the
project functions it calls, transitively. Collectives on an explicit sub-group are left
out (a condition on the rank is then presumed to select exactly that group), and so are
point-to-point traffic (``send``/``recv`` pair across branches by design) and group
construction (``new_group``).

A divergence is a rank-dependent branch whose two sides have different signatures, or a
rank-dependent exit (``return``/``raise``/``break``/``continue``) that skips collectives the
other ranks still issue afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TypeVar

from distlint.semantic.bindings import (
    bind,
    decided_side,
    forward_arguments,
    is_member_argument,
)
from distlint.semantic.collectives import POINT_TO_POINT
from distlint.semantic.link import ProjectFacts
from distlint.semantic.model import (
    BUFFERED_DDP_ARGUMENT,
    DDP_ARGUMENT,
    MEMBER_ARGUMENT,
    UNPROVEN_DDP_ARGUMENT,
    WRAPPED_ARGUMENT,
    Condition,
    Effect,
    FunctionSummary,
)
from distlint.semantic.rankflow import GUARD_WORDS, MAYBE, RANK, UNIFORM
from distlint.semantic.values import Options, Value

# Left out of the sequences compared: point-to-point traffic pairs across branches by design,
# and group construction is symmetric or local (``use_local_synchronization``) in practice.
_NOT_COMPARED = POINT_TO_POINT | {"new_group", "new_subgroups"}


@dataclass(frozen=True)
class Issued:
    """One collective of a signature: its kind, where it is issued, and the local step."""

    kind: str
    origin: Effect  # the collective itself (possibly in a callee)
    origin_path: str
    step: Effect  # the effect in the function being analysed that leads to it
    looped: bool = False  # issued in a ``while`` loop: how many times is not known
    # why it may not be issued at all: "cached" (in a memoised function: a cache hit runs
    # nothing), "buffers" (a DDP forward of a model not proven to own buffers), "" (it is)
    doubt: str = ""


@dataclass(frozen=True)
class RankTest:
    """Why a branch condition differs between ranks: proven (an error) or only possibly."""

    proven: bool
    why: str  # the rank source as a reader checks it: "`rank` from `dist.get_rank()`"
    why_path: str = ""
    why_span: object = None  # a (lazily measured) span, when the source has one
    # why a divergence on a proven rank-varying condition is only possible: "issued" (the
    # collective may not be issued, ``Issued.doubt`` says why), "configuration" (the paths
    # match in some configuration), "callback" (collectives in a function handed to other
    # code), "served" (one side receives broadcasts in a loop); "" when the condition itself
    # is only possibly rank-varying (or the divergence is proven)
    doubt: str = ""

    def doubted(self, doubt: str) -> RankTest:
        """This test, no longer proven because of ``doubt`` (a doubt on the condition, which
        is not proven to vary, stays the only one)."""
        return replace(self, proven=False, doubt=doubt if self.proven else self.doubt)


@dataclass(frozen=True)
class Divergence:
    """A place where ranks stop issuing the same collectives."""

    function: str
    path: str
    at: Effect  # the collective/call on one side only, or the exit
    condition: Condition
    taken: bool  # whether ``at`` runs when the condition is true
    issued: Issued  # the first collective that differs / is skipped
    kind: str  # "branch" or "exit"
    test: RankTest | None = None

    @property
    def proven(self) -> bool:
        return self.test is not None and self.test.proven

    @property
    def aborts(self) -> bool:
        """A ``raise`` on some ranks: the job fails rather than hangs (DL208)."""
        return self.kind == "exit" and self.at.name == "raise"


class _Tail:
    """``block[start:]`` without the copy: the walk hands the rest of each block to every
    branch in it, and slicing cost a flat run of n branches n^2."""

    __slots__ = ("block", "start")

    def __init__(self, block: Sequence[Effect], start: int = 0) -> None:
        self.block = block
        self.start = start

    def __bool__(self) -> bool:
        return self.start < len(self.block)


_Loop = tuple[Sequence[Effect], list[_Tail], str]  # body, after-in-loop, for/while
_Compared = tuple  # what a comparison of two paths found; its last item the first difference
_T = TypeVar("_T")
# what was found for an effect, by its id (the effect is kept, so that its id is not reused)
_Memo = dict[int, tuple[Effect, _T]]


@dataclass
class _Walk:
    """A walk over one function's effects, in one mode and binding: the function, its bound
    arguments and file; what each effect adds to its block's sequence (and whether the block
    stops there), and what the rest of a block issues from each position.

    Without what is kept, a flat run of n ``if rank == i: all_reduce(t); return`` branches
    cost n^2 in the divergence walk (each compares its staying side plus the rest of the block
    with its leaving side) and 2^n in a caller's signature (each branch's rest computed again
    by every branch before it)."""

    function: str
    bound: dict[str, object]
    path: str
    # the function whose rank branches are compared (not a callee's signature)
    compared: bool = False
    added: _Memo[tuple[list[Issued], bool]] = field(default_factory=dict)
    # (id(block), start) -> (block, how many the rest issues, first position that adds any)
    tails: dict[tuple[int, int], tuple[Sequence[Effect], int, int]] = field(default_factory=dict)


class EffectAnalysis:
    """Signatures and divergences over linked project facts (results are memoised)."""

    def __init__(self, facts: ProjectFacts) -> None:
        self.facts = facts
        self._signatures: dict[tuple[str, Options, int, bool], tuple[Issued, ...]] = {}
        # 0: a branch the call site does not decide issues its longer side ("may issue");
        # 1: its shorter side, except distributed-mode guards (see ``_sequence``); 2: its
        # shorter side, guards too (see ``_matches_on_some_path``)
        self._shortest = 0
        # True: collectives in doubt (``Issued.doubt``) are left out, so that a difference
        # found is one among collectives certainly issued
        self._certain = False
        # While a rank branch is compared: the flags its test needs to differ between ranks
        # (``Condition.varies_when``), taken as given in that function's other branches.
        self._assumed: tuple[tuple[str, bool], ...] = ()
        # What each effect adds to a sequence, by function, mode and assumption: the
        # divergence walk asks for the sequence of every rank branch's sides, and the else
        # side of an ``elif`` chain holds the rest of the chain; computed again each time, a
        # chain of n branches cost n^2 (2,400 branches: 36 s).
        self._walks: dict[tuple, _Walk] = {}
        # the first exit of a branch's sides, whether both sides always exit, whether a branch
        # or loop defines a closure that issues collectives: asked of every rank branch's sides
        self._exits: dict[tuple[int, bool], tuple[Effect, Effect | None]] = {}
        self._exiting: _Memo[bool] = {}
        self._closures: dict[tuple[str, int, bool], _Memo[bool]] = {}

    # -- rank conditions -------------------------------------------------------------------------

    def rank_test(self, cond: Condition | None, function: str) -> RankTest | None:
        """Whether ``cond`` differs between ranks: proven (lattice level rank, a project
        predicate, a rank attribute of the class), possibly (level maybe), or not at all."""
        if cond is None or cond.level == UNIFORM:
            return None  # proven the same on every rank (``rank >= 0``, a broadcast value)
        summary = self.facts.functions.get(function)
        path = summary.path if summary is not None else ""
        if cond.level == RANK:
            return RankTest(True, cond.why, path, cond.why_span)
        for dotted in cond.deferred:
            for item in self.facts.resolve_global(dotted):
                if item[0] == "func" and item[1] in self.facts.rank_functions:
                    return self._predicate_test(item[1])
        for value in cond.callees:
            for target in self.facts.call_targets(value, function):
                if target in self.facts.rank_functions:
                    return self._predicate_test(target)
        if cond.self_attrs and summary is not None and summary.class_id is not None:
            for class_id in self.facts.mro(summary.class_id):
                cls = self.facts.classes.get(class_id)
                if cls is None:
                    continue
                shared = sorted(set(cond.self_attrs) & set(cls.rank_attributes))
                if shared:
                    why = f"`self.{shared[0]}`, set from a rank in `{cls.name}`"
                    return RankTest(True, why, cls.path, cls.span)
        if cond.level == MAYBE:
            return RankTest(False, cond.why, path, cond.why_span)
        return None

    def _predicate_test(self, function_id: str) -> RankTest:
        target = self.facts.functions[function_id]
        return RankTest(True, f"`{target.name}()`, which returns a rank value", target.path)

    def is_rank_condition(self, cond: Condition | None, function: str) -> bool:
        return self.rank_test(cond, function) is not None

    # -- signatures ----------------------------------------------------------------------------

    def signature(self, function: str, arguments: Options = ()) -> tuple[Issued, ...]:
        key = (function, arguments, self._shortest, self._certain)
        cached = self._signatures.get(key)
        if cached is not None:
            return cached
        self._signatures[key] = ()  # recursion: a cycle adds nothing new
        summary = self.facts.functions.get(function)
        if summary is None:
            return ()
        walk = _Walk(function, bind(summary, arguments), summary.path)
        result = tuple(self._sequence(summary.effects, walk))
        self._signatures[key] = result
        return result

    def sequence(
        self, effects: Sequence[Effect], function: str, start: int = 0, limit: int | None = None
    ) -> list[Issued]:
        """The collectives ``effects[start:]`` issue in ``function`` (a new list: callers
        extend it); with ``limit``, only the first ``limit`` of them (or a few more).

        What each effect adds is kept (for this function and mode), so that asking for every
        side of every branch costs the size of the function. It is kept from here only; while
        a signature is computed a recursive call's signature is still empty (see
        ``signature``), so what is found then is kept for that computation alone. A signature
        asked for from here is finished before it returns and never computed again, so what
        is kept stays right."""
        key = (function, self._shortest, self._certain, self._assumed)
        walk = self._walks.get(key)
        if walk is None:
            summary = self.facts.functions[function]
            walk = _Walk(function, bind(summary, ()), summary.path, compared=True)
            self._walks[key] = walk
        return self._sequence(effects, walk, start, limit)

    def _sequence(
        self,
        effects: Sequence[Effect],
        walk: _Walk,
        start: int = 0,
        limit: int | None = None,
    ) -> list[Issued]:
        issued: list[Issued] = []
        index = start
        while index < len(effects):
            # over the effects that add nothing (a run of branches whose kept side is empty)
            index = self._tail(effects, index, walk)[1]
            if index == len(effects):
                break
            added, stops = self._added(effects, index, walk)
            issued.extend(added)
            if stops or (limit is not None and len(issued) >= limit):
                break
            index += 1
        return issued

    def _added(
        self,
        effects: Sequence[Effect],
        index: int,
        walk: _Walk,
    ) -> tuple[list[Issued], bool]:
        """What ``effects[index]`` adds to its block's sequence, and whether the block stops
        there (an exit; a branch whose side taken always exits). Kept in ``walk``."""
        effect = effects[index]
        kept = walk.added.get(id(effect))
        if kept is not None:
            return kept[1]
        function, bound, path = walk.function, walk.bound, walk.path
        issued: list[Issued] = []
        stops = False
        kind = effect.kind
        if kind == "collective":
            if (
                not effect.group
                and effect.name not in _NOT_COMPARED
                and not (
                    effect.group_param and bound.get(effect.group_param, "<unbound>") is not None
                )
            ):  # a group passed in: presumed to be the ranks that get here
                issued.append(Issued(effect.name, effect, path, effect))
        elif kind == "implicit":
            doubt = ""
            if dict(effect.arguments).get("ddp") and not self.facts.has_buffers(
                effect.callee, function
            ):
                doubt = "buffers"
            issued.append(Issued(effect.name, effect, path, effect, doubt=doubt))
        elif kind == "forward":
            passed = bound.get(effect.name)
            if passed in _WRAPPED_MODELS:
                what = f"forward of the distributed-wrapped model passed as `{effect.name}`"
                doubt = "buffers" if passed == UNPROVEN_DDP_ARGUMENT else ""
                issued.append(Issued(what, effect, path, effect, doubt=doubt))
        elif kind == "member":
            found = self._wrapped_member(effect, function)
            if found is not None:
                what, doubt = found
                issued.append(Issued(what, effect, path, effect, doubt=doubt))
        elif kind == "made":
            assert effect.callee is not None  # collect gives every "made" effect its callee
            element = dict(effect.arguments).get("element", -1)
            for target in self.facts.call_targets(effect.callee, function):
                made = self.facts.functions.get(target)
                if made is not None and element in made.returns_wrapped:
                    what = (
                        f"forward of `{effect.name}`, the distributed-wrapped model that "
                        f"`{made.name}` returns"
                    )
                    ddp = dict(made.returns_ddp)
                    doubt = ""
                    if element in ddp and not self.facts.has_buffers(ddp[element], target):
                        doubt = "buffers"
                    issued.append(Issued(what, effect, path, effect, doubt=doubt))
                    break
        elif kind == "call":
            assert effect.callee is not None  # collect gives every "call" effect its callee
            arguments = self._settle_wrapped(forward_arguments(effect.arguments, bound), function)
            for target in self.facts.call_targets(effect.callee, function):
                inner = self.signature(target, arguments)
                if inner:
                    memo = self._memoised(target)
                    issued.extend(
                        replace(i, step=effect, doubt=i.doubt or ("cached" if memo else ""))
                        for i in inner
                    )
                    break
        elif kind == "branch":
            issued, stops = self._branch_issues(effects, index, walk)
        elif kind == "loop":
            issued = self._sequence(effect.body, walk)
            if effect.name == "while":
                issued = [replace(i, looped=True) for i in issued]
        elif kind == "exit":
            stops = True  # the rest of this block does not run
        if self._certain:
            issued = [i for i in issued if not i.doubt]
        walk.added[id(effect)] = (effect, (issued, stops))
        return issued, stops

    def _branch_issues(
        self,
        effects: Sequence[Effect],
        index: int,
        walk: _Walk,
    ) -> tuple[list[Issued], bool]:
        """What the branch ``effects[index]`` adds to its block's sequence, and whether the
        block stops there (the side the call site decides always exits; or one side always
        exits and issues the same collectives as the other side and the rest of the block:
        ``if not x: barrier(); return`` then ``barrier()``, one barrier on every path)."""
        effect = effects[index]
        side = False if effect.name == "never" else decided_side(effect.cond, walk.bound)
        if side is None and effect.name in _SHARDED_SIDES and not _passes_wrapped(walk.bound):
            # a test of whether a model is sharded, and no model known to be wrapped passed
            side = _SHARDED_SIDES[effect.name]
        if side is None and self._assumed and walk.compared:
            # in the function whose rank branch is compared (not in a callee, whose names
            # are its own): a branch on a flag that branch's test fixed
            side = _assumed_side(effect.cond, dict(self._assumed))
        if side is not None:
            chosen = effect.body if side else effect.orelse
            issued = self._sequence(chosen, walk)
            return issued, self._always_exits(chosen)
        body = self._sequence(effect.body, walk)
        orelse = self._sequence(effect.orelse, walk)
        exits = (self._always_exits(effect.body), self._always_exits(effect.orelse))
        if exits[0] != exits[1]:
            leaving, staying = (body, orelse) if exits[0] else (orelse, body)
            # the rest is counted first: a list as long as ``leaving`` is built only then
            count, first = self._tail(effects, index + 1, walk)
            if len(staying) + count == len(leaving):
                staying = staying + self._sequence(effects, walk, first)
                if _same_kinds(leaving, staying):
                    return leaving, True  # every path through here issues the same collectives
        if self._shortest == 2 or (self._shortest and effect.name != "guard"):
            return (body if len(body) < len(orelse) else orelse), False
        # either side may run: keep the longer one ("may issue")
        return (body if len(body) >= len(orelse) else orelse), False

    def _tail(
        self,
        effects: Sequence[Effect],
        start: int,
        walk: _Walk,
    ) -> tuple[int, int]:
        """How many collectives ``effects[start:]`` issue, and the first position from which
        the sequence is the same (the first effect that adds any or stops the block; the end).
        Positions are settled from the last one back, each once: the branches of a flat run
        each ask for the rest after them, and recursion would go as deep as the run is long."""
        key = id(effects)
        end = start
        while end < len(effects) and (key, end) not in walk.tails:
            end += 1
        count, first = (0, len(effects)) if end == len(effects) else walk.tails[(key, end)][1:]
        for index in range(end - 1, start - 1, -1):
            added, stops = self._added(effects, index, walk)
            if stops:
                count, first = len(added), index
            elif added:
                count, first = len(added) + count, index
            walk.tails[(key, index)] = (effects, count, first)
        return count, first

    def _wrapped_member(self, effect: Effect, function: str) -> tuple[str, str] | None:
        """(what, doubt) when ``obj.<name>(...)`` is the forward of a wrapped model that the
        class of ``obj`` keeps in ``name`` (``self.model = FSDP(net)`` in its ``__init__``)."""
        assert effect.callee is not None  # collect gives every "member" effect its object
        found = self._wrapped_attribute(effect.callee, effect.name, function)
        if found is None:
            return None
        owner, doubt, _ = found
        what = (
            f"forward of `{effect.text.split('(', 1)[0]}`, the distributed-wrapped model "
            f"`{owner}` keeps in `self.{effect.name}`"
        )
        return what, doubt

    def _wrapped_attribute(
        self, obj: Value, name: str, function: str
    ) -> tuple[str, str, bool] | None:
        """(the class's name, doubt, whether DDP wraps it) when the class of ``obj`` (or a
        base class, in any file) keeps a distributed-wrapped model in ``name``; doubt
        "buffers" for a DDP model whose buffers are not proven."""
        facts = self.facts
        for item in sorted(facts.evaluate(obj, facts._class_of(function))):  # type: ignore[arg-type]
            if item[0] != "inst":
                continue
            for owner in facts.mro(item[1]):
                summary = facts.classes.get(owner)
                if summary is None or name not in summary.wrapped_attributes:
                    continue
                doubt = ""
                ddp = name in summary.ddp_attributes
                if ddp:
                    context = next(iter(summary.methods.values()), function)
                    if not facts.has_buffers(summary.ddp_attributes[name], context):
                        doubt = "buffers"
                return summary.name, doubt, ddp
        return None

    # -- divergences ---------------------------------------------------------------------------

    def divergences(self, function: str) -> list[Divergence]:
        summary = self.facts.functions[function]
        if not self._has_rank_branch(summary.effects, function):
            return []
        found: dict[int, Divergence] = {}
        partitions = self._partitions(summary)
        self._walk(summary, summary.effects, [], None, partitions, found)
        return list(found.values())

    def _walk(
        self,
        summary: FunctionSummary,
        effects: Sequence[Effect],
        after: list[_Tail],  # what runs after this block, innermost first
        loop: _Loop | None,  # the innermost loop: body, after-in-loop, for/while
        partitions: set[int],
        found: dict[int, Divergence],
        split: bool = False,  # in the else side of a rank branch (through branches only)
    ) -> None:
        """Every rank branch of ``effects``, compared (``_branch``), at any depth.

        Empty blocks are left out of ``after`` and of the loop's after-in-loop: the else side
        of an ``elif`` ends its block, and a chain of n would otherwise hand each of its n
        branches a list of up to n empty blocks to build and go through. Which branches pair
        with an enclosing rank test is passed down (``split``) rather than searched for below
        each rank branch, which went through the rest of a chain once per branch."""
        function = summary.id
        for index, effect in enumerate(effects):
            rest = _Tail(effects, index + 1)
            if effect.kind == "branch":
                test = self.rank_test(effect.cond, function)
                if effect.name == "never":
                    test = None  # never runs in a job
                if test is not None:
                    # ``if rank == 0: ... else: if rank > 0: ...`` (an elif, also under a
                    # guard): compared as one if/else with the outer test, since the inner
                    # test's empty else is reached by no rank (or only by ranks the outer test
                    # split off)
                    paired = id(effect) in partitions or (split and not effect.orelse)
                    with self._assuming(effect.cond):
                        self._branch(summary, effect, test, rest, after, loop, paired, found)
                inner_after = [rest, *after] if rest else after
                inner_loop = loop
                if loop is not None and rest:
                    inner_loop = (loop[0], [rest, *loop[1]], loop[2])
                self._walk(summary, effect.body, inner_after, inner_loop, partitions, found, split)
                orelse_split = split or test is not None
                self._walk(
                    summary, effect.orelse, inner_after, inner_loop, partitions, found, orelse_split
                )
            elif effect.kind == "loop":
                inner: _Loop = (effect.body, [], effect.name or "for")
                inner_after = [rest, *after] if rest else after
                self._walk(summary, effect.body, inner_after, inner, partitions, found)

    def _has_rank_branch(self, effects: Sequence[Effect], function: str) -> bool:
        """Whether any branch of ``effects`` (at any depth) tests a rank condition: a gate
        before the divergence walk, which only ever reports at such a branch (``_branch``), so
        a function without one has none (torch: 54,000 functions, a few hundred with one).

        It asks ``rank_test`` of the same branches in the same (walk) order as ``_partitions``
        would before its first rank branch, and stops at that one: the project facts' memos
        (``evaluate``'s cycle guard) fill in the same order as without the gate."""
        for effect in effects:
            if effect.kind == "branch":
                cond = effect.cond
                if (
                    cond is not None
                    and cond.level != UNIFORM
                    and self.rank_test(cond, function) is not None
                ):
                    return True
                if effect.body and self._has_rank_branch(effect.body, function):
                    return True
                if effect.orelse and self._has_rank_branch(effect.orelse, function):
                    return True
            elif (
                effect.kind == "loop"
                and effect.body
                and self._has_rank_branch(effect.body, function)
            ):
                return True
        return False

    def _partitions(self, summary: FunctionSummary) -> set[int]:
        """Rank branches that split the ranks between them (YOLOv5's
        ``torch_distributed_zero_first``: ``if rank != 0: barrier()`` ... ``if rank == 0:
        barrier()``, also nested at different depths, or split between a context manager's
        ``__enter__`` and ``__exit__``): one-sided branches on the same rank variable that issue
        the same collectives, so every rank issues them once. Heuristic: the conditions are
        not proven complementary."""
        own = self._one_sided(summary.effects, summary.id)
        if not own:
            return set()
        candidates = list(own)
        partner = _CONTEXT_PARTNERS.get(summary.name)
        if partner is not None and summary.class_id is not None:
            partner_id = self.facts.lookup_method(summary.class_id, partner)
            if partner_id is not None and partner_id in self.facts.functions:
                other_summary = self.facts.functions[partner_id]
                candidates.extend(self._one_sided(other_summary.effects, partner_id))
        # Branches with the same collectives and the same condition pair alike: compare each
        # such group once (a function of 800 ``if rank == i % 3:`` branches has 3 groups).
        groups: dict[tuple, list[Effect]] = {}
        for effect, kinds, names in candidates:
            cond = effect.cond
            key = (kinds, names, cond.text if cond else None, cond.why if cond else None)
            groups.setdefault(key, []).append(effect)
        keys = list(groups)
        # Two conditions read as opposite only when one of them has a negated part or both
        # test a parity (``_opposite``): the other pairs are not compared, so that an ``elif``
        # chain of n ``rank == i`` tests costs n, not n^2 comparisons.
        marks = [_marks(groups[key][0].cond) for key in keys]
        negated = [i for i, (negation, _) in enumerate(marks) if negation]
        parities = [i for i, (negation, parity) in enumerate(marks) if parity and not negation]
        paired: set[int] = set()
        for i, key in enumerate(keys):
            first = groups[key]
            if len(first) > 1 and _opposite(first[0].cond, first[1].cond):
                paired.update(id(effect) for effect in first)
            if marks[i][0]:
                later = keys[i + 1 :]
            else:
                later = [keys[j] for j in negated if j > i]
                if marks[i][1]:
                    later.extend(keys[j] for j in parities if j > i)
            for other in later:
                if key[0] != other[0] or not key[1] & other[1]:
                    continue
                second = groups[other]
                if _opposite(first[0].cond, second[0].cond):
                    paired.update(id(effect) for effect in (*first, *second))
        return paired

    def _one_sided(
        self, effects: Sequence[Effect], function: str
    ) -> list[tuple[Effect, tuple[str, ...], frozenset[str]]]:
        """Rank branches (at any depth) with collectives on one side only."""
        found = []
        for effect in effects:
            if effect.kind == "branch":
                if self.is_rank_condition(effect.cond, function):
                    body = tuple(i.kind for i in self.sequence(effect.body, function))
                    orelse = tuple(i.kind for i in self.sequence(effect.orelse, function))
                    cond = effect.cond
                    if bool(body) != bool(orelse) and cond is not None and cond.names:
                        found.append((effect, body or orelse, _rank_names(cond)))
                found.extend(self._one_sided(effect.body, function))
                found.extend(self._one_sided(effect.orelse, function))
            elif effect.kind == "loop":
                found.extend(self._one_sided(effect.body, function))
        return found

    @contextmanager
    def _assuming(self, cond: Condition | None) -> Iterator[None]:
        """While a rank branch on ``cond`` is compared: the flags its test needs to differ
        between ranks (``Condition.varies_when``) taken as given."""
        saved = self._assumed
        self._assumed = cond.varies_when if cond is not None else ()
        try:
            yield
        finally:
            self._assumed = saved

    def _branch(
        self,
        summary: FunctionSummary,
        branch: Effect,
        test: RankTest,
        rest: _Tail,
        after: list[_Tail],
        loop: _Loop | None,
        paired: bool,  # pairs with other rank branches (see ``_partitions``, ``_walk``)
        found: dict[int, Divergence],
    ) -> None:
        """Compare what the ranks on either side of a rank branch issue until they meet again
        (called under ``_assuming(branch.cond)``).

        Without an exit the sides meet right after the branch: compare the sides. A side that
        leaves (``return``/``raise``: the function; ``continue``: the iteration; ``break``:
        the loop) meets the other side later, so compare what it issued before leaving with
        what the other side issues until that point.
        """
        in_loop = loop is not None
        body_exit = self._first_exit(branch.body, in_loop)
        orelse_exit = self._first_exit(branch.orelse, in_loop)
        if body_exit is None and orelse_exit is None:
            if not paired:
                self._compare(summary, branch, test, found)
            return
        if body_exit is not None and orelse_exit is not None:
            if body_exit.name == orelse_exit.name:
                self._compare(summary, branch, test, found)
            return
        exit_effect: Effect | None
        if body_exit is not None:
            side, other, exit_effect, taken = branch.body, branch.orelse, body_exit, True
        else:
            side, other, exit_effect, taken = branch.orelse, branch.body, orelse_exit, False
        assert exit_effect is not None and branch.cond is not None
        if self._always_exits(other) or exit_effect.span is None:
            return
        function = summary.id
        name = exit_effect.name
        if name in ("break", "continue") and loop is None:
            return

        def compare() -> tuple[list[Issued], int, list[Issued], int, int | None]:
            leaving, issued_leaving, staying, own = self._paths(
                side, other, name, rest, after, loop, function
            )
            return leaving, issued_leaving, staying, own, _first_difference(leaving, staying)

        found_in_doubt = self._certain_first(compare)
        if found_in_doubt is None:
            return
        (leaving, issued_leaving, staying, own, position), certain = found_in_doubt
        assert position is not None
        if not certain:
            test = test.doubted("issued")
        elif self._certainly(
            self._matches_on_some_path, lambda: compare()[4], _negates_a_guard(branch.cond)
        ):
            test = test.doubted("configuration")
        if position < issued_leaving:  # the leaving ranks issue one the others do not
            at, issued, when, kind = leaving[position].step, leaving[position], taken, "branch"
        elif position < own:  # the other side issues one of its own
            at, issued, when, kind = staying[position].step, staying[position], not taken, "branch"
        elif position < len(staying):  # the exit skips one the others still issue
            at, issued, when, kind = exit_effect, staying[position], taken, "exit"
        else:
            return
        found.setdefault(
            id(at), Divergence(summary.id, summary.path, at, branch.cond, when, issued, kind, test)
        )

    def _paths(
        self,
        side: Sequence[Effect],
        other: Sequence[Effect],
        name: str,
        rest: _Tail,
        after: list[_Tail],
        loop: _Loop | None,
        function: str,
    ) -> tuple[list[Issued], int, list[Issued], int]:
        """What the ranks that leave by ``name`` issue (and how many of those before they
        leave), and what the others issue until they meet again (and how many of those
        their own side issues)."""
        leaving = self.sequence(side, function)
        before_leaving = len(leaving)
        if name in ("return", "raise"):
            later_blocks = [rest, *after]
            if loop is not None:
                later_blocks.append(_Tail(loop[0]))  # the other ranks go on looping
        elif name == "break":
            assert loop is not None
            later_blocks = [rest, *loop[1], _Tail(loop[0])]
        else:  # continue
            assert loop is not None
            later_blocks = [rest, *loop[1]]
        staying = self.sequence(other, function)
        own = len(staying)
        for tail in later_blocks:
            if len(staying) > len(leaving):
                break  # enough to tell the two paths apart
            wanted = len(leaving) + 1 - len(staying)
            staying.extend(self.sequence(tail.block, function, tail.start, wanted))
        if name == "continue" and loop is not None and loop[2] == "while":
            # a retry: the leaving ranks start the loop body again and meet the others there
            wanted = max(len(staying), 1)
            leaving = (leaving + self.sequence(loop[0], function, 0, wanted))[:wanted]
        return leaving, before_leaving, staying, own

    def _first_exit(self, effects: Sequence[Effect], in_loop: bool) -> Effect | None:
        """The first exit that leaves this block (loops keep their own break/continue)."""
        for effect in effects:
            if effect.kind == "exit":
                if effect.name in ("return", "raise") or in_loop:
                    return effect
                continue
            if effect.kind == "branch":
                key = (id(effect), in_loop)
                kept = self._exits.get(key)
                if kept is None:
                    sides = (
                        (effect.orelse,) if effect.name == "never" else (effect.body, effect.orelse)
                    )
                    first = None
                    for side in sides:
                        first = self._first_exit(side, in_loop)
                        if first is not None:
                            break
                    kept = self._exits[key] = (effect, first)
                if kept[1] is not None:
                    return kept[1]
            elif effect.kind == "loop":
                for inner in effect.body:
                    if inner.kind == "exit" and inner.name in ("return", "raise"):
                        return inner
        return None

    def _always_exits(self, effects: Sequence[Effect]) -> bool:
        for effect in effects:
            if effect.kind == "exit":
                return True
            if effect.kind == "branch":
                kept = self._exiting.get(id(effect))
                if kept is None:
                    both = self._always_exits(effect.body) and self._always_exits(effect.orelse)
                    kept = self._exiting[id(effect)] = (effect, both)
                if kept[1]:
                    return True
        return False

    def _settle_wrapped(self, arguments: Options, function: str) -> Options:
        """A call's arguments with each DDP model of the caller (``DDP_ARGUMENT`` + name)
        replaced by whether its forward is proven to broadcast buffers, and each object's
        attribute (``MEMBER_ARGUMENT`` + text) by whether it is a wrapped model."""
        if not any(
            is_member_argument(v) or (isinstance(v, str) and v.startswith(DDP_ARGUMENT))
            for _, v in arguments
        ):
            return arguments
        summary = self.facts.functions[function]
        settled: list[tuple[str, object]] = []
        for key, value in arguments:
            if isinstance(value, str) and value.startswith(DDP_ARGUMENT):
                module = summary.ddp_models.get(value[len(DDP_ARGUMENT) :])
                proven = self.facts.has_buffers(module, function)
                value = BUFFERED_DDP_ARGUMENT if proven else UNPROVEN_DDP_ARGUMENT
            elif is_member_argument(value):
                obj, name = summary.passed_members[value[len(MEMBER_ARGUMENT) :]]
                found = self._wrapped_attribute(obj, name, function)
                if found is None:
                    value = "<expr>"
                elif found[1]:
                    value = UNPROVEN_DDP_ARGUMENT
                else:
                    value = BUFFERED_DDP_ARGUMENT if found[2] else WRAPPED_ARGUMENT
            settled.append((key, value))
        return tuple(settled)

    def _memoised(self, function_id: str) -> bool:
        """Whether a function is wrapped in ``functools.cache``/``lru_cache``: a call that hits
        the cache issues none of its collectives."""
        summary = self.facts.functions.get(function_id)
        return summary is not None and any(
            d[0] == "g" and d[1] in _MEMOISERS for d in summary.decorators
        )

    def _defines_collectives(self, effects: Sequence[Effect], function: str) -> bool:
        """Whether a block defines a closure that issues collectives, or calls a function that
        hands one to another call (``button.click(fn=generate)`` in a served demo): given to a
        library (``study.optimize(objective)``), it runs where the analysis cannot follow."""
        for effect in effects:
            if effect.kind == "call" and effect.callee is not None:
                for target in self.facts.call_targets(effect.callee, function):
                    if self._hands_out_collectives(target):
                        return True
            if effect.kind == "def" and effect.callee is not None:
                targets = (
                    (effect.callee[1],)
                    if effect.callee[0] == "f"
                    else self.facts.call_targets(effect.callee, function)
                )
                if any(self.signature(target) for target in targets):
                    return True
            elif effect.kind in ("branch", "loop"):
                memo = self._closures.setdefault((function, self._shortest, self._certain), {})
                kept = memo.get(id(effect))
                if kept is None:
                    inside = self._defines_collectives(
                        effect.body, function
                    ) or self._defines_collectives(effect.orelse, function)
                    kept = memo[id(effect)] = (effect, inside)
                if kept[1]:
                    return True
        return False

    def _hands_out_collectives(self, function: str) -> bool:
        """Whether ``function`` passes a project function that issues collectives to a call
        (a callback registration)."""
        summary = self.facts.functions.get(function)
        if summary is None:
            return False
        for _, passed in summary.passes:
            for _, value in passed:
                if value[0] in ("param", "call"):  # a caller's argument; an object passed
                    continue
                for target in self.facts.call_targets(value, function):
                    if target != function and self.signature(target):
                        return True
        return False

    def _certain_first(self, compare: Callable[[], _Compared]) -> tuple[_Compared, bool] | None:
        """The comparison among collectives certainly issued, if the paths differ there (and
        True); else the comparison with those in doubt too, if they differ there (and False:
        only possible, as a memoised helper or a DDP forward of a model without proven
        buffers may issue nothing); else None."""
        certain = self._certainly(compare)
        if certain[-1] is not None:
            return certain, True
        loose = compare()
        return (loose, False) if loose[-1] is not None else None

    def _certainly(self, run: Callable[..., _T], *args: object) -> _T:
        """``run(*args)`` with collectives in doubt left out."""
        saved, self._certain = self._certain, True
        try:
            return run(*args)
        finally:
            self._certain = saved

    def _matches_on_some_path(
        self, difference: Callable[[], int | None], guards: bool = False
    ) -> bool:
        """Whether the two paths issue the same collectives when every branch that nothing
        decides takes its shorter side: the divergence then needs a particular configuration
        (a backend, a flag) and is only possible, not proven."""
        self._shortest = 2 if guards else 1
        try:
            return difference() is None
        finally:
            self._shortest = 0

    def _compare(
        self, summary: FunctionSummary, branch: Effect, test: RankTest, found: dict
    ) -> None:
        function = summary.id

        def compare() -> tuple[list[Issued], list[Issued], int | None]:
            body = self.sequence(branch.body, function)
            orelse = self.sequence(branch.orelse, function)
            return body, orelse, _first_difference(body, orelse)

        found_in_doubt = self._certain_first(compare)
        if found_in_doubt is None:
            return
        (body, orelse, position), certain = found_in_doubt
        assert position is not None
        doubt = ""
        if not certain:
            doubt = "issued"  # the differing collective's own doubt (``Issued.doubt``)
        elif self._defines_collectives(branch.body, function) or self._defines_collectives(
            branch.orelse, function
        ):
            doubt = "callback"
        elif _receive_loop(body, orelse):
            doubt = "served"
        elif self._certainly(
            self._matches_on_some_path, lambda: compare()[2], _negates_a_guard(branch.cond)
        ):
            doubt = "configuration"
        if doubt:
            test = test.doubted(doubt)
        taken = position < len(body)
        issued = body[position] if taken else orelse[position]
        assert branch.cond is not None
        found.setdefault(
            id(issued.step),
            Divergence(
                summary.id,
                summary.path,
                issued.step,
                branch.cond,
                taken,
                issued,
                "branch",
                test,
            ),
        )


# Argument values that are a distributed-wrapped model: calling one is its forward.
_WRAPPED_MODELS = frozenset({WRAPPED_ARGUMENT, UNPROVEN_DDP_ARGUMENT, BUFFERED_DDP_ARGUMENT})
# The side a test of whether a model is sharded (``collect``'s "sharded"/"unsharded" branch
# names) takes for an unsharded model.
_SHARDED_SIDES = {"sharded": False, "unsharded": True}


def _passes_wrapped(bound: dict[str, object]) -> bool:
    """Whether a model known to be distributed-wrapped, other than a DDP one, is passed: an
    FSDP or ``fully_shard`` model, or one whose wrapper is not known. Only then may a test of
    whether a model is sharded hold (a DDP model is not sharded)."""
    return WRAPPED_ARGUMENT in bound.values()


def _assumed_side(cond: Condition | None, facts: dict[str, bool]) -> bool | None:
    """Which side a test of flags takes when those flags have the truth ``facts`` gives:
    ``if info.broadcast_from_rank0:``, ``if a or b:`` (tests of truth only: that a flag is
    true says nothing of what it equals)."""
    if cond is None:
        return None
    if cond.junction:
        sides = [
            facts.get(name) if operator == "truthy" else None for name, operator, _ in cond.parts
        ]
        wanted = cond.junction == "or"
        if wanted in sides:
            outcome = wanted
        elif None in sides:
            return None
        else:
            outcome = not wanted
        return outcome != cond.negated
    if cond.param is None or cond.compare is not None or cond.param not in facts:
        return None
    return facts[cond.param] != cond.negated


_CONTEXT_PARTNERS = {
    "__enter__": "__exit__",
    "__exit__": "__enter__",
    "__aenter__": "__aexit__",
    "__aexit__": "__aenter__",
}
# Names that say nothing about which ranks a condition selects.
_NEUTRAL_NAMES = frozenset({"dist", "torch", "os", "self", "env", "int", "str", "len"})


_NEGATION = re.compile(r"!=|\bnot\b|>\s*0\b")


_CONNECTIVES = re.compile(r"\s+(?:and|or)\s+")


def _opposite(first: Condition | None, second: Condition | None) -> bool:
    """Whether two rank tests read as "this rank" and "not this rank" (``rank != 0``,
    ``not is_first``, ``rank not in (-1, 0)``, ``rank > 0`` against ``rank == 0``), once the
    parts they share (``and not evaluate``) are set aside: complementary pairs differ in this."""
    if first is None or second is None:
        return False
    parts = [set(_CONNECTIVES.split(" ".join(c.text.split()))) for c in (first, second)]
    shared = parts[0] & parts[1]
    own = [p - shared for p in parts]
    sources = {c.why for c in (first, second) if c.why}
    if len(sources) == 1:  # the parts that test the rank itself, when both read one source
        (source,) = sources
        testing = [{p for p in mine if source in p} for mine in own]
        if all(testing):
            own = testing
    if _parities(own[0], own[1]):
        return True
    negated = [any(_NEGATION.search(part) for part in mine) for mine in own]
    return negated[0] != negated[1]


def _marks(cond: Condition | None) -> tuple[bool, bool]:
    """Whether a part of ``cond`` reads as negated, and whether one tests a parity: what
    :func:`_opposite` needs of one of two conditions (a negation), or of both (parities)."""
    if cond is None:
        return False, False
    parts = _CONNECTIVES.split(" ".join(cond.text.split()))
    return (
        any(_NEGATION.search(part) for part in parts),
        any(_PARITY.match(part) for part in parts),
    )


def _negates_a_guard(cond: Condition | None) -> bool:
    """Whether a rank condition also requires a distributed-mode flag to be false (``not
    args.fsdp and rank != 0``): the ranks it selects are selected only in configurations where
    the flag is off, and collectives under ``if args.fsdp:`` (taken as issued on every rank of
    a distributed job) may then not be issued at all, so the guards are not assumed taken."""
    if cond is None:
        return False
    parts = _CONNECTIVES.split(" ".join(cond.text.split()))
    if len(parts) < 2 or re.search(r"\bor\b", cond.text):
        return False
    for part in parts:
        part = part.strip("() ")
        negated = _NOT_FLAG.match(part)
        if negated is not None and (not cond.why or cond.why not in part):
            words = negated["flag"].lower()
            if any(word in words for word in GUARD_WORDS):
                return True
    return False


# ``not args.fsdp``, ``not getattr(args, "fsdp", False)``, ``not use_fsdp``
_NOT_FLAG = re.compile(r"^not\s+(?P<flag>[\w.]+(?:\([^()]*\))?)$")


_PARITY = re.compile(r"^(?P<value>.+?)\s*%\s*2\s*==\s*(?P<residue>[01])$")


def _parities(first: set[str], second: set[str]) -> bool:
    """``rank % 2 == 0`` against ``rank % 2 == 1`` (next to a world-size guard): even and odd
    ranks, every rank once."""
    odd_even = [
        {(m["value"], m["residue"]) for part in side if (m := _PARITY.match(part))}
        for side in (first, second)
    ]
    return any(
        value == other and residue != other_residue
        for value, residue in odd_even[0]
        for other, other_residue in odd_even[1]
    )


def _rank_names(cond: Condition) -> frozenset[str]:
    """What a rank condition reads, for pairing complementary branches (``rank``,
    ``self._first``, ``get_rank``): the names and attributes, less module aliases."""
    found = set(cond.names) - _NEUTRAL_NAMES
    if cond.why:
        found.add(cond.why)
    return frozenset(found)


_MEMOISERS = frozenset({"functools.cache", "functools.lru_cache"})
_RECEIVES = frozenset({"broadcast", "broadcast_object_list", "funcol.broadcast"})


def _receive_loop(first: Sequence[Issued], second: Sequence[Issued]) -> bool:
    """One side issues nothing, the other only receives broadcasts in a ``while`` loop: the
    other ranks serve a rank-0 loop whose sends the analysis cannot see (a server's request
    callbacks)."""
    if bool(first) == bool(second):
        return False
    loop = first or second
    return all(i.looped and i.kind in _RECEIVES for i in loop)


def _same_kinds(first: Sequence[Issued], second: Sequence[Issued]) -> bool:
    """The same collectives in the same order, none in a ``while`` loop or in doubt."""
    return len(first) == len(second) and all(
        a.kind == b.kind and not (a.looped or b.looped or a.doubt or b.doubt)
        for a, b in zip(first, second, strict=True)
    )


def _first_difference(first: Sequence[Issued], second: Sequence[Issued]) -> int | None:
    """The first position where two collective sequences differ in kind, or None.

    Comparison stops at a collective issued in a ``while`` loop when both sides issue
    collectives: how often the loop runs is not known (a rank-0 server loop and the other
    ranks' receive loop pair up at run time). A side that issues nothing still differs.
    """
    for position, (a, b) in enumerate(zip(first, second, strict=False)):
        if a.looped or b.looped:
            return None
        if a.kind != b.kind:
            return position
    if len(first) == len(second):
        return None
    shorter = min(len(first), len(second))
    longer = first if len(first) > len(second) else second
    if shorter and longer[shorter].looped:
        return None  # both sides talk; the loop's count decides
    return shorter


def project_divergences(facts: ProjectFacts, measured: bool = True) -> list[Divergence]:
    """Every divergence of the project, in function order, computed once for the rules that
    report them (DL201 errors, DL208 aborts) and for the explain-ranks listing; measured
    (:func:`measure_divergences`) unless ``measured`` is false: the rules measure only the
    ones they report, since measuring the others parsed files again in the parent of a
    parallel run that no finding points into."""
    found = facts.derived.get("divergences")
    if found is None:
        analysis = EffectAnalysis(facts)
        found = [d for f in sorted(facts.functions) for d in analysis.divergences(f)]
        facts.derived["divergences"] = found
    assert isinstance(found, list)
    if measured:
        measure_divergences(facts, found)
    return found


def measure_divergences(facts: ProjectFacts, divergences: Iterable[Divergence]) -> None:
    """Measure the places a divergence's messages show (its step, condition, collective and
    rank source), in one go (those measured already are left alone)."""
    facts.resolve(
        span
        for d in divergences
        for span in (
            d.at.span,
            d.condition.span,
            d.issued.origin.span,
            d.test.why_span if d.test is not None else None,
        )
        if span is not None
    )
