"""DL603 cudagraph-mutated-input: see its docs page, docs/rules/DL603.md."""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import RegionRule
from distlint.rules.cuda_graphs._capture import _is_cudagraph_compile
from distlint.semantic.regions_model import Region


class CudagraphMutatedInput(RegionRule):
    code = "DL603"
    name = "cudagraph-mutated-input"
    severity = Severity.WARNING
    summary = (
        'A mode="reduce-overhead" compiled function mutates an input in place, so CUDA graphs '
        "are silently skipped."
    )
    tags = ("performance", "torch.compile", "cuda-graphs")
    precision = "high"

    def _inputs(self) -> set[str]:
        func = self.ctx.function
        if func is None:
            return set()
        params = func.params
        names = [
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        ]
        return {n for n in names if n not in ("self", "cls")}

    def _region(self) -> Region | None:
        region = self.ctx.region
        if region is None or not region.direct:
            return None
        if region.cudagraphs:
            return region
        func = self.ctx.function  # options={"triton.cudagraphs": True} on the decorator
        for decorator in func.decorators if func is not None else ():
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and _is_cudagraph_compile(expr, self.ctx):
                return region
        return None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return
        method = func.attr.value
        if not method.endswith("_") or method.startswith("_"):
            return
        self._check(node, func.value.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if (
            isinstance(target, cst.Subscript)
            and isinstance(target.value, cst.Name)
            and not _string_key(target)
        ):
            self._check(target, target.value.value)

    def _check(self, node: cst.CSTNode, name: str) -> None:
        if name not in self._inputs():
            return
        region = self._region()
        if region is None:
            return
        self.report(
            node,
            f"`{self.ctx.module.code_for_node(node)}` mutates the input `{name}` of a function "
            'compiled with mode="reduce-overhead" (CUDA graphs): CUDA graphs are silently '
            "skipped for it (GPU: `skipping cudagraphs due to mutated inputs`, a log line "
            "only). Return a new tensor, and copy into the input outside the compiled function.",
            related=region.related,
        )


def _string_key(target: cst.Subscript) -> bool:
    """``td["loss"] = ...`` / ``td[str(i)] = ...`` / ``td[f"k{i}"] = ...``: a tensor cannot be
    indexed by a string, so the input is a mapping (a dict, a TensorDict) and the assignment
    adds or replaces an entry; no tensor of the input is written in place (tensordict's
    compile benchmarks)."""
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return False
    key = target.slice[0].slice.value
    if isinstance(key, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    return isinstance(key, cst.Call) and isinstance(key.func, cst.Name) and key.func.value == "str"
