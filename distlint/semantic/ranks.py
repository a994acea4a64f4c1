"""Where rank-valued data comes from (the sources of rank taint for DL201, docs/rules/DL201.md).

Only values that differ between ranks count. World size, ``is_initialized()``,
``is_available()``, the backend and config flags are the same on every rank: branching on
them is uniform and never a divergence.
"""

from __future__ import annotations

import re

import libcst as cst

from distlint.semantic.packs import Names
from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import evaluated

# Resolved call targets that return a rank (or a per-rank boolean).
RANK_FUNCTIONS = frozenset(
    {
        "torch.distributed.get_rank",
        "torch.distributed.get_node_local_rank",
        "torch.distributed.get_global_rank",
        "torch.distributed.get_group_rank",
        "torch.distributed.get_process_group_ranks_for_rank",
    }
)
# Names people give their own per-rank getters and predicates, whatever object or module they
# come from (``mpu.get_tensor_model_parallel_rank()``, detectron2's ``comm.is_main_process()``);
# libraries' own (``trainer.is_world_process_zero()``, ``accelerator.process_index``) are in the
# framework packs (distlint/knowledge/data/frameworks.json, :mod:`.packs`), looked up through
# these views.
RANK_CALL_SUFFIXES = ("_rank",)
RANK_PREDICATE_NAMES = Names(
    {
        "get_rank",
        "is_main_process",
        "is_local_main_process",
        "is_main",
        "is_master",
        "is_rank_zero",
        "is_rank_0",
        "is_global_zero",
        "is_local_zero",
    },
    "rank_calls",
)
RANK_ATTRIBUTES = Names(
    {"rank", "local_rank", "global_rank", "node_rank", "group_rank", "is_local_zero", "is_master"},
    "rank_attributes",
)
# Parameters that receive the rank (``mp.spawn(worker, ...)`` passes it first).
RANK_PARAMETERS = frozenset({"rank", "local_rank", "global_rank", "node_rank", "gpu_rank"})
RANK_ENV_VARS = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "NODE_RANK",
        "GROUP_RANK",
        "GLOBAL_RANK",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_NODEID",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "PMI_RANK",
        "LOCAL_PROCESS_RANK",
    }
)
# Look-alikes that are uniform across ranks.
UNIFORM_NAMES = frozenset({"get_world_size", "world_size", "local_world_size", "num_processes"})
_ENV_READERS = frozenset({"os.environ.get", "os.getenv", "os.environ.__getitem__"})


# Names ending in ``_rank`` that are not the process rank: a question asked of every rank
# (``is_true_on_any_rank``: an all-reduced answer), or a matrix/adapter rank (``lora_rank``).
_NOT_PROCESS_RANK = re.compile(
    r"(?:^|_)(?:any|all|every|each|across|lora|low|matrix|adapter|max|min|num)_rank$"
)
# Objects whose ``rank`` attribute is a matrix rank (``cfg.lora.rank``, ``peft_config.rank``).
_MATRIX_RANK_OWNERS = re.compile(r"lora|adapter|peft|svd|low_?rank", re.IGNORECASE)


def is_rank_call_name(last: str) -> bool:
    """Whether a called name like ``get_pipeline_model_parallel_rank`` reads the rank."""
    if last in UNIFORM_NAMES or not (
        last in RANK_PREDICATE_NAMES or last.endswith(RANK_CALL_SUFFIXES)
    ):
        return False
    return not _NOT_PROCESS_RANK.search(last)  # asked only of the few that read so


def is_matrix_rank(expr: cst.Attribute) -> bool:
    """``cfg.lora.rank``: the rank of an adapter's matrices, the same on every process."""
    owner = dotted_name(expr.value) or ""
    return bool(owner) and _MATRIX_RANK_OWNERS.search(owner) is not None


def _string(expr: cst.BaseExpression) -> str | None:
    if type(expr) is cst.SimpleString:
        value = evaluated(expr)
        return value if isinstance(value, str) else None
    return None


def direct_rank_source(
    expr: cst.BaseExpression, resolved: str | None, predicates: frozenset[str] = frozenset()
) -> bool:
    """Whether ``expr`` itself (not its parts) reads a rank.

    ``resolved`` is the canonical name of a call's function or of the expression (for
    attributes rooted at an import), as the caller's import table resolved it.
    """
    if type(expr) is cst.Call:
        target = resolved
        if target is not None and (target in RANK_FUNCTIONS or target in predicates):
            return True
        func = expr.func
        last = func.attr.value if type(func) is cst.Attribute else None
        if type(func) is cst.Name:
            last = func.value
        if target is not None and target in _ENV_READERS and expr.args:
            return _string(expr.args[0].value) in RANK_ENV_VARS
        if last is None:
            return False
        if predicates and (dotted_name(func) in predicates or last in predicates):
            return True  # a configured predicate: dotted, or a bare name (any receiver)
        return is_rank_call_name(last)
    if type(expr) is cst.Subscript:
        # os.environ["RANK"]
        if resolved == "os.environ" and len(expr.slice) == 1:
            index = expr.slice[0].slice
            return type(index) is cst.Index and _string(index.value) in RANK_ENV_VARS
        return False
    if type(expr) is cst.Attribute:
        if (resolved is not None and resolved in predicates) or expr.attr.value in predicates:
            return True
        return expr.attr.value in RANK_ATTRIBUTES and not is_matrix_rank(expr)
    if type(expr) is cst.Name:
        return expr.value in predicates
    return False
