"""Unit tests of DL301 fullgraph-on-distributed-wrapper: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl3xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.conftest import findings, where
from tests.rules.wrapping.conftest import WRAP_CODES, WRAP_HEADER, wrapping


def test_dl301_ddp_inline_name_and_method() -> None:
    found = wrapping(
        """
        a = torch.compile(DDP(net), fullgraph=True)
        model = DDP(net)
        model = torch.compile(model, fullgraph=True)
        other = DDP(net).to("cpu")
        other.compile(fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL301", 7, 9), ("DL301", 9, 13), ("DL301", 11, 5)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB0156" in found[0].message and "GB0156" in found[1].message
    assert "`other.compile(fullgraph=True)`" in found[2].message
    assert "Attempt to trace generator`, GB0003" in found[2].message
    assert "`DDP(torch.compile(model, fullgraph=True))`" in found[0].message
    assert [loc.message for loc in found[1].related] == ["wrapped here"]
    assert found[1].related[0].span.start.line == 8


def test_dl301_fsdp1_with_original_params() -> None:
    found = wrapping(
        """
        model = FSDP(net, use_orig_params=True)
        torch.compile(model, fullgraph=True)
        torch.compile(FSDP(net, **options), fullgraph=True)
        model.compile(fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL301", 8, 5), ("DL301", 9, 5)]
    assert "GB0208" in found[0].message


def test_dl301_fully_shard_children() -> None:
    found = wrapping(
        """
        for block in net.layers:
            fully_shard(block)
        fully_shard(net)
        compiled = torch.compile(net, fullgraph=True)
        other = Net()
        fully_shard(other.encoder)
        other.compile(fullgraph=True)
        third = Net()
        for i, blk in enumerate(third.blocks):
            for sub in blk.children():
                fully_shard(sub)
        torch.compile(third, fullgraph=True)
        fourth = Net()
        fully_shard(fourth.layers[0])
        torch.compile(fourth, fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [
        ("DL301", 10, 16),
        ("DL301", 13, 5),
        ("DL301", 18, 5),
        ("DL301", 21, 5),
    ]
    assert "GB0007" in found[0].message
    assert "blk.compile(fullgraph=True)" in found[0].message
    assert [loc.message for loc in found[0].related] == ["sharded here"]


@pytest.mark.parametrize(
    "body",
    [
        "torch.compile(DDP(net))",
        "torch.compile(DDP(net), fullgraph=False)",
        "DDP(torch.compile(net, fullgraph=True))",
        "model = DDP(net)\nmodel = net\ntorch.compile(model, fullgraph=True)",
        "model = DDP(net)\ntorch.compile(model.module, fullgraph=True)",
        "fully_shard(net)\ntorch.compile(net, fullgraph=True)",
        "model = fully_shard(net)\nmodel.compile(fullgraph=True)",
        "for blk in net.layers:\n    fully_shard(blk)\n    blk.compile(fullgraph=True)",
        "model = FSDP(net, use_orig_params=True)\nmodel.compile(fullgraph=True)",
        "torch.compile(other, fullgraph=True)",
        "import re\nre.compile('x')",
    ],
)
def test_dl301_traps(body: str) -> None:
    assert [f for f in wrapping(body, *WRAP_CODES) if f.code == "DL301"] == []


def test_dl301_wrapper_in_another_scope_is_not_connected() -> None:
    source = (
        f"{WRAP_HEADER}\nmodel = DDP(Net())\n\ndef main():\n"
        "    torch.compile(model, fullgraph=True)\n"
    )
    assert findings(source, *WRAP_CODES) == []


def test_dl301_at_module_level_and_on_attributes() -> None:
    source = (
        f"{WRAP_HEADER}\nmodel = DDP(Net())\nmodel = torch.compile(model, fullgraph=True)\n\n"
        "class Trainer:\n    def setup(self, net):\n        self.model = DDP(net)\n"
        "        self.model = torch.compile(self.model, fullgraph=True)\n"
    )
    assert where(findings(source, *WRAP_CODES)) == [("DL301", 7, 9), ("DL301", 12, 22)]
