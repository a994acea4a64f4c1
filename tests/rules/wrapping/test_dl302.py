"""Unit tests of DL302 fsdp-flat-params-compile: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl3xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.conftest import where
from tests.rules.wrapping.conftest import WRAP_CODES, wrapping


def test_dl302_flat_params() -> None:
    found = wrapping(
        """
        model = FSDP(net)
        torch.compile(model)
        flat = FSDP(net, use_orig_params=False)
        flat.compile()
        torch.compile(FSDP(net), fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL302", 8, 5), ("DL302", 10, 5), ("DL302", 11, 5)]
    assert [f.severity for f in found] == [Severity.WARNING, Severity.WARNING, Severity.ERROR]
    assert "FSDP1's default use_orig_params=False" in found[0].message
    assert "0 graphs compiled" in found[0].message
    assert "GB0053" in found[0].message
    assert "with use_orig_params=False:" in found[1].message
    assert "`Unsupported: FSDP with use_orig_params=False` (GB0053)" in found[2].message
    assert "`use_orig_params=True`" in found[2].message


@pytest.mark.parametrize(
    "body",
    [
        "FSDP(net)",
        "torch.compile(FSDP(net, use_orig_params=True))",
        "torch.compile(FSDP(net, use_orig_params=flag))",
        "torch.compile(FSDP(net, **kwargs))",
        "model = FSDP(net)\nmodel = net\ntorch.compile(model)",
        "torch.compile(DDP(net))",
    ],
)
def test_dl302_traps(body: str) -> None:
    assert [f for f in wrapping(body, *WRAP_CODES) if f.code == "DL302"] == []
