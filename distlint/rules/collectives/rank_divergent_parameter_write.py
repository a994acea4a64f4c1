"""DL205: an in-place write to a parameter that only some ranks make (under a condition that
depends on the rank), in a file that wraps a model with DDP or FSDP, with no later broadcast or
all-reduce that every rank makes.

Observed on torch 2.13.0 with 2 gloo ranks (tests/proof/test_proof_ddp.py, fixtures/DL205):
DDP/FSDP do not re-synchronise parameters after construction: the replicas diverge silently.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.findings import Severity
from distlint.rules._ddp import LEAVES
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.collectives import FULLY_SHARD
from distlint.semantic.collectives import WRAPPERS as MODEL_WRAPPERS
from distlint.syntax.imports import dotted_name
from distlint.syntax.shapes import bound_names
from distlint.syntax.walker import children, descendants

WRAPPERS = MODEL_WRAPPERS | FULLY_SHARD
WRAPPER_WORDS = ("DistributedDataParallel", "FullyShardedDataParallel", "fully_shard")
BROADCASTS = frozenset(
    {
        "torch.distributed.broadcast",
        "torch.distributed.broadcast_object_list",
        "torch.distributed.all_reduce",
    }
)
_CONDITIONS = frozenset({cst.If, cst.While})
_NO_GRAD_SITES = frozenset({cst.With, cst.FunctionDef})  # where a no_grad() context is opened
# Nodes whose children may hold an if/while statement of the same scope.
_STATEMENT_CONTAINERS = frozenset(
    {
        cst.Module,
        cst.IndentedBlock,
        cst.ClassDef,
        cst.For,
        cst.With,
        cst.Try,
        cst.TryStar,
        cst.ExceptHandler,
        cst.ExceptStarHandler,
        cst.Else,
        cst.Finally,
        cst.Match,
        cst.MatchCase,
    }
)
_OUTER = _STATEMENT_CONTAINERS | _CONDITIONS | {cst.FunctionDef}
_LOOP_CONTAINERS = (_STATEMENT_CONTAINERS | _CONDITIONS) - {cst.ClassDef}
# Nodes with one child that may hold a call (the others are names or punctuation).
_ONLY_CHILD: dict[type, str] = {
    cst.Attribute: "value",
    cst.Arg: "value",
    cst.Expr: "value",
    cst.AssignTarget: "target",
    cst.Index: "value",
    cst.SubscriptElement: "slice",
    cst.Element: "value",
    cst.ComparisonTarget: "comparator",
    cst.Return: "value",
}


class RankDivergentParameterWrite(Rule):
    code = "DL205"
    name = "rank-divergent-parameter-write"
    severity = Severity.WARNING
    summary = (
        "An in-place parameter write that only some ranks make: DDP/FSDP replicas diverge silently."
    )
    tags = ("correctness", "distributed", "ddp")
    precision = "medium"
    reads_facts = True  # rank taint is computed whenever facts are there (semantic.taint)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # Nothing is reported unless a call resolves to a wrapper, whose name is spelled in
        # the file (an alias still names it in its import): other files are skipped at once.
        source = ctx.source
        self._active = any(word in source for word in WRAPPER_WORDS)
        self._distributed: bool | None = None  # computed when a scope has a write to report

    def visit_Module(self, node: cst.Module) -> None:
        if self._active:
            self._check_scope(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._active:
            self._check_scope(node)

    def _check_scope(self, root: cst.Module | cst.FunctionDef) -> None:
        """One scope (a def with its decorators, or the module), nested defs excluded.

        Runs when the scope is entered, so names resolve and rank taint is read as at each of
        its nodes. Only code inside an ``if``/``while`` (not its test) can hold a write to
        report: statements are scanned for those, expressions only below them, and whether a
        condition depends on the rank is asked only for a parameter write found there.
        Re-synchronising calls are looked for only when some write is reported.
        """
        ctx = self.ctx
        outer = [*ctx.parents, root]  # ancestors of every node of the scope
        tests = _condition_tests(outer)
        guards = tuple(p for p in ctx.parents if type(p) in _NO_GRAD_SITES)  # root adds itself
        params: list[set[str]] = []  # the scope's parameter loop names, when first needed
        dependent: dict[int, bool] = {}
        writes: list[tuple[cst.CSTNode, str]] = []
        stack: list[tuple[cst.CSTNode, tuple[cst.BaseExpression, ...], tuple[cst.CSTNode, ...]]] = [
            (root, tests, guards)
        ]
        while stack:  # statements and blocks: where the conditions and no_grad guards change
            node, tests, guards = stack.pop()
            kind = type(node)
            if kind not in _OUTER:  # an expression or simple statement: its guards are ours
                if tests:  # inside some if/while: any call or assignment may be a write
                    self._scan_writes(node, tests, guards, root, params, dependent, writes)
                continue
            if kind is cst.FunctionDef and node is not root:
                continue  # a scope of its own
            if kind in _NO_GRAD_SITES:
                guards = (*guards, node)
            test = _test(node)
            if test is not None:
                inner = (*tests, test)
                for kid in children(node):
                    stack.append((kid, tests if kid is test else inner, guards))
                continue
            kids: Sequence[cst.CSTNode] = (
                node.body if type(node) is cst.IndentedBlock else children(node)
            )
            for kid in kids:
                if tests or type(kid) in _OUTER:
                    stack.append((kid, tests, guards))
        if not writes:
            return
        if self._distributed is None:
            resolve = ctx.imports.resolve  # as at the top of the module
            self._distributed = any(
                resolve(call.func) in WRAPPERS
                for call in descendants(ctx.module)
                if type(call) is cst.Call
            )
        if self._distributed:
            self._report_unsynced(root, outer, writes, dependent)

    def _scan_writes(
        self,
        node: cst.CSTNode,
        tests: tuple[cst.BaseExpression, ...],
        guards: tuple[cst.CSTNode, ...],
        root: cst.CSTNode,
        params: list[set[str]],
        dependent: dict[int, bool],
        writes: list[tuple[cst.CSTNode, str]],
    ) -> None:
        """Parameter writes below ``node`` (no statement block inside), if rank-dependent."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = type(current)
            if kind in LEAVES:
                continue
            found = None
            if type(current) is cst.Call:
                found = self._write_call(current, guards, root, params)
            elif type(current) is cst.Assign:
                found = self._write_assign(current, guards, root, params)
            if found is not None and any(_memo(dependent, self.ctx, test) for test in tests):
                writes.append((current, found))
            only = _ONLY_CHILD.get(kind)
            if only is None:
                stack.extend(children(current))
            else:
                child = getattr(current, only)
                if child is not None:
                    stack.append(child)

    def _write_call(
        self,
        node: cst.Call,
        guards: tuple[cst.CSTNode, ...],
        root: cst.CSTNode,
        params: list[set[str]],
    ) -> str | None:
        """``p.add_(...)`` on a parameter: its text; else None."""
        func = node.func
        if type(func) is not cst.Attribute:
            return None
        method = func.attr.value
        if not method.endswith("_") or method.startswith("_") or method == "requires_grad_":
            return None  # (no wrapper or broadcast name ends with "_": those are never writes)
        if self._is_parameter(func.value, guards, root, params):
            return self.ctx.module.code_for_node(node)
        return None

    def _write_assign(
        self,
        node: cst.Assign,
        guards: tuple[cst.CSTNode, ...],
        root: cst.CSTNode,
        params: list[set[str]],
    ) -> str | None:
        """``x.data = ...`` or ``p[...] = ...`` on a parameter: its text; else None."""
        for target in node.targets:
            t = target.target
            if (type(t) is cst.Attribute and t.attr.value == "data") or (
                type(t) is cst.Subscript and self._is_parameter(t.value, guards, root, params)
            ):
                return self.ctx.module.code_for_node(t) + " = ..."
        return None

    def _is_parameter(
        self,
        expr: cst.BaseExpression,
        guards: tuple[cst.CSTNode, ...],
        root: cst.CSTNode,
        params: list[set[str]],
    ) -> bool:
        """``x.data``, ``self.l1.weight``/``.bias``, or a name iterated from ``.parameters()``."""
        if type(expr) is cst.Attribute:
            attr = expr.attr.value
            if attr == "data":
                return True
            if attr in ("weight", "bias") and _no_grad(guards):
                return True
        if type(expr) is cst.Name:
            if not params:
                params.append(_parameter_loop_names(root))
            if expr.value in params[0]:
                return _no_grad(guards)
        return False

    def _report_unsynced(
        self,
        root: cst.CSTNode,
        outer: list[cst.CSTNode],
        writes: list[tuple[cst.CSTNode, str]],
        dependent: dict[int, bool],
    ) -> None:
        """Report the writes that no later broadcast/all-reduce/wrapping (made on every rank)
        of the same scope re-synchronises, in the walk's order."""
        ctx = self.ctx
        outer_under = any(_memo(dependent, ctx, test) for test in _condition_tests(outer))
        pending = {id(node): text for node, text in writes}
        order: list[tuple[cst.CSTNode, str]] = []
        synced_after: list[int] = []  # index in `order` of the last write before each sync
        stack: list[tuple[cst.CSTNode, tuple[cst.BaseExpression, ...]]] = [(root, ())]
        while stack:
            node, tests = stack.pop()
            kind = type(node)
            if kind is cst.FunctionDef and node is not root:
                continue
            text = pending.get(id(node))
            if text is not None:
                order.append((node, text))
            elif type(node) is cst.Call:
                resolved = ctx.resolve(node.func)
                if (resolved in BROADCASTS or resolved in WRAPPERS) and not (
                    outer_under or any(_memo(dependent, ctx, test) for test in tests)
                ):
                    synced_after.append(len(order))
            inner = tests
            test = _test(node)
            if test is not None:
                inner = (*tests, test)
            for kid in reversed(children(node)):
                stack.append((kid, tests if test is not None and kid is test else inner))
        last_sync = max(synced_after, default=0)
        for index, (node, text) in enumerate(order):
            if index < last_sync:
                continue  # broadcast/all-reduced (or wrapped) afterwards: replicas re-synced
            self.report(
                node,
                f"`{text}` writes a parameter in place on some ranks only (the condition "
                "depends on the rank): DDP/FSDP do not re-synchronise parameters after "
                "construction, so the replicas diverge silently, with no error. Make the "
                "update on every rank, or broadcast the parameter from one rank afterwards.",
            )


def _memo(cache: dict[int, bool], ctx: RuleContext, test: cst.BaseExpression) -> bool:
    found = cache.get(id(test))
    if found is None:
        found = cache[id(test)] = ctx.rank_dependent(test)
    return found


def _condition_tests(chain: list[cst.CSTNode]) -> tuple[cst.BaseExpression, ...]:
    """Tests of the ``if``/``while`` statements in an ancestor chain that the chain goes on
    into the body or else branch of (not into the test)."""
    return tuple(
        test
        for i, parent in enumerate(chain[:-1])
        if (test := _test(parent)) is not None and chain[i + 1] is not test
    )


def _test(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The test of an ``if``/``while`` statement (a node of ``_CONDITIONS``), else None."""
    return node.test if type(node) is cst.If or type(node) is cst.While else None


def _no_grad(parents: Sequence[cst.CSTNode]) -> bool:
    for parent in parents:
        if isinstance(parent, cst.With):
            for item in parent.items:
                call = item.item
                name = dotted_name(call.func if isinstance(call, cst.Call) else call) or ""
                if name.endswith("no_grad") or name.endswith("inference_mode"):
                    return True
        if isinstance(parent, cst.FunctionDef):
            for decorator in parent.decorators:
                d = decorator.decorator
                name = dotted_name(d.func if isinstance(d, cst.Call) else d) or ""
                if name.endswith("no_grad"):
                    return True
    return False


def _parameter_loop_names(scope: cst.CSTNode) -> set[str]:
    """Names bound by ``for p in <...>.parameters()`` loops of a scope (not nested defs)."""
    names: set[str] = set()
    stack = [scope]
    while stack:  # statements only: a loop is a statement, and not in a class body here
        item = stack.pop()
        if type(item) is cst.For and _iterates_parameters(item.iter):
            names |= _loop_param_names(item.target)
        if type(item) in _LOOP_CONTAINERS or item is scope:
            stack.extend(children(item))
    return names


def _iterates_parameters(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("parameters", "named_parameters")
    )


def _loop_param_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Tuple) and len(target.elements) == 2:
        return set(bound_names(target.elements[1].value))  # for name, p in named_parameters()
    return set(bound_names(target))
