"""Single-GPU checks behind DL604 and DL602 (what one H200 can show without a second rank).

Prints one JSON object. Run with the device's python3 (torch with CUDA):

    python3 experiments/one_gpu_checks.py

1. ``mark_step``: a ``mode="reduce-overhead"`` function called twice, keeping the first output
   and reading it after the second call, (a) plainly and (b) with
   ``torch.compiler.cudagraph_mark_step_begin()`` before each call; after 3 warm-up calls, after
   1, and as the very first calls. Which raises, and is the kept value still right?
2. ``clone``: the same with ``.clone()`` of the first output (the documented fix).
3. ``all_reduce_capture``: one NCCL rank (world size 1) capturing ``dist.all_reduce`` in a CUDA
   graph and replaying it: value and whether anything was recorded.
"""

from __future__ import annotations

import json
import os
import traceback

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch


def outcome(function) -> dict:  # type: ignore[no-untyped-def]
    try:
        return {"ok": True, "value": function()}
    except Exception as exc:  # record what torch says
        return {
            "ok": False,
            "type": f"{type(exc).__module__}.{type(exc).__name__}",
            "message": str(exc)[:600],
            "where": traceback.format_exc().splitlines()[-3:],
        }


def make() -> object:
    torch._dynamo.reset()

    @torch.compile(mode="reduce-overhead")
    def f(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    return f


def kept_output(mark: bool, clone: bool, warm_up: int = 3) -> list[float]:
    f = make()
    x = torch.ones(4, device="cuda")
    for _ in range(warm_up):  # warm up and record
        if mark:
            torch.compiler.cudagraph_mark_step_begin()
        f(x)
    if mark:
        torch.compiler.cudagraph_mark_step_begin()
    y1 = f(x)
    if clone:
        y1 = y1.clone()
    if mark:
        torch.compiler.cudagraph_mark_step_begin()
    y2 = f(x + 1)
    torch.cuda.synchronize()
    return [float(y1[0].item()), float(y2[0].item())]  # expected [2.0, 4.0]


def all_reduce_capture() -> dict:
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29541")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    try:
        static = torch.ones(4, device="cuda")
        dist.all_reduce(static)  # warm up the communicator outside capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            dist.all_reduce(static)
        static.fill_(3.0)
        graph.replay()
        torch.cuda.synchronize()
        return {"value": float(static[0].item())}
    finally:
        dist.destroy_process_group()


def main() -> None:
    report = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "device": torch.cuda.get_device_name(0),
        "mark_step_plain": outcome(lambda: kept_output(mark=False, clone=False)),
        "mark_step_begin": outcome(lambda: kept_output(mark=True, clone=False)),
        "clone": outcome(lambda: kept_output(mark=False, clone=True)),
        "first_calls_plain": outcome(lambda: kept_output(mark=False, clone=False, warm_up=0)),
        "first_calls_mark_step": outcome(lambda: kept_output(mark=True, clone=False, warm_up=0)),
        "after_one_call_plain": outcome(lambda: kept_output(mark=False, clone=False, warm_up=1)),
        "all_reduce_capture": outcome(all_reduce_capture),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
