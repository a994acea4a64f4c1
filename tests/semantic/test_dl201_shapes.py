"""DL201 on the real-world shapes of ``fixtures/DL201``, one test per shape.

Each shape is a function (or a class, for a rank kept on ``self``) of a fixture written the way
open-source training scripts write it (fixtures/DL201/README.md says which is which). A bad
shape must produce exactly the DL201 findings its ``# expect:`` comments declare (the line and
column of the collective call on the side that has it, or of the rank-dependent
``return``/``break``/``continue``); a trap must produce none (a rank-dependent ``raise`` is
DL208, fixtures/DL208). Single files are checked alone; ``fixtures/DL201/project`` is checked
as one project, since its collectives live in other modules than the calls that reach them.

Runs DL201 alone, so the shapes pin this rule's behaviour; tests/test_fixtures.py checks that
no other rule fires on them.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from distlint.file_settings import FileSettings
from distlint.testing import expected_findings

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "DL201"
PROJECT = FOLDER / "project"
ONLY_DL201 = FileSettings(enabled=frozenset({"DL201"}))

# (fixture file relative to fixtures/DL201, function, what it is)
BAD = [
    ("bad.py", "train_with_main_process_eval", "eval forward of an FSDP2 model on rank 0 only"),
    ("bad.py", "train_with_early_stopping", "rank 0 breaks out of the epoch loop"),
    ("bad.py", "save_checkpoint_on_rank_zero", "rank-0 checkpoint whose helper all-gathers"),
    ("bad.py", "pipeline_loss_for_logging", "last pipeline stage returns before a broadcast"),
    ("bad.py", "save_with_accelerate", "accelerator.wait_for_everyone() on the main process"),
    ("bad.py", "on_train_end", "trainer.strategy.barrier() on global zero"),
    ("bad.py", "prepare_with_fabric", "fabric.barrier() on global rank 0"),
    ("bad.py", "log_throughput", "rank-0 all_reduce mis-pairs with the next one (C2)"),
    ("bad.py", "prepare_dataset", "LOCAL_RANK != 0 returns before the barrier"),
    ("bad.py", "sync_metrics", "rank-dependent continue skips an all_reduce"),
    ("bad.py", "log_losses", "detectron2 reduce of the loss dict on the main process"),
    ("bad.py", "write_predictions", "gather_object on rank 0's side of `not gather or rank == 0`"),
    ("project/train_bad.py", "validate_on_main_process", "evaluate() in another module"),
    ("project/train_bad.py", "checkpoint_on_main_process", "save_checkpoint() -> synchronize()"),
    ("project/train_bad.py", "finish_run", "non-main ranks return before synchronize()"),
    (
        "project/train_bad.py",
        "probe_backbone_on_main_process",
        "DDP of a backbone looked up in backbones.__dict__ (every factory builds a BatchNorm)",
    ),
    (
        "project/train_bad.py",
        "ValidatingTrainer",
        "self.model of a base class in another module (FSDP2) called on the main process",
    ),
    (
        "project/train_bad.py",
        "predict_with_the_trainers_model_on_main_process",
        "trainer.model (sharded by its class in another module) passed to a helper",
    ),
    (
        "project/train_bad.py",
        "sample_through_an_alias_on_main_process",
        "model = trainer.model, called on the main process",
    ),
    ("bad_realworld.py", "log_mean_loss", "helper with group=None (the world) on rank 0"),
    ("bad_realworld.py", "publish_checkpoint", "rank 0 returns after a failed upload"),
    ("bad_realworld.py", "make_output_dir", "rank unpacked from a (rank, world_size) tuple"),
    ("bad_realworld.py", "MetricLogger", "self.rank set in __init__, tested in log()"),
    ("bad_realworld.py", "profile_first_steps", "rank 0 breaks out of a loop that all-reduces"),
    (
        "bad_realworld.py",
        "train_then_evaluate_on_rank_zero",
        "sharded model passed to an evaluation helper on rank 0",
    ),
    ("bad_realworld.py", "ShardedTrainer", "self.model sharded in __init__, used in a method"),
    (
        "bad_realworld.py",
        "train_then_sample_on_rank_zero",
        "DDP model returned by a factory, sampled on rank 0",
    ),
    (
        "bad_realworld.py",
        "train_then_sample_with_a_helper",
        "DDP of a project class with buffers (its own and a base's), sampled by a helper",
    ),
    (
        "bad_realworld.py",
        "train_until_rank_zero_loses_patience",
        "rank 0 returns before the next backward (loss from the outputs, scaled in a with)",
    ),
    (
        "bad_realworld.py",
        "train_then_probe_through_the_workspace",
        "sharded model kept on an object (workspace.model), called through it on rank 0",
    ),
]
TRAPS = [
    ("traps.py", "save_then_barrier", "rank-0 save, then a barrier on every rank"),
    ("traps.py", "average_if_distributed", "branch on the world size"),
    ("traps.py", "synchronize", "branch on is_initialized() and the world size"),
    ("traps.py", "reduce_if_configured", "branch on a config flag"),
    ("traps.py", "exchange_activations", "paired send/recv"),
    ("traps.py", "average_within_first_stage", "collective in the group of the branch's ranks"),
    ("traps.py", "save_on_rank_zero", "callee's barrier switched off by an argument"),
    ("traps.py", "broadcast_config", "else mirrors the collective"),
    ("traps.py", "torch_distributed_zero_first", "complementary rank conditions (YOLOv5)"),
    ("traps.py", "evaluate_unwrapped_model_on_rank_zero", "rank-0 eval of model.module"),
    ("traps.py", "write_summary_on_rank_zero", "rank-dependent return after the last one"),
    ("traps.py", "save_with_accelerate", "main-process save, then wait_for_everyone()"),
    ("traps.py", "log_with_fabric", "rank-0 print, then fabric.barrier()"),
    ("traps.py", "gather_on_rank_zero", "unconditional gather, rank-dependent arguments"),
    ("traps.py", "first_unreadable_checkpoint", "rank-dependent break, no collective in loop"),
    (
        "traps.py",
        "evaluate_unless_sharded",
        "exit under `not sharded_eval and rank != 0`, all-reduce under `sharded_eval`",
    ),
    (
        "project/train_traps.py",
        "checkpoint_without_barrier_then_synchronize",
        "save_checkpoint(use_distributed_barriers=False) in another module",
    ),
    ("project/train_traps.py", "summary_on_main_process", "write_summary() then synchronize()"),
    ("project/train_traps.py", "local_total_on_main_process", "project helper named all_reduce"),
    ("project/train_traps.py", "validate_everywhere", "world-size branch, evaluate() everywhere"),
    (
        "project/train_traps.py",
        "probe_head_on_main_process",
        "DDP of a head looked up in heads.__dict__, one without buffers (only possible)",
    ),
    ("project/train_traps.py", "EmaTrainer", "self.ema, kept unsharded by the base class"),
    (
        "project/train_traps.py",
        "predict_with_the_ema_on_main_process",
        "trainer.ema passed to a helper, and an alias of it called, on the main process",
    ),
    ("traps_realworld.py", "train_with_accumulation", "(a) loop index of a sharded loader"),
    ("traps_realworld.py", "gradient_accumulation_steps", "(b) config checked, raise, barrier"),
    ("traps_realworld.py", "resume", "(c) checkpoint loaded onto the local-rank device"),
    ("traps_realworld.py", "wait_for_everyone", "(d) world size unpacked with the rank"),
    ("traps_realworld.py", "reduce_for_logging", "(e) rank != -1, rank >= 0, local_rank == -1"),
    ("traps_realworld.py", "init_shared_weights", "(f) tested before reassigned from the rank"),
    (
        "traps_realworld.py",
        "train_with_broadcast_early_stopping",
        "(g) rank-0 decision broadcast_object_list'ed before the break",
    ),
    ("traps_realworld.py", "gather_shards", "(h) continue after its own all_gather"),
    ("traps_realworld.py", "average_in_subgroup", "(h) barrier outside the sub-group"),
    ("traps_realworld.py", "build_label_cache", "(i) complementary rank tests in the helper"),
    ("traps_realworld.py", "export_labels", "(i) helper called with rank=-1 on rank 0"),
    ("traps_realworld.py", "wait_for_shared_file", "(j) rank 0 retries before the broadcast"),
    ("traps_realworld.py", "sync_expert", "(k) group passed positionally, branch on its ranks"),
    ("traps_realworld.py", "loss_for_logging", "(l) first and last pipeline stage: one stage"),
    ("traps_realworld.py", "train_until_any_rank_is_told_to_stop", "(m) is_true_on_any_rank"),
    ("traps_realworld.py", "save_adapter_if_any", "(n) cfg.lora.rank is a matrix rank"),
    ("traps_realworld.py", "train_and_save_on_rank_zero", "(o) barrier for sharded models only"),
    (
        "traps_realworld.py",
        "validate_on_rank_zero_without_buffer_sync",
        "(p) DDP(broadcast_buffers=False) forward on rank 0",
    ),
    ("traps_realworld.py", "download_on_first_process", "(q) return when local_rank == -1"),
    ("traps_realworld.py", "log_on_first_process", "(r) barriers under `not <function>`"),
    ("traps_realworld.py", "staggered", "(s) even ranks wait on enter, odd ranks on exit"),
    (
        "traps_realworld.py",
        "train_then_test_unwrapped_on_rank_zero",
        "(t) helper unwraps model.module before its forward",
    ),
    (
        "traps_realworld.py",
        "serve_demo_on_rank_zero",
        "(u) rank 0 registers a callback that mirrors the workers' loop",
    ),
    (
        "traps_realworld.py",
        "train_and_sample_buffer_free_models_on_rank_zero",
        "(v) DDP forward on rank 0 of models that own no buffers",
    ),
    (
        "traps_realworld.py",
        "wait_for_the_master",
        "(w) master-first pair with `not dist.is_initialized(): return` guards",
    ),
    (
        "traps_realworld.py",
        "train_and_save_plain_model_on_rank_zero",
        "(x) helper synchronises only under an inline isinstance(m, FSDPModule) test",
    ),
    ("traps_realworld.py", "sync_if_launched", "(y) flag unpacked next to the rank"),
    (
        "traps_realworld.py",
        "evaluate_on_rank_zero_unless_sharded",
        "(z) early return and callee broadcast gated by one flag",
    ),
]
FILES = ["bad.py", "good.py", "traps.py", "bad_realworld.py", "traps_realworld.py"]


@cache
def _findings(relative: str) -> frozenset[tuple[str, int, int]]:
    """DL201 findings of a fixture: alone, or with its package when it is in project/."""
    from distlint.engine.runner import Task, run

    path = FOLDER / relative
    paths = sorted(PROJECT.glob("*.py")) if path.parent == PROJECT else [path]
    tasks = [Task(p, p.relative_to(FOLDER).as_posix(), ONLY_DL201) for p in paths]
    found: set[tuple[str, int, int]] = set()
    for result in run(tasks, jobs=1):
        assert result.errors == (), result.errors
        if result.path == relative:
            found |= {
                (f.code, f.span.start.line, f.span.start.column)
                for f in result.findings
                if f.code == "DL201"
            }
    return frozenset(found)


def _lines(relative: str, function: str) -> range:
    tree = ast.parse((FOLDER / relative).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == function:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            assert node.end_lineno is not None
            return range(first, node.end_lineno + 1)
    raise AssertionError(f"{relative} has no function {function}")


def _in(found: set | frozenset, lines: range) -> set[tuple[str, int, int]]:
    return {item for item in found if item[1] in lines}


def _ids(shapes: list[tuple[str, str, str]]) -> list[str]:
    return [f"{relative}::{function}" for relative, function, _ in shapes]


def test_every_shape_is_listed() -> None:
    assert len(BAD) + len(TRAPS) >= 24
    assert len(TRAPS) >= len(BAD)
    declared = {
        (relative, line)
        for relative in ("bad.py", "bad_realworld.py", "project/train_bad.py")
        for _, line, _ in expected_findings(FOLDER / relative)
    }
    covered = {
        (relative, line) for relative, function, _ in BAD for line in _lines(relative, function)
    }
    assert declared <= covered
    for relative, function, _ in BAD:
        assert _in(expected_findings(FOLDER / relative), _lines(relative, function)), function


@pytest.mark.parametrize(("relative", "function", "what"), BAD, ids=_ids(BAD))
def test_bad_shape_is_reported_where_expected(relative: str, function: str, what: str) -> None:
    lines = _lines(relative, function)
    expected = _in(expected_findings(FOLDER / relative), lines)
    assert _in(_findings(relative), lines) == expected, what


@pytest.mark.parametrize(("relative", "function", "what"), TRAPS, ids=_ids(TRAPS))
def test_trap_shape_is_silent(relative: str, function: str, what: str) -> None:
    assert _in(_findings(relative), _lines(relative, function)) == set(), what


@pytest.mark.parametrize(
    "relative",
    [*FILES, *(p.relative_to(FOLDER).as_posix() for p in sorted(PROJECT.glob("*.py")))],
)
def test_whole_file_has_exactly_the_expected_findings(relative: str) -> None:
    expected = {e for e in expected_findings(FOLDER / relative) if e[0] == "DL201"}
    assert _findings(relative) == expected
