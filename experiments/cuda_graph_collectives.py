"""Measure NCCL collectives inside CUDA graphs on 2 ranks (evidence for DL602 and DL604).

Run one scenario per invocation, on one host with 2 GPUs::

    torchrun --nproc-per-node 2 experiments/cuda_graph_collectives.py --scenario 1

(or all of them with ``experiments/run_cuda_graph_collectives.sh OUTDIR``). Each rank prints
exactly ONE JSON line on stdout: ``{"scenario": N, "rank": r, "status": "ok" | "timeout" |
"error", ...}``; progress notes go to stderr. Exit code: 0 ok, 2 timeout, 1 error.

Scenarios (each on ``cuda:LOCAL_RANK``, ``--replays`` replays, default 5):

1. Both ranks capture the same ``dist.all_reduce`` in a CUDA graph and replay it; the static
   input is refilled with ``(rank + 1) * (i + 1)`` before replay ``i``. Are the values right?
2. Only rank 0 captures an extra ``all_reduce`` in its graph (rank 0: two, rank 1: one); both
   replay, then both run an eager ``all_reduce`` as a sync point. Hang or wrong values, and what
   each rank sees when the timeout hits?
3. The ranks capture the same two ``all_reduce`` calls in a different order (rank 0: a then b,
   rank 1: b then a); ``--diff-shapes`` gives a and b different sizes. Hang or wrong values?
4. ``torch.compile(mode="reduce-overhead")`` of a function with a functional ``all_reduce``,
   called by both ranks (warm-up, record, replays), then rank 0 makes one extra call; then both
   run an eager ``all_reduce`` sync point.

Bounds, so nothing can hang the machine: the process group has ``--pg-timeout`` seconds (default
5) with ``TORCH_NCCL_BLOCKING_WAIT=1`` (eager collectives raise when they time out instead of
aborting the process); graph replays are waited for by polling a CUDA event against the same
deadline, never by a blocking synchronize; and ``faulthandler`` ends the process (exit 1, with a
traceback on stderr) after ``--hard-timeout`` seconds (default 60) whatever happens. The
wrapper script adds an outer ``timeout``. NVLink SHARP/multicast is off (``NCCL_NVLS_ENABLE=0``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``); set before torch is imported.

On a hang the process leaves with ``os._exit`` (a NCCL communicator stuck in a kernel cannot be
destroyed cleanly); the GPU work is torn down with the process.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import sys
import time
from datetime import timedelta

for _key, _value in (
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("TORCH_NCCL_BLOCKING_WAIT", "1"),
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"),
):
    os.environ.setdefault(_key, _value)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


class Timeout(Exception):
    pass


def note(rank: int, text: str) -> None:
    print(f"[rank {rank}] {text}", file=sys.stderr, flush=True)


def wait_gpu(deadline: float, what: str) -> None:
    """Wait for the current stream without blocking the host past ``deadline``."""
    event = torch.cuda.Event()
    event.record()
    while not event.query():
        if time.monotonic() > deadline:
            raise Timeout(what)
        time.sleep(0.01)


def warm_up(tensors: list[torch.Tensor]) -> None:
    """Eager collectives on a side stream first: NCCL must be set up before capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for t in tensors:
            dist.all_reduce(t)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def expected_sum(world: int, factor: float) -> float:
    return factor * world * (world + 1) / 2


def sync_point(result: dict, deadline: float) -> None:
    """An eager all_reduce every rank issues; records what it returns."""
    t = torch.ones(4, device="cuda")
    result["sync_point"] = "started"
    dist.all_reduce(t)  # blocking wait: raises after the PG timeout if the peer never joins
    wait_gpu(deadline, "eager sync all_reduce")
    result["sync_point"] = {"value": t[0].item(), "expected": float(dist.get_world_size())}


def scenario_1(rank: int, world: int, args, result: dict, deadline: float) -> None:
    static = torch.zeros(4, device="cuda")
    warm_up([static.clone()])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dist.all_reduce(static)
    result["captured"] = True
    replays = []
    for i in range(args.replays):
        static.fill_((rank + 1) * (i + 1))
        graph.replay()
        wait_gpu(deadline, f"replay {i}")
        replays.append({"value": static[0].item(), "expected": expected_sum(world, i + 1)})
    result["replays"] = replays
    result["correct"] = all(r["value"] == r["expected"] for r in replays)


def scenario_2(rank: int, world: int, args, result: dict, deadline: float) -> None:
    a = torch.zeros(4, device="cuda")
    extra = torch.zeros(4, device="cuda")
    warm_up([a.clone()])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        dist.all_reduce(a)
        if rank == 0:
            dist.all_reduce(extra)  # the rank-dependent capture under test
    result["captured_collectives"] = 2 if rank == 0 else 1
    replays = []
    result["replays"] = replays
    for i in range(args.replays):
        a.fill_((rank + 1) * (i + 1))
        extra.fill_(100 * (rank + 1))
        graph.replay()
        result["last_step"] = f"replay {i} launched"
        wait_gpu(deadline, f"replay {i}")
        replays.append(
            {"a": a[0].item(), "extra": extra[0].item(), "expected_a": expected_sum(world, i + 1)}
        )
    sync_point(result, deadline)
    result["correct"] = all(r["a"] == r["expected_a"] for r in replays)


def scenario_3(rank: int, world: int, args, result: dict, deadline: float) -> None:
    size_b = 8 if args.diff_shapes else 4
    a = torch.zeros(4, device="cuda")
    b = torch.zeros(size_b, device="cuda")
    warm_up([a.clone(), b.clone()])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        if rank == 0:
            dist.all_reduce(a)
            dist.all_reduce(b)
        else:
            dist.all_reduce(b)
            dist.all_reduce(a)
    result["order"] = ["a", "b"] if rank == 0 else ["b", "a"]
    result["shapes"] = {"a": 4, "b": size_b}
    replays = []
    result["replays"] = replays
    for i in range(args.replays):
        a.fill_(rank + 1)  # a sums to 3 on 2 ranks
        b.fill_(10 * (rank + 1))  # b sums to 30
        graph.replay()
        result["last_step"] = f"replay {i} launched"
        wait_gpu(deadline, f"replay {i}")
        replays.append({"a": a[0].item(), "b": b[0].item()})
    result["expected"] = {"a": expected_sum(world, 1), "b": expected_sum(world, 10)}
    result["correct"] = all(
        r["a"] == result["expected"]["a"] and r["b"] == result["expected"]["b"] for r in replays
    )


def scenario_4(rank: int, world: int, args, result: dict, deadline: float) -> None:
    import torch.distributed._functional_collectives as funcol

    def step(x: torch.Tensor) -> torch.Tensor:
        y = funcol.all_reduce(x * 2, "sum", dist.group.WORLD)
        return y + 1

    compiled = torch.compile(step, mode="reduce-overhead")
    calls = []
    result["calls"] = calls
    for i in range(args.replays):
        x = torch.full((4,), float((rank + 1) * (i + 1)), device="cuda")
        out = compiled(x)
        result["last_step"] = f"call {i} launched"
        wait_gpu(deadline, f"call {i}")
        calls.append({"value": out[0].item(), "expected": 2 * expected_sum(world, i + 1) + 1})
    if rank == 0:  # the rank-dependent extra replay under test
        x = torch.full((4,), 7.0, device="cuda")
        out = compiled(x)
        result["last_step"] = "extra call launched (rank 0)"
        wait_gpu(deadline, "extra call")
        result["extra_call"] = out[0].item()
    sync_point(result, deadline)
    result["cudagraph_skips"] = _cudagraph_skips()
    result["correct"] = all(c["value"] == c["expected"] for c in calls)


def _cudagraph_skips() -> int:
    from torch._dynamo.utils import counters

    return int(sum(counters["inductor"].get(k, 0) for k in ("cudagraph_skips",)))


SCENARIOS = {1: scenario_1, 2: scenario_2, 3: scenario_3, 4: scenario_4}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=int, choices=sorted(SCENARIOS), required=True)
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--pg-timeout", type=float, default=5.0)
    parser.add_argument("--hard-timeout", type=float, default=60.0)
    parser.add_argument("--diff-shapes", action="store_true", help="scenario 3: a and b differ")
    args = parser.parse_args()

    faulthandler.dump_traceback_later(args.hard_timeout, exit=True)
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    result: dict = {
        "scenario": args.scenario,
        "rank": rank,
        "status": "error",
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version()))
        if torch.cuda.is_available()
        else None,
        "diff_shapes": args.diff_shapes,
    }
    start = time.monotonic()
    code = 1
    try:
        if os.environ.get("SHARE_GPU") == "1":  # several ranks on one GPU (NCCL may refuse)
            local_rank %= max(1, torch.cuda.device_count())
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group(
            "nccl", timeout=timedelta(seconds=args.pg_timeout), device_id=device
        )
        world = dist.get_world_size()
        result["world_size"] = world
        deadline = start + args.hard_timeout * 0.75
        note(rank, f"scenario {args.scenario} starting")
        SCENARIOS[args.scenario](rank, world, args, result, deadline)
        result["status"] = "ok"
        code = 0
    except Timeout as exc:
        result["status"] = "timeout"
        result["timed_out_waiting_for"] = str(exc)
        code = 2
    except Exception as exc:  # a NCCL timeout under blocking wait lands here
        text = str(exc)
        result["status"] = (
            "timeout" if "timed out" in text.lower() or "timeout" in text.lower() else "error"
        )
        result["error"] = f"{type(exc).__module__}.{type(exc).__qualname__}: {text[:2000]}"
        code = 2 if result["status"] == "timeout" else 1
    result["elapsed_s"] = round(time.monotonic() - start, 3)
    print(json.dumps(result), flush=True)
    sys.stderr.flush()
    if code == 0:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    os._exit(code)  # never wait on a communicator that may be stuck


if __name__ == "__main__":
    sys.exit(main())
