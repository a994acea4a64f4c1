"""Rank taint: which expressions may hold a different value on different ranks.

Sources are in :mod:`.ranks`. Taint flows through assignments (flow-insensitively within a
function: a name ever assigned a rank-valued expression is rank-valued), comparisons, boolean
ops and any expression built from a tainted part; through ``self.<attr>`` attributes assigned
from one (``self.is_master = rank == 0``); and through functions whose return value is
tainted (``def is_main(): return dist.get_rank() == 0`` is a rank predicate). Within a file
this is computed here; across files the linked project facts add imported predicates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from distlint.imports import dotted_name
from distlint.semantic.ranks import direct_rank_source
from distlint.walker import children

if TYPE_CHECKING:
    from distlint.context import FileContext

Resolver = Callable[[cst.BaseExpression], "str | None"]


@dataclass
class TaintEnv:
    """What is rank-valued in one scope (names) and in the file (attributes, predicates)."""

    resolve: Resolver
    predicates: frozenset[str]
    names: set[str] = field(default_factory=set)
    self_attrs: set[str] = field(default_factory=set)
    rank_functions: set[str] = field(default_factory=set)  # simple names of local predicates
    is_rank_function: Callable[[str], bool] | None = None  # resolved name -> project predicate


def is_tainted(expr: cst.BaseExpression, env: TaintEnv) -> bool:
    """Whether any part of ``expr`` is a rank source or a rank-valued name."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if node.value in env.names:
                return True
            continue
        if isinstance(node, cst.Call):
            resolved = env.resolve(node.func)
            if direct_rank_source(node, resolved, env.predicates):
                return True
            if _calls_rank_function(node.func, resolved, env):
                return True
        elif isinstance(node, cst.Subscript):
            if direct_rank_source(node, env.resolve(node.value), env.predicates):
                return True
        elif isinstance(node, cst.Attribute):
            if direct_rank_source(node, env.resolve(node), env.predicates):
                return True
            if (
                node.attr.value in env.self_attrs
                and isinstance(node.value, cst.Name)
                and node.value.value == "self"
            ):
                return True
        elif isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        stack.extend(children(node))
    return False


def _calls_rank_function(func: cst.BaseExpression, resolved: str | None, env: TaintEnv) -> bool:
    if isinstance(func, cst.Name) and func.value in env.rank_functions:
        return True
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
        and func.attr.value in env.rank_functions
    ):
        return True
    return (
        resolved is not None and env.is_rank_function is not None and env.is_rank_function(resolved)
    )


# -- building environments ---------------------------------------------------------------------


def assignments(
    body: Iterable[cst.CSTNode],
) -> Iterator[tuple[cst.BaseExpression, cst.CSTNode, bool]]:
    """(target, value, is_loop) of a scope's statements, not entering nested defs/classes.

    ``is_loop`` marks ``for`` targets, whose value is an element of ``value``.
    """
    stack = list(body)
    stack.reverse()
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                yield target.target, node.value, False
            continue
        if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            if node.value is not None:
                yield node.target, node.value, False
            continue
        if isinstance(node, (cst.For, cst.CompFor)):
            yield node.target, node.iter, True
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            yield node.asname.name, node.item, False
        elif isinstance(node, cst.NamedExpr):
            yield node.target, node.value, False
        if isinstance(node, (cst.BaseExpression, cst.Lambda)) and not isinstance(
            node, cst.NamedExpr
        ):
            continue  # expressions hold no assignments except walrus (rare): skip for speed
        kids = children(node)
        kids.reverse()
        stack.extend(kids)


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


def propagate(pairs: list[tuple[cst.BaseExpression, cst.CSTNode, bool]], env: TaintEnv) -> bool:
    """Add names/attributes assigned from tainted values until nothing changes."""
    grew = False
    changed = True
    while changed:
        changed = False
        for target, value, _ in pairs:
            if not isinstance(value, cst.BaseExpression):
                continue
            names = list(target_names(target))
            attr = self_attribute(target)
            if all(n in env.names for n in names) and (attr is None or attr in env.self_attrs):
                continue
            if not is_tainted(value, env):
                continue
            for name in names:
                if name not in env.names:
                    env.names.add(name)
                    changed = True
            if attr is not None and attr not in env.self_attrs:
                env.self_attrs.add(attr)
                changed = True
        grew = grew or changed
    return grew


def returns(func: cst.FunctionDef) -> Iterator[cst.BaseExpression]:
    """Returned expressions of ``func`` (not of nested functions)."""
    stack: list[cst.CSTNode] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Return):
            if node.value is not None:
                yield node.value
            continue
        if isinstance(node, cst.BaseExpression):
            continue
        stack.extend(children(node))


# -- the per-file analysis (rules ask through FileContext.rank_dependent) ---------------------


class FileTaint:
    """Rank taint of one file: module names, self attributes, predicates, per-function names."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        predicates = frozenset(ctx.settings.rank_predicates)
        facts = ctx.facts
        is_rank_function = facts.is_rank_function if facts is not None else None
        self.module_env = TaintEnv(
            ctx.imports.resolve, predicates, is_rank_function=is_rank_function
        )
        if facts is not None:
            self.module_env.self_attrs |= facts.rank_attributes
        self._functions: dict[cst.FunctionDef, TaintEnv] = {}
        module_pairs = list(assignments(ctx.module.body))
        functions = [n for n in _all_functions(ctx.module)]
        bodies = {f: list(assignments(_body(f))) for f in functions}
        # Iterate file-wide: attributes and predicates found in one function feed the others.
        changed = True
        rounds = 0
        while changed and rounds < 6:
            rounds += 1
            changed = propagate(module_pairs, self.module_env)
            for func in functions:
                env = self._env(func)
                if propagate(bodies[func], env):
                    changed = True
                new_attrs = env.self_attrs - self.module_env.self_attrs
                if new_attrs:
                    self.module_env.self_attrs |= new_attrs
                    changed = True
                name = func.name.value
                if name not in self.module_env.rank_functions and any(
                    is_tainted(value, env) for value in returns(func)
                ):
                    self.module_env.rank_functions.add(name)
                    changed = True

    def _env(self, func: cst.FunctionDef) -> TaintEnv:
        env = self._functions.get(func)
        if env is None:
            module = self.module_env
            env = TaintEnv(
                module.resolve,
                module.predicates,
                set(module.names),
                module.self_attrs,  # shared: attributes are file-wide
                module.rank_functions,
                module.is_rank_function,
            )
            self._functions[func] = env
        else:
            env.names |= self.module_env.names
        return env

    def env_for(self, func: cst.FunctionDef | None, resolve: Resolver) -> TaintEnv:
        if func is None:
            return TaintEnv(
                resolve,
                self.module_env.predicates,
                self.module_env.names,
                self.module_env.self_attrs,
                self.module_env.rank_functions,
                self.module_env.is_rank_function,
            )
        env = self._env(func)
        return TaintEnv(
            resolve,
            env.predicates,
            env.names,
            env.self_attrs,
            env.rank_functions,
            env.is_rank_function,
        )


def _body(func: cst.FunctionDef) -> list[cst.CSTNode]:
    return list(func.body.body) if isinstance(func.body, cst.IndentedBlock) else [func.body]


_BLOCKS = (cst.BaseCompoundStatement, cst.IndentedBlock, cst.Else, cst.ExceptHandler, cst.Finally)


def _all_functions(module: cst.Module) -> list[cst.FunctionDef]:
    found: list[cst.FunctionDef] = []
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef):
            found.append(node)
            stack.extend(_body(node))
        elif isinstance(node, cst.ClassDef):
            stack.extend(node.body.body if isinstance(node.body, cst.IndentedBlock) else ())
        elif isinstance(node, _BLOCKS):
            stack.extend(children(node))
    return found


def expression_is_rank_dependent(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    taint = ctx._local_ranks
    if taint is None:
        taint = ctx._local_ranks = FileTaint(ctx)
    assert isinstance(taint, FileTaint)
    return is_tainted(expr, taint.env_for(ctx.function, ctx.resolve))


__all__ = ["FileTaint", "TaintEnv", "dotted_name", "expression_is_rank_dependent", "is_tainted"]
