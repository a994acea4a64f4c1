"""Unit tests of DL206 float-flag-equality: what it reports, where, and what it leaves alone."""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Finding, Severity
from distlint.rules.registry import get_rule
from tests.rules.conftest import findings, where

DIST_HEADER = (
    "import math\nimport torch\nimport torch.distributed as dist\n"
    "import torch.distributed._functional_collectives as funcol\n"
)


def dl206(body: str) -> list[Finding]:
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return findings(f"{DIST_HEADER}\ndef check(stop, holder):\n{lines}\n", "DL206")


def test_dl206_reports_exact_float_comparisons_of_received_values() -> None:
    found = dl206(
        """
        dist.broadcast(stop, src=0)
        a = stop.item() == 1.0
        b = 2.0 != float(stop[0])
        flag = stop.item()
        c = flag == 1.0
        total = funcol.all_reduce(stop, "sum", group)
        d = total.item() != -1.0
        dist.broadcast_object_list(holder, src=0)
        e = holder[0] == 0.5
        """
    )
    assert where(found) == [
        ("DL206", 8, 9),
        ("DL206", 9, 9),
        ("DL206", 11, 9),
        ("DL206", 13, 9),
        ("DL206", 15, 9),
    ]
    assert all(f.severity is Severity.NOTE for f in found)
    assert dl206("dist.all_reduce(stop)\nz = stop.item() == 0.0\nw = 0.0 != stop[0]") == []
    assert found[0].message == (
        "Exact `==`/`!=` between `stop.item()` (a float received through `dist.broadcast`) "
        "and `1.0`: it holds only while the sender sets exactly that value and nothing "
        "averages or rescales it (a hygiene note, not an observed failure). Use an integer "
        "tensor for flags, or a threshold such as `> 0.5`."
    )
    assert "received through `funcol.all_reduce`" in found[3].message


@pytest.mark.parametrize(
    "body",
    [
        "dist.broadcast(stop, src=0)\nx = stop.item() == 1",
        "dist.broadcast(stop, src=0)\nx = stop.item() > 0.5",
        "dist.broadcast(stop, src=0)\nx = math.isclose(stop.item(), 1.0)",
        "stop = torch.zeros(1, dtype=torch.long)\ndist.broadcast(stop, 0)\nx = stop.item() == 1.0",
        "stop = torch.tensor([1, 0])\ndist.all_reduce(stop)\nx = stop[0].item() == 1.0",
        "stop = torch.ones(1).long()\ndist.all_reduce(stop)\nx = stop.item() != 0.0",
        "lr = 0.1\nx = lr == 0.1",
        "x = stop.item() == 1.0",
        "dist.broadcast(stop, src=0)\nx = stop.item() is None",
    ],
)
def test_dl206_traps(body: str) -> None:
    assert dl206(body) == []


def test_dl206_is_off_by_default() -> None:
    rule = get_rule("DL206")
    assert rule is not None and not rule.default_enabled
    assert rule.severity is Severity.NOTE
