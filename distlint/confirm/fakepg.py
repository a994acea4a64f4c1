"""Make distributed training scripts run in one CPU process (child side of confirm mode).

* ``init_process_group(...)`` with any backend (``"nccl"``, ``"gloo"``, ``"cuda:nccl,cpu:gloo"``)
  and any rendezvous becomes ``init_process_group("fake", store=FakeStore(), rank=R,
  world_size=W)``: collectives return at once without communicating, so a script written for N
  GPUs runs as one rank of N. Values that depend on other ranks' data are not real.
* DDP: the fake process group cannot run DDP's gradient all-reduce (``INTERNAL ASSERT FAILED
  ... expected the hook result is either a Tensor or a TensorList found None``), so every DDP on
  a fake group gets torch's ``noop_hook`` comm hook; ``device_ids`` / ``output_device`` are
  dropped for CPU modules.
* CUDA: ``Tensor.cuda``, ``Module.cuda`` and ``torch.cuda.set_device`` raise a clear "runs on
  CPU" error, unless ``map_cuda`` is set, in which case they and ``Tensor.to`` / ``Module.to``
  map ``cuda`` devices to ``cpu``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

CUDA_HINT = (
    "confirm mode runs on CPU, without GPUs: the target asked for a CUDA device ({what}); "
    "pass --map-cuda-to-cpu to map cuda to cpu, or pick the device with "
    "torch.cuda.is_available()"
)


def install(
    *,
    rank: int,
    world_size: int,
    map_cuda: bool,
    note: Callable[[str], None],
    error: type[Exception] = RuntimeError,
) -> None:
    import torch
    import torch.distributed as dist

    if not dist.is_available():  # pragma: no cover - every CPU wheel has torch.distributed
        note("torch.distributed is not available: the fake process group is not installed")
        return
    import torch.testing._internal.distributed.fake_pg  # registers the "fake" backend
    from torch.distributed import distributed_c10d
    from torch.testing._internal.distributed.fake_pg import FakeStore

    for key, value in {
        "RANK": rank,
        "LOCAL_RANK": rank,
        "WORLD_SIZE": world_size,
        "LOCAL_WORLD_SIZE": world_size,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
    }.items():
        os.environ.setdefault(key, str(value))

    real_init = distributed_c10d.init_process_group

    @functools.wraps(real_init)
    def init_process_group(backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        note(
            f"init_process_group(backend={backend!r}) runs on the fake process group "
            f"(rank {rank} of {world_size})"
        )
        passed = {key: kwargs[key] for key in ("timeout", "group_name") if key in kwargs}
        return real_init(
            backend="fake", store=FakeStore(), rank=rank, world_size=world_size, **passed
        )

    dist.init_process_group = init_process_group
    distributed_c10d.init_process_group = init_process_group

    _patch_ddp(note)
    if map_cuda:
        _map_cuda_to_cpu(torch)
    else:
        _refuse_cuda(torch, error)


def _patch_ddp(note: Callable[[str], None]) -> None:
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks import noop_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    real_init = DDP.__init__
    real_register = DDP.register_comm_hook

    @functools.wraps(real_init)
    def __init__(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        on_cpu = all(not p.is_cuda for p in module.parameters())
        if on_cpu:
            kwargs.pop("device_ids", None)
            kwargs.pop("output_device", None)
            if args:  # positional device_ids / output_device
                args = (None, None, *args[2:]) if len(args) >= 2 else (None,)
        real_init(self, module, *args, **kwargs)
        if dist.get_backend(self.process_group) == "fake":
            real_register(self, None, noop_hook)
            self._distlint_noop_hook = True

    @functools.wraps(real_register)
    def register_comm_hook(self: Any, state: Any, hook: Any) -> None:
        if getattr(self, "_distlint_noop_hook", False):
            note("DDP comm hook ignored: the fake process group uses a no-op hook")
            return
        real_register(self, state, hook)

    DDP.__init__ = __init__
    DDP.register_comm_hook = register_comm_hook


def _is_cuda(device: Any) -> bool:
    if isinstance(device, int) and not isinstance(device, bool):
        return True  # Module.cuda(0) / Tensor.to(0): an accelerator index
    text = str(device) if device is not None else ""
    return text.startswith("cuda")


def _map_cuda_to_cpu(torch: Any) -> None:
    def tensor_cuda(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self

    def module_cuda(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self

    def mapped(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)
        def to(self: Any, *args: Any, **kwargs: Any) -> Any:
            args = tuple(
                "cpu" if _is_cuda(arg) and not isinstance(arg, int) else arg for arg in args
            )
            if _is_cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
            return real(self, *args, **kwargs)

        return to

    torch.Tensor.cuda = tensor_cuda
    torch.nn.Module.cuda = module_cuda
    torch.Tensor.to = mapped(torch.Tensor.to)
    torch.nn.Module.to = mapped(torch.nn.Module.to)
    torch.cuda.set_device = lambda *args, **kwargs: None


def _refuse_cuda(torch: Any, error: type[Exception]) -> None:
    def refuse(what: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise error(CUDA_HINT.format(what=what))

        return call

    torch.Tensor.cuda = refuse("Tensor.cuda()")
    torch.nn.Module.cuda = refuse("Module.cuda()")
    torch.cuda.set_device = refuse("torch.cuda.set_device()")
