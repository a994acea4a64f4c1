"""DL210 distributed-sampler-without-set-epoch: see its docs page, docs/rules/DL210.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.syntax.shapes import assigned_name, is_name, is_none, is_true, none_on_other_side
from distlint.syntax.walker import SCOPES, descendants, evaluated, nodes_with_parents

SAMPLERS = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
    }
)
LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

# Calls that only iterate what they are given (a builtin, or a progress bar).
_ITERATING_BUILTINS = frozenset({"enumerate", "iter"})
_ITERATING_CALLS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.std.tqdm"})

# Attributes of a DataLoader whose reads cannot reach the sampler's ``set_epoch``.
_HARMLESS_ATTRIBUTES = frozenset({"dataset", "batch_size"})

# DistributedSampler(dataset, num_replicas, rank, shuffle, ...): ``shuffle`` is the 4th.
_SHUFFLE_POSITION = 3

Resolve = Callable[[cst.BaseExpression], str | None]


class DistributedSamplerWithoutSetEpoch(Rule):
    code = "DL210"
    name = "distributed-sampler-without-set-epoch"
    severity = Severity.WARNING
    summary = (
        "A shuffling DistributedSampler is iterated epoch after epoch but nothing calls "
        "set_epoch: every epoch visits the samples in the same order on every rank."
    )
    tags = ("correctness", "distributed", "data-loading")
    precision = "high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        source = ctx.source
        # Any mention of set_epoch (a call on anything, a helper, getattr(..., "set_epoch"))
        # may advance the epoch: the file is left alone.
        self.active = "DistributedSampler" in source and "set_epoch" not in source

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.resolve(node.func) not in SAMPLERS or not _shuffles(node):
            return
        parents = self.ctx.parents
        scope_at = _scope_index(parents)
        if scope_at is None:
            return
        held = self._held_as(node, parents[scope_at + 1 :])
        if held is None:
            return
        sampler_name, loader_call, loader_name, kept = held
        scope = parents[scope_at]
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        if sampler_name is not None:
            loaders = self._loaders_of(body, sampler_name)
            if loaders is None:
                return
        else:
            assert loader_call is not None and loader_name is not None
            loaders = {loader_call: loader_name}
        names = {name for name in (sampler_name, *loaders.values()) if name is not None}
        constructions: list[cst.CSTNode] = [node, *loaders]
        loops = _iterations(body, names, {kept, *loaders}, constructions, self.ctx.resolve)
        if loops is None:
            return
        for inner, epoch_loop in loops:
            if epoch_loop is None:
                continue
            shown = sampler_name or f"{loader_name}.sampler"
            iterated = inner.iter
            what = self.ctx.module.code_for_node(iterated)
            self.report(
                node,
                f"`{shown}` is a `DistributedSampler` that shuffles (shuffle=True by default), "
                f"and `{what}` is iterated inside an outer loop, but nothing in this file calls "
                "`set_epoch`: its shuffle is seeded with `seed + epoch` and the epoch stays 0, "
                "so every epoch visits the samples in the same order on every rank (no error, "
                f"worse training). Call `{shown}.set_epoch(epoch)` at the start of each epoch.",
                related_nodes=((epoch_loop, "the epoch loop"),),
            )
            return

    def _held_as(
        self, node: cst.Call, below: list[cst.CSTNode]
    ) -> tuple[str | None, cst.Call | None, str | None, cst.CSTNode] | None:
        """How the sampler is kept: (sampler name, None, None, value) for
        ``s = DistributedSampler(...)`` (``value``: the call, or ``... if ... else None``),
        (None, loader call, loader name, loader call) for
        ``l = DataLoader(..., sampler=DistributedSampler(...))``, None for anything else
        (returned, passed on, stored on an object...)."""
        chain = list(reversed(below))  # innermost first
        expr: cst.CSTNode = node
        if chain and isinstance(chain[0], cst.IfExp) and none_on_other_side(chain[0], node):
            expr = chain.pop(0)
        if not chain:
            return None
        if (name := assigned_name(chain[0], expr)) is not None:
            return name, None, None, expr
        if (
            len(chain) >= 3
            and isinstance(chain[0], cst.Arg)
            and chain[0].value is expr
            and chain[0].keyword is not None
            and chain[0].keyword.value == "sampler"
            and isinstance(chain[1], cst.Call)
            and self.ctx.resolve(chain[1].func) in LOADERS
            and (loader := assigned_name(chain[2], chain[1])) is not None
        ):
            return None, chain[1], loader, chain[1]
        return None

    def _loaders_of(self, body: cst.CSTNode, sampler: str) -> dict[cst.Call, str] | None:
        """The ``name = DataLoader(..., sampler=<sampler>)`` of the scope, by call; None when one
        is not kept in a plain name (the rule then cannot follow it)."""
        loaders: dict[cst.Call, str] = {}
        for node, parents in nodes_with_parents(body, into_scopes=True):
            if not (isinstance(node, cst.Call) and self.ctx.resolve(node.func) in LOADERS):
                continue
            if not any(
                arg.keyword is not None
                and arg.keyword.value == "sampler"
                and isinstance(arg.value, cst.Name)
                and arg.value.value == sampler
                for arg in node.args
            ):
                continue
            name = assigned_name(parents[-1], node) if parents else None
            if name is None:
                return None
            loaders[node] = name
        return loaders


def _shuffles(call: cst.Call) -> bool:
    """Whether the sampler surely shuffles: no ``shuffle`` argument, or a literal True."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is None:
            if positional == _SHUFFLE_POSITION and not is_true(arg.value):
                return False
            positional += 1
        elif arg.keyword.value == "shuffle" and not is_true(arg.value):
            return False
    return True


def _scope_index(parents: list[cst.CSTNode]) -> int | None:
    """Index of the innermost function (or the module) around the call; None inside a class
    body or a lambda."""
    for index in range(len(parents) - 1, -1, -1):
        parent = parents[index]
        if isinstance(parent, (cst.FunctionDef, cst.Module)):
            return index
        if isinstance(parent, (cst.ClassDef, cst.Lambda)):
            return None
    return None


def _iterations(
    body: cst.CSTNode,
    names: set[str],
    values: set[cst.CSTNode],
    constructions: list[cst.CSTNode],
    resolve: Resolve,
) -> list[tuple[cst.For, cst.For | cst.While | None]] | None:
    """The ``for`` loops of the scope that iterate one of ``names`` (directly, or through
    ``enumerate``/``iter``/``tqdm``), each with its epoch loop (:func:`_epoch_loop`); None when
    a name is used any other way (passed to a call, returned, stored, rebound, read in a nested
    function), which may reach a ``set_epoch`` the rule cannot see.

    One walk of the scope: the loops around the current node are kept on a stack (each with
    its depth), so no node's ancestors are searched."""
    found: list[tuple[cst.For, cst.For | cst.While | None]] = []
    around: list[tuple[cst.For | cst.While, int]] = []  # the loops around the node, by depth
    holding: set[int] = set()  # ids of the loops that hold one of the constructions
    built = {id(node) for node in constructions}
    for node, ancestors in nodes_with_parents(body):
        depth = len(ancestors)
        while around and around[-1][1] >= depth:
            around.pop()
        if isinstance(node, (cst.For, cst.While)):
            around.append((node, depth))
        elif id(node) in built:
            for loop, _ in reversed(around):
                if id(loop) in holding:
                    break  # so are the loops around it
                holding.add(id(loop))
        elif isinstance(node, SCOPES):
            if any(isinstance(n, cst.Name) and n.value in names for n in descendants(node)):
                return None
            continue
        if not (isinstance(node, cst.Name) and node.value in names):
            continue
        use = _use(node, ancestors, values, resolve)
        if use is False:
            return None
        if isinstance(use, cst.For):
            index = len(around) - 1
            while around[index][0] is not use:
                index -= 1
            found.append((use, around[index - 1][0] if index else None))
    return [(inner, _epoch_loop(outer, holding)) for inner, outer in found]


def _use(
    name: cst.Name,
    ancestors: Sequence[cst.CSTNode],
    values: set[cst.CSTNode],
    resolve: Resolve,
) -> cst.For | bool:
    """What one occurrence of a followed name does: the ``for`` loop it is iterated by, True
    for a harmless use, False for anything else. ``values``: the followed constructions (what
    the names may be bound to, besides None)."""
    parent = ancestors[-1] if ancestors else None
    grand = ancestors[-2] if len(ancestors) >= 2 else None
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return True  # ``x.sampler``: an attribute's name, not the variable
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return True  # ``sampler=``: a keyword's name
    if isinstance(parent, cst.For) and parent.iter is name:
        return parent
    if isinstance(parent, cst.Arg) and parent.value is name and isinstance(grand, cst.Call):
        if grand in values and parent.keyword is not None:
            return parent.keyword.value == "sampler"
        if parent.keyword is None and not parent.star and grand.args[0] is parent:
            func = grand.func
            if isinstance(func, cst.Name) and func.value == "len" and resolve(func) is None:
                return True
            return _iterating_loop(ancestors, resolve) or False
        return False
    if isinstance(parent, cst.AssignTarget) and parent.target is name:
        # a binding: the construction itself, or ``x = None``
        return isinstance(grand, cst.Assign) and (grand.value in values or is_none(grand.value))
    if isinstance(parent, cst.AnnAssign) and parent.target is name:
        return parent.value is not None and (parent.value in values or is_none(parent.value))
    if isinstance(parent, cst.Attribute) and parent.value is name:
        return parent.attr.value in _HARMLESS_ATTRIBUTES
    if isinstance(parent, cst.Comparison) and parent.left is name:
        return all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) and is_none(c.comparator)
            for c in parent.comparisons
        )
    return False


def _iterating_loop(ancestors: Sequence[cst.CSTNode], resolve: Resolve) -> cst.For | None:
    """The ``for`` loop over ``enumerate(tqdm(x))`` (any nesting of iterating calls), where
    ``ancestors`` end with the ``Arg`` that holds ``x``."""
    index = len(ancestors) - 1
    while index >= 1:
        arg, call = ancestors[index], ancestors[index - 1]
        if not (
            isinstance(arg, cst.Arg)
            and isinstance(call, cst.Call)
            and call.args
            and call.args[0] is arg
            and arg.keyword is None
            and not arg.star
            and _iterates(call.func, resolve)
        ):
            return None
        above = ancestors[index - 2] if index >= 2 else None
        if isinstance(above, cst.For) and above.iter is call:
            return above
        index -= 2
    return None


def _iterates(func: cst.BaseExpression, resolve: Resolve) -> bool:
    """``enumerate``/``iter`` (not rebound) or ``tqdm``: calls that only iterate."""
    name = resolve(func)
    if name is None:
        return isinstance(func, cst.Name) and func.value in _ITERATING_BUILTINS
    return name in _ITERATING_CALLS


def _epoch_loop(loop: cst.For | cst.While | None, holding: set[int]) -> cst.For | cst.While | None:
    """``loop``, the nearest loop around the iterating ``for``, when it may run more than once
    and does not also hold the sampler's or the loader's construction (``holding``: the ids of
    the loops that do; a fresh sampler per pass is another question), else None."""
    if loop is None or _at_most_once(loop) or id(loop) in holding:
        return None
    return loop


def _at_most_once(loop: cst.For | cst.While) -> bool:
    """``for _ in range(1)``, ``for x in [one]``, ``while False``: one pass or none."""
    if isinstance(loop, cst.While):
        return is_name(loop.test, "False")
    it = loop.iter
    if isinstance(it, (cst.List, cst.Tuple, cst.Set)):
        return len(it.elements) <= 1 and not any(
            isinstance(e, cst.StarredElement) for e in it.elements
        )
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name)):
        return False
    if it.func.value != "range":
        return False
    if any(a.keyword or a.star for a in it.args):
        return False
    bounds = [
        value
        for a in it.args
        if isinstance(a.value, cst.Integer) and isinstance(value := evaluated(a.value), int)
    ]
    if len(bounds) != len(it.args):
        return False
    if len(bounds) == 1:
        return bounds[0] <= 1
    if len(bounds) == 2:
        return bounds[1] - bounds[0] <= 1
    return False
