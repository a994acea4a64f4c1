"""DL602 collective-in-cuda-graph-capture: see its docs page, docs/rules/DL602.md."""

from __future__ import annotations

import libcst as cst

from distlint.findings import Location, Severity
from distlint.rules.cuda_graphs._capture import _CaptureRule

_BARRIERS = frozenset(
    {
        "torch.distributed.barrier",
        "torch.distributed.monitored_barrier",
        "torch.distributed.all_gather_object",
        "torch.distributed.broadcast_object_list",
        "torch.distributed.gather_object",
        "torch.distributed.scatter_object_list",
    }
)


_COLLECTIVES = frozenset(
    {
        "torch.distributed.all_reduce",
        "torch.distributed.all_gather",
        "torch.distributed.all_gather_into_tensor",
        "torch.distributed.all_gather_single",
        "torch.distributed.reduce_scatter",
        "torch.distributed.reduce_scatter_tensor",
        "torch.distributed.reduce_scatter_single",
        "torch.distributed.all_to_all",
        "torch.distributed.all_to_all_single",
        "torch.distributed.broadcast",
        "torch.distributed.reduce",
        "torch.distributed.gather",
        "torch.distributed.scatter",
        "torch.distributed.send",
        "torch.distributed.recv",
        "torch.distributed.isend",
        "torch.distributed.irecv",
        "torch.distributed.batch_isend_irecv",
        "torch.distributed._all_gather_base",
        "torch.distributed._reduce_scatter_base",
    }
)


_FUNCOL = "torch.distributed._functional_collectives."


class CollectiveInCudaGraphCapture(_CaptureRule):
    code = "DL602"
    name = "collective-in-cuda-graph-capture"
    severity = Severity.ERROR
    summary = (
        "A collective inside CUDA graph capture: barriers and object collectives fail, other "
        "collectives need every rank to capture and replay the same sequence."
    )
    tags = ("correctness", "cuda-graphs", "distributed")
    precision = "high"

    def visit_Call(self, node: cst.Call) -> None:
        start = self.capture()  # cheaper than resolving the callee: ask it first
        if start is None:
            return
        name = self.ctx.resolve(node.func)
        if name is None:
            return
        fatal = name in _BARRIERS
        if not fatal and name not in _COLLECTIVES and not name.startswith(_FUNCOL):
            return
        if name.startswith(_FUNCOL) and name.rsplit(".", 1)[1] in ("wait_tensor",):
            return
        spelled = self.ctx.module.code_for_node(node.func)
        if fatal:
            how = (
                "a CUDA error"
                if name.endswith("barrier")
                else "`RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph "
                "capture...`, the object is pickled through CPU memory"
            )
            self.report(
                node,
                f"`{spelled}` {self.inside(start)} makes the capture fail (GPU: {how}). "
                "Call it before or after the capture.",
                **self.related_to(start),
            )
            return
        self.report(
            node,
            f"`{spelled}` is captured into a CUDA graph"
            + ("" if not isinstance(start, Location) else f" ({self.inside(start)[:-1]})")
            + ": with NCCL this works only if every "
            "rank captures and replays the same collectives in the same order; a rank that "
            "captures or replays a different sequence deadlocks the others. Keep capture and "
            "replay unconditional on all ranks.",
            severity=Severity.WARNING,
            **self.related_to(start),
        )
