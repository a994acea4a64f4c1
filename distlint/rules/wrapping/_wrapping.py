"""The walk shared by the torch.compile x DDP/FSDP wrapping rules (DL301, DL302, DL304).

Each scope (the module body, each function body) is read statement by statement, in source
order, to learn which names hold a ``DistributedDataParallel(...)``, an FSDP1 model, a module
whose submodules went through ``fully_shard``, or a built-in ``torch.nn`` module; then each
``torch.compile(X, ...)`` / ``X.compile(...)`` is judged by what ``X`` holds at that point
(each rule's ``check``). Facts observed on torch 2.13.0 with gloo, re-observed by
tests/proof/test_proof_dl3xx.py.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.knowledge.module_factories import the_module
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.collectives import DDP, FSDP1, FULLY_SHARD
from distlint.semantic.compile_sites import COMPILE_FUNCTIONS, TreeSite, tree_site
from distlint.semantic.regions import Resolver, is_literal, literal_value
from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import call_argument, children, subclasses_of

MODULE_COMPILE = "torch.nn.Module.compile"
# torch.nn names that are not modules with a forward of their own.
_NOT_BUILTIN_MODULES = frozenset(
    {
        "Module",
        "ModuleList",
        "ModuleDict",
        "ParameterList",
        "ParameterDict",
        "Parameter",
        "DataParallel",
    }
)
_NOT_BUILTIN_PREFIXES = (
    "torch.nn.parallel.",
    "torch.nn.utils.",
    "torch.nn.functional.",
    "torch.nn.init.",
    "torch.nn.attention.",
    "torch.nn.parameter.",
)
MISSING = object()  # use_orig_params= not given (FSDP1's default is False)


@dataclass
class Wrapped:
    """What a name holds: a wrapper call and, for DDP, the module it wraps."""

    kind: str  # "ddp" | "fsdp1"
    call: cst.Call
    use_orig_params: object = MISSING  # FSDP1 only: True/False, MISSING, or unknown
    builtin: str | None = None  # DDP only: the torch.nn class of the wrapped module


@dataclass
class _Scope:
    wrapped: dict[str, Wrapped] = field(default_factory=dict)
    builtins: dict[str, str] = field(default_factory=dict)  # name -> "torch.nn.Sequential"
    shard_children: dict[str, cst.Call] = field(default_factory=dict)  # root -> fully_shard
    loop_iters: dict[str, set[str]] = field(default_factory=dict)  # loop var -> dotted names

    def forget(self, key: str) -> None:
        for table in (self.wrapped, self.builtins, self.shard_children, self.loop_iters):
            for name in [k for k in table if k == key or k.startswith(key + ".")]:
                del table[name]


@dataclass(frozen=True)
class SiteFacts:
    """A compile site and what the scope knew of its target there."""

    site: TreeSite  # a call (torch.compile(X)) or a method (X.compile()), with its target
    wrapped: Wrapped | None  # the DDP/FSDP1 model compiled, if it is one
    sharded: cst.Call | None  # a `fully_shard` call on a submodule of the target
    target: cst.BaseExpression  # what the site compiles (site.target, never None here)


# Per file (one RuleContext), per scope node id: its compile sites (see _WrappingRule._sites).
_ANALYSES: weakref.WeakKeyDictionary[object, dict[int, list[SiteFacts]]] = (
    weakref.WeakKeyDictionary()
)
_LAST = frozenset({"fully_shard", "compile"})


class _WrappingRule(Rule):
    """Shared walk: each scope's statements in order, then ``check`` at each compile call.

    A finding needs a compile call and a wrapper whose canonical name ends in one of
    ``triggers``; either is spelled in the source (an alias still names it in its import),
    so a file that lacks the words is skipped without reading its tree.
    """

    triggers: tuple[str, ...] = ()
    needs_fullgraph = False

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        source = ctx.source
        self.active = (
            "compile" in source
            and any(word in source for word in self.triggers)
            and (not self.needs_fullgraph or "fullgraph" in source)
        )

    def visit_Module(self, node: cst.Module) -> None:
        for site in self._sites(node, node.body):
            self.check(site)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        body = node.body
        if type(body) is cst.IndentedBlock:
            for site in self._sites(node, body.body):
                self.check(site)

    def _sites(self, node: cst.CSTNode, body: Sequence[cst.BaseStatement]) -> list[SiteFacts]:
        """The scope's compile sites, analysed once per file for all three rules (they run
        one after the other on the same node, with the same names in scope)."""
        per_file = _ANALYSES.get(self.ctx)
        if per_file is None:
            per_file = _ANALYSES[self.ctx] = {}
        sites = per_file.get(id(node))
        if sites is None:
            sites = per_file[id(node)] = self._analyse(body)
        return sites

    def _analyse(self, body: Sequence[cst.BaseStatement]) -> list[SiteFacts]:
        statements = [
            (stmt, loop, _calls(stmt) if loop is None else []) for stmt, loop in _statements(body)
        ]
        if not any(self._may_compile(call) for _, _, calls in statements for call in calls):
            return []  # no compile call: nothing to judge
        scope = _Scope()
        sites: list[SiteFacts] = []
        for stmt, loop, calls in statements:
            if loop is not None:
                self._bind_loop(scope, loop)
                continue
            for call in calls:
                self._on_call(scope, call, sites)
            for target, value in _assignments(stmt):
                self._bind(scope, target, value)
        return sites

    def _may_compile(self, call: cst.Call) -> bool:
        """Whether ``call`` is ``x.compile(...)`` or a bare name bound to ``torch.compile``."""
        func = call.func
        if type(func) is cst.Attribute:
            return func.attr.value == "compile"
        return type(func) is cst.Name and self.ctx.resolve(func) in COMPILE_FUNCTIONS

    # -- what names hold -------------------------------------------------------------------------

    def _bind_loop(self, scope: _Scope, loop: cst.For) -> None:
        names = _expand_loop_vars(scope, _dotted_names(loop.iter))
        for target in _target_names(loop.target):
            scope.forget(target)
            scope.loop_iters[target] = names

    def _bind(self, scope: _Scope, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        key = dotted_name(target)
        if key is None:
            for name in _target_names(target):
                scope.forget(name)
            return
        wrapped = self._wrapped(scope, value)
        builtin = self._builtin(scope, value)
        source = _module_key(value, self.ctx.resolve)
        children = scope.shard_children.get(source) if source else None
        scope.forget(key)
        if wrapped is not None:
            scope.wrapped[key] = wrapped
        if builtin is not None:
            scope.builtins[key] = builtin
        if children is not None:
            scope.shard_children[key] = children

    def _wrapped(self, scope: _Scope, expr: cst.BaseExpression) -> Wrapped | None:
        expr = the_module(expr)
        if isinstance(expr, cst.Call):
            name = self.ctx.resolve(expr.func)
            if name in DDP:
                inner = call_argument(expr, 0, "module")
                builtin = self._builtin(scope, inner) if inner is not None else None
                return Wrapped("ddp", expr, builtin=builtin)
            if name in FSDP1:
                return Wrapped("fsdp1", expr, use_orig_params=_use_orig_params(expr))
            if name in FULLY_SHARD:
                inner = call_argument(expr, 0, "module")
                return self._wrapped(scope, inner) if inner is not None else None
            return None
        key = dotted_name(expr)
        return scope.wrapped.get(key) if key is not None else None

    def _builtin(self, scope: _Scope, expr: cst.BaseExpression) -> str | None:
        expr = the_module(expr)
        if isinstance(expr, cst.Call):
            name = self.ctx.resolve(expr.func)
            return name if name is not None and _is_builtin_module(name) else None
        key = dotted_name(expr)
        return scope.builtins.get(key) if key is not None else None

    def _on_call(self, scope: _Scope, call: cst.Call, sites: list[SiteFacts]) -> None:
        func = call.func
        kind = type(func)
        # Resolving keeps the last part of a dotted name: only a bare name (an alias) or
        # `x.fully_shard` / `x.compile` can be one of these calls.
        if kind is not cst.Name and (
            type(func) is not cst.Attribute or func.attr.value not in _LAST
        ):
            return
        name = self.ctx.resolve(func)
        if name in FULLY_SHARD:
            self._on_fully_shard(scope, call)
            return
        site = _compile_site(call, name, self.ctx)
        if site is not None and site.target is not None:  # a call's site always has a target
            target = site.target
            wrapped = self._wrapped(scope, target)
            sites.append(SiteFacts(site, wrapped, self.sharded_children(scope, target), target))

    def _on_fully_shard(self, scope: _Scope, call: cst.Call) -> None:
        """Record ``fully_shard(sub)`` as sharding a child of every module ``sub`` lies in."""
        arg = call_argument(call, 0, "module")
        if arg is None:
            return
        sharded = dotted_name(the_module(arg))
        # `model.layers[0]`, `model.encoder`, or a loop variable over `model.layers`
        parents = {
            p for name in _expand_loop_vars(scope, _dotted_names(arg)) for p in _prefixes(name)
        }
        parents.discard(sharded)  # fully_shard(model) shards `model` itself, not a child
        for parent in parents:
            scope.shard_children.setdefault(parent, call)

    def sharded_children(self, scope: _Scope, expr: cst.BaseExpression) -> cst.Call | None:
        """The ``fully_shard`` call on a submodule of ``expr``, if the scope made one."""
        key = _module_key(expr, self.ctx.resolve)
        return scope.shard_children.get(key) if key is not None else None

    def check(self, facts: SiteFacts) -> None:
        raise NotImplementedError


# -- helpers ---------------------------------------------------------------------------------------


_OPAQUE = frozenset({cst.Lambda, cst.FunctionDef, cst.ClassDef})  # calls not run here
# Nodes with nothing inside worth a look.
_LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString})
_EXPRESSIONS = subclasses_of(cst.BaseExpression)
_Statement = tuple[cst.CSTNode, cst.For | None]


def _statements(body: Sequence[cst.CSTNode]) -> Iterator[_Statement]:
    """Small statements, header expressions and loop headers of a scope in source order,
    not nested defs."""
    for stmt in body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                yield small, None
        elif type(stmt) is cst.If:
            yield stmt.test, None
            yield from _block(stmt.body)
            orelse = stmt.orelse
            while orelse is not None:
                if type(orelse) is cst.If:
                    yield orelse.test, None
                    yield from _block(orelse.body)
                    orelse = orelse.orelse
                else:
                    yield from _block(orelse.body)
                    orelse = None
        elif type(stmt) is cst.For:
            yield stmt.iter, None
            yield stmt, stmt
            yield from _block(stmt.body)
            if stmt.orelse is not None:
                yield from _block(stmt.orelse.body)
        elif type(stmt) is cst.While:
            yield stmt.test, None
            yield from _block(stmt.body)
        elif type(stmt) is cst.With:
            for item in stmt.items:
                yield item.item, None
            yield from _block(stmt.body)
        elif type(stmt) is cst.Try:
            yield from _block(stmt.body)
            for handler in stmt.handlers:
                yield from _block(handler.body)
            if stmt.orelse is not None:
                yield from _block(stmt.orelse.body)
            if stmt.finalbody is not None:
                yield from _block(stmt.finalbody.body)


def _block(block: cst.BaseSuite) -> Iterator[_Statement]:
    if type(block) is cst.IndentedBlock:
        yield from _statements(block.body)
    elif type(block) is cst.SimpleStatementSuite:
        for small in block.body:
            yield small, None


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    """Calls in ``node``, inner arguments before the call that receives them (post-order),
    not entering lambdas and nested defs."""
    found: list[cst.Call] = []
    stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, done = stack.pop()
        if done:
            assert isinstance(current, cst.Call)  # only calls are pushed done
            found.append(current)
            continue
        kind = type(current)
        if kind in _LEAVES or kind in _OPAQUE:
            continue
        if kind is cst.Call:
            stack.append((current, True))
        kids = children(current)
        for kid in reversed(kids):
            stack.append((kid, False))
    return found


def _assignments(stmt: cst.CSTNode) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    if isinstance(stmt, cst.Assign):
        for target in stmt.targets:
            yield target.target, stmt.value
    elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
        yield stmt.target, stmt.value


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)
    else:
        name = dotted_name(target)
        if name is not None:
            yield name


def _dotted_names(expr: cst.BaseExpression) -> Iterator[str]:
    """The longest Name/Attribute chains inside ``expr``."""
    name = dotted_name(expr)
    if name is not None:
        yield name
        return
    for child in children(expr):
        if type(child) in _EXPRESSIONS:
            assert isinstance(child, cst.BaseExpression)  # _EXPRESSIONS: its subclasses
            yield from _dotted_names(child)
        else:
            for grandchild in children(child):
                if type(grandchild) in _EXPRESSIONS:
                    assert isinstance(grandchild, cst.BaseExpression)
                    yield from _dotted_names(grandchild)


def _expand_loop_vars(scope: _Scope, names: Iterator[str]) -> set[str]:
    """Dotted names, plus what a loop variable at their head iterates over."""
    found: set[str] = set()
    for name in names:
        found.add(name)
        found.update(scope.loop_iters.get(name.split(".", 1)[0], ()))
    return found


def _prefixes(name: str) -> Iterator[str]:
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        yield ".".join(parts[:i])


def _module_key(expr: cst.BaseExpression, resolve: Resolver) -> str | None:
    """The name an expression's module is known by: ``model``, ``fully_shard(model)``."""
    expr = the_module(expr)
    if isinstance(expr, cst.Call) and resolve(expr.func) in FULLY_SHARD:
        inner = call_argument(expr, 0, "module")
        return _module_key(inner, resolve) if inner is not None else None
    return dotted_name(expr)


def _use_orig_params(call: cst.Call) -> object:
    for arg in call.args:
        if arg.star == "**":
            return None  # unknown
        if arg.keyword is not None and arg.keyword.value == "use_orig_params":
            value = literal_value(arg.value)
            return value if is_literal(value) else None
    return MISSING


def _is_builtin_module(name: str) -> bool:
    if not name.startswith("torch.nn.") or name.startswith(_NOT_BUILTIN_PREFIXES):
        return False
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper() and last not in _NOT_BUILTIN_MODULES


def _compile_site(call: cst.Call, name: str | None, ctx: RuleContext) -> TreeSite | None:
    if name in COMPILE_FUNCTIONS:
        target = call_argument(call, 0, "model")
        if target is None:
            return None
        return tree_site(call, name, call, "call", target)
    receiver = ctx.module_compile_receiver(call) if name is None else None
    if receiver is not None:
        return tree_site(call, MODULE_COMPILE, call, "method", receiver)
    return None
