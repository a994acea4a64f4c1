"""Make distributed training scripts run in one CPU process (child side of confirm mode).

* ``init_process_group(...)`` with any backend (``"nccl"``, ``"gloo"``, ``"cuda:nccl,cpu:gloo"``)
  and any rendezvous becomes ``init_process_group("fake", store=FakeStore(), rank=R,
  world_size=W)``: collectives return at once without communicating, so a script written for N
  GPUs runs as one rank of N. Values that depend on other ranks' data are not real.
* DDP: the fake process group cannot run DDP's gradient all-reduce (``INTERNAL ASSERT FAILED
  ... expected the hook result is either a Tensor or a TensorList found None``), so every DDP on
  a fake group gets torch's ``noop_hook`` comm hook; ``device_ids`` / ``output_device`` are
  dropped for CPU modules.
* FSDP1 (``FullyShardedDataParallel``) refuses a machine without an accelerator unless it is
  given a device: a module on the CPU gets ``device_id=cpu`` (and, with ``map_cuda``, a CUDA
  ``device_id`` becomes ``cpu``). FSDP2 (``fully_shard``) runs on a CPU device mesh.
* Device meshes: with ``map_cuda``, ``init_device_mesh("cuda", ...)`` / ``DeviceMesh("cuda",
  ...)`` build a CPU mesh; without it they raise the clear "runs on CPU" error.
* CUDA: without ``map_cuda``, ``Tensor.cuda``, ``Module.cuda`` and ``torch.cuda.set_device``
  raise that error; with it, every CUDA form is mapped to the CPU
  (:mod:`distlint.confirm.cudamap`).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from distlint.confirm import cudamap


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
    _patch_fsdp(map_cuda)
    _patch_device_mesh(map_cuda, error)
    if not map_cuda:
        cudamap.refuse(torch, error)


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


def _patch_fsdp(map_cuda: bool) -> None:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    real_init = FSDP.__init__
    signature = inspect.signature(real_init)

    @functools.wraps(real_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        import torch

        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return real_init(self, *args, **kwargs)  # let FSDP report the bad call
        device_id = bound.arguments.get("device_id")
        module = bound.arguments.get("module")
        on_cpu = module is not None and all(
            p.device.type in ("cpu", "meta") for p in module.parameters()
        )
        if (device_id is None and on_cpu) or (map_cuda and cudamap.is_cuda(device_id)):
            bound.arguments["device_id"] = torch.device("cpu")
        real_init(*bound.args, **bound.kwargs)

    FSDP.__init__ = __init__


def _patch_device_mesh(map_cuda: bool, error: type[Exception]) -> None:
    from torch.distributed import device_mesh

    real_init_mesh = device_mesh.init_device_mesh
    real_mesh_init = device_mesh.DeviceMesh.__init__

    def device_type_of(device_type: Any, what: str) -> Any:
        if device_type != "cuda":
            return device_type
        if map_cuda:
            return "cpu"
        raise error(cudamap.CUDA_HINT.format(what=what))

    @functools.wraps(real_init_mesh)
    def init_device_mesh(device_type: str, *args: Any, **kwargs: Any) -> Any:
        mapped = device_type_of(device_type, f"init_device_mesh({device_type!r}, ...)")
        return real_init_mesh(mapped, *args, **kwargs)

    @functools.wraps(real_mesh_init)
    def mesh_init(self: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
        mapped = device_type_of(device_type, f"DeviceMesh({device_type!r}, ...)")
        real_mesh_init(self, mapped, *args, **kwargs)

    device_mesh.init_device_mesh = init_device_mesh
    device_mesh.DeviceMesh.__init__ = mesh_init
    import torch.distributed as dist

    if getattr(dist, "init_device_mesh", None) is real_init_mesh:
        dist.init_device_mesh = init_device_mesh
