"""The capture cases that DL601/DL602 follow through calls, run on one GPU.

Prints one JSON object: each case's outcome (ok, or the exception torch raised). Run with the
device's python3 (torch with CUDA), from the repository root:

    python3 experiments/capture_calls.py

* ``DL601/bad.py::case_stored_step_reads_the_norm``: a step function stored on an object and
  called under ``torch.cuda.graph`` calls ``.item()``: the capture must fail.
* ``DL601/traps.py::case_stored_steps_sync_off_their_main_path``: the same objects with the
  sync under a flag or after an early return: the captures must succeed.
* ``DL602/bad.py::case_helper_captures_an_all_reduce``: a capture helper given a function that
  all-reduces (NCCL, world size 1): capturable; the rule warns that every rank must capture it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch
import torch.distributed as dist

CASES = (
    ("fixtures/DL601/bad.py", "case_stored_step_reads_the_norm"),
    ("fixtures/DL601/traps.py", "case_stored_steps_sync_off_their_main_path"),
    ("fixtures/DL602/bad.py", "case_helper_captures_an_all_reduce"),
)


def load(path: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(path.replace("/", "_")[:-3], path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(path: str, name: str) -> dict:
    try:
        getattr(load(path), name)()
        torch.cuda.synchronize()
        return {"ok": True}
    except Exception as exc:  # record what torch says
        try:
            torch.cuda.synchronize()
        except Exception as after:  # a failed capture can poison the context
            return {"ok": False, "error": _describe(exc), "after": _describe(after)}
        return {"ok": False, "error": _describe(exc)}


def _describe(exc: BaseException) -> dict:
    return {
        "type": f"{type(exc).__module__}.{type(exc).__name__}",
        "message": str(exc)[:400],
        "where": traceback.format_exc().splitlines()[-3:],
    }


def main() -> None:
    if len(sys.argv) == 3:  # one case, in its own process (a failed capture can poison CUDA)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
        print(json.dumps(run(sys.argv[1], sys.argv[2])))
        dist.destroy_process_group()
        return
    import subprocess

    report = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "cases": {}}
    for number, (path, name) in enumerate(CASES):
        env = dict(os.environ, MASTER_PORT=str(29533 + number))
        done = subprocess.run(
            [sys.executable, __file__, path, name],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        lines = done.stdout.strip().splitlines()
        outcome = json.loads(lines[-1]) if lines else None
        report["cases"][f"{path}::{name}"] = outcome or {
            "exit": done.returncode,
            "stderr": done.stderr[-600:],
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
