"""DL403 autograd-function-missing-backward: see its docs page, docs/rules/DL403.md."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.rules.custom_ops._autograd import _grad_state
from distlint.syntax.walker import descendants

AUTOGRAD_FUNCTION_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)


@dataclass
class _FunctionClass:
    is_function: bool
    methods: frozenset[str]
    prepares_backward: bool  # forward/setup_context keeps something on ``ctx``


class AutogradFunctionMissingBackward(Rule):
    code = "DL403"
    name = "autograd-function-missing-backward"
    severity = Severity.ERROR
    summary = "A torch.autograd.Function subclass defines forward but no backward or vjp."
    tags = ("correctness", "autograd", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0088",)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._classes: dict[str, _FunctionClass] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = set(_class_members(node))
        prepares = _prepares_backward(node)
        is_function = False
        unknown_base = False
        for base in node.bases:
            if base.keyword is not None:
                continue
            name = self.ctx.resolve(base.value)
            if name in AUTOGRAD_FUNCTION_BASES:
                is_function = True
                continue
            local = (
                self._classes.get(base.value.value) if isinstance(base.value, cst.Name) else None
            )
            if local is not None and name is None:
                is_function = is_function or local.is_function
                methods |= local.methods
                prepares = prepares or local.prepares_backward
            elif name != "object":
                unknown_base = True  # a base we cannot see may define backward
        self._classes[node.name.value] = _FunctionClass(is_function, frozenset(methods), prepares)
        if not is_function or unknown_base or "forward" not in methods:
            return
        if methods & {"backward", "vjp", "symbolic"} or not prepares:
            # ``symbolic``: an ONNX-export function; a forward that keeps nothing on ``ctx``
            # for a backward is forward-only by design (inference kernels, logged metrics)
            return
        if self._inference_script():
            return  # an inference script (RWKV's ``*_run.py`` demos): no backward ever runs
        self.report(
            node.name,
            f"`{node.name.value}` subclasses `torch.autograd.Function` and defines `forward` "
            "but no `backward` (or `vjp`): backward through it raises `NotImplementedError: You "
            "must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.`; under "
            "`torch.compile(fullgraph=True)` compiling the forward already fails "
            "(`Unsupported: Observed exception`, GB0088). Define a `@staticmethod backward`.",
        )

    _inference: bool | None = None

    def _inference_script(self) -> bool:
        """Whether the file runs its own code under ``torch.no_grad()``/``inference_mode()``
        at module level and never calls ``.backward(...)`` or ``torch.autograd.grad``."""
        if self._inference is None:
            module = self.ctx.module
            runs_without_grad = any(
                isinstance(stmt, cst.With)
                and any(_grad_state(i.item, self.ctx.resolve) is False for i in stmt.items)
                for stmt in _module_level(module.body)
            )
            self._inference = runs_without_grad and not any(
                isinstance(node, cst.Call)
                and (
                    (isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward")
                    or self.ctx.resolve(node.func) == "torch.autograd.grad"
                )
                for node in descendants(module)
            )
        return self._inference


def _module_level(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Module-level statements, also inside ``if __name__ == "__main__":`` blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock):
            yield from _module_level(stmt.body.body)


def _prepares_backward(node: cst.ClassDef) -> bool:
    """Whether the context is used (``ctx.save_for_backward``, ``ctx.scale = ...``) in
    ``setup_context`` or, without one, in ``forward``: the author meant it to be differentiated."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    methods = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    method = methods.get("setup_context") or methods.get("forward")
    if method is None or not method.params.params:
        return False
    ctx_name = method.params.params[0].name.value
    return any(
        isinstance(inner, cst.Attribute)
        and isinstance(inner.value, cst.Name)
        and inner.value.value == ctx_name
        for inner in descendants(method.body)
    )


def _class_members(node: cst.ClassDef) -> Iterator[str]:
    """Names a class body defines: methods and plain assignments (``backward = _bw``)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            yield stmt.name.value
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            yield target.target.value
                elif (
                    isinstance(small, cst.AnnAssign)
                    and isinstance(small.target, cst.Name)
                    and small.value is not None
                ):
                    yield small.target.value
