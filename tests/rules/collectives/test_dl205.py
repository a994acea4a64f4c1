"""Unit tests of DL205 rank-divergent-parameter-write: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_ddp.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.conftest import findings, positions

DIST = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(Net())
rank = dist.get_rank()
"""


@pytest.mark.parametrize(
    ("code", "column"),
    [
        ("if rank == 0:\n    model.module.l1.weight.data.mul_(0.5)", 5),
        ("if dist.get_rank() == 0:\n    model.module.l1.bias.data = torch.zeros(2)", 5),
        (
            "with torch.no_grad():\n    for p in model.parameters():\n"
            "        if rank != 0:\n            p.add_(1.0)",
            13,
        ),
        ("if rank == 0:\n    with torch.no_grad():\n        model.module.l1.weight.mul_(2)", 9),
    ],
)
def test_dl205_rank_dependent_parameter_writes(code: str, column: int) -> None:
    source = DIST + code + "\n"
    found = findings(source, "DL205")
    assert positions(found) == [(len(source.splitlines()), column)]
    assert found[0].severity is Severity.WARNING
    assert "diverge silently" in found[0].message


@pytest.mark.parametrize(
    "code",
    [
        "model.module.l1.weight.data.mul_(0.5)",  # every rank
        "if rank == 0:\n    running.add_(1.0)",  # not a parameter
        "if rank == 0:\n    model.module.l1.weight.data.mul_(0.5)\n"
        "for p in model.parameters():\n    dist.broadcast(p.data, src=0)",
        "if rank == 0:\n    model.module.l1.weight.mul_(2)",  # grad mode: DL406's business
        "if world_size > 1:\n    model.module.l1.weight.data.mul_(0.5)",
    ],
)
def test_dl205_traps(code: str) -> None:
    assert findings(DIST + code + "\n", "DL205") == []


def test_dl205_only_in_distributed_code() -> None:
    source = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    w.data.mul_(0.5)\n"
    assert findings(source, "DL205") == []


def test_dl205_write_before_ddp_construction_is_resynced() -> None:
    source = (
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel"
        "\nnet = Net()\nif dist.get_rank() == 0:\n    net.l1.weight.data.mul_(0.5)\n"
        "model = DistributedDataParallel(net)\n"
    )
    assert findings(source, "DL205") == []
