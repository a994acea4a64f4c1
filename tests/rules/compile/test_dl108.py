"""Unit tests of DL108 stale-dist-constant: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl107_109.py) show that torch behaves as the messages
say.
"""

from __future__ import annotations

from distlint.findings import Severity
from tests.project_util import check_sources
from tests.rules.conftest import run, where

DIST = """\
import os
import torch
import torch.distributed as dist

@torch.compile
def world(x):
    return x / (dist.get_world_size() if dist.is_initialized() else 1)

@torch.compile
def rank(x):
    return x + dist.get_rank()

@torch.compile
def env_rank(x):
    return x + int(os.environ["RANK"])

"""


def test_dl108_called_before_init() -> None:
    found = run(DIST + "world(x)\ndist.init_process_group('gloo')\nworld(x)\n", "DL108")
    assert where(found) == [("DL108", 17, 1)]
    assert found[0].severity is Severity.WARNING
    assert "before `init_process_group`" in found[0].message
    assert "dist.get_world_size()" in found[0].message or "is_initialized" in found[0].message
    assert "torch._dynamo.reset()" in found[0].message
    labels = {r.message for r in found[0].related}
    assert {"process group created here", "folded into the compiled graph here"} <= labels


def test_dl108_process_group_recreated_in_a_function() -> None:
    source = DIST + (
        "def main(x):\n"
        "    dist.init_process_group('gloo')\n"
        "    rank(x)\n"
        "    dist.destroy_process_group()\n"
        "    dist.init_process_group('gloo')\n"
        "    rank(x)\n"
    )
    found = run(source, "DL108")
    assert where(found) == [("DL108", 19, 5)]
    assert "re-created" in found[0].message


def test_dl108_traps() -> None:
    source = DIST + (
        "def good(x):\n"
        "    dist.init_process_group('gloo')\n"
        "    world(x)\n"
        "    rank(x)\n"
        "def env(x):\n"
        "    env_rank(x)\n"
        "    dist.init_process_group('gloo')\n"
        "    env_rank(x)\n"
        "def reset(x):\n"
        "    world(x)\n"
        "    dist.init_process_group('gloo')\n"
        "    torch._dynamo.reset()\n"
        "    world(x)\n"
        "def only_before(x):\n"
        "    world(x)\n"
        "    dist.init_process_group('gloo')\n"
    )
    assert run(source, "DL108") == []


def test_dl108_across_modules(tmp_path) -> None:
    results = check_sources(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": (
                "import torch.distributed as dist\n"
                "from torch import nn\n"
                "class Net(nn.Module):\n"
                "    def forward(self, x):\n"
                "        return x * dist.get_rank()\n"
            ),
            "pkg/train.py": (
                "import torch\n"
                "import torch.distributed as dist\n"
                "from pkg.model import Net\n"
                "model = torch.compile(Net())\n"
                "model(x)\n"
                "dist.init_process_group('gloo')\n"
                "model(x)\n"
            ),
        },
        enabled=["DL108"],
    )
    # the read lives in another file: not reported (the region's source is not in train.py)
    assert [f.code for r in results.values() for f in r.findings] == []
