"""What counts as a collective: explicit c10d and functional ops, and implicit ones.

Every rank of a group must issue the same collectives in the same order. Explicit ones are
calls into ``torch.distributed``; implicit ones hide in library calls: the forward and
backward of a DDP/FSDP/``fully_shard`` model (parameter all-gathers, gradient all-reduces),
``accelerator.wait_for_everyone()``, ``fabric.barrier()``, DeepSpeed's ``engine.backward``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import libcst as cst

from distlint.imports import dotted_name

_C10D = "torch.distributed."
_FUNCOL = "torch.distributed._functional_collectives."
C10D_COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_single",
        "_all_gather_base",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "reduce_scatter_single",
        "_reduce_scatter_base",
        "all_to_all",
        "all_to_all_single",
        "broadcast",
        "reduce",
        "gather",
        "scatter",
        "barrier",
        "monitored_barrier",
        "all_gather_object",
        "broadcast_object_list",
        "gather_object",
        "scatter_object_list",
        "new_group",
        "new_subgroups",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
    }
)
FUNCTIONAL_COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "all_gather_tensor",
        "all_gather_tensor_autograd",
        "reduce_scatter_tensor",
        "reduce_scatter_tensor_autograd",
        "all_to_all_single",
        "all_to_all_single_autograd",
        "broadcast",
        "permute_tensor",
    }
)
POINT_TO_POINT = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})

DDP = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)
FULLY_SHARD = frozenset(
    {
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard.fully_shard",
    }
)
_LIBRARY_RECEIVERS = ("accelerator", "fabric", "strategy")
_LIBRARY_METHODS = frozenset(
    {
        "wait_for_everyone",
        "barrier",
        "gather",
        "gather_for_metrics",
        "reduce",
        "all_gather",
        "all_reduce",
        "broadcast",
        "backward",
    }
)


def collective_kind(resolved: str | None, wrappers: Collection[str] = ()) -> str | None:
    """The collective a resolved call target issues (``barrier``, ``all_reduce``...), if any."""
    if resolved is None:
        return None
    if resolved in wrappers:
        return resolved.rsplit(".", 1)[-1]
    if resolved.startswith(_FUNCOL):
        rest = resolved[len(_FUNCOL) :]
        return f"funcol.{rest}" if rest in FUNCTIONAL_COLLECTIVES else None
    if resolved.startswith(_C10D):
        rest = resolved[len(_C10D) :]
        return rest if rest in C10D_COLLECTIVES else None
    return None


def is_wrapping_call(
    expr: cst.BaseExpression, resolve: Callable[[cst.BaseExpression], str | None]
) -> str | None:
    """``wrapper`` (DDP/FSDP), ``fully_shard`` or ``deepspeed`` (initialize), else None."""
    if not isinstance(expr, cst.Call):
        return None
    name = resolve(expr.func)
    if name in WRAPPERS:
        return "wrapper"
    if name in FULLY_SHARD:
        return "fully_shard"
    if name == "deepspeed.initialize":
        return "deepspeed"
    return None


def implicit_collective(
    func: cst.BaseExpression,
    resolved: str | None,
    wrapped: Collection[str],
    outputs: Collection[str],
    engines: Collection[str],
    ddp: Collection[str] = (),
) -> str | None:
    """The implicit collective a call issues, described for messages, or None.

    ``model.generate()`` counts for FSDP (which forwards unknown attributes to the wrapped
    module, whose forward then all-gathers) but not for DDP, which does not forward them."""
    label = _label(func)
    if label is not None and label in wrapped:
        return f"forward of the distributed-wrapped model `{label}` (parameter/buffer sync)"
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    receiver = _label(func.value)
    forwards = receiver is not None and receiver in wrapped and receiver not in ddp
    if forwards and method == "generate":
        return f"generation with the distributed-wrapped model `{receiver}` (runs its forward)"
    if method == "backward" and receiver is not None:
        if receiver in outputs:
            return "backward through the distributed-wrapped model (gradient all-reduce)"
        if receiver in engines:
            return "DeepSpeed `engine.backward` (gradient all-reduce)"
    if method == "step" and receiver is not None and receiver in engines:
        return "DeepSpeed `engine.step`"
    if method in _LIBRARY_METHODS and resolved is None:
        text = (dotted_name(func.value) or "").lower()
        last = text.rsplit(".", 1)[-1]
        if any(hint in last for hint in _LIBRARY_RECEIVERS):
            if method == "backward" and "accelerator" not in last:
                return None
            return f"`{dotted_name(func)}()`"
    return None


def _label(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == "self"
    ):
        return f"self.{expr.attr.value}"
    return None
