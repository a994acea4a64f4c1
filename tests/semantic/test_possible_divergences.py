"""The narrowings of the possible divergences (the rank review listing of ``distlint
explain-ranks``, DL209's notes before it was removed): idioms of the real-code review (issue 14)
where the collective behind a rank branch is not issued, or the condition is the same on every
rank.

The shapes as written in training code are in fixtures/explain_ranks (traps.py not listed,
bad.py listed as possible); proven shapes (DL201) are in tests/rules/collectives/test_dl201.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.project_util import rank_labels as project_rank_labels
from tests.rules.conftest import rank_labels


def codes(source: str) -> list[str]:
    """The listing's label of each place: DL201/DL208 when proven, else "possible"."""
    return sorted(label for label, _ in rank_labels(source))


# -- a collective only for sharded models (physicsnemo's save_checkpoint) -----------------------

# fixtures/explain_ranks/checkpointing.py: ``save_checkpoint`` (a barrier only when a model
# passed is FSDP-wrapped or holds DTensor parameters) and ``save_unless_plain`` (the negated test)
_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_HELPER = (_FIXTURES / "explain_ranks" / "checkpointing.py").read_text()

_CALLER = """
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP

from checkpointing import save_checkpoint, save_unless_plain


def train(path, net):
    model = {wrap}
    if dist.get_rank() == 0:
        {call}
"""


def _project_codes(tmp_path: Path, wrap: str, call: str) -> list[str]:
    caller = _CALLER.format(wrap=wrap, call=call)
    found = project_rank_labels(tmp_path, {"checkpointing.py": _HELPER, "train.py": caller})
    return sorted(label for places in found.values() for label, _ in places)


@pytest.mark.parametrize(
    ("wrap", "passed"),
    [
        ("net", "model"),  # a parameter: not known to be wrapped
        ("DDP(net)", "model"),  # DDP does not shard
        ("DDP(net)", "[model]"),
        ("nn.Linear(2, 2)", "[model]"),
    ],
)
def test_sharded_only_helper_on_rank_zero_with_an_unsharded_model_is_silent(
    tmp_path: Path, wrap: str, passed: str
) -> None:
    assert _project_codes(tmp_path, wrap, f"save_checkpoint(path, models={passed})") == []


@pytest.mark.parametrize("passed", ["model", "[model]", "[net, model]"])
def test_sharded_only_helper_on_rank_zero_with_an_fsdp_model_is_possible(
    tmp_path: Path, passed: str
) -> None:
    call = f"save_checkpoint(path, models={passed})"
    assert _project_codes(tmp_path, "FSDP(net)", call) == ["possible"]


# with an FSDP model the barrier after the early return is reached on rank 0 alone: reported
# (an error, as before this narrowing, which reported it for any model)
@pytest.mark.parametrize(("wrap", "codes_found"), [("net", []), ("FSDP(net)", ["DL201"])])
def test_a_negated_sharded_test_takes_its_true_side_for_an_unsharded_model(
    tmp_path: Path, wrap: str, codes_found: list[str]
) -> None:
    assert _project_codes(tmp_path, wrap, "save_unless_plain(path, model)") == codes_found


_FORMS = """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save(path, model):
    is_sharded = isinstance(model, FSDPModule)
    if {test}:
        dist.barrier()
    torch.save(model.state_dict(), path)


def train(path, net):
    model = {wrap}
    if dist.get_rank() == 0:
        save(path, model)
"""


@pytest.mark.parametrize(
    "test",
    [
        "isinstance(model, FSDP)",
        "isinstance(model, (FSDP, FSDPModule))",
        "any(type(p).__name__ == 'DTensor' for p in model.parameters())",
        "is_sharded",
    ],
)
def test_the_forms_of_a_sharded_test(test: str) -> None:
    assert codes(_FORMS.format(test=test, wrap="net")) == []
    assert codes(_FORMS.format(test=test, wrap="FSDP(net)")) == ["possible"]


def test_a_type_test_that_also_accepts_ddp_is_not_a_sharded_test() -> None:
    """``isinstance(m, (DDP, FSDP))`` holds for a DDP model too: the barrier may run."""
    assert codes(
        """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


def save(path, model):
    if isinstance(model, (DDP, FSDP)):
        dist.barrier()
    torch.save(model.state_dict(), path)


def train(path, model):
    if dist.get_rank() == 0:
        save(path, model)
"""
    ) == ["possible"]


def test_a_sharded_test_of_self_attributes_is_left_to_the_class_analysis() -> None:
    """``self.model`` may be known to be wrapped by the class: not read as unsharded."""
    assert codes(
        """
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def __init__(self, net):
        self.model = FSDP(net)

    def save(self, path):
        if isinstance(self.model, FSDP):
            dist.barrier()
        torch.save(self.model.state_dict(), path)

    def fit(self, path):
        if dist.get_rank() == 0:
            self.save(path)
"""
    ) == ["possible"]


# -- the length of a loader over a DistributedSampler (padded: the same on every rank) ---------

_STEPS = """
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def evaluate(dataset, shard):
    sampler = {sampler}
    loader = DataLoader(dataset, sampler=sampler)
    last = len(loader) - 1
    for i, batch in enumerate(loader):
        dist.all_reduce(batch)
        if i == last:
            return batch
        dist.barrier()
"""


def test_steps_counted_from_a_distributed_sampler_loader_are_the_same_on_every_rank() -> None:
    sampler = "DistributedSampler(dataset, rank=dist.get_rank())"
    assert codes(_STEPS.format(sampler=sampler)) == []


def test_steps_counted_from_another_rank_derived_loader_may_differ() -> None:
    """A project's own split by rank may give ranks different lengths: still listed as possible."""
    assert codes(_STEPS.format(sampler="shard(dataset, dist.get_rank())")) == ["possible"]
