"""DL202: a collective that Dynamo cannot trace (``broadcast``, ``barrier``, point-to-point
ops and their batches, ``new_group``, a traceable one with ``async_op=True``...) inside a
compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl202.py, fixtures/DL202): the call breaks
the graph (GB0007, GB2696, GB1750, GB9300, GB0172), and fails under ``fullgraph=True``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.knowledge.collectives import (
    ASYNC_BREAK,
    P2P_BREAK,
    UNTRACEABLE_COLLECTIVES,
    UNTRACEABLE_P2P_BATCH,
    collective_break_gb,
)
from distlint.rules.base import RegionRule, in_region
from distlint.semantic.regions_model import Region

_INSTEAD = {
    "torch.distributed.broadcast": "`funcol.broadcast(t, src, group)`",
    "torch.distributed.reduce": "`dist.all_reduce` (every rank gets the result)",
    "torch.distributed.reduce_scatter": "`dist.reduce_scatter_single` on one flat tensor",
    "torch.distributed.gather": "`dist.all_gather_single`",
    "torch.distributed.scatter": "`dist.all_to_all_single`",
    "torch.distributed.all_to_all": "`dist.all_to_all_single` on one flat tensor",
}


class UntraceableCollective(RegionRule):
    code = "DL202"
    name = "untraceable-collective"
    severity = Severity.WARNING
    summary = (
        "A collective that Dynamo cannot trace (broadcast, barrier, p2p, new_group, async_op=True"
        "...) breaks the graph of a compiled region, and fails under fullgraph=True."
    )
    tags = ("performance", "torch.compile", "distributed")
    precision = "very-high"
    graph_breaks = ("GB0007", "GB0156", "GB0172", "GB1750", "GB2696", "GB7312", "GB9300")

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        name = self.ctx.resolve(node.func)
        gb = collective_break_gb(name, node)
        if name is None or gb is None:
            return
        if not self.ctx.always(node) and not (region.fullgraph and self.ctx.certain(node)):
            return  # only on some paths of the compiled call: see the docs' limitations
        spelled = self.ctx.module.code_for_node(node.func)
        self.report_break(
            node,
            region,
            fullgraph=_message(
                name, spelled, gb, "makes the fullgraph=True compile fail (`Unsupported`)"
            ),
            breaks=_message(name, spelled, gb, "breaks the graph of the compiled region"),
            certain_only=True,
            uncertain_breaks=True,
        )


def _message(name: str, spelled: str, gb: str, effect: str) -> str:
    if gb != ASYNC_BREAK:
        return _untraceable_message(name, spelled, effect)
    return (
        f"`{spelled}(..., async_op=True)` {effect}: torch 2.13 does not trace "
        "`async_op=True for distributed collectives` (GB0172). Drop `async_op=True`: "
        f"the synchronous `{spelled}` traces."
    )


def _untraceable_message(name: str, spelled: str, effect: str) -> str:
    if name in UNTRACEABLE_P2P_BATCH:
        return _p2p_batch_message(name, spelled, effect)
    gb = UNTRACEABLE_COLLECTIVES[name]
    if gb == P2P_BREAK:
        return (
            f"`{spelled}` {effect}: torch 2.13 does not compile point-to-point ops "
            f"(`P2P compilation disabled for isend/irecv`, {gb}). Call it outside the "
            "compiled function."
        )
    if name == "torch.distributed.new_group":
        return (
            f"`{spelled}` {effect}: Dynamo does not trace it on torch 2.13 ({gb}). Create "
            "process groups before compiling and pass the group in."
        )
    short = name.rsplit(".", 1)[-1]
    instead = _INSTEAD.get(name)
    hint = f"Use {instead} or call" if instead else "Call"
    return (
        f"`{spelled}` {effect}: Dynamo does not trace `{short}` on torch 2.13 ({gb}). "
        f"{hint} it outside the compiled function."
    )


def _p2p_batch_message(name: str, spelled: str, effect: str) -> str:
    gb = UNTRACEABLE_P2P_BATCH[name]
    if name.endswith(".P2POp"):
        return (
            f"`{spelled}(...)` {effect}: torch 2.13 does not compile point-to-point ops, not "
            f"even the construction of a `P2POp` (`P2P compilation disabled for P2POp "
            f"construction`, {gb}). Build the ops and call `batch_isend_irecv` outside the "
            "compiled function."
        )
    return (
        f"`{spelled}` {effect}: torch 2.13 does not compile point-to-point ops (`P2P "
        f"compilation disabled for batch_isend_irecv`, {gb}); each `P2POp` built in the "
        "compiled region breaks before it. Call it outside the compiled function."
    )
