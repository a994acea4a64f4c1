"""DL103: an op whose output shape depends on tensor values (``nonzero``, ``unique``,
``masked_select``, one-argument ``torch.where``, ``repeat_interleave`` by a tensor,
``x[mask]``) inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL103): a graph break
(GB0036, ``Dynamic shape operator``), except under ``fullgraph=True`` or with
``torch._dynamo.config.capture_dynamic_output_shape_ops = True``, which capture it.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions_model import Region
from distlint.syntax.walker import keyword_arg

_DYNAMIC_SHAPE_FUNCS = frozenset({"torch.nonzero", "torch.unique", "torch.masked_select"})
_DYNAMIC_SHAPE_METHODS = frozenset({"nonzero", "unique", "masked_select"})


class DynamicOutputShape(_RegionRule):
    code = "DL103"
    name = "dynamic-output-shape"
    severity = Severity.NOTE
    summary = (
        "An op whose output shape depends on tensor values (nonzero, unique, x[mask]) "
        "graph-breaks in a compiled region (not under fullgraph=True)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0036",)

    def _active(self) -> Region | None:
        region = self.ctx.region
        if region is None or region.fullgraph:
            return None
        if self.config.get("capture_dynamic_output_shape_ops") is True:
            return None
        return region

    def _report(self, node: cst.CSTNode, region: Region) -> None:
        spelled = self.spell(node)
        self.report(
            node,
            f"`{spelled}` has a data-dependent output shape: it graph-breaks on torch 2.13 "
            "(GB0036, `Dynamic shape operator`), ending the graph. Set "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True` (fullgraph=True "
            "captures it too), or keep shapes static (`torch.where(mask, x, 0)`, `x * mask`).",
            related=region.related,
        )

    def visit_Call(self, node: cst.Call) -> None:
        region = self._active()
        if region is None:
            return
        guess = self.guess  # made for a candidate's arguments only
        name = self.ctx.resolve(node.func)
        positional = [arg for arg in node.args if arg.keyword is None]
        if keyword_arg(node, "output_size") is not None:
            return  # ``repeat_interleave(..., output_size=n)``: the size is given, not computed
        if name in _DYNAMIC_SHAPE_FUNCS:
            self._report(node, region)
        elif name == "torch.where":
            if len(node.args) == 1 and positional:
                self._report(node, region)
        elif name == "torch.repeat_interleave":
            repeats = _argument(node, 1, "repeats")
            if len(node.args) == 1 or (repeats is not None and guess().is_tensor(repeats)):
                self._report(node, region)
        elif name is None and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _DYNAMIC_SHAPE_METHODS and guess().is_tensor(node.func.value):
                self._report(node, region)
            elif method == "repeat_interleave":
                repeats = _argument(node, 0, "repeats")
                if repeats is not None and guess().is_tensor(repeats):
                    self._report(node, region)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        region = self._active()
        if region is None:
            return
        parent = self.ctx.parents[-1] if self.ctx.parents else None
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
            isinstance(parent, cst.AugAssign) and parent.target is node
        ):
            return  # x[mask] = v writes in place: no dynamic shape
        if len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index):
            return
        guess = self.guess()
        if guess.is_bool_mask(index.value) and guess.is_tensor(node.value):
            self._report(node, region)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position].value if len(positional) > position else None
