"""DL204: a DDP-wrapped module whose ``forward`` skips a trainable submodule on some paths, or
computes a submodule output that never reaches the return value, without
``find_unused_parameters=True``.

Observed on torch 2.13.0 with 2 gloo ranks (tests/proof/test_proof_ddp.py, fixtures/DL204): the
second iteration raises ``RuntimeError: Expected to have finished reduction in the prior
iteration before starting a new one`` (a rank-dependent skip hangs instead). File-scope: the
module class and the DDP call are looked up in the same file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Severity
from distlint.rules._ddp import LEAVES, first_arg, walk
from distlint.rules._fixed_point import grow_until_stable
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.collectives import DDP_CLASS
from distlint.semantic.regions import literal_value
from distlint.syntax.imports import dotted_name, self_attribute
from distlint.syntax.shapes import assignment_targets, bound_names, keyword_is_true
from distlint.syntax.walker import children, suite_body

DDP_WORD = "DistributedDataParallel"
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


def _calls_by_scope(module: cst.Module) -> dict[int, list[cst.Call]]:
    """Every call of the file by the ``id`` of its innermost def (decorators included), or of
    the module, in source order."""
    found: dict[int, list[cst.Call]] = {}
    stack: list[tuple[cst.CSTNode, list[cst.Call]]] = [(module, found.setdefault(id(module), []))]
    while stack:
        node, calls = stack.pop()
        kind = type(node)
        if kind in LEAVES:
            continue
        if type(node) is cst.Call:
            calls.append(node)
        elif kind is cst.FunctionDef:
            calls = found.setdefault(id(node), [])
        kids = children(node)
        for kid in reversed(kids):
            stack.append((kid, calls))
    return found


def _defines_forward(cls: cst.ClassDef) -> bool:
    return any(
        type(statement) is cst.FunctionDef and statement.name.value == "forward"
        for statement in suite_body(cls.body)
    )


def _names_read(expr: cst.CSTNode) -> set[str]:
    return {n.value for n in walk(expr) if isinstance(n, cst.Name)}


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
                type(func) is cst.Attribute and func.attr.value == DDP_WORD
            )
            if candidate and self.ctx.resolve(func) == DDP_CLASS:
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
        for statement in suite_body(cls.body):
            if isinstance(statement, cst.FunctionDef):
                info.methods[statement.name.value] = statement
        init = info.methods.get("__init__")
        if init is not None:
            for item in walk(init):
                if isinstance(item, cst.Assign) and isinstance(item.value, cst.Call):
                    for target in item.targets:
                        attr = self_attribute(target.target)
                        if attr is not None and self._parametric(item.value):
                            info.submodules[attr] = item.value
        for method in info.methods.values():
            for item in walk(method):
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
            classes = self._classes  # being filled by _describe_classes: the classes above
            return classes is not None and call.func.value in classes
        return False

    def _check_ddp(self, node: cst.Call) -> None:
        if keyword_is_true(node, "find_unused_parameters") or keyword_is_true(node, "static_graph"):
            return
        module = first_arg(node)
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
        for item in walk(scope):
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
    for item in walk(loop.body):
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
    stack: list[tuple[cst.CSTNode, bool]] = [
        (child, conditional) for child in suite_body(func.body)
    ]
    while stack:
        node, under = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            attr = self_attribute(node.func)
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
    returned = [n.value for n in walk(forward) if isinstance(n, cst.Return) and n.value]
    if not returned:
        return []
    live: set[str] = set()
    for returned_value in returned:
        live |= _names_read(returned_value)
    statements = [
        n
        for n in walk(forward)
        if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr))
    ]
    grow_until_stable(live, statements, _statement_flow)
    dropped = []
    for statement in statements:
        value = statement.value
        if not isinstance(value, cst.Call):
            continue
        attr = self_attribute(value.func)
        if attr is None or attr not in info.submodules:
            continue
        if isinstance(statement, cst.Expr):
            dropped.append((attr, value))
            continue
        targets = assignment_targets(statement)
        if any(
            not isinstance(t, cst.Name) and not isinstance(t, (cst.Tuple, cst.List))
            for t in targets
        ):
            continue  # written to an attribute or a subscript: kept as state
        names: set[str] = set()
        for target in targets:
            names.update(bound_names(target))
        if names and not names & live:
            dropped.append((attr, value))
    return dropped


def _statement_flow(statement: cst.CSTNode, live: set[str]) -> set[str]:
    """Names whose value flows into a live name (or ``self`` state) through ``statement``."""
    if isinstance(statement, cst.Expr):
        call = statement.value
        # live.add_(x), live.append(x), torch.cat(...) with an out=: conservatively live
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            receiver = call.func.value
            if isinstance(receiver, cst.Name) and receiver.value in live:
                return _names_read(call)
            if self_attribute(receiver) is not None:
                return _names_read(call)
        return set()
    value = getattr(statement, "value", None)
    if value is None:
        return set()
    for target in assignment_targets(statement):
        if not isinstance(target, (cst.Name, cst.Tuple, cst.List)):
            return _names_read(value) | _names_read(target)  # self.x = ..., h[i] = ...
        if live.intersection(bound_names(target)):
            return _names_read(value)
    return set()
