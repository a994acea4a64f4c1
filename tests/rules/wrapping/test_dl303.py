"""Unit tests of DL303 ddp-small-bucket-compile: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_ddp.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.conftest import findings, positions

HEAD = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


@pytest.mark.parametrize(
    ("code", "line", "column"),
    [
        ("model = DDP(net, bucket_cap_mb=0.01)\ncompiled = torch.compile(model)", 3, 18),
        ("compiled = torch.compile(net)\nmodel = DDP(compiled, bucket_cap_mb=0.5)", 4, 23),
        ("model = DDP(torch.compile(net), bucket_cap_mb=0.25)", 3, 33),
        ("step = torch.compile(DDP(net, bucket_cap_mb=0.1))", 3, 31),
        ("model = DDP(net, bucket_cap_mb=0.01)\nmodel.compile()", 3, 18),
        ("net.compile()\nmodel = DDP(net, bucket_cap_mb=0.01)", 4, 18),
    ],
)
def test_dl303_small_bucket_with_compile(code: str, line: int, column: int) -> None:
    found = findings(HEAD + code + "\n", "DL303")
    assert positions(found) == [(line, column)]
    assert "First bucket should be smaller/equal to other buckets" in found[0].message
    assert found[0].severity is Severity.ERROR


@pytest.mark.parametrize(
    "code",
    [
        "model = DDP(net, bucket_cap_mb=0.01)",  # no compile
        "model = DDP(net, bucket_cap_mb=1)\ncompiled = torch.compile(model)",
        "model = DDP(net, bucket_cap_mb=25)\ncompiled = torch.compile(model)",
        "model = DDP(net, bucket_cap_mb=size)\ncompiled = torch.compile(model)",
        "torch._dynamo.config.optimize_ddp = False\nmodel = DDP(net, bucket_cap_mb=0.01)\n"
        "compiled = torch.compile(model)",
        "model = DDP(net, bucket_cap_mb=0.01)\nwith torch._dynamo.config.patch("
        "optimize_ddp=False):\n    compiled = torch.compile(model)",
        "model = DDP(net, bucket_cap_mb=0.01)\nother = torch.compile(loss_fn)",
    ],
)
def test_dl303_traps(code: str) -> None:
    assert findings(HEAD + code + "\n", "DL303") == []


def test_dl303_a_configured_compile_wrapper_compiles() -> None:
    from distlint.file_settings import FileSettings
    from tests.rules.conftest import check

    source = HEAD + "from mylib.jit import fast_compile\n"
    source += "model = DDP(net, bucket_cap_mb=0.01)\ncompiled = fast_compile(model)\n"
    assert findings(source, "DL303") == []
    wrapped = FileSettings(
        enabled=frozenset({"DL303"}), compile_wrappers=("mylib.jit.fast_compile",)
    )
    assert positions(check(source, wrapped)) == [(4, 18)]
