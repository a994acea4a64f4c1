"""Unit tests of DL124 tensor-resize-in-compiled-region: what it reports, where, with which
graph-break id and severity, and what it leaves alone.

The generic proof (tests/proof/test_proof_graph_breaks.py) shows torch does what messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER, compiled
from tests.rules.conftest import run, where

TENSORS = "x: torch.Tensor, out: torch.Tensor"


@pytest.mark.parametrize(
    ("body", "gb"),
    [
        ("buf = torch.empty(0)\nbuf.resize_(4, 8)\n", "GB0126"),
        ("buf = x * 2\nbuf.resize_as_(x)\n", "GB0127"),
        ("buf = torch.Tensor().to(x.device)\nbuf.set_(x.untyped_storage(), 0, (4, 8))\n", "GB0128"),
        ("buf = x.new().resize_(3)\n", "GB0126"),
    ],
    ids=["resize-factory", "resize-as-op", "set-legacy-constructor", "resize-new"],
)
def test_dl124_a_tensor_the_region_computes_gets_the_resize_id(body: str, gb: str) -> None:
    (finding,) = run(compiled(body, params=TENSORS), "DL124")
    assert finding.severity is Severity.WARNING
    assert gb in finding.message and "GB0148" not in finding.message
    assert "final size" in finding.message or "as_strided" in finding.message


@pytest.mark.parametrize(
    "body",
    [
        "out.resize_(x.shape)\n",
        "out.data.resize_(x.shape)\n",
        "out.detach_().resize_as_(x)\n",
        "out.set_(x.untyped_storage(), 0, (4, 8))\n",
    ],
)
def test_dl124_an_argument_gets_the_graph_input_id(body: str) -> None:
    (finding,) = run(compiled(body, params=TENSORS), "DL124")
    assert "GB0148" in finding.message and "inplace view" not in finding.message
    assert "in-place view of a graph input" in finding.message
    assert "GB0126" not in finding.message and "GB0127" not in finding.message


def test_dl124_attributes_are_graph_inputs_and_unknown_receivers_name_both_ids() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def forward(self, x):
                self.cache.resize_(x.shape)
                self.bindings["out"].data.resize_(tuple(x.shape))
                self.window[0].resize_(4)
                scratch = make_scratch()
                scratch.resize_(8)
                return x

        net = torch.compile(Net())
        """
    )
    found = run(source, "DL124")
    assert where(found) == [("DL124", 6, 9), ("DL124", 7, 9), ("DL124", 8, 9), ("DL124", 10, 9)]
    assert ["GB0126" in f.message for f in found] == [False, False, True, True]
    assert all("GB0148" in f.message for f in found)


def test_dl124_is_an_error_where_it_certainly_runs_under_fullgraph() -> None:
    body = "buf = torch.empty(0)\nbuf.resize_(4)\nif x.shape[0] > 2:\n    buf.resize_(8)\n"
    certain, branch = run(compiled(body, fullgraph=True), "DL124")
    assert certain.severity is Severity.ERROR and "fails on torch 2.13" in certain.message
    assert branch.severity is Severity.WARNING and "only on some paths" in branch.message


@pytest.mark.parametrize(
    "body",
    [
        "x.untyped_storage().resize_(0)\n",
        "x.storage().resize_(0)\n",
        "s = x.untyped_storage()\ns.resize_(0)\n",
        "self_storage = x.untyped_storage()\nself_storage.resize_(0)\n",
        "y = torch.empty(0)\ny.set_(x)\n",
        "y = torch.empty(0)\ny.set_()\n",
        "y = torch.empty(0)\ny.set_(*args)\n",
        'td.set_("obs", x)\n',
        'td.set_(("next", "obs"), x)\n',
        "td.set_(key, x)\n",
    ],
)
def test_dl124_storages_one_argument_set_and_containers_are_left_alone(body: str) -> None:
    source = compiled(body, params="x: torch.Tensor, td, key, args")
    assert run(source, "DL124") == []


def test_dl124_is_silent_outside_compiled_regions() -> None:
    source = HEADER + "def eager(x):\n    buf = torch.empty(0)\n    buf.resize_(4)\n"
    assert run(source, "DL124") == []
