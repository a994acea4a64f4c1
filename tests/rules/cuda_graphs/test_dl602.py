"""Unit tests of DL602 collective-in-cuda-graph-capture: what it reports, where, and what it leaves
alone.

CI has no GPU: the failures were observed on an H200 (torch 2.11.0+cu130) and are re-measured by
experiments/cuda_graph_collectives.py.
"""

from __future__ import annotations

from distlint.findings import Severity
from tests.rules.conftest import findings
from tests.rules.cuda_graphs.conftest import CAPTURE, project_findings


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
