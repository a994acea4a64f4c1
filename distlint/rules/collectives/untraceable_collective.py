"""DL202: a collective that Dynamo cannot trace (``broadcast``, ``barrier``, point-to-point
ops, ``new_group``, a traceable one with ``async_op=True``...) inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl202.py, fixtures/DL202): the call breaks
the graph (GB0007, GB2696, GB0172), and fails under ``fullgraph=True``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import Rule
from distlint.rules.compile._analysis import SOME_PATHS

# Observed on torch 2.13.0 (re-observed by tests/proof/test_proof_dl202.py):
# Dynamo cannot trace these c10d calls. Name -> GB id of the break.
UNTRACEABLE_COLLECTIVES = {
    "torch.distributed.broadcast": "GB0007",
    "torch.distributed.barrier": "GB0007",
    "torch.distributed.reduce": "GB0007",
    "torch.distributed.reduce_scatter": "GB0007",  # the list form (input_list)
    "torch.distributed.gather": "GB0007",
    "torch.distributed.scatter": "GB0007",
    "torch.distributed.all_to_all": "GB0007",  # the list form
    "torch.distributed.new_group": "GB0007",
    "torch.distributed.send": "GB2696",
    "torch.distributed.recv": "GB2696",
    "torch.distributed.isend": "GB2696",
    "torch.distributed.irecv": "GB2696",
}
_P2P = frozenset(
    {
        "torch.distributed.send",
        "torch.distributed.recv",
        "torch.distributed.isend",
        "torch.distributed.irecv",
    }
)
# Traceable c10d collectives (remapped to functional collectives) and the position of
# their ``async_op`` parameter; with ``async_op=True`` they break the graph (GB0172).
TRACEABLE_COLLECTIVES = {
    "torch.distributed.all_reduce": 3,
    "torch.distributed.all_gather": 3,
    "torch.distributed.all_gather_into_tensor": 3,
    "torch.distributed.all_gather_single": 3,
    "torch.distributed.reduce_scatter_tensor": 4,
    "torch.distributed.reduce_scatter_single": 4,
    "torch.distributed.all_to_all_single": 5,
}
_INSTEAD = {
    "torch.distributed.broadcast": "`funcol.broadcast(t, src, group)`",
    "torch.distributed.reduce": "`dist.all_reduce` (every rank gets the result)",
    "torch.distributed.reduce_scatter": "`dist.reduce_scatter_single` on one flat tensor",
    "torch.distributed.gather": "`dist.all_gather_single`",
    "torch.distributed.scatter": "`dist.all_to_all_single`",
    "torch.distributed.all_to_all": "`dist.all_to_all_single` on one flat tensor",
}


class UntraceableCollective(Rule):
    code = "DL202"
    name = "untraceable-collective"
    severity = Severity.WARNING
    summary = (
        "A collective that Dynamo cannot trace (broadcast, barrier, p2p, new_group, async_op=True"
        "...) breaks the graph of a compiled region, and fails under fullgraph=True."
    )
    tags = ("performance", "torch.compile", "distributed")
    precision = "very-high"
    scope = "region"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.ctx.region
        if region is None:
            return
        name = self.ctx.resolve(node.func)
        gb = collective_break_gb(name, node)
        if name is None or gb is None:
            return
        spelled = self.ctx.module.code_for_node(node.func)
        certain = region.fullgraph and self.ctx.certain(node)
        if certain:
            effect = "makes the fullgraph=True compile fail (`Unsupported`)"
        elif region.fullgraph:
            effect = f"makes the fullgraph=True compile fail (`Unsupported`){SOME_PATHS}"
        else:
            effect = "breaks the graph of the compiled region"
        if gb != "GB0172":
            message = _untraceable_message(name, spelled, effect)
        else:
            message = (
                f"`{spelled}(..., async_op=True)` {effect}: torch 2.13 does not trace "
                "`async_op=True for distributed collectives` (GB0172). Drop `async_op=True`: "
                f"the synchronous `{spelled}` traces."
            )
        self.report(
            node,
            message,
            severity=Severity.ERROR if certain else None,
            related=region.related,
        )


def collective_break_gb(name: str | None, node: cst.Call) -> str | None:
    """The GB id of the graph break a c10d call causes in compiled code, or None if it traces.

    ``name`` is the call's resolved name. Object collectives are not included: they crash
    compilation outright (DL203).
    """
    if name is None:
        return None
    if name in UNTRACEABLE_COLLECTIVES:
        return UNTRACEABLE_COLLECTIVES[name]
    position = TRACEABLE_COLLECTIVES.get(name)
    if position is not None and _async_op_true(node, position):
        return "GB0172"
    return None


def _untraceable_message(name: str, spelled: str, effect: str) -> str:
    gb = UNTRACEABLE_COLLECTIVES[name]
    if name in _P2P:
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


def _async_op_true(node: cst.Call, position: int) -> bool:
    positional = 0
    for arg in node.args:
        if arg.star:
            return False
        if arg.keyword is None:
            if positional == position:
                return _is_true(arg.value)
            positional += 1
        elif arg.keyword.value == "async_op":
            return _is_true(arg.value)
    return False


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"
