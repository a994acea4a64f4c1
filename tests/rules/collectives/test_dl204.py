"""Unit tests of DL204 ddp-unused-parameters: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_ddp.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from distlint.rules.registry import get_rule
from tests.rules.conftest import findings, positions

NET = """\
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.aux = nn.Linear(8, 1)
        self.head = nn.Linear(8, 1)
        self.drop = nn.Dropout(0.1)
        FREEZE

    def forward(self, x, flag=False):
        h = self.body(x)
        FORWARD
"""


def net(forward: str, freeze: str = "pass") -> str:
    body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8).lstrip()
    return NET.replace("FREEZE", freeze).replace("FORWARD", body)


SKIPPED = """
if flag:
    return self.head(h) + self.aux(h)
return self.head(h)
"""


def test_metadata() -> None:
    expected = {
        "DL204": ("ddp-unused-parameters", Severity.ERROR),
        "DL205": ("rank-divergent-parameter-write", Severity.WARNING),
        "DL303": ("ddp-small-bucket-compile", Severity.ERROR),
    }
    for code, (name, severity) in expected.items():
        rule = get_rule(code)
        assert rule is not None and rule.name == name and rule.severity is severity
        assert rule.default_enabled and rule.scope == "file"


def test_dl204_conditionally_skipped_submodule() -> None:
    source = net(SKIPPED) + "\nmodel = DDP(Net())\n"
    found = findings(source, "DL204")
    assert positions(found) == [(len(source.splitlines()), 9)]
    assert "`Net.forward` skips `self.aux` on some paths" in found[0].message
    assert "find_unused_parameters=True" in found[0].message
    assert found[0].severity is Severity.ERROR


def test_dl204_output_that_never_reaches_the_return() -> None:
    source = net("side = self.aux(h)\nreturn self.head(h)") + "\nm = Net()\nddp = DDP(m)\n"
    found = findings(source, "DL204")
    assert len(found) == 1
    assert "computes `self.aux(...)` but its output never reaches the return value" in (
        found[0].message
    )


def test_dl204_discarded_call_statement() -> None:
    source = net("self.aux(h)\nreturn self.head(h)") + "\nddp = DDP(Net().to('cpu'))\n"
    assert len(findings(source, "DL204")) == 1


@pytest.mark.parametrize(
    "wrap",
    [
        "DDP(Net(), find_unused_parameters=True)",
        "DDP(Net(), static_graph=True)",
        "Net()",
    ],
)
def test_dl204_silent_when_ddp_copes(wrap: str) -> None:
    assert findings(net(SKIPPED) + f"\nmodel = {wrap}\n", "DL204") == []


@pytest.mark.parametrize(
    "freeze",
    [
        "self.aux.requires_grad_(False)",
        "for p in self.aux.parameters():\n            p.requires_grad = False",
    ],
)
def test_dl204_frozen_submodule(freeze: str) -> None:
    assert findings(net(SKIPPED, freeze) + "\nmodel = DDP(Net())\n", "DL204") == []


@pytest.mark.parametrize(
    "forward",
    [
        "h = h + self.aux(h)\nreturn self.head(h)",
        "if flag:\n    h = self.drop(h)\nreturn self.head(h) + self.aux(h)",
        "if self.training:\n    h = h + self.aux(h)\nreturn self.head(h)",
        "a = self.aux(h)\nout = torch.cat([self.head(h), a])\nreturn out",
        "self.last_aux = self.aux(h)\nreturn self.head(h)",
    ],
)
def test_dl204_every_trainable_submodule_used(forward: str) -> None:
    assert findings(net(forward) + "\nmodel = DDP(Net())\n", "DL204") == []


def test_dl204_submodule_called_through_a_helper_method() -> None:
    source = net("return self._heads(h)").replace(
        "    def forward",
        "    def _heads(self, h):\n        return self.head(h) + self.aux(h)\n\n    def forward",
    )
    assert findings(source + "\nmodel = DDP(Net())\n", "DL204") == []
