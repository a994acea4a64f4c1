"""Unit tests of DL601-DL604 (CUDA graphs).

CI has no GPU: the failures these rules describe were observed on an H200 (torch 2.11.0+cu130)
and are re-measured by experiments/cuda_graph_collectives.py. Here we pin what distlint reports,
and one CPU fact: CUDA graphs cannot even be instantiated on a CPU-only torch build.
"""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity


def findings(source: str, *codes: str) -> list[Finding]:
    settings = FileSettings(enabled=frozenset(codes))
    result = check_source(textwrap.dedent(source), "t.py", settings)
    assert result.errors == ()
    return list(result.findings)


def lines(found: list[Finding]) -> list[int]:
    return [f.span.start.line for f in found]


CAPTURE = """\
import torch
import torch.distributed as dist

g = torch.cuda.CUDAGraph()
x = torch.ones(4, device="cuda")
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


def test_dl602_severity_by_collective() -> None:
    found = findings(
        CAPTURE
        + """\
import torch.distributed._functional_collectives as funcol
with torch.cuda.graph(g):
    dist.all_reduce(x)
    dist.barrier()
    dist.broadcast_object_list([None])
    funcol.all_reduce(x, "sum", dist.group.WORLD)
dist.barrier()
""",
        "DL602",
    )
    assert [(f.span.start.line, f.severity) for f in found] == [
        (8, Severity.WARNING),
        (9, Severity.ERROR),
        (10, Severity.ERROR),
        (11, Severity.WARNING),
    ]
    assert "every rank captures and replays the same collectives" in found[0].message
    assert "a CUDA error" in found[1].message
    assert "Cannot copy between CPU and CUDA tensors" in found[2].message


def test_dl602_guarded_collective_is_silent() -> None:
    source = CAPTURE + (
        "with torch.cuda.graph(g):\n"
        "    if not torch.cuda.is_current_stream_capturing():\n"
        "        dist.all_reduce(x)\n"
    )
    assert findings(source, "DL602") == []


def test_dl603_mutated_inputs() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(a, b):
            a.add_(1)
            b[0] = 1
            c = a * 2
            c.mul_(2)
            return c

        @torch.compile(options={"triton.cudagraphs": True})
        def g(a):
            a.zero_()
            return a

        @torch.compile
        def h(a):
            a.zero_()
            return a

        def plain(a):
            a.zero_()
        """,
        "DL603",
    )
    assert lines(found) == [5, 6, 13]
    assert all(f.severity is Severity.WARNING for f in found)
    assert "skipping cudagraphs due to mutated inputs" in found[0].message
    assert found[0].related  # "compiled at t.py:3"


def test_dl604_read_after_next_call_and_kept_in_loop() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        h = torch.compile(f, mode="reduce-overhead")

        def train(x, loader):
            y1 = f(x)
            y2 = f(x + 1)
            print(y1[0], y2)
            outs = []
            for batch in loader:
                outs.append(h(batch))
                outs.append(h(batch).clone())
                outs.append(h(batch).sum().item())
            y3 = f(x).clone()
            y4 = f(x)
            return y3, y4
        """,
        "DL604",
    )
    assert lines(found) == [12, 15]
    assert "overwritten by a subsequent run" in found[0].message
    assert found[0].related[0].message == "overwritten by this call"


def test_dl604_traps() -> None:
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        @torch.compile
        def plain(x):
            return x * 2

        def use_first(x):
            y1 = f(x)
            total = y1.sum()
            y2 = f(x)
            return total, y2

        def rebinding(x):
            y = f(x)
            y = f(y)
            return y

        def no_graphs(x):
            a = plain(x)
            b = plain(x)
            return a, b
        """,
        "DL604",
    )
    assert found == []


def test_dl604_mark_step_begin_does_not_protect_a_kept_output() -> None:
    """GPU (H200, torch 2.11): with cudagraph_mark_step_begin() before each call, a kept output
    still held the next call's values (experiments/results/one_gpu_checks-h200-torch2.11.json).
    """
    found = findings(
        """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x * 2

        def marked(loader):
            kept = []
            for batch in loader:
                torch.compiler.cudagraph_mark_step_begin()
                kept.append(f(batch))
            return kept
        """,
        "DL604",
    )
    assert lines(found) == [11]
    assert "does not prevent this" in found[0].message


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_cuda_graphs_cannot_be_proven_on_a_cpu_build() -> None:
    """On torch 2.13.0+cpu a CUDA graph cannot even be created."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA build: the GPU evidence applies instead")
    with pytest.raises(RuntimeError, match="Tried to instantiate dummy base class CUDAGraph"):
        torch.cuda.CUDAGraph()


# -- functions that a capture runs by calls (project facts) ----------------------------------


def project_findings(tmp_path, files: dict[str, str]) -> list[tuple[str, str, int, str]]:
    """(path, code, line, first related location) of DL601/DL602 in a small project."""
    from tests.project_util import check_sources

    results = check_sources(tmp_path, files, enabled=("DL601", "DL602"))
    found = []
    for path, result in sorted(results.items()):
        assert result.errors == (), result.errors
        for f in result.findings:
            where = f"{f.related[0].path}:{f.related[0].span.start.line}" if f.related else ""
            found.append((path, f.code, f.span.start.line, where))
    return sorted(found)


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


def test_a_function_passed_to_a_capture_helper_and_its_callees_are_followed(tmp_path) -> None:
    source = """\
    import torch
    import torch.distributed as dist


    def capture_with(fn, grads):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(grads)
        return g


    def reduce_one(grad):
        dist.all_reduce(grad)
        dist.barrier()


    def average(grads):
        for grad in grads:
            reduce_one(grad)


    def unused(grads):
        dist.barrier()


    capture_with(average, [])
    """
    found = project_findings(tmp_path, {"m.py": source})
    assert found == [("m.py", "DL602", 13, "m.py:7"), ("m.py", "DL602", 14, "m.py:7")]


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
