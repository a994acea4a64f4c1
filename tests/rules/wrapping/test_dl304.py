"""Unit tests of DL304 compiled-ddp-of-builtin-container: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl3xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.conftest import where
from tests.rules.wrapping.conftest import WRAP_CODES, wrapping


def test_dl304_builtin_module_under_ddp() -> None:
    found = wrapping(
        """
        torch.compile(DDP(nn.Sequential(nn.Linear(2, 2))))
        seq = nn.Sequential(nn.Linear(2, 2))
        model = DDP(seq.to("cpu"))
        model = torch.compile(model)
        layer = DDP(torch.nn.TransformerEncoderLayer(8, 2))
        layer.compile()
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL304", 7, 5), ("DL304", 10, 13), ("DL304", 12, 5)]
    assert all(f.severity is Severity.WARNING for f in found)
    assert found[0].message.startswith(
        "Compiling `DDP(nn.Sequential(...))` compiles nothing on torch 2.13"
    )
    assert "`DDP(torch.compile(module))`" in found[0].message
    assert "`nn.TransformerEncoderLayer(...)`" not in found[2].message
    assert "`DDP(nn.TransformerEncoderLayer(...))`" in found[2].message


@pytest.mark.parametrize(
    "body",
    [
        "torch.compile(nn.Sequential(nn.Linear(2, 2)))",
        "DDP(torch.compile(nn.Sequential(nn.Linear(2, 2))))",
        "DDP(nn.Sequential(nn.Linear(2, 2)))",
        "torch.compile(DDP(Net()))",
        "m = nn.Sequential()\nm = Net()\ntorch.compile(DDP(m))",
        "torch.compile(DDP(nn.ModuleList([net])))",
        "torch.compile(DDP(nn.parallel.DataParallel(net)))",
    ],
)
def test_dl304_traps(body: str) -> None:
    assert [f for f in wrapping(body, *WRAP_CODES) if f.code == "DL304"] == []


def test_dl304_defers_to_dl301_under_fullgraph() -> None:
    found = wrapping("torch.compile(DDP(nn.Sequential()), fullgraph=True)", *WRAP_CODES)
    assert [f.code for f in found] == ["DL301"]
