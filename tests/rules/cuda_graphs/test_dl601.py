"""Unit tests of DL601 host-sync-in-cuda-graph-capture: what it reports, where, and what it leaves
alone.

CI has no GPU: the failures were observed on an H200 (torch 2.11.0+cu130) and are re-measured by
experiments/cuda_graph_collectives.py.
"""

from __future__ import annotations

import importlib.util

import pytest

from distlint.findings import Severity
from tests.rules.conftest import findings
from tests.rules.cuda_graphs.conftest import CAPTURE, lines, project_findings

RUNNER = """\
import torch
from pkg.steps import {name}


class GraphedStep:
    def __init__(self, step_fn, params):
        self.step_fn = step_fn
        self.params = params
        self.graph = torch.cuda.CUDAGraph()

    def capture(self):
        with torch.cuda.graph(self.graph):
            self.step_fn(self.params)


def main(params):
    GraphedStep({name}, params).capture()
"""


def test_dl601_each_host_sync_in_a_graph_context() -> None:
    found = findings(
        CAPTURE
        + """\
with torch.cuda.graph(g):
    y = x * 2
    v = y.sum().item()
    torch.cuda.synchronize()
    print(y)
    if y.sum() > 0:
        y = y + 1
    z = torch.nonzero(y)
    c = (y * 2).cpu()
    d = y.to("cpu")
    e = y.tolist()
y.item()
""",
        "DL601",
    )
    assert lines(found) == [8, 9, 10, 11, 13, 14, 15, 16]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "Cannot copy between CPU and CUDA tensors" in found[5].message
    assert found[0].message.startswith("`y.sum().item()` inside CUDA graph capture")
    assert found[0].related[0].message == "capture starts here"


def test_dl601_capture_span_and_graphed_callable() -> None:
    found = findings(
        CAPTURE
        + """\
g.capture_begin()
a = x.tolist()
g.capture_end()
b = x.tolist()

def step(inp):
    return inp.max().item()

def other(inp):
    return inp.max().item()

graphed = torch.cuda.make_graphed_callables(step, (x,))
""",
        "DL601",
    )
    assert lines(found) == [7, 12]


def test_dl601_traps() -> None:
    found = findings(
        CAPTURE
        + """\
with torch.cuda.graph(g):
    y = x * 2
    if not torch.cuda.is_current_stream_capturing():
        print(y.item())
    if x.dim() > 1:
        y = y.flatten()
    print("shape", y.shape, len(y))
torch.cuda.synchronize()
print(y.item())
""",
        "DL601",
    )
    assert found == []


def test_dl601_torch_predicates_are_python_values_not_tensors() -> None:
    """``torch.is_grad_enabled()``, ``torch.is_floating_point(y)``, ``torch.get_default_dtype()``
    answer on the host without reading a tensor (xformers' rms_norm was a false error); a
    branch on a torch op's result still is a read."""
    found = findings(
        CAPTURE
        + """with torch.cuda.graph(g):
    y = x * 2
    if torch.is_grad_enabled() and (x.requires_grad or y.requires_grad):
        y = y.detach()
    if torch.is_floating_point(y) and torch.get_default_dtype() == torch.float32:
        y = y * 2
    if torch.all(y > 0):
        y = y + 1
""",
        "DL601",
    )
    assert lines(found) == [CAPTURE.count("\n") + 7]


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_cuda_graphs_cannot_be_proven_on_a_cpu_build() -> None:
    """On torch 2.13.0+cpu a CUDA graph cannot even be created."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA build: the GPU evidence applies instead")
    with pytest.raises(RuntimeError, match="Tried to instantiate dummy base class CUDAGraph"):
        torch.cuda.CUDAGraph()


def test_a_stored_callable_called_under_capture_is_followed_across_modules(tmp_path) -> None:
    steps = """\
    import torch


    def clip(params):
        norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        return norm.item()
    """
    found = project_findings(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/steps.py": steps, "pkg/run.py": RUNNER.format(name="clip")},
    )
    assert found == [("pkg/steps.py", "DL601", 6, "pkg/run.py:12")]


def test_syncs_off_the_main_path_of_a_called_function_are_silent(tmp_path) -> None:
    steps = """\
    import torch


    def helper(params):
        return params[0].sum().item()


    def clip(params, verbose=False):
        norm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        if verbose:
            print(norm.item())
            helper(params)
        if not torch.cuda.is_current_stream_capturing():
            norm.cpu()
        ok = verbose and norm.item() > 0
        if not params:
            return norm
        return norm.item()
    """
    found = project_findings(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/steps.py": steps, "pkg/run.py": RUNNER.format(name="clip")},
    )
    assert found == []


def test_a_module_given_to_make_graphed_callables_has_its_forward_checked(tmp_path) -> None:
    source = """\
    import torch


    class Head(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            print(y)
            return y


    head = torch.cuda.make_graphed_callables(Head(), (torch.ones(2),))
    """
    found = project_findings(tmp_path, {"m.py": source})
    assert found == [("m.py", "DL601", 7, "m.py:11")]


@pytest.mark.parametrize(
    "source",
    [
        "from torch.cuda import graph\nx = 1\nwith graph(g):\n    x.item()\n",
        "import torch\nwith torch.cuda.graph(g):\n    x.item()\n",
        "# cuda_graph, graphs\nimport torch\nG = torch.cuda.graph\nwith G(g):\n    x.item()\n",
        "import torch\ng.capture_begin()\nx.item()\ng.capture_end()\n",
    ],
)
def test_dl601_capture_words_the_file_gate_must_see(source: str) -> None:
    """_file_gates finds ``graph`` as a word wherever it is (after a dot, after other words
    holding the letters) or ``capture_begin``."""
    assert lines(findings(source, "DL601")) == [source.count("\n", 0, source.index("x.item")) + 1]
