"""DL124: a tensor resized in place (``t.resize_(...)``, ``t.resize_as_(...)``, a
multi-argument ``t.set_(storage, offset, size)``) inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL124): Dynamo does not
trace these calls. On a tensor the region computes it stops at the call (GB0126 / GB0127 /
GB0128, ``Unsupported Tensor.resize_() call``); on an argument, parameter or buffer (or its
``.data``) the break is GB0148 (``Unsupported function call (delayed)``), even when the size
does not change. One break either way; under ``fullgraph=True`` a compile error. A storage's
``resize_`` (``t.untyped_storage().resize_(0)``, FSDP's way of freeing memory) and the
one-argument ``t.set_(other)`` are traced.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import TensorGuess
from distlint.rules.compile._region import _RegionRule
from distlint.rules.compile._tensor_origin import computed_in_region, read_from_source
from distlint.semantic.regions_model import Region

# method -> (GB id on a tensor the region computes, torch 2.13's message)
RESIZES = {
    "resize_": ("GB0126", "Unsupported Tensor.resize_() call"),
    "resize_as_": ("GB0127", "Unsupported Tensor.resize_as_() call"),
    "set_": ("GB0128", "Unsupported Tensor.set_() call"),
}
# a first argument that is a TensorDict key (``td.set_("obs", x)``, ``td.set_(("a", "b"), x)``)
_KEYS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Tuple)
ON_SOURCE = ("GB0148", "Unsupported function call (delayed)")  # an argument or attribute
RESIZE_INSTEAD = (
    "Allocate the buffer at its final size outside the compiled function (or in `__init__`), "
    "or build a new tensor (`torch.empty(shape)`, `x.new_empty(shape)`) instead of resizing one."
)
SET_INSTEAD = (
    "Take the view from the tensor that owns the storage (`src.as_strided(size, stride, "
    "offset)`), or re-point the tensor outside the compiled function."
)


class TensorResizeInCompiledRegion(_RegionRule):
    code = "DL124"
    name = "tensor-resize-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "t.resize_() / t.resize_as_() / t.set_(storage, offset, size) inside a compiled region: "
        "Dynamo does not trace it (graph break; fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0126", "GB0127", "GB0128", "GB0148")

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in RESIZES:
            return
        method, receiver = func.attr.value, func.value
        if _is_storage(receiver, self.guess()):
            return  # a storage's resize_ is traced (FSDP frees memory so)
        if method == "set_" and not self._storage_set(node, receiver):
            return
        said = self._which_break(method, receiver)
        spelled = self.spell(node)
        change = "points a tensor at a storage" if method == "set_" else "resizes a tensor"
        what = f"`{spelled}` {change} in place inside a compiled region"
        instead = SET_INSTEAD if method == "set_" else RESIZE_INSTEAD
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what}: under fullgraph=True this fails on torch 2.13 ({said}). {instead}"
            ),
            breaks=(
                f"{what}: Dynamo does not trace it on torch 2.13 ({said}), so the graph ends "
                f"here and resumes after it. {instead}"
            ),
            certain_only=True,
        )

    def _which_break(self, method: str, receiver: cst.BaseExpression) -> str:
        """The message(s) and GB id(s) the call gets, by what the syntax says of the receiver
        (both when it does not say)."""
        guess = self.guess()
        gb, message = RESIZES[method]
        if computed_in_region(guess, receiver):
            return f"`Unsupported: {message}`, {gb}"
        source_gb, source_message = ON_SOURCE
        on_source = (
            f"`Unsupported: {source_message}`, {source_gb}: an in-place view of a graph input"
        )
        if read_from_source(guess, receiver):
            return on_source
        return (
            f"`Unsupported: {message}`, {gb}, on a tensor the region computes; {on_source} "
            "(an argument, parameter or buffer)"
        )

    def _storage_set(self, node: cst.Call, receiver: cst.BaseExpression) -> bool:
        """``t.set_(storage, offset, size[, stride])`` on a tensor: two positional arguments
        or more (Dynamo traces ``t.set_(other)``), and a storage first or a tensor receiver
        (TensorDict's ``td.set_(key, value)`` is not a tensor's)."""
        if any(arg.star for arg in node.args):
            return False
        positional = [arg.value for arg in node.args if arg.keyword is None]
        if len(positional) < 2 or isinstance(positional[0], _KEYS):
            return False
        guess = self.guess()
        return (
            _is_storage(positional[0], guess)
            or guess.is_tensor(receiver)
            or computed_in_region(guess, receiver)
        )


def _is_storage(expr: cst.BaseExpression, guess: TensorGuess) -> bool:
    """A storage, not a tensor: ``t.untyped_storage()`` / ``t.storage()``, a name or attribute
    that says ``storage``, or a local bound to one of those."""
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, cst.Attribute) and "storage" in expr.func.attr.value
    if isinstance(expr, cst.Attribute):
        return "storage" in expr.attr.value.lower()
    if isinstance(expr, cst.Name):
        if "storage" in expr.value.lower():
            return True
        values = guess.assigned.get(expr.value) or ()
        return any(isinstance(value, cst.Call) and _is_storage(value, guess) for value in values)
    return False
