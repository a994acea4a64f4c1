"""DistributedDataParallel pitfalls (DL204, DL205, DL303).

* DL204: a DDP-wrapped module whose ``forward`` skips a trainable submodule on some paths, or
  computes a submodule output that never reaches the return value.
* DL205: an in-place write to a parameter that only some ranks make.
* DL303: ``bucket_cap_mb`` below 1 together with ``torch.compile``.

All three failures were observed on torch 2.13.0 with 2 gloo ranks and are re-observed by
tests/proof/test_proof_ddp.py.

All three are file-scope: the module class, the DDP call and the compile call are looked up in
the same file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import is_literal, literal_value
from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import children

DDP = "torch.nn.parallel.DistributedDataParallel"
DDP_WORD = "DistributedDataParallel"
WRAPPERS = frozenset(
    {
        DDP,
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard.fully_shard",
    }
)
COMPILE = "torch.compile"
OPTIMIZE_DDP = "torch._dynamo.config.optimize_ddp"
CONFIG_PATCH = frozenset({"torch._dynamo.config.patch"})
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
# Expression nodes without children: not worth a look.
_LEAVES = frozenset(
    {
        cst.Name,
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.FormattedStringText,
        cst.Ellipsis,
        cst.Pass,
    }
)
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
# torch.nn modules that own trainable parameters (a skipped activation or dropout is harmless).
PARAMETRIC_NN = frozenset(
    {
        "Linear",
        "Bilinear",
        "LazyLinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "Embedding",
        "EmbeddingBag",
        "LayerNorm",
        "RMSNorm",
        "GroupNorm",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "SyncBatchNorm",
        "LSTM",
        "GRU",
        "RNN",
        "LSTMCell",
        "GRUCell",
        "RNNCell",
        "MultiheadAttention",
        "Transformer",
        "TransformerEncoder",
        "TransformerDecoder",
        "TransformerEncoderLayer",
        "TransformerDecoderLayer",
        "PReLU",
        "Sequential",
        "ModuleList",
        "ModuleDict",
    }
)


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _is_true(call: cst.Call, name: str) -> bool:
    arg = _keyword(call, name)
    return arg is not None and literal_value(arg.value) is True


def _first_arg(call: cst.Call, keyword: str = "module") -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is None and arg.star == "":
            return arg.value
    found = _keyword(call, keyword)
    return found.value if found is not None else None


def _walk(node: cst.CSTNode, *, into_defs: bool = False) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, in source order, not entering nested defs by default."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if (
            not into_defs
            and current is not node
            and isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        ):
            continue
        kids = children(current)
        kids.reverse()
        stack.extend(kids)


def _calls_by_scope(module: cst.Module) -> dict[int, list[cst.Call]]:
    """Every call of the file by the ``id`` of its innermost def (decorators included), or of
    the module, in source order."""
    found: dict[int, list[cst.Call]] = {}
    stack: list[tuple[cst.CSTNode, list[cst.Call]]] = [(module, found.setdefault(id(module), []))]
    while stack:
        node, calls = stack.pop()
        kind = type(node)
        if kind in _LEAVES:
            continue
        if kind is cst.Call:
            calls.append(node)  # type: ignore[arg-type]
        elif kind is cst.FunctionDef:
            calls = found.setdefault(id(node), [])
        kids = children(node)
        for kid in reversed(kids):
            stack.append((kid, calls))
    return found


def _defines_forward(cls: cst.ClassDef) -> bool:
    return any(
        type(statement) is cst.FunctionDef and statement.name.value == "forward"  # type: ignore[attr-defined]
        for statement in _body(cls)
    )


def _body(node: cst.FunctionDef | cst.ClassDef) -> list[cst.CSTNode]:
    return list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else [node.body]


def _self_attr(expr: cst.BaseExpression) -> str | None:
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == "self"
    ):
        return expr.attr.value
    return None


def _names_read(expr: cst.CSTNode) -> set[str]:
    return {n.value for n in _walk(expr) if isinstance(n, cst.Name)}


def _target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        found: set[str] = set()
        for element in target.elements:
            found |= _target_names(element.value)
        return found
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


# -- DL204 -------------------------------------------------------------------------------------


@dataclass
class _Unused:
    attr: str
    node: cst.CSTNode
    why: str  # "skipped" | "dropped"


@dataclass
class _ModuleClass:
    node: cst.ClassDef
    submodules: dict[str, cst.Call] = field(default_factory=dict)  # attr -> constructor call
    frozen: set[str] = field(default_factory=set)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)


class DdpUnusedParameters(Rule):
    code = "DL204"
    name = "ddp-unused-parameters"
    severity = Severity.ERROR
    summary = (
        "A DDP-wrapped module's forward skips a trainable submodule or drops its output, "
        "without find_unused_parameters=True: the second iteration raises."
    )
    tags = ("correctness", "distributed", "ddp")
    precision = "medium"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # A finding sits on a call resolving to DDP, whose name is spelled in the file (an
        # alias still names it in its import): other files are skipped without a walk.
        self._active = DDP_WORD in ctx.source
        self._calls: dict[int, list[cst.Call]] = {}  # id(innermost def, or module) -> calls
        self._classes: dict[str, _ModuleClass] | None = None
        self._frozen_outside: set[str] = set()

    def visit_Module(self, node: cst.Module) -> None:
        # The wrapped module must be a class of this file with a forward.
        self._active = self._active and any(
            type(statement) is cst.ClassDef and _defines_forward(statement)
            for statement in node.body
        )
        if not self._active:
            return
        self._module = node
        self._calls = _calls_by_scope(node)
        for scope_calls in self._calls.values():
            for call in scope_calls:
                attr = _frozen_attr(call)
                if attr is not None:
                    self._frozen_outside.add(attr)
        self._check_calls(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._active:
            self._check_calls(node)

    def _check_calls(self, scope: cst.CSTNode) -> None:
        """The calls of this scope, resolved where they are written (its own imports)."""
        for call in self._calls.pop(id(scope), ()):
            func = call.func
            kind = type(func)
            # Resolving keeps the last part of a dotted name: only a bare name (an alias) or
            # `x.DistributedDataParallel` can resolve to DDP.
            candidate = kind is cst.Name or (
                kind is cst.Attribute and func.attr.value == DDP_WORD  # type: ignore[attr-defined]
            )
            if candidate and self.ctx.resolve(func) == DDP:
                self._check_ddp(call)

    def _describe_classes(self) -> dict[str, _ModuleClass]:
        if self._classes is None:
            self._classes = {}
            for statement in self._module.body:
                if isinstance(statement, cst.ClassDef):
                    self._classes[statement.name.value] = self._describe(statement)
        return self._classes

    def _describe(self, cls: cst.ClassDef) -> _ModuleClass:
        info = _ModuleClass(cls)
        for statement in _body(cls):
            if isinstance(statement, cst.FunctionDef):
                info.methods[statement.name.value] = statement
        init = info.methods.get("__init__")
        if init is not None:
            for item in _walk(init):
                if isinstance(item, cst.Assign) and isinstance(item.value, cst.Call):
                    for target in item.targets:
                        attr = _self_attr(target.target)
                        if attr is not None and self._parametric(item.value):
                            info.submodules[attr] = item.value
        for method in info.methods.values():
            for item in _walk(method):
                if isinstance(item, cst.Call):
                    attr = _frozen_attr(item)
                    if attr is not None:
                        info.frozen.add(attr)
                elif isinstance(item, cst.For):
                    attr = _frozen_loop(item)
                    if attr is not None:
                        info.frozen.add(attr)
        return info

    def _parametric(self, call: cst.Call) -> bool:
        resolved = self.ctx.resolve(call.func) or ""
        if resolved.startswith("torch.nn.") and resolved.count(".") == 2:
            return resolved.rsplit(".", 1)[-1] in PARAMETRIC_NN
        if isinstance(call.func, cst.Name):
            return call.func.value in self._classes
        return False

    def _check_ddp(self, node: cst.Call) -> None:
        if _is_true(node, "find_unused_parameters") or _is_true(node, "static_graph"):
            return
        module = _first_arg(node)
        info = self._module_class(module)
        if info is None:
            return
        frozen = info.frozen | self._frozen_outside
        for unused in _unused_submodules(info):
            if unused.attr in frozen:
                continue
            cls = info.node.name.value
            if unused.why == "skipped":
                what = f"`{cls}.forward` skips `self.{unused.attr}` on some paths"
            else:
                what = (
                    f"`{cls}.forward` computes `self.{unused.attr}(...)` but its output never "
                    "reaches the return value"
                )
            self.report(
                node,
                f"{what}, so its parameters get no gradient; without "
                "`find_unused_parameters=True` DDP raises `RuntimeError: Expected to have "
                "finished reduction in the prior iteration before starting a new one` on the "
                "second iteration (a rank-dependent skip hangs instead). Pass "
                "`find_unused_parameters=True`, or freeze the submodule.",
                related_nodes=((unused.node, f"self.{unused.attr}"),),
            )
            return

    def _module_class(self, module: cst.BaseExpression | None) -> _ModuleClass | None:
        call = module
        if isinstance(module, cst.Name):
            call = self._assigned_call(module.value)
        while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            call = call.func.value  # Net(...).to(device)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Name):
            return self._describe_classes().get(call.func.value)
        return None

    def _assigned_call(self, name: str) -> cst.BaseExpression | None:
        scope: cst.CSTNode = self.ctx.function or self.ctx.module
        found = None
        for item in _walk(scope):
            if isinstance(item, cst.Assign) and len(item.targets) == 1:
                target = item.targets[0].target
                if isinstance(target, cst.Name) and target.value == name:
                    found = item.value
        return found


def _frozen_attr(call: cst.Call) -> str | None:
    """``<...>.x.requires_grad_(False)`` -> ``x``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_"):
        return None
    if not call.args or literal_value(call.args[0].value) is not False:
        return None
    receiver = func.value
    return receiver.attr.value if isinstance(receiver, cst.Attribute) else None


def _frozen_loop(loop: cst.For) -> str | None:
    """``for p in <...>.x.parameters(): p.requires_grad = False`` -> ``x``."""
    source = loop.iter
    if not (
        isinstance(source, cst.Call)
        and isinstance(source.func, cst.Attribute)
        and source.func.attr.value == "parameters"
        and isinstance(source.func.value, cst.Attribute)
    ):
        return None
    for item in _walk(loop.body):
        if isinstance(item, cst.Assign) and literal_value(item.value) is False:
            target = item.targets[0].target
            if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
                return source.func.value.attr.value
    return None


def _unused_submodules(info: _ModuleClass) -> list[_Unused]:
    forward = info.methods.get("forward")
    if forward is None:
        return []
    found: list[_Unused] = []
    calls: dict[str, list[tuple[cst.Call, bool]]] = {}
    _collect_calls(forward, info, calls, conditional=False, seen=set())
    for attr in info.submodules:
        uses = calls.get(attr, [])
        if uses and all(conditional for _, conditional in uses):
            found.append(_Unused(attr, uses[0][0], "skipped"))
    for attr, call in _dropped_outputs(forward, info):
        if attr in info.submodules and all(u.node is not call for u in found):
            found.append(_Unused(attr, call, "dropped"))
    return found


def _collect_calls(
    func: cst.FunctionDef,
    info: _ModuleClass,
    calls: dict[str, list[tuple[cst.Call, bool]]],
    conditional: bool,
    seen: set[str],
) -> None:
    """Calls ``self.x(...)`` of submodules in ``func`` (and the methods it calls), and whether
    each is under a condition (``if``/ternary/loop) that is not ``self.training``."""
    seen.add(func.name.value)
    stack: list[tuple[cst.CSTNode, bool]] = [(child, conditional) for child in _body(func)]
    while stack:
        node, under = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            attr = _self_attr(node.func)
            if attr is not None:
                if attr in info.submodules:
                    calls.setdefault(attr, []).append((node, under))
                elif attr in info.methods and attr not in seen:
                    _collect_calls(info.methods[attr], info, calls, under, seen)
        if isinstance(node, (cst.If, cst.IfExp)):
            gate = under or not _on_training_flag(node.test)
            stack.append((node.test, under))
            stack.extend((b, gate) for b in (node.body, node.orelse) if b is not None)
            continue
        if isinstance(node, (cst.For, cst.While)):
            stack.append((node.iter if isinstance(node, cst.For) else node.test, under))
            stack.append((node.body, True))
            if node.orelse is not None:
                stack.append((node.orelse, True))
            continue
        stack.extend((child, under) for child in children(node))


def _on_training_flag(test: cst.BaseExpression) -> bool:
    text = dotted_name(test)
    if isinstance(test, cst.UnaryOperation):
        text = dotted_name(test.expression)
    return text == "self.training"


def _dropped_outputs(forward: cst.FunctionDef, info: _ModuleClass) -> list[tuple[str, cst.Call]]:
    """Submodule calls whose value never flows into a returned value or ``self`` state."""
    returned = [n.value for n in _walk(forward) if isinstance(n, cst.Return) and n.value]
    if not returned:
        return []
    live: set[str] = set()
    for value in returned:
        live |= _names_read(value)
    statements = [
        n
        for n in _walk(forward)
        if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr))
    ]
    changed = True
    while changed:
        changed = False
        for statement in statements:
            reads = _statement_flow(statement, live)
            if reads - live:
                live |= reads
                changed = True
    dropped = []
    for statement in statements:
        value = statement.value
        if not isinstance(value, cst.Call):
            continue
        attr = _self_attr(value.func)
        if attr is None or attr not in info.submodules:
            continue
        if isinstance(statement, cst.Expr):
            dropped.append((attr, value))
            continue
        targets = _targets(statement)
        if any(
            not isinstance(t, cst.Name) and not isinstance(t, (cst.Tuple, cst.List))
            for t in targets
        ):
            continue  # written to an attribute or a subscript: kept as state
        names: set[str] = set()
        for target in targets:
            names |= _target_names(target)
        if names and not names & live:
            dropped.append((attr, value))
    return dropped


def _targets(statement: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(statement, cst.Assign):
        return [t.target for t in statement.targets]
    if isinstance(statement, (cst.AugAssign, cst.AnnAssign)):
        return [statement.target]
    return []


def _statement_flow(statement: cst.CSTNode, live: set[str]) -> set[str]:
    """Names whose value flows into a live name (or ``self`` state) through ``statement``."""
    if isinstance(statement, cst.Expr):
        call = statement.value
        # live.add_(x), live.append(x), torch.cat(...) with an out=: conservatively live
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            receiver = call.func.value
            if isinstance(receiver, cst.Name) and receiver.value in live:
                return _names_read(call)
            if _self_attr(receiver) is not None:
                return _names_read(call)
        return set()
    value = getattr(statement, "value", None)
    if value is None:
        return set()
    for target in _targets(statement):
        if not isinstance(target, (cst.Name, cst.Tuple, cst.List)):
            return _names_read(value) | _names_read(target)  # self.x = ..., h[i] = ...
        if _target_names(target) & live:
            return _names_read(value)
    return set()


# -- DL205 -------------------------------------------------------------------------------------


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
        stack = [(root, tests, guards)]
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
            if kind in _CONDITIONS:
                test = node.test  # type: ignore[attr-defined]
                inner = (*tests, test)
                for kid in children(node):
                    stack.append((kid, tests if kid is test else inner, guards))
                continue
            kids = node.body if kind is cst.IndentedBlock else children(node)  # type: ignore[attr-defined]
            for kid in kids:
                if tests or type(kid) in _OUTER:
                    stack.append((kid, tests, guards))
        if not writes:
            return
        if self._distributed is None:
            resolve = ctx.imports.resolve  # as at the top of the module
            self._distributed = any(
                resolve(call.func) in WRAPPERS
                for call in _walk(ctx.module, into_defs=True)
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
            if kind in _LEAVES:
                continue
            found = None
            if kind is cst.Call:
                found = self._write_call(current, guards, root, params)  # type: ignore[arg-type]
            elif kind is cst.Assign:
                found = self._write_assign(current, guards, root, params)  # type: ignore[arg-type]
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
        method = func.attr.value  # type: ignore[attr-defined]
        if not method.endswith("_") or method.startswith("_") or method == "requires_grad_":
            return None  # (no wrapper or broadcast name ends with "_": those are never writes)
        if self._is_parameter(func.value, guards, root, params):  # type: ignore[attr-defined]
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
            if (type(t) is cst.Attribute and t.attr.value == "data") or (  # type: ignore[attr-defined]
                type(t) is cst.Subscript and self._is_parameter(t.value, guards, root, params)  # type: ignore[attr-defined]
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
        kind = type(expr)
        if kind is cst.Attribute:
            attr = expr.attr.value  # type: ignore[attr-defined]
            if attr == "data":
                return True
            if attr in ("weight", "bias") and _no_grad(guards):
                return True
        if kind is cst.Name:
            if not params:
                params.append(_parameter_loop_names(root))
            if expr.value in params[0]:  # type: ignore[attr-defined]
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
            elif kind is cst.Call:
                resolved = ctx.resolve(node.func)  # type: ignore[attr-defined]
                if (resolved in BROADCASTS or resolved in WRAPPERS) and not (
                    outer_under or any(_memo(dependent, ctx, test) for test in tests)
                ):
                    synced_after.append(len(order))
            inner = tests
            if kind in _CONDITIONS:
                inner = (*tests, node.test)  # type: ignore[attr-defined]
            for kid in reversed(children(node)):
                stack.append((kid, tests if kind in _CONDITIONS and kid is node.test else inner))  # type: ignore[attr-defined]
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
        parent.test  # type: ignore[attr-defined]
        for i, parent in enumerate(chain[:-1])
        if type(parent) in _CONDITIONS and chain[i + 1] is not parent.test  # type: ignore[attr-defined]
    )


def _no_grad(parents: list[cst.CSTNode]) -> bool:
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
        kind = type(item)
        if kind is cst.For and _iterates_parameters(item.iter):  # type: ignore[attr-defined]
            names |= _loop_param_names(item.target)  # type: ignore[attr-defined]
        if kind in _LOOP_CONTAINERS or item is scope:
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
        return _target_names(target.elements[1].value)  # for name, p in named_parameters()
    return _target_names(target)


# -- DL303 -------------------------------------------------------------------------------------


class DdpSmallBucketCompile(Rule):
    code = "DL303"
    name = "ddp-small-bucket-compile"
    severity = Severity.ERROR
    summary = (
        "DDP with bucket_cap_mb below 1 under torch.compile fails with an AssertionError in "
        "DDPOptimizer."
    )
    tags = ("correctness", "torch.compile", "ddp")
    precision = "high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # A finding needs a literal `bucket_cap_mb=` keyword: other files are skipped at once.
        self._active = "bucket_cap_mb" in ctx.source

    def visit_Module(self, node: cst.Module) -> None:
        self._small: list[tuple[cst.Call, cst.Arg, set[str]]] = []
        self._compiled_names: set[str] = set()
        self._compiled_calls: set[int] = set()  # id() of DDP calls passed to torch.compile
        self._disabled = False

    def visit_Call(self, node: cst.Call) -> None:
        if not self._active:
            return
        resolved = self.ctx.resolve(node.func)
        if resolved == DDP:
            arg = _keyword(node, "bucket_cap_mb")
            if arg is None:
                return
            value = literal_value(arg.value)
            if (
                not is_literal(value)
                or isinstance(value, bool)
                or not isinstance(value, (int, float))
            ):
                return
            if not 0 < value < 1:
                return
            names = set()
            module = _first_arg(node)
            if isinstance(module, cst.Name):
                names.add(module.value)
            elif isinstance(module, cst.Call) and self.ctx.resolve(module.func) == COMPILE:
                self._compiled_calls.add(id(node))
            target = self._assigned_to(node)
            if target is not None:
                names.add(target)
            self._small.append((node, arg, names))
        elif resolved == COMPILE:
            compiled = _first_arg(node, "model")
            if isinstance(compiled, cst.Name):
                self._compiled_names.add(compiled.value)
            elif isinstance(compiled, cst.Call):
                self._compiled_calls.add(id(compiled))
            target = self._assigned_to(node)
            if target is not None:  # compiled = torch.compile(net); DDP(compiled, ...)
                self._compiled_names.add(target)
        elif resolved in CONFIG_PATCH:
            arg = _keyword(node, "optimize_ddp")
            if arg is not None and literal_value(arg.value) is False:
                self._disabled = True
        elif isinstance(receiver := self.ctx.module_compile_receiver(node), cst.Name):
            self._compiled_names.add(receiver.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self._active:
            return
        for target in node.targets:
            if (
                self.ctx.resolve(target.target) == OPTIMIZE_DDP
                and literal_value(node.value) is False
            ):
                self._disabled = True

    def _assigned_to(self, call: cst.Call) -> str | None:
        parents = self.ctx.parents
        for parent in reversed(parents):
            if isinstance(parent, cst.Assign):
                if parent.value is call and len(parent.targets) == 1:
                    target = parent.targets[0].target
                    return target.value if isinstance(target, cst.Name) else None
                return None
            if isinstance(parent, cst.BaseStatement):
                return None
        return None

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._disabled:
            return
        for call, arg, names in self._small:
            if id(call) not in self._compiled_calls and not names & self._compiled_names:
                continue
            self.report(
                arg,
                f"`{self.ctx.module.code_for_node(arg).strip().rstrip(',')}` with "
                "`torch.compile`: DDPOptimizer splits the graph at bucket boundaries and fails "
                "with `AssertionError: First bucket should be smaller/equal to other buckets "
                "to get comms warmed up ASAP` when the bucket is below 1 MiB. Keep "
                "`bucket_cap_mb` at 1 or more, or set "
                "`torch._dynamo.config.optimize_ddp = False`.",
            )
