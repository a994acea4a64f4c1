"""Proof for DL204, DL205 and DL303 on torch 2.13 with 2 gloo ranks (tests/proof/gloo.py).

* DL204: a DDP module whose forward skips a trainable submodule, or drops its output, passes
  the first iteration and raises ``Expected to have finished reduction in the prior iteration
  before starting a new one`` on the second, on both ranks.
* DL205: a rank-dependent in-place parameter write leaves the replicas different after the
  step, and nothing raises.
* DL303: ``bucket_cap_mb`` below 1 with ``torch.compile`` (either order) fails with
  ``AssertionError: First bucket should be smaller/equal to other buckets to get comms warmed
  up ASAP``.

Good and traps fixtures run clean with equal parameters on both ranks. All files run at once.
"""

from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from distlint.testing import expected_findings
from tests.proof.gloo import FIXTURES, RankOutcome, case_names, run_gloo_cases

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]

CODES = ("DL204", "DL205", "DL303")
KINDS = ("bad", "good", "traps")
Outcomes = dict[str, dict[str, dict[str, tuple[RankOutcome, ...]]]]

# The exact text on torch 2.13.0 (without its backticks and line breaks; the words are the
# same).
DL204_TEXT = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't "
    "able to locate the output tensors in the return value of your module's `forward` "
    "function."
)
FACTS_I1 = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "find_unused_parameters=True to torch.nn.parallel.DistributedDataParallel, and by making "
    "sure all forward function outputs participate in calculating loss."
)
# case -> parameter indices that got no gradient (body 0 1, then the skipped submodule)
DL204_UNUSED = {"case_aux_head_skipped": "4 5", "case_output_never_returned": "2 3"}
DL303_TEXT = "First bucket should be smaller/equal to other buckets to get comms warmed up ASAP"


@pytest.fixture(scope="module")
def outcomes() -> Outcomes:
    with ThreadPoolExecutor(len(CODES) * len(KINDS)) as pool:
        futures = {
            (code, kind): pool.submit(
                run_gloo_cases, FIXTURES / code / f"{kind}.py", pg_timeout=10, hard_timeout=60
            )
            for code in CODES
            for kind in KINDS
        }
        found: Outcomes = {code: {} for code in CODES}
        for (code, kind), future in futures.items():
            found[code][kind] = future.result()
        return found


@pytest.mark.parametrize("code", CODES)
def test_every_case_ran_and_bad_cases_match_the_findings(outcomes: Outcomes, code: str) -> None:
    for kind in KINDS:
        assert list(outcomes[code][kind]) == case_names(FIXTURES / code / f"{kind}.py")
    assert len(outcomes[code]["bad"]) == len(expected_findings(FIXTURES / code / "bad.py"))


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("kind", ["good", "traps"])
def test_good_and_traps_run_clean_with_equal_replicas(
    outcomes: Outcomes, code: str, kind: str
) -> None:
    for case, ranks in outcomes[code][kind].items():
        assert all(o.ok for o in ranks), (case, [(o.type, o.message[:300]) for o in ranks])
        assert ranks[0].value == ranks[1].value, case


@pytest.mark.parametrize("case", sorted(DL204_UNUSED))
def test_dl204_second_iteration_raises_on_every_rank(outcomes: Outcomes, case: str) -> None:
    for outcome in outcomes["DL204"]["bad"][case]:
        assert outcome.type == "builtins.RuntimeError"
        assert outcome.message.startswith(DL204_TEXT)
        assert " ".join(outcome.message.replace("`", "").split()).startswith(FACTS_I1)
        assert (
            f"Parameter indices which did not receive grad for rank {outcome.rank}: "
            f"{DL204_UNUSED[case]}"
        ) in outcome.message
        # The first iteration completed; the error comes from the forward of the second.
        printed = re.findall(r"^iteration (\d+)$", outcome.output, re.MULTILINE)
        assert printed == ["0", "1"]
        assert "loss = model(torch.randn(4, 8))" in outcome.traceback


def test_dl205_replicas_diverge_without_error(outcomes: Outcomes) -> None:
    bad = outcomes["DL205"]["bad"]
    assert len(bad) == 3
    for case, (rank0, rank1) in bad.items():
        assert rank0.ok and rank1.ok, case
        assert rank0.value != pytest.approx(rank1.value), case


def test_dl303_small_buckets_fail_under_compile(outcomes: Outcomes) -> None:
    bad = outcomes["DL303"]["bad"]
    assert len(bad) == 2
    for case, ranks in bad.items():
        for outcome in ranks:
            assert outcome.type == "builtins.AssertionError", (case, outcome.traceback)
            assert outcome.message == DL303_TEXT
