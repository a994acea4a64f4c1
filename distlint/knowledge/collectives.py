"""Which c10d calls Dynamo cannot trace, and the graph break each causes (torch 2.13 names).

Observed on torch 2.13.0, re-observed by tests/proof/test_proof_dl202.py. DL202 reports these
calls inside compiled regions; DL105 counts them as graph breaks inside a loop.
"""

from __future__ import annotations

import libcst as cst

from distlint.syntax.shapes import is_true
from distlint.syntax.walker import call_argument

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
    "torch.distributed.send": "GB2696",  # point-to-point: `P2P compilation disabled`
    "torch.distributed.recv": "GB2696",
    "torch.distributed.isend": "GB2696",
    "torch.distributed.irecv": "GB2696",
}
P2P_BREAK = "GB2696"
# Batched point-to-point: refused while P2P compilation is off (the default). Only DL202 reads
# this table: ``P2POp`` is a class, its construction no collective, so the analyses that read
# UNTRACEABLE_COLLECTIVES (DL105's breaks) or the semantic collectives (rank divergence) must
# not count it as one. Name -> GB id of the break.
UNTRACEABLE_P2P_BATCH = {
    "torch.distributed.P2POp": "GB1750",  # `P2P compilation disabled for P2POp construction`
    "torch.distributed.batch_isend_irecv": "GB9300",  # `... disabled for batch_isend_irecv`
}
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
ASYNC_BREAK = "GB0172"


def collective_break_gb(name: str | None, node: cst.Call) -> str | None:
    """The GB id of the graph break a c10d call (or a ``P2POp`` construction) causes in
    compiled code, or None if it traces.

    ``name`` is the call's resolved name. Object collectives are not included: they crash
    compilation outright (DL203).
    """
    if name is None:
        return None
    if name in UNTRACEABLE_COLLECTIVES:
        return UNTRACEABLE_COLLECTIVES[name]
    if name in UNTRACEABLE_P2P_BATCH:
        return UNTRACEABLE_P2P_BATCH[name]
    position = TRACEABLE_COLLECTIVES.get(name)
    if position is not None and _async_op_true(node, position):
        return ASYNC_BREAK
    return None


def _async_op_true(node: cst.Call, position: int) -> bool:
    value = call_argument(node, position, "async_op")
    return is_true(value)
