"""Collective effects across functions, and where ranks stop issuing the same ones.

A function's *signature* is the ordered list of collectives it issues on its main path:
explicit ones, implicit ones (a wrapped model's forward, library barriers), and those of the
project functions it calls, transitively. Collectives on an explicit sub-group are left
out (a condition on the rank is then presumed to select exactly that group), and so is
point-to-point traffic (``send``/``recv`` pair across branches by design).

A divergence is a rank-dependent branch whose two sides have different signatures, or a
rank-dependent exit (``return``/``raise``/``break``/``continue``) that skips collectives the
other ranks still issue afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from distlint.semantic.collectives import POINT_TO_POINT
from distlint.semantic.link import ProjectFacts
from distlint.semantic.model import Condition, Effect, FunctionSummary, Options


@dataclass(frozen=True)
class Issued:
    """One collective of a signature: its kind, where it is issued, and the local step."""

    kind: str
    origin: Effect  # the collective itself (possibly in a callee)
    origin_path: str
    step: Effect  # the effect in the function being analysed that leads to it


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


class EffectAnalysis:
    """Signatures and divergences over linked project facts (results are memoised)."""

    def __init__(self, facts: ProjectFacts) -> None:
        self.facts = facts
        self._signatures: dict[tuple[str, Options], tuple[Issued, ...]] = {}

    # -- rank conditions -------------------------------------------------------------------------

    def is_rank_condition(self, cond: Condition | None, function: str) -> bool:
        if cond is None:
            return False
        if cond.rank_local:
            return True
        if set(cond.self_attrs) & self.facts.rank_attributes:
            return True
        return any(
            target in self.facts.rank_functions
            for value in cond.callees
            for target in self.facts.call_targets(value, function)
        )

    # -- signatures ----------------------------------------------------------------------------

    def signature(self, function: str, arguments: Options = ()) -> tuple[Issued, ...]:
        key = (function, arguments)
        cached = self._signatures.get(key)
        if cached is not None:
            return cached
        self._signatures[key] = ()  # recursion: a cycle adds nothing new
        summary = self.facts.functions.get(function)
        if summary is None:
            return ()
        bound = _bind(summary, arguments)
        result = tuple(self._sequence(summary.effects, function, bound, summary.path))
        self._signatures[key] = result
        return result

    def sequence(self, effects: Sequence[Effect], function: str) -> list[Issued]:
        summary = self.facts.functions[function]
        return self._sequence(effects, function, _bind(summary, ()), summary.path)

    def _sequence(
        self,
        effects: Sequence[Effect],
        function: str,
        bound: dict[str, object],
        path: str,
    ) -> list[Issued]:
        issued: list[Issued] = []
        for effect in effects:
            kind = effect.kind
            if kind == "collective":
                if effect.group or effect.name in POINT_TO_POINT:
                    continue
                issued.append(Issued(effect.name, effect, path, effect))
            elif kind == "implicit":
                issued.append(Issued(effect.name, effect, path, effect))
            elif kind == "call":
                for target in self.facts.call_targets(effect.callee, function):
                    inner = self.signature(target, effect.arguments)
                    if inner:
                        issued.extend(
                            Issued(i.kind, i.origin, i.origin_path, effect) for i in inner
                        )
                        break
            elif kind == "branch":
                side = _decided_side(effect.cond, bound)
                if side is not None:
                    chosen = effect.body if side else effect.orelse
                    issued.extend(self._sequence(chosen, function, bound, path))
                    continue
                body = self._sequence(effect.body, function, bound, path)
                orelse = self._sequence(effect.orelse, function, bound, path)
                # Either side may run: keep the longer one ("may issue").
                issued.extend(body if len(body) >= len(orelse) else orelse)
            elif kind == "loop":
                issued.extend(self._sequence(effect.body, function, bound, path))
            elif kind == "exit":
                break  # the rest of this block does not run
        return issued

    # -- divergences ---------------------------------------------------------------------------

    def divergences(self, function: str) -> list[Divergence]:
        summary = self.facts.functions[function]
        found: dict[int, Divergence] = {}
        self._walk(summary, summary.effects, [], None, found)
        return list(found.values())

    def _walk(
        self,
        summary: FunctionSummary,
        effects: Sequence[Effect],
        after: list[Sequence[Effect]],  # what runs after this block, innermost first
        loop: tuple[Sequence[Effect], list[Sequence[Effect]]] | None,  # body, after-in-loop
        found: dict[int, Divergence],
    ) -> None:
        function = summary.id
        partitions = self._partitions(effects, function)
        for index, effect in enumerate(effects):
            rest = effects[index + 1 :]
            if effect.kind == "branch":
                if self.is_rank_condition(effect.cond, function):
                    if id(effect) not in partitions:
                        self._compare(summary, effect, found)
                    self._exits(summary, effect, rest, after, loop, found)
                inner_after = [rest, *after]
                inner_loop = (loop[0], [rest, *loop[1]]) if loop is not None else None
                self._walk(summary, effect.body, inner_after, inner_loop, found)
                self._walk(summary, effect.orelse, inner_after, inner_loop, found)
            elif effect.kind == "loop":
                self._walk(summary, effect.body, [rest, *after], (effect.body, []), found)

    def _partitions(self, effects: Sequence[Effect], function: str) -> set[int]:
        """Rank branches of one block that split the ranks between them (YOLOv5's
        ``torch_distributed_zero_first``: ``if rank != 0: barrier()`` ... ``if rank == 0:
        barrier()``): one-sided branches on the same rank variable that issue the same
        collectives, so every rank issues them once. Heuristic: the conditions are not
        proven complementary."""
        one_sided: list[tuple[Effect, tuple[str, ...], frozenset[str]]] = []
        for effect in effects:
            if effect.kind != "branch" or not self.is_rank_condition(effect.cond, function):
                continue
            body = tuple(i.kind for i in self.sequence(effect.body, function))
            orelse = tuple(i.kind for i in self.sequence(effect.orelse, function))
            if bool(body) != bool(orelse) and effect.cond is not None and effect.cond.names:
                one_sided.append((effect, body or orelse, frozenset(effect.cond.names)))
        paired: set[int] = set()
        for i, (first, kinds, names) in enumerate(one_sided):
            for second, other_kinds, other_names in one_sided[i + 1 :]:
                same_test = first.cond.text == second.cond.text  # type: ignore[union-attr]
                if kinds == other_kinds and names & other_names and not same_test:
                    paired.update((id(first), id(second)))
        return paired

    def _compare(self, summary: FunctionSummary, branch: Effect, found: dict) -> None:
        body = self.sequence(branch.body, summary.id)
        orelse = self.sequence(branch.orelse, summary.id)
        if [i.kind for i in body] == [i.kind for i in orelse]:
            return
        position = 0
        while (
            position < len(body)
            and position < len(orelse)
            and body[position].kind == orelse[position].kind
        ):
            position += 1
        taken = position < len(body)
        issued = body[position] if taken else orelse[position]
        assert branch.cond is not None
        found.setdefault(
            id(issued.step),
            Divergence(summary.id, summary.path, issued.step, branch.cond, taken, issued, "branch"),
        )

    def _exits(
        self,
        summary: FunctionSummary,
        branch: Effect,
        rest: Sequence[Effect],
        after: list[Sequence[Effect]],
        loop: tuple[Sequence[Effect], list[Sequence[Effect]]] | None,
        found: dict,
    ) -> None:
        assert branch.cond is not None
        for side, other, taken in (
            (branch.body, branch.orelse, True),
            (branch.orelse, branch.body, False),
        ):
            exit_effect = _first_exit(side, in_loop=loop is not None)
            if exit_effect is None or _always_exits(other):
                continue
            if exit_effect.name in ("return", "raise"):
                later_blocks = [rest, *after]
                if loop is not None:
                    later_blocks.append(loop[0])
            elif loop is None:
                continue
            elif exit_effect.name == "break":
                later_blocks = [rest, *loop[1], loop[0]]
            else:  # continue
                later_blocks = [rest, *loop[1]]
            later: list[Issued] = []
            for block in later_blocks:
                later.extend(self.sequence(block, summary.id))
                if later:
                    break
            if later and exit_effect.span is not None:
                found.setdefault(
                    id(exit_effect),
                    Divergence(
                        summary.id, summary.path, exit_effect, branch.cond, taken, later[0], "exit"
                    ),
                )


def _bind(summary: FunctionSummary, arguments: Options) -> dict[str, object]:
    """Parameter values known at a call site: literal arguments over literal defaults."""
    bound: dict[str, object] = dict(summary.defaults)
    params = summary.params
    offset = 1 if summary.class_id is not None and params and params[0] in ("self", "cls") else 0
    for key, value in arguments:
        if key.startswith("#"):
            position = int(key[1:]) + offset
            if position < len(params):
                bound[params[position]] = value
        else:
            bound[key] = value
    return bound


def _decided_side(cond: Condition | None, bound: dict[str, object]) -> bool | None:
    """Which side a parameter test takes given the known argument, if it is known."""
    if cond is None or cond.param is None or cond.param not in bound:
        return None
    value = bound[cond.param]
    if not isinstance(value, bool) and value is not None:
        return None
    truth = bool(value)
    return (not truth) if cond.negated else truth


def _first_exit(effects: Sequence[Effect], in_loop: bool) -> Effect | None:
    """The first exit that leaves this block (loops keep their own break/continue)."""
    for effect in effects:
        if effect.kind == "exit":
            if effect.name in ("return", "raise") or in_loop:
                return effect
            continue
        if effect.kind == "branch":
            for side in (effect.body, effect.orelse):
                found = _first_exit(side, in_loop)
                if found is not None:
                    return found
        elif effect.kind == "loop":
            for inner in effect.body:
                if inner.kind == "exit" and inner.name in ("return", "raise"):
                    return inner
    return None


def _always_exits(effects: Sequence[Effect]) -> bool:
    for effect in effects:
        if effect.kind == "exit":
            return True
        if effect.kind == "branch" and _always_exits(effect.body) and _always_exits(effect.orelse):
            return True
    return False
