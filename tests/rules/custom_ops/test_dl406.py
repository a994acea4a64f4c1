"""Unit tests of DL406 inplace-on-leaf-parameter: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Severity
from tests.rules.conftest import where
from tests.rules.custom_ops.conftest import findings

NET_INIT = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.ones(4))
        self.frozen = nn.Parameter(torch.ones(4), requires_grad=False)
        self.register_parameter("b", nn.Parameter(torch.zeros(4)))
        self.register_buffer("ema", torch.zeros(4))
        self.norm = nn.LayerNorm(4)
        self.norm.weight.requires_grad_(False)

    def forward(self, x):
"""


def net(body: str) -> str:
    return NET_INIT + textwrap.indent(textwrap.dedent(body), " " * 8)


def test_dl406_inplace_on_parameters() -> None:
    found = findings(
        net(
            """
            self.l1.weight.mul_(0.999)
            self.w += 1
            self.b[0] = 0.0
            torch.clamp_(self.w, 0, 1)
            w = self.l1.bias
            w.zero_()
            self.w.view(-1).add_(1)
            for p in self.parameters():
                p.mul_(0.9)
            for name, q in self.named_parameters():
                q.add_(1)
            return x
            """
        ),
        "DL406",
    )
    assert [line for _, line, _ in where(found)] == [18, 19, 20, 21, 23, 24, 26, 28]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "`self.l1.weight`" in found[0].message and "GB4315" in found[0].message
    assert "a leaf Variable that requires grad" in found[0].message


def test_dl406_traps() -> None:
    source = net(
        """
        with torch.no_grad():
            self.w.mul_(2)
        with torch.set_grad_enabled(False):
            self.w.add_(1)
        with torch.inference_mode():
            self.l1.weight.zero_()
        self.l1.weight.data.mul_(2)
        self.w.detach().zero_()
        nn.init.normal_(self.l1.weight)
        self.frozen.mul_(2)
        self.norm.weight.fill_(1)
        self.ema.mul_(0.9)
        h = self.l1(x)
        h.add_(1)
        x.add_(1)
        return h
        """
    )
    source += textwrap.dedent(
        """
        class Other(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(4))

            def reset(self):
                self.w.zero_()

            @torch.no_grad()
            def forward(self, x):
                self.w.mul_(2)
                return x
        """
    )
    assert findings(source, "DL406") == []


def test_dl406_module_classes_with_match_statements() -> None:
    """``match`` has cases, not a body (a crash met in physicsnemo's GALE block)."""
    source = """
import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        match mode:
            case "linear":
                self.proj = nn.Linear(8, 8)
            case _:
                self.proj = nn.Identity()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        match x.dim():
            case 2:
                self.scale += 0.01
            case _:
                pass
        return self.proj(x) * self.scale
"""
    settings = FileSettings(enabled=frozenset({"DL406", "DL407"}))
    result = check_file(FileSource(source, "t.py"), settings)
    assert result.errors == ()
    assert [(f.code, f.span.start.line) for f in result.findings] == [("DL406", 19)]
