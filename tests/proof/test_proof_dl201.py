"""Proof for DL201: rank-divergent collectives hang, or pair up wrongly, on torch 2.13.

Runs every case of ``fixtures/DL201`` (bad, good, traps, their real-world companions
``bad_realworld.py`` and ``traps_realworld.py``, and ``project/``) on 2 gloo ranks
(tests/proof/gloo.py, process-group timeout 3 s, all cases of all files at once). In the bad
cases the rank left waiting raises gloo's timeout error after the process-group timeout while
the other rank carries on, and the mis-paired cases also hand a wrong value to the rank that
did not wait (``b=12.0`` instead of 3.0). The good cases and the traps
finish on both ranks with the right values. ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` is run on the
mis-paired case too: it names the missing rank but does not prevent the wrong value. A
rank-dependent ``raise`` before a collective is DL208 (tests/proof/test_proof_dl208.py).
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from distlint.testing import expected_findings
from tests.proof.gloo import FIXTURES, RankOutcome, case_names, run_gloo_cases

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

FOLDER = FIXTURES / "DL201"
PG_TIMEOUT = 3
RUNTIME_ERROR = "builtins.RuntimeError"
FILES = {
    "bad": FOLDER / "bad.py",
    "good": FOLDER / "good.py",
    "traps": FOLDER / "traps.py",
    "project_bad": FOLDER / "project" / "train_bad.py",
    "project_traps": FOLDER / "project" / "train_traps.py",
    "bad_realworld": FOLDER / "bad_realworld.py",
    "traps_realworld": FOLDER / "traps_realworld.py",
}

ANY = object()  # a value the test does not check
# bad case -> (rank that waits and times out, what the rank that carries on returns)
HANGS = {
    "case_main_process_eval_of_sharded_model": (0, ANY),
    "case_early_stopping_decided_on_rank_zero": (1, 2),  # rank 0 stopped after epoch 2
    "case_rank_zero_checkpoint_gathers": (1, None),  # either rank (see the test)
    "case_pipeline_last_stage_returns_early": (0, [2.0]),
    "case_accelerate_wait_for_everyone_on_main_process": (0, None),
    "case_lightning_strategy_barrier_on_global_zero": (0, None),
    "case_fabric_barrier_on_rank_zero": (0, ANY),
    "case_mispaired_all_reduce": (0, [12.0]),  # silently wrong: 2.0 + rank 0's 10.0
    "case_early_return_before_barrier": (0, []),  # rank 1 read the index before it existed
    "case_continue_skips_debug_metric": (
        0,
        {"loss": 3.0, "debug/grad_norm": 100.0, "accuracy": 100.5},  # accuracy: 0.5 + 100.0
    ),
    "case_reduce_on_main_process_only": (0, {}),
    "case_predictions_gathered_by_rank_zero_alone": (0, [1, 11]),  # rank 1 wrote its own
}
# bad_realworld.py: case -> (rank that waits and times out, what the other rank returns)
REALWORLD_HANGS = {
    "case_helper_with_world_group_on_rank_zero": (0, 2.0),
    "case_rank_zero_returns_after_failed_upload": (1, False),
    "case_rank_unpacked_from_a_tuple": (0, "/tmp/dl201-out"),
    "case_rank_kept_on_self": (0, []),
    "case_rank_zero_breaks_out_of_the_loader_loop": (1, 1),  # rank 0 ran one step
    "case_sharded_model_evaluated_by_a_helper_on_rank_zero": (0, 2),  # rank 1 trained 2 steps
    "case_trainer_validates_its_sharded_model_on_rank_zero": (0, 2),
    "case_returned_ddp_model_sampled_on_rank_zero": (0, 2),  # DDP broadcasts the BN buffers
    "case_project_model_with_buffers_sampled_by_a_helper_on_rank_zero": (0, 2),
    "case_rank_zero_loses_patience_before_the_next_backward": (1, 1),  # rank 0 left at step 1
    "case_sharded_model_called_through_the_object_that_keeps_it_on_rank_zero": (0, 2),
}
PROJECT_HANGS = {
    "case_evaluate_on_main_process": 0,
    "case_save_checkpoint_on_main_process": 0,
    "case_other_ranks_return_before_synchronize": 0,
    # DDP of a backbone picked from backbones.__dict__: rank 0's forward sends the BN buffers
    "case_backbone_picked_by_name_probed_on_main_process": 0,
    # trainers.py's BaseTrainer shards self.model: rank 0's forward all-gathers its parameters
    "case_subclass_validates_the_base_classes_sharded_model_on_main_process": 0,
    "case_trainers_sharded_model_passed_to_a_helper_on_main_process": 0,
    "case_alias_of_the_trainers_sharded_model_called_on_main_process": 0,
}
GOOD_VALUES = {
    "case_early_stopping_broadcast": 2,
    "case_checkpoint_gathered_by_every_rank": True,
    "case_pipeline_loss_broadcast_by_every_stage": [2.0],
    "case_all_reduces_hoisted": [3.0],
    "case_dataset_built_behind_a_barrier": ["shard-0.bin", "shard-1.bin", "shard-2.bin"],
    "case_metrics_synced_by_every_rank": {"loss": 3.0, "debug/grad_norm": 200.0, "accuracy": 1.0},
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, tuple[RankOutcome, ...]]]:
    """Every case of every DL201 fixture, plus the mis-paired case under DETAIL, in parallel."""
    runs = {name: (path, None, None) for name, path in FILES.items()}
    runs["detail"] = (
        FILES["bad"],
        ["case_mispaired_all_reduce"],
        {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
    )
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {
            name: pool.submit(
                run_gloo_cases, path, cases, pg_timeout=PG_TIMEOUT, hard_timeout=45, env=env
            )
            for name, (path, cases, env) in runs.items()
        }
        return {name: future.result() for name, future in futures.items()}


def _timed_out(outcome: RankOutcome) -> bool:
    return outcome.timed_out(PG_TIMEOUT)


def _case_lines(path: Path) -> set[str]:
    return set(case_names(path))


def test_every_case_ran(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    assert set(outcomes["bad"]) == set(HANGS) == _case_lines(FILES["bad"])
    assert set(outcomes["project_bad"]) == set(PROJECT_HANGS)
    assert set(outcomes["bad_realworld"]) == set(REALWORLD_HANGS)
    assert set(REALWORLD_HANGS) == _case_lines(FILES["bad_realworld"])
    assert len(expected_findings(FILES["bad"])) == len(HANGS)
    assert len(expected_findings(FILES["bad_realworld"])) == len(REALWORLD_HANGS)
    assert len(expected_findings(FILES["project_bad"])) == len(PROJECT_HANGS)


@pytest.mark.parametrize("case", sorted(HANGS))
def test_bad_case_leaves_a_rank_waiting_until_the_timeout(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], case: str
) -> None:
    waiting, value = HANGS[case]
    ranks = outcomes["bad"][case]
    if case == "case_rank_zero_checkpoint_gathers":
        # Rank 0 is inside all_gather while rank 1 waits at the barrier: both wait, and
        # whichever gives up first closes the connection of the other.
        assert any(_timed_out(o) for o in ranks), ranks
        for o in ranks:
            assert _timed_out(o) or "Connection closed by peer" in o.message, o
        return
    assert _timed_out(ranks[waiting]), ranks[waiting]
    other = ranks[1 - waiting]
    assert other.ok, other
    if value is not ANY:
        assert other.value == value


@pytest.mark.parametrize("case", sorted(REALWORLD_HANGS))
def test_realworld_bad_case_leaves_a_rank_waiting_until_the_timeout(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], case: str
) -> None:
    waiting, value = REALWORLD_HANGS[case]
    ranks = outcomes["bad_realworld"][case]
    assert _timed_out(ranks[waiting]), ranks[waiting]
    other = ranks[1 - waiting]
    assert other.ok, other
    assert other.value == value


def test_mispaired_all_reduce_is_silently_wrong(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]],
) -> None:
    rank0, rank1 = outcomes["bad"]["case_mispaired_all_reduce"]
    assert rank1.ok and rank1.value == [12.0]  # the correct sum is 3.0
    assert _timed_out(rank0)


def test_detail_debug_names_the_missing_rank_but_not_the_wrong_value(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]],
) -> None:
    rank0, rank1 = outcomes["detail"]["case_mispaired_all_reduce"]
    assert rank1.ok and rank1.value == [12.0]
    assert rank0.type == RUNTIME_ERROR
    assert rank0.message == (
        f"[Rank 0]: Ranks 1 failed to pass monitoredBarrier in {PG_TIMEOUT * 1000} ms"
    )


@pytest.mark.parametrize("case", sorted(PROJECT_HANGS))
def test_project_bad_case_hangs(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], case: str
) -> None:
    waiting = PROJECT_HANGS[case]
    ranks = outcomes["project_bad"][case]
    assert _timed_out(ranks[waiting]), ranks[waiting]
    assert ranks[1 - waiting].ok


@pytest.mark.parametrize("kind", ["good", "traps", "project_traps", "traps_realworld"])
def test_good_and_trap_cases_finish_on_every_rank(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], kind: str
) -> None:
    results = outcomes[kind]
    assert set(results) == _case_lines(FILES[kind])
    failed = {
        case: [(o.type, o.message[:200], o.hung, o.exitcode) for o in ranks if not o.ok]
        for case, ranks in results.items()
        if not all(o.ok for o in ranks)
    }
    assert failed == {}


def test_good_cases_compute_the_right_values(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]],
) -> None:
    for case, value in GOOD_VALUES.items():
        assert [o.value for o in outcomes["good"][case]] == [value, value], case
    # Both ranks agree on the sharded model's validation loss.
    rank0, rank1 = outcomes["good"]["case_eval_on_every_rank"]
    assert rank0.value == rank1.value


def test_trap_values(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    traps = outcomes["traps"]
    values = {case: [o.value for o in ranks] for case, ranks in traps.items()}
    assert values["case_paired_send_recv"] == [[7.0, 7.0, 7.0]] * 2
    assert values["case_else_mirrors_the_collective"] == [[pytest.approx(0.1), 32.0]] * 2
    assert values["case_collective_within_the_branch_group"] == [4.0, 4.0]
    assert values["case_branch_on_world_size"] == [1.5, 1.5]
    assert values["case_rank_dependent_gather_arguments"] == [[[0.0], [1.0]], []]
    assert values["case_rank_dependent_break_without_collective_in_loop"] == [1, 1]
    assert values["case_zero_first_context_manager"] == [True, True]
    # sharded: both ranks reduce (1 + 2); not sharded: rank 0 alone evaluates, unreduced
    assert values["case_exit_and_reduce_under_opposite_values_of_one_flag"] == [
        [[3.0], [1.0]],
        [[3.0], None],
    ]


def test_realworld_trap_values(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    traps = outcomes["traps_realworld"]
    values = {case: [o.value for o in ranks] for case, ranks in traps.items()}
    rank0, rank1 = values["case_step_index_of_a_sharded_loader"]
    assert rank0 == rank1 and rank0[0] == 1  # one optimizer step, the same weights
    assert values["case_config_validated_before_the_barrier"] == [2, 2]
    assert values["case_checkpoint_loaded_onto_the_local_device"] == [5, 5]
    assert values["case_world_size_unpacked_with_the_rank"] == [2, 2]
    assert values["case_rank_tests_true_on_every_rank"] == [3.0, 3.0]
    assert values["case_seed_tested_before_it_is_made_per_rank"] == [[0.0, 0.0]] * 2
    assert values["case_stop_decision_broadcast_before_break"] == [2, 2]
    assert values["case_gather_then_continue_past_the_loop_tail_gather"] == [
        {"w": [0.0, 1.0], "b": [10.0, 11.0]},
        {},
    ]
    assert values["case_barrier_outside_the_subgroup"] == [1.0, 2.0]
    assert values["case_helper_called_with_rank_minus_one"] == [True, True]
    assert values["case_rank_zero_retries_before_the_broadcast"] == [True, True]
    assert values["case_group_passed_positionally"] == [[1.0, 2.0], [2.0, 2.0]]
    assert values["case_single_pipeline_stage_returns_early"] == [[1.0], [2.0]]
    assert values["case_any_rank_stop_signal_all_reduced"] == [2, 2]
    assert values["case_lora_matrix_rank"] == [1, 1]
    assert values["case_checkpoint_that_syncs_only_sharded_models"] == [2, 2]
    assert values["case_rank_zero_validation_through_ddp_without_buffer_sync"] == [2, 2]
    assert values["case_single_process_return_inside_the_download_branch"] == [True, True]
    assert values["case_first_process_barriers_that_never_run"] == [3.0, 0.0]
    assert values["case_even_and_odd_ranks_staggered"] == [[1.0, 1.0]] * 2
    assert values["case_helper_unwraps_the_ddp_model_before_its_forward"] == [2, 2]
    assert values["case_demo_served_by_rank_zero_callbacks"] == [2, 2]
    assert values["case_buffer_free_ddp_models_sampled_on_rank_zero"] == [2, 2]
    assert values["case_master_first_with_group_state_guards"] == ["built by the master"] * 2
    assert values["case_checkpoint_that_syncs_only_fsdp_modules"] == [2, 2]
    assert values["case_launch_flag_unpacked_with_the_rank"] == [0, 1]
    assert values["case_eval_skip_and_broadcast_gated_by_one_flag"] == [{"zero_shot": 1.0}, {}]


HARNESS_FIXTURE = """
import os
import time

import torch
import torch.distributed as dist


def case_sum():
    t = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    return {"sum": t, "rank": os.environ["RANK"], "world": dist.get_world_size()}


def case_sleeps_forever():
    if dist.get_rank() == 1:
        time.sleep(3600)


def case_rank_one_aborts():
    if dist.get_rank() == 1:
        os.abort()
"""


def test_harness_reports_values_hangs_and_crashes(tmp_path: Path) -> None:
    fixture = tmp_path / "harness_fixture.py"
    fixture.write_text(HARNESS_FIXTURE)
    results = run_gloo_cases(fixture, pg_timeout=2, hard_timeout=4)
    assert list(results) == ["case_sum", "case_sleeps_forever", "case_rank_one_aborts"]
    assert [o.value for o in results["case_sum"]] == [
        {"sum": [3.0], "rank": "0", "world": 2},
        {"sum": [3.0], "rank": "1", "world": 2},
    ]
    rank0, rank1 = results["case_sleeps_forever"]
    assert rank0.ok and not rank0.hung
    assert rank1.hung and not rank1.ok and rank1.seconds is None
    rank0, rank1 = results["case_rank_one_aborts"]
    assert rank0.ok
    assert rank1.died and rank1.exitcode == -6
