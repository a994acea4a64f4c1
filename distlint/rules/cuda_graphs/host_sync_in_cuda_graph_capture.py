"""DL601 host-sync-in-cuda-graph-capture: see its docs page, docs/rules/DL601.md."""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.cuda_graphs._capture import _CaptureRule
from distlint.semantic.regions import literal_value

_SYNC_FUNCTIONS = frozenset({"torch.cuda.synchronize", "torch.cuda.current_stream"})


_SYNC_METHODS = frozenset({"item", "cpu", "tolist", "numpy", "synchronize", "nonzero"})


_TENSOR_METHODS = frozenset(
    {"sum", "any", "all", "max", "min", "mean", "norm", "abs", "isnan", "isinf", "isfinite"}
)


def _method(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


class HostSyncInCudaGraphCapture(_CaptureRule):
    code = "DL601"
    name = "host-sync-in-cuda-graph-capture"
    severity = Severity.ERROR
    summary = "A host synchronisation or CPU copy inside CUDA graph capture makes capture fail."
    tags = ("correctness", "cuda-graphs")
    precision = "high"

    def visit_Call(self, node: cst.Call) -> None:
        start = self.capture()  # cheaper than _sync_kind's name resolution: ask it first
        if start is None:
            return
        what = self._sync_kind(node)
        if what is None:
            return
        spelled = self.ctx.module.code_for_node(node)
        if len(spelled) > 40:
            spelled = self.ctx.module.code_for_node(node.func) + "(...)"
        if what == "cpu":
            effect = (
                "raises `RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA "
                "graph capture unless the CPU tensor is pinned`"
            )
        else:
            effect = "makes the capture fail with a CUDA error (GPU, torch 2.11)"
        self.report(
            node,
            f"`{spelled}` {self.inside(start)} {what_text(what)}: it {effect}. "
            "Move it out of the captured region, or guard it with "
            "`torch.cuda.is_current_stream_capturing()`.",
            **self.related_to(start),
        )

    def visit_If(self, node: cst.If) -> None:
        self._check_test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check_test(node.test)

    def _check_test(self, test: cst.BaseExpression) -> None:
        start = self.capture()
        if start is None or not self._tensor_valued(test):
            return
        self.report(
            test,
            f"Branching on a tensor {self.inside(start)} reads the value on the host, a "
            "synchronisation that makes the capture fail (GPU, torch 2.11). Use `torch.where` "
            "or compute the condition before capture.",
            **self.related_to(start),
        )

    def _sync_kind(self, call: cst.Call) -> str | None:
        name = self.ctx.resolve(call.func)
        if name in _SYNC_FUNCTIONS and name.endswith("synchronize"):
            return "sync"
        if name == "torch.nonzero":
            return "nonzero"
        if name == "print" or (
            name is None and isinstance(call.func, cst.Name) and call.func.value == "print"
        ):
            if any(_may_be_tensor(arg.value) for arg in call.args if arg.keyword is None):
                return "print"
            return None
        method = _method(call)
        if name is None and method in _SYNC_METHODS:
            if method == "cpu":
                return "cpu"
            return method
        if name is None and method == "to" and call.args:
            target = literal_value(call.args[0].value)
            if target == "cpu":
                return "cpu"
        return None

    def _tensor_valued(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            return self._tensor_valued(expr.left) or any(
                self._tensor_valued(c.comparator) for c in expr.comparisons
            )
        if isinstance(expr, cst.BooleanOperation):
            return self._tensor_valued(expr.left) or self._tensor_valued(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._tensor_valued(expr.expression)
        if isinstance(expr, cst.Call):
            name = self.ctx.resolve(expr.func)
            if name is not None:
                return (
                    name.startswith("torch.")
                    and not name.startswith(_HOST_VALUED_MODULES)
                    and not name.rsplit(".", 1)[-1].startswith(_HOST_VALUED_PREFIXES)
                )
            return _method(expr) in _TENSOR_METHODS
        return False


# torch calls whose answer is a Python value, not a tensor: state and type predicates and
# getters (``torch.is_grad_enabled()``, ``torch.is_tensor(x)``, ``torch.get_default_dtype()``;
# xformers' ``rms_norm`` tests ``torch.is_grad_enabled() and x.requires_grad``), and modules
# that hold no tensor ops
_HOST_VALUED_PREFIXES = ("is_", "get_", "are_", "has_")
_HOST_VALUED_MODULES = (
    "torch.cuda.",
    "torch.distributed.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.jit.",
    "torch.backends.",
)


_NOT_TENSOR_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})


def _may_be_tensor(expr: cst.BaseExpression) -> bool:
    """A print argument that may be a tensor (not a literal, a shape or dtype, or len())."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value not in _NOT_TENSOR_ATTRS
    if isinstance(expr, cst.Call):
        return not (isinstance(expr.func, cst.Name) and expr.func.value in ("len", "str", "type"))
    return isinstance(expr, (cst.Name, cst.Subscript))


def what_text(kind: str) -> str:
    return {
        "sync": "synchronises the host with the GPU",
        "nonzero": "needs the output size on the host",
        "print": "reads a tensor on the host if it prints one",
        "item": "reads the value on the host",
        "tolist": "reads the values on the host",
        "numpy": "copies to host memory",
        "synchronize": "synchronises the host with the GPU",
        "cpu": "copies to unpinned CPU memory",
    }.get(kind, "synchronises the host")
