"""Proof for DL210: a shuffling ``DistributedSampler`` whose epoch is never advanced draws the
same order in every epoch.

Runs every case of ``fixtures/DL210`` on 2 gloo ranks (tests/proof/gloo.py, all files at once);
each case returns, per epoch, the dataset indices (of ``range(8)``) one rank saw. In the bad
cases every epoch repeats the first epoch's order on both ranks; in the good cases (and the
trap that advances the training sampler) each epoch draws a new order. In every case the two
ranks split the dataset between them. The exact values are torch 2.13's: a change of torch's
shuffle (``torch.randperm`` seeded with ``seed + epoch``) fails this test.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest

from distlint.testing import expected_findings
from tests.proof.gloo import FIXTURES, RankOutcome, case_names, run_gloo_cases

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

FOLDER = FIXTURES / "DL210"
FILES = {
    "bad": FOLDER / "bad.py",
    "good": FOLDER / "good.py",
    "traps": FOLDER / "traps.py",
    "traps_set_epoch": FOLDER / "traps_set_epoch.py",
}
# What each rank draws from range(8) with seed 0 (torch 2.13.0), epoch 0, 1, 2.
RANK0 = [[4, 7, 2, 1], [5, 2, 7, 1], [0, 7, 6, 1]]
RANK1 = [[0, 3, 5, 6], [4, 6, 3, 0], [4, 2, 5, 3]]
EPOCHS = 3

BAD = {
    "case_loader_over_a_named_sampler",
    "case_sampler_built_inside_the_loader",
    "case_sampler_only_when_distributed",
    "case_sampler_iterated_directly",
}
ADVANCED = {
    ("good", "case_loader_over_a_named_sampler"),
    ("good", "case_sampler_built_inside_the_loader"),
    ("traps_set_epoch", "case_training_sampler_advanced_each_epoch"),
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, tuple[RankOutcome, ...]]]:
    """Every case of every DL210 fixture, in parallel."""
    with ThreadPoolExecutor(len(FILES)) as pool:
        futures = {
            name: pool.submit(run_gloo_cases, path, hard_timeout=90) for name, path in FILES.items()
        }
        return {name: future.result() for name, future in futures.items()}


def _values(ranks: tuple[RankOutcome, ...]) -> list[list[list[int]]]:
    assert all(o.ok for o in ranks), ranks
    return [o.value for o in ranks]


def test_every_case_ran_and_the_bad_ones_are_flagged(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]],
) -> None:
    for name, path in FILES.items():
        assert set(outcomes[name]) == set(case_names(path)), name
        for case, ranks in outcomes[name].items():
            assert all(o.ok for o in ranks), (name, case, ranks)
    assert set(outcomes["bad"]) == BAD
    assert len(expected_findings(FILES["bad"])) == len(BAD)
    assert {code for code, _, _ in expected_findings(FILES["bad"])} == {"DL210"}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_case_repeats_the_first_epoch_on_every_rank(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], case: str
) -> None:
    assert _values(outcomes["bad"][case]) == [[RANK0[0]] * EPOCHS, [RANK1[0]] * EPOCHS]


@pytest.mark.parametrize(("kind", "case"), sorted(ADVANCED))
def test_advancing_the_epoch_draws_a_new_order_each_epoch(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], kind: str, case: str
) -> None:
    assert _values(outcomes[kind][case]) == [RANK0, RANK1]
    assert len({tuple(order) for order in RANK0}) == EPOCHS


def test_ranks_split_the_dataset_in_every_epoch() -> None:
    for epoch in range(EPOCHS):
        assert sorted(RANK0[epoch] + RANK1[epoch]) == list(range(8))


def test_trap_values(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    traps = outcomes["traps"]
    unshuffled = [[[0, 2, 4, 6]] * 2, [[1, 3, 5, 7]] * 2]
    assert _values(traps["case_no_shuffle"]) == unshuffled
    assert _values(traps["case_shuffle_from_the_configuration"]) == unshuffled
    # handed to a stand-in that does not advance the epoch: the order repeats, as in bad.py
    # (a real framework's prepare or trainer advances it, which is why the rule is silent)
    assert _values(traps["case_loader_prepared_by_a_framework"]) == [
        [RANK0[0]] * 2,
        [RANK1[0]] * 2,
    ]
    assert _values(traps["case_one_epoch_by_construction"]) == [[RANK0[0]], [RANK1[0]]]
