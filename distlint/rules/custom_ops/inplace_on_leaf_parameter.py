"""DL406 inplace-on-leaf-parameter: see its docs page, docs/rules/DL406.md."""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.context import RuleContext
from distlint.rules.custom_ops._autograd import (
    INIT_PREFIX,
    _ModuleClass,
    _ModuleClassRule,
    attribute_chain,
    inplace_method,
    positional,
    strip_views,
)


class InplaceOnLeafParameter(_ModuleClassRule):
    code = "DL406"
    name = "inplace-on-leaf-parameter"
    severity = Severity.ERROR
    summary = "An in-place op on a parameter in forward with grad enabled fails."
    tags = ("correctness", "autograd", "torch.compile")
    precision = "high"
    graph_breaks = ("GB4315",)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._aliases: dict[str, tuple[str, ...]] = {}  # local name -> parameter chain

    def _param_chain(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        base = strip_views(expr)
        if base is None:
            return None
        chain = attribute_chain(base)
        if chain is None:
            return None
        if len(chain) == 1:
            return self._aliases.get(chain[0])
        return chain if chain[0] == "self" else None

    def _check(self, node: cst.CSTNode, receiver: cst.BaseExpression, op: str) -> None:
        facts = self.current
        if facts is None or not self.in_training_forward():
            return
        chain = self._param_chain(receiver)
        if chain is None or not _is_parameter(chain, facts):
            return
        spelled = self.ctx.module.code_for_node(receiver)
        self.report(
            node,
            f"In-place `{op}` on parameter `{spelled}` in `forward` with grad enabled: "
            "eager raises `RuntimeError: a leaf Variable that requires grad is being used "
            "in an in-place operation.`, and `torch.compile` fails with a hard error "
            "(`TorchRuntimeError`, GB4315). Wrap the update in `with torch.no_grad():` "
            "(or move it out of `forward`), or compute a new tensor out of place.",
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "forward":
            self._aliases = {}

    def visit_Call(self, node: cst.Call) -> None:
        if not self.maybe_forward():
            return  # every check below needs forward
        func = node.func
        name = self.ctx.resolve(func)
        if name is None and isinstance(func, cst.Attribute) and inplace_method(func.attr.value):
            self._check(node, func.value, func.attr.value)
            return
        if name is None or name.startswith(INIT_PREFIX):
            return  # torch.nn.init.* runs under no_grad itself
        last = name.rsplit(".", 1)[-1]
        if name.startswith("torch.") and inplace_method(last):
            first = positional(node, 0)
            if first is not None:
                self._check(node, first.value, name.replace("torch.nn.functional.", "F."))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self.maybe_forward():
            return
        spelled = self.ctx.module.code_for_node(node.operator).strip()
        self._check(node, node.target, spelled)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.maybe_forward():
            return
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(target.target, target.target, "[...] =")
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if not self.in_forward():
                return
            local = node.targets[0].target.value
            chain = self._param_chain(node.value)
            if chain is not None:
                self._aliases[local] = chain
            else:
                self._aliases.pop(local, None)

    def visit_For(self, node: cst.For) -> None:
        if not self.maybe_forward() or not self.in_forward():
            return
        it = node.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
            return
        method = it.func.attr.value
        owner = attribute_chain(it.func.value)
        if owner is None or owner[0] != "self":
            return
        target = node.target
        if method == "parameters" and isinstance(target, cst.Name):
            self._aliases[target.value] = (*owner, "parameters()")
        elif method == "named_parameters" and isinstance(target, cst.Tuple):
            elements = target.elements
            if len(elements) == 2 and isinstance(elements[1].value, cst.Name):
                self._aliases[elements[1].value.value] = (*owner, "named_parameters()")


def _is_parameter(chain: tuple[str, ...], facts: _ModuleClass) -> bool:
    if chain[0] != "self":
        return False
    if chain[-1] in ("parameters()", "named_parameters()"):
        return True
    if chain[1:] in facts.frozen or chain[1:2] in facts.frozen:
        return False
    if len(chain) == 2:
        return chain[1] in facts.params
    return chain[-1] in ("weight", "bias") and chain[1] in facts.layers
