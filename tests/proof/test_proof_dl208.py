"""Proof for DL208: a rank-dependent ``raise`` before a collective strands the other ranks.

Runs every case of ``fixtures/DL208`` on 2 gloo ranks (tests/proof/gloo.py, process-group
timeout 3 s, all cases of all files at once). In the bad cases the rank that checked raises its
own exception at once, while the other rank sits in the collective it issued until gloo's
timeout ends it: without a launcher that tears the job down, a failure becomes a hang of the
process-group timeout (30 minutes by default). In the good cases every rank makes the same
decision (a broadcast flag, a check every rank makes, a reduced value) and raises the same
exception at once, or finishes. In the traps no rank waits either: the ``raise`` depends on the
world size or the configuration, comes after the last collective, or has a twin on the other
side of the rank test.
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

FOLDER = FIXTURES / "DL208"
PG_TIMEOUT = 3
RUNTIME_ERROR = "builtins.RuntimeError"
FILES = {
    "bad": FOLDER / "bad.py",
    "good": FOLDER / "good.py",
    "traps": FOLDER / "traps.py",
}
QUICK = PG_TIMEOUT * 0.8  # a rank that did not wait for the timeout ends well before it

# bad case -> (rank that raises, its exception); the other rank times out
ABORTS = {
    "case_raise_on_rank_zero_before_broadcast": (0, "builtins.FileNotFoundError"),
    "case_main_process_refuses_to_overwrite": (0, "builtins.FileExistsError"),
    "case_nan_guard_on_rank_zero_only": (0, "builtins.FloatingPointError"),
    "case_rank_zero_checks_keys_before_the_broadcast": (0, "builtins.KeyError"),
}
OK = None  # the rank returns
# good/trap case -> what each rank does: OK or the exception it raises
GOOD = {
    "case_missing_checkpoint_raises_everywhere": ("builtins.FileNotFoundError",) * 2,
    "case_checkpoint_found_is_broadcast": (OK, OK),
    "case_every_rank_refuses_to_overwrite": ("builtins.FileExistsError",) * 2,
    "case_nan_guard_on_the_reduced_loss": ("builtins.FloatingPointError",) * 2,
}
TRAPS = {
    "case_world_size_check_raises_everywhere": ("builtins.ValueError",) * 2,
    "case_world_size_check_passes": (OK, OK),
    "case_config_check_raises_everywhere": ("builtins.ValueError",) * 2,
    "case_raise_after_the_last_collective": ("builtins.RuntimeError", OK),
    "case_rank_zero_raises_and_so_do_the_others": ("builtins.FileNotFoundError",) * 2,
    "case_check_repeated_on_rank_zero": (OK, OK),
    "case_single_process_only_raise": (OK, OK),
    "case_only_rank_zero_checks_when_no_barrier_follows": ("builtins.KeyError", OK),
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, tuple[RankOutcome, ...]]]:
    """Every case of every DL208 fixture, in parallel."""
    with ThreadPoolExecutor(len(FILES)) as pool:
        futures = {
            name: pool.submit(run_gloo_cases, path, pg_timeout=PG_TIMEOUT, hard_timeout=45)
            for name, path in FILES.items()
        }
        return {name: future.result() for name, future in futures.items()}


def _timed_out(outcome: RankOutcome) -> bool:
    return outcome.timed_out(PG_TIMEOUT)


def _quick(outcome: RankOutcome) -> bool:
    return outcome.seconds is not None and outcome.seconds < QUICK


def test_every_case_ran(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    for kind, table in (("bad", ABORTS), ("good", GOOD), ("traps", TRAPS)):
        assert set(outcomes[kind]) == set(table) == set(case_names(FILES[kind])), kind
    assert len(expected_findings(FILES["bad"])) == len(ABORTS)
    assert {code for code, _, _ in expected_findings(FILES["bad"])} == {"DL208"}


@pytest.mark.parametrize("case", sorted(ABORTS))
def test_bad_case_raises_on_one_rank_and_strands_the_other(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], case: str
) -> None:
    raising, exception = ABORTS[case]
    ranks = outcomes["bad"][case]
    assert ranks[raising].type == exception, ranks[raising]
    assert _quick(ranks[raising]), ranks[raising]
    assert _timed_out(ranks[1 - raising]), ranks[1 - raising]


@pytest.mark.parametrize(
    ("kind", "case"),
    [("good", case) for case in sorted(GOOD)] + [("traps", case) for case in sorted(TRAPS)],
)
def test_good_and_trap_cases_end_quickly_on_every_rank(
    outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]], kind: str, case: str
) -> None:
    expected = (GOOD if kind == "good" else TRAPS)[case]
    ranks = outcomes[kind][case]
    assert tuple(o.type if not o.ok else OK for o in ranks) == expected, ranks
    for o in ranks:
        assert not o.hung and _quick(o), o


def test_good_case_values(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    found = outcomes["good"]["case_checkpoint_found_is_broadcast"]
    assert [o.value for o in found] == [[1.5, 2.5]] * 2
    missing = outcomes["good"]["case_missing_checkpoint_raises_everywhere"]
    assert [o.message for o in missing] == ["/nonexistent/pretrained.pt"] * 2


def test_trap_values(outcomes: dict[str, dict[str, tuple[RankOutcome, ...]]]) -> None:
    traps = outcomes["traps"]
    assert [o.value for o in traps["case_world_size_check_passes"]] == [1, 1]
    rank0, rank1 = traps["case_raise_after_the_last_collective"]
    assert rank0.message == "final loss 3.0 above 2.0"
    assert rank1.value == 3.0  # the all_reduce completed on both ranks before rank 0 raised
