"""Unit tests of DL125 parameter-created-in-compiled-region: what it reports, where, with which
graph-break id and severity, and what it leaves alone.

The generic proof (tests/proof/test_proof_graph_breaks.py) shows torch does what messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where

NN = HEADER + "from torch import nn\nfrom torch.nn import Parameter\n\n"


def in_function(body: str, params: str = "x: torch.Tensor") -> str:
    """A compiled function with ``nn`` and ``Parameter`` imported."""
    return NN + f"@torch.compile\ndef f({params}):\n" + textwrap.indent(body, "    ")


@pytest.mark.parametrize(
    "body",
    [
        "w = nn.Parameter(torch.randn(4, 8))\n",
        "w = torch.nn.Parameter(torch.ones(8), requires_grad=False)\n",
        "w = Parameter(x.detach().clone())\n",
        "w = nn.Parameter(x * 2)\n",
        "w = nn.Parameter(data=torch.zeros(8))\n",
        "w = nn.Parameter(torch.Tensor(4, 8).uniform_())\n",
        "data = torch.zeros(8)\nw = nn.Parameter(data)\n",
    ],
)
def test_dl125_a_tensor_the_region_computes_is_gb0264(body: str) -> None:
    (finding,) = run(in_function(body), "DL125")
    assert finding.severity is Severity.WARNING
    assert "GB0264" in finding.message and "constructor with Dynamo" in finding.message
    assert "`__init__`" in finding.message and "LazyLinear" in finding.message


@pytest.mark.parametrize(
    "body",
    ["w = nn.Parameter()\n", "w = nn.Parameter(1.0)\n", "w = nn.Parameter(-1)\n"],
)
def test_dl125_no_tensor_is_gb0226(body: str) -> None:
    (finding,) = run(in_function(body), "DL125")
    assert "GB0226" in finding.message and "GB0264" not in finding.message


def test_dl125_lazy_init_under_fullgraph_is_a_warning_and_a_certain_call_an_error() -> None:
    source = NN + textwrap.dedent(
        """\
        class Lazy(nn.Module):
            def forward(self, x):
                if not hasattr(self, "w"):
                    self.w = nn.Parameter(torch.randn(x.shape[-1], 8))
                b = nn.Parameter(torch.zeros(8))
                return x @ self.w + b

        lazy = torch.compile(Lazy(), fullgraph=True)
        """
    )
    lazy, certain = run(source, "DL125")
    assert where([lazy, certain]) == [("DL125", 10, 22), ("DL125", 11, 13)]
    assert lazy.severity is Severity.WARNING and "only on some paths" in lazy.message
    assert certain.severity is Severity.ERROR and "fails on torch 2.13" in certain.message


@pytest.mark.parametrize(
    "body",
    [
        "w = nn.Parameter(t)\n",
        "w = nn.Parameter(t, requires_grad=False)\n",
        "w = nn.Parameter(self.scale)\n",
        "alias = self.scale\nw = nn.Parameter(alias)\n",
        "w = nn.Parameter(make_weight())\n",
        "w = nn.Parameter(*args)\n",
        "w = other.Parameter(torch.ones(8))\n",
    ],
)
def test_dl125_tensors_with_a_source_and_unknown_data_are_left_alone(body: str) -> None:
    source = in_function(body, params="self, x: torch.Tensor, t: torch.Tensor, other, args")
    assert run(source, "DL125") == []


@pytest.mark.parametrize(
    "switch",
    [
        "torch._dynamo.config.graph_break_on_nn_param_ctor = False\n",
        "def setup():\n    torch._dynamo.config.graph_break_on_nn_param_ctor = False\n",
        "patched = torch._dynamo.config.patch(graph_break_on_nn_param_ctor=False)\n",
        'patched = torch._dynamo.config.patch("graph_break_on_nn_param_ctor", False)\n',
    ],
    ids=["module-level", "in-a-function", "patch-keyword", "patch-pair"],
)
def test_dl125_the_flag_off_anywhere_silences_gb0264_only(switch: str) -> None:
    body = "w = nn.Parameter(torch.ones(8))\nv = nn.Parameter(1.0)\n"
    (finding,) = run(in_function(body).replace(NN, NN + switch), "DL125")
    assert "GB0226" in finding.message


@pytest.mark.parametrize(
    "switch",
    [
        "torch._dynamo.config.graph_break_on_nn_param_ctor = True\n",
        "patched = torch._dynamo.config.patch(graph_break_on_nn_param_ctor=True)\n",
    ],
)
def test_dl125_the_flag_left_on_keeps_gb0264(switch: str) -> None:
    source = in_function("w = nn.Parameter(torch.ones(8))\n").replace(NN, NN + switch)
    (finding,) = run(source, "DL125")
    assert "GB0264" in finding.message


def test_dl125_is_silent_outside_compiled_regions() -> None:
    source = NN + "def eager(x):\n    return nn.Parameter(torch.randn(4, 8))\n"
    assert run(source, "DL125") == []
