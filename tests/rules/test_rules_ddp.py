"""Unit tests of DL204 (DDP unused parameters), DL205 (rank-divergent parameter writes) and
DL303 (small DDP buckets under torch.compile): what is reported, where, and what is not."""

from __future__ import annotations

import textwrap

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from distlint.rules.registry import get_rule


def findings(source: str, code: str) -> list[Finding]:
    result = check_source(textwrap.dedent(source), "t.py", FileSettings(enabled=frozenset({code})))
    assert result.errors == ()
    return [f for f in result.findings if f.code == code]


def where(found: list[Finding]) -> list[tuple[int, int]]:
    return [(f.span.start.line, f.span.start.column) for f in found]


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


# -- DL204 -------------------------------------------------------------------------------------

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


def test_dl204_conditionally_skipped_submodule() -> None:
    source = net(SKIPPED) + "\nmodel = DDP(Net())\n"
    found = findings(source, "DL204")
    assert where(found) == [(len(source.splitlines()), 9)]
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


# -- DL205 -------------------------------------------------------------------------------------

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
    assert where(found) == [(len(source.splitlines()), column)]
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


# -- DL303 -------------------------------------------------------------------------------------

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
    assert where(found) == [(line, column)]
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
