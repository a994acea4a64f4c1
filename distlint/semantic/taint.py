"""Rank taint: which expressions may hold a different value on different ranks.

Sources are in :mod:`.ranks`. Taint flows through assignments (flow-insensitively within a
function: a name ever assigned a rank-valued expression is rank-valued), comparisons, boolean
ops and any expression built from a tainted part; through ``self.<attr>`` attributes assigned
from one (``self.is_master = rank == 0``); and through functions whose return value is
tainted (``def is_main(): return dist.get_rank() == 0`` is a rank predicate). Within a file
this is computed here; across files the linked project facts add imported predicates.

Each expression is read once into :class:`ExprFacts` (its sources, names, attributes and
calls); the fixpoint then works on those sets, never on the tree again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from distlint.semantic.ranks import RANK_PARAMETERS, direct_rank_source
from distlint.walker import children, subclasses_of

if TYPE_CHECKING:
    from distlint.context import FileContext

Resolver = Callable[[cst.BaseExpression], "str | None"]
_EXPRESSIONS = subclasses_of(cst.BaseExpression)

# Words that every rank source contains: a file without any of them has no local taint.
_SOURCE_WORDS = (
    "rank",
    "RANK",
    "is_main",
    "main_process",
    "master",
    "global_zero",
    "local_zero",
    "process_index",
    "PROCID",
    "LOCALID",
)


@dataclass
class TaintEnv:
    """What is rank-valued in one scope (names) and in the file (attributes, predicates)."""

    resolve: Resolver
    predicates: frozenset[str]
    names: set[str] = field(default_factory=set)
    self_attrs: set[str] = field(default_factory=set)
    rank_functions: set[str] = field(default_factory=set)  # simple names of local predicates
    is_rank_function: Callable[[str], bool] | None = None  # resolved name -> project predicate


@dataclass(frozen=True)
class ExprFacts:
    """What an expression reads, as far as rank taint is concerned."""

    direct: bool  # contains a rank source itself
    names: frozenset[str]
    self_attrs: frozenset[str]
    calls: frozenset[str]  # simple names called as f() or self.f()
    resolved_calls: tuple[str, ...]  # resolved dotted names of calls


_NO_FACTS = ExprFacts(False, frozenset(), frozenset(), frozenset(), ())


def expr_facts(
    expr: cst.BaseExpression, resolve: Resolver, predicates: frozenset[str]
) -> ExprFacts:
    """Read ``expr`` once (see :class:`ExprFacts`)."""
    direct = False
    names: set[str] = set()
    attrs: set[str] = set()
    calls: set[str] = set()
    resolved_calls: list[str] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name:
            names.add(node.value)
            continue
        if kind in _LEAVES:
            continue
        if kind is cst.Call:
            func = node.func
            resolved = resolve(func)
            if not direct and direct_rank_source(node, resolved, predicates):
                direct = True
            if resolved is not None:
                resolved_calls.append(resolved)
            if type(func) is cst.Name:
                calls.add(func.value)
            elif (
                type(func) is cst.Attribute
                and type(func.value) is cst.Name
                and func.value.value == "self"
            ):
                calls.add(func.attr.value)
        elif kind is cst.Subscript:
            if not direct and direct_rank_source(node, resolve(node.value), predicates):
                direct = True
        elif kind is cst.Attribute:
            if not direct and direct_rank_source(node, resolve(node), predicates):
                direct = True
            value = node.value
            if type(value) is cst.Name and value.value == "self":
                attrs.add(node.attr.value)
        elif kind is cst.Lambda:
            continue
        stack.extend(children(node))
    return ExprFacts(
        direct, frozenset(names), frozenset(attrs), frozenset(calls), tuple(resolved_calls)
    )


_LEAVES = frozenset({cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis})


def facts_tainted(facts: ExprFacts, env: TaintEnv) -> bool:
    if facts.direct:
        return True
    if facts.names and not facts.names.isdisjoint(env.names):
        return True
    if facts.self_attrs and not facts.self_attrs.isdisjoint(env.self_attrs):
        return True
    if facts.calls and not facts.calls.isdisjoint(env.rank_functions):
        return True
    check = env.is_rank_function
    return check is not None and any(check(name) for name in facts.resolved_calls)


def is_tainted(expr: cst.BaseExpression, env: TaintEnv) -> bool:
    """Whether any part of ``expr`` is a rank source or a rank-valued name."""
    return facts_tainted(expr_facts(expr, env.resolve, env.predicates), env)


# -- scanning scopes ---------------------------------------------------------------------------


Assignment = tuple[cst.BaseExpression, cst.CSTNode, bool]  # (target, value, is_loop)


@dataclass
class ScopeScan:
    """A scope's assignments and returned expressions (nested defs/classes excluded)."""

    assignments: list[Assignment]
    returns: list[cst.BaseExpression]
    functions: list[cst.FunctionDef]  # defs directly in this scope (also inside blocks)
    classes: list[cst.ClassDef]


def scan_scope(body: Iterable[cst.CSTNode]) -> ScopeScan:
    """One pass over a scope's statements (``for`` targets count as loop assignments)."""
    scan = ScopeScan([], [], [], [])
    stack = list(body)
    stack.reverse()
    expressions = _EXPRESSIONS
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in expressions:
            continue  # expressions hold no statements (walrus targets are not tracked)
        if kind is cst.FunctionDef:
            scan.functions.append(node)
            continue
        if kind is cst.ClassDef:
            scan.classes.append(node)
            continue
        if kind is cst.Assign:
            for target in node.targets:
                scan.assignments.append((target.target, node.value, False))
            continue
        if kind is cst.AnnAssign or kind is cst.AugAssign:
            if node.value is not None:
                scan.assignments.append((node.target, node.value, False))
            continue
        if kind is cst.Return:
            if node.value is not None:
                scan.returns.append(node.value)
            continue
        if kind in _SKIP_SMALL:
            continue
        if kind is cst.For:
            scan.assignments.append((node.target, node.iter, True))
        elif kind is cst.WithItem and node.asname is not None:
            scan.assignments.append((node.asname.name, node.item, False))
        kids = children(node)
        kids.reverse()
        stack.extend(kids)
    return scan


# Small statements that bind nothing and hold no statements.
_SKIP_SMALL = frozenset(
    {
        cst.Expr,
        cst.Pass,
        cst.Break,
        cst.Continue,
        cst.Raise,
        cst.Assert,
        cst.Del,
        cst.Global,
        cst.Nonlocal,
        cst.Import,
        cst.ImportFrom,
    }
)


def body_of(node: cst.FunctionDef | cst.ClassDef) -> Sequence[cst.CSTNode]:
    body = node.body
    return body.body if isinstance(body, cst.IndentedBlock) else (body,)


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_names(target.value)


def self_attribute(target: cst.BaseExpression) -> str | None:
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
    ):
        return target.attr.value
    return None


# -- the per-file analysis (rules ask through FileContext.rank_dependent) ---------------------


@dataclass
class _Pair:
    names: tuple[str, ...]
    attr: str | None
    facts: ExprFacts


class FileTaint:
    """Rank taint of one file: module names, self attributes, predicates, per-function names."""

    def __init__(self, ctx: FileContext) -> None:
        predicates = frozenset(ctx.settings.rank_predicates)
        facts = ctx.facts
        is_rank_function = facts.is_rank_function if facts is not None else None
        self.module_env = TaintEnv(
            ctx.imports.resolve, predicates, is_rank_function=is_rank_function
        )
        if facts is not None:
            self.module_env.self_attrs |= facts.rank_attributes
        self.scans: dict[cst.CSTNode, ScopeScan] = {}
        self._envs: dict[cst.FunctionDef, TaintEnv] = {}
        self.active = _may_hold_sources(ctx.source, predicates) or facts is not None
        module_scan = self.scan(ctx.module)
        if not self.active:
            return
        functions = self._functions(module_scan)
        resolve = ctx.imports.resolve
        module_pairs = self._pairs(module_scan, resolve, predicates)
        pairs = {f: self._pairs(self.scan(f), resolve, predicates) for f in functions}
        returns = {
            f: [expr_facts(v, resolve, predicates) for v in self.scan(f).returns] for f in functions
        }
        # Iterate file-wide: attributes and predicates found in one function feed the others.
        changed = True
        rounds = 0
        while changed and rounds < 8:
            rounds += 1
            changed = _propagate(module_pairs, self.module_env)
            for func in functions:
                env = self._env(func)
                if _propagate(pairs[func], env):
                    changed = True
                name = func.name.value
                if name not in self.module_env.rank_functions and any(
                    facts_tainted(f, env) for f in returns[func]
                ):
                    self.module_env.rank_functions.add(name)
                    changed = True

    def scan(self, node: cst.Module | cst.FunctionDef | cst.ClassDef) -> ScopeScan:
        """The scan of a module, function or class body (computed once)."""
        found = self.scans.get(node)
        if found is None:
            body = node.body if isinstance(node, cst.Module) else body_of(node)
            found = self.scans[node] = scan_scope(body)
        return found

    def _functions(self, module_scan: ScopeScan) -> list[cst.FunctionDef]:
        found: list[cst.FunctionDef] = []
        pending_functions = list(module_scan.functions)
        pending_classes = list(module_scan.classes)
        while pending_functions or pending_classes:
            if pending_classes:
                scan = self.scan(pending_classes.pop())
                pending_functions.extend(scan.functions)
                pending_classes.extend(scan.classes)
                continue
            func = pending_functions.pop()
            found.append(func)
            scan = self.scan(func)
            pending_functions.extend(scan.functions)
            pending_classes.extend(scan.classes)
        return found

    @staticmethod
    def _pairs(scan: ScopeScan, resolve: Resolver, predicates: frozenset[str]) -> list[_Pair]:
        pairs = []
        for target, value, _ in scan.assignments:
            if not isinstance(value, cst.BaseExpression):
                continue
            facts = expr_facts(value, resolve, predicates)
            if facts == _NO_FACTS:
                continue
            pairs.append(_Pair(tuple(target_names(target)), self_attribute(target), facts))
        return pairs

    def _env(self, func: cst.FunctionDef) -> TaintEnv:
        env = self._envs.get(func)
        module = self.module_env
        if env is None:
            env = TaintEnv(
                module.resolve,
                module.predicates,
                set(module.names) | _rank_parameters(func),
                module.self_attrs,  # shared: attributes are file-wide
                module.rank_functions,
                module.is_rank_function,
            )
            self._envs[func] = env
        else:
            env.names |= module.names
        return env

    def env_for(self, func: cst.FunctionDef | None, resolve: Resolver) -> TaintEnv:
        module = self.module_env
        names = self._env(func).names if func is not None and self.active else module.names
        return TaintEnv(
            resolve,
            module.predicates,
            names,
            module.self_attrs,
            module.rank_functions,
            module.is_rank_function,
        )


def _propagate(pairs: list[_Pair], env: TaintEnv) -> bool:
    """Add names/attributes assigned from tainted values until nothing changes."""
    grew = False
    changed = True
    while changed:
        changed = False
        for pair in pairs:
            if all(n in env.names for n in pair.names) and (
                pair.attr is None or pair.attr in env.self_attrs
            ):
                continue
            if not facts_tainted(pair.facts, env):
                continue
            for name in pair.names:
                if name not in env.names:
                    env.names.add(name)
                    changed = True
            if pair.attr is not None and pair.attr not in env.self_attrs:
                env.self_attrs.add(pair.attr)
                changed = True
        grew = grew or changed
    return grew


def _rank_parameters(func: cst.FunctionDef) -> set[str]:
    """Parameters named like a rank (``def worker(rank, world_size)``, the mp.spawn style)."""
    params = func.params
    found = set()
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value in RANK_PARAMETERS:
            found.add(param.name.value)
    return found


def _may_hold_sources(source: str, predicates: frozenset[str]) -> bool:
    if any(word in source for word in _SOURCE_WORDS):
        return True
    return any(p.rsplit(".", 1)[-1] in source for p in predicates)


def file_taint(ctx: FileContext) -> FileTaint:
    taint = ctx._local_ranks
    if taint is None:
        taint = ctx._local_ranks = FileTaint(ctx)
    assert isinstance(taint, FileTaint)
    return taint


def expression_is_rank_dependent(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    taint = file_taint(ctx)
    if not taint.active:
        return False
    return is_tainted(expr, taint.env_for(ctx.function, ctx.resolve))
