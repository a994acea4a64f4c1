"""What counts as a collective: explicit c10d and functional ops, and implicit ones.

Every rank of a group must issue the same collectives in the same order. Explicit ones are
calls into ``torch.distributed``; implicit ones hide in library calls: the forward and
backward of a DDP/FSDP/``fully_shard`` model (parameter all-gathers, gradient all-reduces),
and the framework collectives of the knowledge packs (:mod:`.packs`:
``accelerator.wait_for_everyone()``, ``fabric.barrier()``, ``deepspeed.comm``, DeepSpeed's
``engine.backward``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import libcst as cst

from distlint.semantic.packs import knowledge, method_on_receiver
from distlint.syntax.imports import dotted_name, self_attribute
from distlint.syntax.shapes import is_true
from distlint.syntax.walker import evaluated

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

# The model wrappers of torch, as resolved names (shared by the rules about them).
DDP_CLASS = "torch.nn.parallel.DistributedDataParallel"
DDP = frozenset({DDP_CLASS, "torch.nn.parallel.distributed.DistributedDataParallel"})
FSDP1 = frozenset(
    {
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    }
)
# torch.nn modules that own buffers as built by default (their running statistics): a DDP
# forward of a model holding one broadcasts them from rank 0 (``broadcast_buffers=True``).
# tests/proof/test_proof_ddp_buffers.py builds each one on the installed torch.
_BATCH_NORMS = ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")
_LAZY_BATCH_NORMS = ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d")
BUFFERED_MODULES = frozenset(
    f"{prefix}.{name}"
    for name in (*_BATCH_NORMS, *_LAZY_BATCH_NORMS)
    for prefix in ("torch.nn", "torch.nn.modules.batchnorm")
)
# ``SyncBatchNorm.convert_sync_batchnorm(model)``: written for a model with BatchNorm layers
CONVERTS_BATCH_NORM = frozenset(
    f"{prefix}.SyncBatchNorm.convert_sync_batchnorm"
    for prefix in ("torch.nn", "torch.nn.modules.batchnorm")
)
WRAPPERS = frozenset({DDP_CLASS, *FSDP1})
FULLY_SHARD = frozenset(
    {
        "torch.distributed.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard",
        "torch.distributed._composable.fsdp.fully_shard.fully_shard",
    }
)


def collective_kind(resolved: str | None, wrappers: Collection[str] = ()) -> str | None:
    """The collective a resolved call target issues (``barrier``, ``all_reduce``...), if any."""
    if resolved is None:
        return None
    if resolved in wrappers:
        return resolved.rsplit(".", 1)[-1]
    for module in knowledge().collective_modules:  # ``deepspeed.comm`` mirrors c10d's API
        if resolved.startswith(module + "."):
            rest = resolved[len(module) + 1 :]
            return rest if rest in C10D_COLLECTIVES else None
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
    """``wrapper`` (DDP/FSDP, ``accelerator.prepare``, ``fabric.setup``...), ``fully_shard``
    (wraps its argument in place: FSDP2, ``parallelize_module``) or ``deepspeed`` (an engine
    factory, ``deepspeed.initialize``), else None (framework ones: :mod:`.packs`)."""
    if type(expr) is not cst.Call:
        return None
    name = resolve(expr.func)
    pack = knowledge()
    if name in WRAPPERS:
        return "wrapper"
    if name in FULLY_SHARD:
        return "fully_shard"
    if name is not None and name in pack.wrapper_calls:
        return "fully_shard" if pack.wrapper_calls[name] else "wrapper"
    if name is not None and name in pack.engine_calls:
        return "deepspeed"
    if name is None and method_on_receiver(expr.func, pack.wrapper_methods) is not None:
        evaluation = next(
            (a for a in expr.args if a.keyword and a.keyword.value == "evaluation_mode"), None
        )
        if evaluation is None or not is_true(evaluation.value):
            return "library"  # its forward is the configured strategy's (DDP, FSDP, ...)
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
    if label is not None and label in wrapped and label in engines:
        return f"forward of the ZeRO-3 DeepSpeed engine `{label}` (parameter all-gathers)"
    if label is not None and label in wrapped:
        return f"forward of the distributed-wrapped model `{label}` (parameter/buffer sync)"
    if type(func) is not cst.Attribute:
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
    if resolved is None:
        pack = knowledge()
        if method_on_receiver(func, pack.collective_methods) is not None:
            return f"`{dotted_name(func) or method}()`"
        if method_on_receiver(func, pack.balanced_contexts) is not None:
            return f"`{dotted_name(func) or method}()` (a barrier)"
    return None


def _label(expr: cst.BaseExpression) -> str | None:
    if type(expr) is cst.Name:
        return expr.value
    attr = self_attribute(expr)
    return f"self.{attr}" if attr is not None else None


_ZERO_CONFIG_KEYWORDS = ("config", "config_params")


def zero_stage(
    call: cst.Call, assigned: Callable[[str], Sequence[cst.CSTNode]] = lambda name: ()
) -> int | None:
    """The ZeRO stage a ``deepspeed.initialize(..., config={...})`` call sets in a literal
    config (``{"zero_optimization": {"stage": 3}}``, also through a local name bound only to
    such dicts), else None: a config file or a computed dict is not known."""
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value not in _ZERO_CONFIG_KEYWORDS:
            continue
        value = arg.value
        candidates: Sequence[cst.CSTNode] = (value,)
        if type(value) is cst.Name:
            candidates = assigned(value.value)
        stages = {_literal_stage(node) for node in candidates}
        if len(stages) == 1:
            return stages.pop()
    return None


def _literal_stage(node: cst.CSTNode) -> int | None:
    zero = _dict_item(node, "zero_optimization")
    stage = _dict_item(zero, "stage") if zero is not None else None
    if type(stage) is cst.Integer:
        return int(stage.value)
    return None


def _dict_item(node: cst.CSTNode, key: str) -> cst.BaseExpression | None:
    if type(node) is not cst.Dict:
        return None
    for element in node.elements:
        if (
            type(element) is cst.DictElement
            and type(element.key) is cst.SimpleString
            and evaluated(element.key) == key
        ):
            return element.value
    return None
