"""DL203: an object collective (``all_gather_object``, ``broadcast_object_list``,
``gather_object``, ``scatter_object_list``) or ``monitored_barrier`` inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl203.py, fixtures/DL203): each crashes
compilation, with or without ``fullgraph=True``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import RegionRule, in_region
from distlint.semantic.regions_model import Region

# Observed on torch 2.13.0 (re-observed by tests/proof/test_proof_dl203.py): each crashes Dynamo
# with InternalTorchDynamoError (UnsafeScriptObjectError on the ProcessGroup OpaqueObject), GB2078.
OBJECT_COLLECTIVES = frozenset(
    {
        "torch.distributed.all_gather_object",
        "torch.distributed.broadcast_object_list",
        "torch.distributed.gather_object",
        "torch.distributed.scatter_object_list",
        "torch.distributed.monitored_barrier",
    }
)


class ObjectCollectiveInCompiledRegion(RegionRule):
    code = "DL203"
    name = "object-collective-in-compiled-region"
    severity = Severity.ERROR
    summary = (
        "An object collective or monitored_barrier inside a compiled region crashes compilation."
    )
    tags = ("correctness", "torch.compile", "distributed")
    precision = "very-high"
    graph_breaks = ("GB2078",)

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        name = self.ctx.resolve(node.func)
        if name not in OBJECT_COLLECTIVES:
            return
        spelled = self.ctx.module.code_for_node(node.func)
        self.report(
            node,
            f"`{spelled}` inside a compiled region crashes compilation, with or without "
            "fullgraph=True (InternalTorchDynamoError on the ProcessGroup OpaqueObject, "
            "GB2078). Call it outside the compiled function, or exchange tensors with a "
            "traceable collective such as `all_gather_single`.",
            related=region.related,
        )
