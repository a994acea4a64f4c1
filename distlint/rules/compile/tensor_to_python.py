"""DL102: a tensor converted to a Python value (``.item()``, ``int(t)``, ``.tolist()``...)
inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL102): the conversion
graph-breaks (GB0124, GB0033, GB0109); under ``fullgraph=True`` it fails when the value drives
control flow or a loop count, or when a floating-point tensor becomes a list.
``torch._dynamo.config.capture_scalar_outputs = True`` captures the rest.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import Conversion
from distlint.rules.compile._breaks import conversion_break
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions_model import Region


class TensorToPython(_RegionRule):
    code = "DL102"
    name = "tensor-to-python"
    severity = Severity.NOTE
    summary = (
        "A tensor converted to a Python value (.item(), int(t), .tolist()) inside a compiled "
        "region graph-breaks, or fails under fullgraph=True when it drives control flow."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0033", "GB0109", "GB0124")

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        conversion = conversion_break(self, node, self.ctx.parents)
        if conversion is None:
            return
        spelled = self.spell(node)
        self.report_break(
            node,
            region,
            fullgraph=self._fullgraph_message(conversion, spelled),
            breaks=self._break_message(conversion, spelled),
            certain_only=True,
        )

    @staticmethod
    def _fullgraph_message(conversion: Conversion, spelled: str) -> str:
        if conversion.use == "control":
            return (
                f"`{spelled}` drives control flow: under fullgraph=True this fails on torch "
                "2.13 with `UserError: Consider annotating your code using torch._check*(). "
                "Could not guard on data-dependent expression ...`. Keep the value a tensor "
                "and use `torch.where(...)` or `torch.cond(...)`."
            )
        if conversion.use == "range":
            return (
                f"`{spelled}` is used as a loop count: under fullgraph=True this fails on "
                "torch 2.13 with `UserError: ... Could not extract specialized integer from "
                "data-dependent expression`. Pass the count as a Python int argument, or "
                "compute without a Python loop."
            )
        return (
            f"`{spelled}` converts a float tensor to a list: under fullgraph=True this fails "
            "on torch 2.13 with `Unsupported: Tensor.tolist() with non-integer tensor` "
            "(GB0109). Return the tensor and call `.tolist()` after the compiled call."
        )

    @staticmethod
    def _break_message(conversion: Conversion, spelled: str) -> str:
        if conversion.use in ("control", "range"):
            what = "drives control flow" if conversion.use == "control" else "is a loop count"
            return (
                f"`{spelled}` {what}: in a compiled region this graph-breaks on torch 2.13 "
                "(GB0124), also with `capture_scalar_outputs=True`, and fails under "
                "fullgraph=True. Keep the value a tensor and use `torch.where(...)` or "
                "`torch.cond(...)`."
            )
        if conversion.kind == "tolist":
            if conversion.integer:
                return (
                    f"`{spelled}` graph-breaks on torch 2.13 (GB0033, data dependent "
                    "operator). Keep the tensor, or set "
                    "`torch._dynamo.config.capture_scalar_outputs = True`."
                )
            if not conversion.floating:
                return (
                    f"`{spelled}` graph-breaks on torch 2.13: GB0109 (`Tensor.tolist() with "
                    "non-integer tensor`) for a floating-point tensor, GB0033 (`Data dependent "
                    "operator`) for an integer one. Return the tensor and call `.tolist()` "
                    "after the compiled call."
                )
            return (
                f"`{spelled}` graph-breaks on torch 2.13 (GB0109, `Tensor.tolist() with "
                "non-integer tensor`), even with `capture_scalar_outputs=True`. Return the "
                "tensor and call `.tolist()` after the compiled call."
            )
        return (
            f"`{spelled}` converts a tensor to a Python number: in a compiled region this "
            "graph-breaks on torch 2.13 (GB0124, `Unsupported Tensor.item() call with "
            "capture_scalar_outputs=False`). Keep it a tensor (e.g. `x * t.sum()`), or set "
            "`torch._dynamo.config.capture_scalar_outputs = True`."
        )
