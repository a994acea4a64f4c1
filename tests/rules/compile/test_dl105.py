"""Unit tests of DL105 graph-break-in-loop: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py and tests/proof/test_proof_dl107_109.py) show
that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER, compiled
from tests.rules.conftest import run, where

FSDP2 = """\
import torch
from torch import nn
from torch.distributed.fsdp import fully_shard

class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

model = Stack()
{shard}
fully_shard(model)
{compile}
"""


def test_dl105_reports_the_loop_and_the_break_is_reported_too() -> None:
    source = compiled("for i in range(3):\n    x = x * 2\n    print(i)\nreturn x\n")
    found = run(source, *DL101_TO_DL110)
    assert where(found) == [("DL105", 6, 5), ("DL104", 8, 9)]
    loop = found[0]
    assert "GB7000" in loop.message and "skips the whole function" in loop.message
    assert any(r.message == "graph break" and r.span.start.line == 8 for r in loop.related)


def test_dl105_outermost_loop_only_and_while_tests() -> None:
    source = compiled(
        "for i in range(2):\n    for j in range(2):\n        x = x + x.sum().item()\n"
        "while x.sum() < 10:\n    x = x * 2\nreturn x\n"
    )
    assert [w for w in where(run(source, *DL101_TO_DL110)) if w[0] == "DL105"] == [
        ("DL105", 6, 5),
        ("DL105", 9, 5),
    ]


@pytest.mark.parametrize(
    "source",
    [
        compiled("for i in range(3):\n    print(i)\nreturn x\n", fullgraph=True),
        compiled("for i in range(3):\n    x = x * torch.rand(4)\nreturn x\n"),
        HEADER + "def f(x):\n    for i in range(3):\n        print(i)\n    return x\n",
        compiled("for i in range(3):\n    def g():\n        print(i)\nreturn x\n"),
    ],
    ids=["fullgraph", "traceable", "eager", "nested-def"],
)
def test_dl105_silent(source: str) -> None:
    assert run(source, "DL105") == []


def test_dl105_compiled_root_over_sharded_children() -> None:
    source = FSDP2.format(
        shard="for block in model.layers:\n    fully_shard(block)",
        compile="model = torch.compile(model)",
    )
    found = run(source, "DL105")
    assert where(found) == [("DL105", 11, 9)]
    assert found[0].severity is Severity.WARNING
    assert "GB7000" in found[0].message and "GB0007" in found[0].message
    assert "blk.compile()" in found[0].message


def test_dl105_fsdp2_fullgraph_and_module_compile() -> None:
    source = FSDP2.format(
        shard="fully_shard(model.layers[0])\nfully_shard(model.layers[1])",
        compile="model = torch.compile(model, fullgraph=True)",
    )
    found = run(source, "DL105")
    assert where(found) == [("DL105", 11, 9)]
    assert found[0].severity is Severity.ERROR
    assert "Attempted to call function marked as skipped" in found[0].message
    method = FSDP2.format(
        shard="for block in model.layers:\n    fully_shard(block)", compile="model.compile()"
    )
    assert where(run(method, "DL105")) == [("DL105", 11, 9)]


def test_dl105_fsdp2_traps() -> None:
    per_block = FSDP2.format(
        shard="for block in model.layers:\n    fully_shard(block)\n    block.compile()",
        compile="",
    )
    only_root = FSDP2.format(shard="", compile="model = torch.compile(model)")
    assert run(per_block, "DL105") == []
    assert run(only_root, "DL105") == []
