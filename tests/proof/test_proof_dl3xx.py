"""Proof for DL301, DL302 and DL304: compiling DDP/FSDP wrappers on torch 2.13.

Runs ``fixtures/DL30{1,2,4}/{bad,good,traps}.py`` under the real torch, each in a process of its
own, with a single-rank gloo group (FSDP1 with ``device_id="cpu"``, since FSDP1 refuses a CPU-only
machine otherwise):

* DL301: every ``fullgraph=True`` compile of a wrapper raises ``Unsupported`` with the GB id the
  message cites; the good ways to combine them run;
* DL302: FSDP1 with flat parameters compiles 0 graphs (GB0053 recorded as the break) and fails
  under ``fullgraph=True``; with ``use_orig_params=True`` a graph is compiled;
* DL304: ``DDP(<torch.nn built-in>)`` under compile compiles 0 graphs (counted with a counting
  backend); compiling the module before wrapping it, or a user-defined module, compiles graphs.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest

from distlint.testing import expected_findings
from tests.proof.harness import FIXTURES, Outcome, run_cases

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

UNSUPPORTED = "torch._dynamo.exc.Unsupported"
SKIPPED = "Attempted to call function marked as skipped"
GB = "compile-graph-break-site/gb/{}.html"

# case -> (exception type, start of the message, GB id in the message or None)
DL301_BAD = {
    "case_ddp_name": (UNSUPPORTED, "Unsupported method call", "gb0156"),
    "case_ddp_inline": (UNSUPPORTED, "Unsupported method call", "gb0156"),
    "case_ddp_module_compile": (UNSUPPORTED, "Attempt to trace generator", "gb0003"),
    "case_fsdp1_use_orig_params": (UNSUPPORTED, "torch.* op returned non-Tensor", "gb0208"),
    "case_fully_shard_blocks_and_root": (UNSUPPORTED, SKIPPED, "gb0007"),
    "case_fully_shard_blocks_module_compile": (UNSUPPORTED, SKIPPED, "gb0007"),
}
DL302_BAD = {
    "case_flat_params_fullgraph": (UNSUPPORTED, "FSDP with use_orig_params=False", "gb0053"),
    "case_default_flat_params": (
        "fixture_DL302_bad.NothingCompiled",
        "0 graphs compiled; graph breaks:\nFSDP with use_orig_params=False",
        "gb0053",
    ),
    "case_explicit_flat_params_module_compile": (
        "fixture_DL302_bad.NothingCompiled",
        "0 graphs compiled",
        None,
    ),
}
NOTHING_COMPILED_304 = ("fixture_DL304_bad.NothingCompiled", "0 graphs compiled", None)
DL304_BAD = {
    "case_sequential_inline": NOTHING_COMPILED_304,
    "case_sequential_by_name": NOTHING_COMPILED_304,
    "case_linear_module_compile": NOTHING_COMPILED_304,
    "case_transformer_layer": NOTHING_COMPILED_304,
}
BAD = {"DL301": DL301_BAD, "DL302": DL302_BAD, "DL304": DL304_BAD}
GOOD = {
    "DL301": {
        "case_ddp_of_a_fullgraph_compiled_module",
        "case_compiled_ddp_without_fullgraph",
        "case_fully_shard_then_compile_each_block",
    },
    "DL302": {"case_fsdp1_with_original_params", "case_fully_shard_with_per_block_compile"},
    "DL304": {"case_compile_the_sequential_then_wrap", "case_compile_ddp_of_a_user_module"},
}
TRAPS = {"DL301": 5, "DL302": 4, "DL304": 5}


def _run_all(kinds: tuple[str, ...]) -> dict[tuple[str, str], dict[str, Outcome]]:
    jobs = [(code, kind) for code in BAD for kind in kinds]
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {job: pool.submit(run_cases, FIXTURES / job[0] / f"{job[1]}.py") for job in jobs}
        return {job: future.result() for job, future in futures.items()}


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], dict[str, Outcome]]:
    return _run_all(("bad", "good"))


@pytest.mark.parametrize("code", sorted(BAD))
def test_every_bad_case_is_flagged_once(code: str) -> None:
    found = expected_findings(FIXTURES / code / "bad.py")
    assert {c for c, _, _ in found} == {code}
    assert len(found) == len(BAD[code])


@pytest.mark.parametrize("code", sorted(BAD))
def test_every_case_ran(outcomes: dict[tuple[str, str], dict[str, Outcome]], code: str) -> None:
    assert set(outcomes[code, "bad"]) == set(BAD[code])
    assert set(outcomes[code, "good"]) == GOOD[code]


@pytest.mark.parametrize(
    "code, case", sorted((code, case) for code, cases in BAD.items() for case in cases)
)
def test_bad_case_fails_as_documented(
    outcomes: dict[tuple[str, str], dict[str, Outcome]], code: str, case: str
) -> None:
    error_type, text, gb = BAD[code][case]
    outcome = outcomes[code, "bad"][case]
    assert not outcome.ok
    assert outcome.type == error_type, outcome.traceback
    assert outcome.message.startswith(text), outcome.message
    if gb is not None:
        assert GB.format(gb) in outcome.message


@pytest.mark.parametrize("code", sorted(BAD))
def test_good_cases_run_clean(
    outcomes: dict[tuple[str, str], dict[str, Outcome]], code: str
) -> None:
    failed = {name: o.traceback for name, o in outcomes[code, "good"].items() if not o.ok}
    assert failed == {}


@pytest.mark.slow
def test_traps_run_clean() -> None:
    results = _run_all(("traps",))
    for code, count in TRAPS.items():
        trap_outcomes = results[code, "traps"]
        assert len(trap_outcomes) == count, code
        failed = {name: o.traceback for name, o in trap_outcomes.items() if not o.ok}
        assert failed == {}, code
