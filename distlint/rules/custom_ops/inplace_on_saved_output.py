"""DL407 inplace-on-saved-output: see its docs page, docs/rules/DL407.md."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.findings import Severity
from distlint.rules.context import RuleContext
from distlint.rules.custom_ops._autograd import (
    INIT_PREFIX,
    INPLACE_CAPABLE_MODULES,
    SAVING_MODULES,
    _ModuleClassRule,
    attribute_chain,
    eval_only,
    inplace_method,
    optional_input,
    positional,
    strip_views,
)
from distlint.syntax.imports import self_attribute
from distlint.syntax.shapes import bound_names, keyword_is_true
from distlint.syntax.walker import parameters


def _branch_body(parents: Sequence[cst.CSTNode]) -> cst.CSTNode | None:
    """The innermost ``if``/``else``/``try`` body (below the enclosing function) the current
    node is in: a name bound there may not hold that value after the branch (OmegaFold's
    ``if layer is not last: x = relu(x)``). None outside any branch."""
    for index in range(len(parents) - 1, 0, -1):
        parent, child = parents[index - 1], parents[index]
        if isinstance(parent, cst.FunctionDef):
            return None
        if isinstance(parent, (cst.If, cst.Else, cst.Try, cst.ExceptHandler)) and (
            child is parent.body
        ):
            return child
    return None


SAVING_FUNCTIONS = {
    "torch.sigmoid": "sigmoid",
    "torch.nn.functional.sigmoid": "sigmoid",
    "torch.special.expit": "sigmoid",
    "torch.tanh": "tanh",
    "torch.nn.functional.tanh": "tanh",
    "torch.exp": "exp",
    "torch.softmax": "softmax",
    "torch.nn.functional.softmax": "softmax",
    "torch.special.softmax": "softmax",
    "torch.relu": "relu",
    "torch.nn.functional.relu": "relu",
}


SAVING_METHODS = {
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "exp": "exp",
    "softmax": "softmax",
    "relu": "relu",
}


class InplaceOnSavedOutput(_ModuleClassRule):
    code = "DL407"
    name = "inplace-on-saved-output"
    severity = Severity.ERROR
    summary = "An in-place op on the output of sigmoid/tanh/exp/softmax/relu breaks backward."
    tags = ("correctness", "autograd", "torch.compile")
    precision = "high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # local name -> (op whose saved output it holds, the branch body that bound it or None)
        self._saved: dict[str, tuple[str, cst.CSTNode | None]] = {}
        self._detached: set[str] = set()  # local names holding ``x.detach()``: no history
        # forward's own inputs, not yet rebound: whether they require grad is not known (a
        # test model's input does not; the activation then saves nothing)
        self._inputs: set[str] = set()
        self._sequential_words = "Sequential" in ctx.source  # torch.nn.Sequential, any alias
        self.active = self.active or self._sequential_words  # nn.Sequential(...) anywhere

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "forward":
            self._saved = {}
            self._detached = set()
            self._inputs = {p.name.value for p in parameters(node.params)}

    def _bound_here(self, bound_in: cst.CSTNode | None) -> bool:
        """Whether a binding made in branch body ``bound_in`` holds at the current node:
        made outside any branch, or in a branch the current node is also in."""
        return bound_in is None or any(parent is bound_in for parent in self.ctx.parents)

    def _unknown_input(self, expr: cst.BaseExpression | None) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self._inputs

    def _saving_op(self, expr: cst.BaseExpression) -> str | None:
        """The op whose saved output ``expr`` is (or is a view of), if any."""
        base = strip_views(expr)
        if isinstance(base, cst.Name):
            op, bound_in = self._saved.get(base.value, (None, None))
            return op if op is not None and self._bound_here(bound_in) else None
        if not isinstance(base, cst.Call):
            return None
        func = base.func
        if keyword_is_true(base, "inplace"):
            return None
        first = positional(base, 0)
        if first is not None and self._unknown_input(first.value):
            return None  # relu(x) of forward's own input x: saved only if x requires grad
        attr = self_attribute(func)
        facts = self.current
        if attr is not None and facts is not None and attr in facts.saving:
            return facts.saving[attr]
        name = self.ctx.resolve(func)
        if name is not None:
            op = SAVING_FUNCTIONS.get(name)
            return None if op is None or (first and self._is_detached(first.value)) else op
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in SAVING_METHODS
            and attribute_chain(func.value) != ("self",)
            and not self._is_detached(func.value)
            and not self._unknown_input(func.value)
        ):
            return SAVING_METHODS[func.attr.value]  # a tensor method: h.sigmoid()
        return None

    def _is_detached(self, expr: cst.BaseExpression) -> bool:
        """``x.detach()`` or a name bound to one: autograd records nothing for ops on it."""
        if isinstance(expr, cst.Name):
            return expr.value in self._detached
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "detach"
        )

    def _check(self, node: cst.CSTNode, receiver: cst.BaseExpression, how: str) -> None:
        if not self.in_training_forward() or eval_only(self.ctx.parents):
            return
        op = self._saving_op(receiver)
        if op is None:
            return
        if optional_input(self.ctx.parents):
            return  # only when an optional input is passed: often by inference callers alone
        spelled = self.ctx.module.code_for_node(receiver)
        self.report(
            node,
            f"{how} on `{spelled}`, the output of `{op}`, which autograd saves for backward: "
            "`backward()` raises `RuntimeError: one of the variables needed for gradient "
            "computation has been modified by an inplace operation` (under `torch.compile`, "
            "already at the first compiled call). Use the out-of-place form.",
        )

    def visit_Call(self, node: cst.Call) -> None:
        forward = self.maybe_forward()
        if not forward and not self._sequential_words:
            return  # outside forward only nn.Sequential(...) is checked
        func = node.func
        name = self.ctx.resolve(func)
        if not forward:
            if name == "torch.nn.Sequential":
                self._check_sequential(node)
            return
        if name is None and isinstance(func, cst.Attribute) and inplace_method(func.attr.value):
            self._check(node, func.value, f"In-place `{func.attr.value}`")
            return
        if name == "torch.nn.Sequential":
            self._check_sequential(node)
            return
        facts = self.current
        attr = self_attribute(func)
        first = positional(node, 0)
        if first is None:
            return
        if attr is not None and facts is not None and attr in facts.inplace:
            self._check(node, first.value, f"`self.{attr}` (`{facts.inplace[attr]}(inplace=True)`)")
            return
        if name is None or not name.startswith("torch.") or name.startswith(INIT_PREFIX):
            return
        short = name.replace("torch.nn.functional.", "F.")
        if inplace_method(name.rsplit(".", 1)[-1]):
            self._check(node, first.value, f"In-place `{short}`")
        elif name.startswith("torch.nn.functional.") and keyword_is_true(node, "inplace"):
            self._check(node, first.value, f"`{short}(..., inplace=True)`")

    def _check_sequential(self, node: cst.Call) -> None:
        """``nn.Sequential(..., nn.Sigmoid(), nn.ReLU(inplace=True), ...)``."""
        previous: str | None = None
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                return
            value = arg.value
            name = self.ctx.resolve(value.func) if isinstance(value, cst.Call) else None
            if (
                previous is not None
                and isinstance(value, cst.Call)
                and name in INPLACE_CAPABLE_MODULES
                and keyword_is_true(value, "inplace")
            ):
                module = name.rsplit(".", 1)[1]
                self.report(
                    value,
                    f"`{module}(inplace=True)` right after a module that returns the output of "
                    f"`{previous}`, which autograd saves for backward: `backward()` raises "
                    "`RuntimeError: one of the variables needed for gradient computation has "
                    "been modified by an inplace operation` (under `torch.compile`, already at "
                    f"the first compiled call). Use `{module}()` without `inplace=True`.",
                )
            previous = None
            if isinstance(value, cst.Call) and name in SAVING_MODULES:
                previous = None if keyword_is_true(value, "inplace") else SAVING_MODULES[name]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self.maybe_forward():
            return
        spelled = self.ctx.module.code_for_node(node.operator).strip()
        self._check(node, node.target, f"In-place `{spelled}`")

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.maybe_forward():
            return
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(target.target, target.target, "Item assignment")

    def leave_Assign(self, node: cst.Assign) -> None:
        if not self.maybe_forward() or not self.in_forward():
            return
        op = self._saving_op(node.value)
        bound_in = _branch_body(self.ctx.parents)
        for target in node.targets:
            for name in bound_names(target.target):
                self._inputs.discard(name)  # rebound: no longer forward's input
            if isinstance(target.target, (cst.Tuple, cst.List)):
                for name in bound_names(target.target):  # `w, idx = torch.topk(w, k)`
                    self._saved.pop(name, None)
            elif isinstance(target.target, cst.Name):
                if self._is_detached(node.value):
                    self._detached.add(target.target.value)
                else:
                    self._detached.discard(target.target.value)
                if op is not None:
                    self._saved[target.target.value] = (op, bound_in)
                else:
                    self._saved.pop(target.target.value, None)
