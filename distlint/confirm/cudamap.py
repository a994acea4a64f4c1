"""``--map-cuda-to-cpu``: let a script written for GPUs run on a CPU-only torch (child side).

Nothing is rewritten in the user's source: the child patches torch at run time, before the
target is imported, so that every CUDA request is served on the CPU.

Devices. A CUDA device object (``torch.device("cuda", local_rank)``, ``"cuda:0"``, an index
``0``) can be built without CUDA; it only fails where memory is used, so it is mapped where
it is used:

* tensor factories with ``device=`` (every ``torch.*`` function whose ATen schema takes a
  ``device`` argument: ``zeros``, ``randn``, ``arange``, ``empty_like``, ..., plus
  ``torch.tensor`` / ``as_tensor``), and the ``Tensor.new_*`` methods;
* ``Tensor.to`` / ``Module.to`` (positional or ``device=``), ``Tensor.cuda`` /
  ``Module.cuda`` (no-ops), ``Module.to_empty``, ``Tensor.pin_memory`` (a no-op);
* ``with torch.device("cuda")`` and ``torch.set_default_device("cuda")``;
* ``torch.load``'s ``map_location`` (none given: the CPU, so a checkpoint saved on a GPU
  loads).

The process-group, DDP, FSDP and device-mesh side is in :mod:`distlint.confirm.fakepg`.

Queries. ``torch.cuda.is_available()`` answers True, ``device_count()`` the local world size,
``current_device()`` the index last passed to ``set_device`` (initially ``LOCAL_RANK``), and
``torch.accelerator`` the same: the script sees the GPUs it was written for. These answers are
given to the script (and the libraries it uses), not to torch itself: a call made from inside
torch gets the real answer (no CUDA), so torch keeps its CPU paths (Dynamo would otherwise save
the CUDA RNG state on every frame). Dynamo folds a call in compiled code to the script's answer,
as it folds the real function. ``synchronize``, ``empty_cache``, memory statistics, events and
streams are stand-ins that do nothing (events time with the wall clock).

Without the mapping, :func:`refuse` makes the first CUDA request raise a clear error.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

CUDA_HINT = (
    "confirm mode runs on CPU, without GPUs: the target asked for a CUDA device ({what}); "
    "pass --map-cuda-to-cpu to map cuda to cpu, or pick the device with "
    "torch.cuda.is_available()"
)
_GIB = 1024**3
# torch.* factories without an ATen schema of their own
_EXTRA_FACTORIES = ("tensor", "as_tensor", "asarray")


def is_cuda(device: Any) -> bool:
    """Whether ``device`` names a CUDA device: ``"cuda"``, ``"cuda:1"``, a device, an index."""
    if isinstance(device, bool):
        return False
    if isinstance(device, int):
        return True  # an accelerator index: Module.cuda(0), Tensor.to(0), device=0
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    kind = getattr(device, "type", None)
    return isinstance(kind, str) and kind == "cuda" and type(device).__name__ == "device"


def _cpu(device: Any) -> Any:
    return "cpu" if is_cuda(device) else device


class _State:
    """What the script was told: the current device index and how many devices there are."""

    def __init__(self) -> None:
        self.index = _env_int("LOCAL_RANK", 0)

    @property
    def count(self) -> int:
        local = _env_int("LOCAL_WORLD_SIZE", 0) or _env_int("WORLD_SIZE", 0) or 1
        return max(local, self.index + 1)

    def set(self, device: Any) -> None:
        index = _index_of(device)
        if index is not None and index >= 0:
            self.index = index


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _index_of(device: Any) -> int | None:
    if isinstance(device, bool) or device is None:
        return None
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        _, _, tail = device.partition(":")
        return int(tail) if tail.isdigit() else None
    index = getattr(device, "index", None)
    return index if isinstance(index, int) else None


def map_cuda_to_cpu(torch: Any) -> None:
    """Install the mapping (see the module docstring). Call before the target is imported."""
    state = _State()
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    folding = os.path.join(torch_dir, "_dynamo", "variables", "torch.py")

    def asked_by_torch() -> bool:
        # 0: this function, 1: the query, 2: its caller. Dynamo's constant folding
        # (TorchInGraphFunctionVariable.call_function) asks on behalf of the code it traces.
        frame = sys._getframe(2)
        filename = frame.f_code.co_filename
        if filename == folding:
            tx = frame.f_locals.get("tx")
            code = getattr(tx, "f_code", None)
            filename = getattr(code, "co_filename", "")
        return filename.startswith(torch_dir)

    tensor_methods = _map_devices(torch)
    queries = _map_queries(torch, state, asked_by_torch)
    _register_with_dynamo(queries, tensor_methods)


# -- devices --------------------------------------------------------------------------------------


def _device_kwarg(real: Callable[..., Any]) -> Callable[..., Any]:
    # No functools.wraps: Dynamo unwraps ``__wrapped__`` and would skip the mapping.
    def call(*args: Any, **kwargs: Any) -> Any:
        if "device" in kwargs and is_cuda(kwargs["device"]):
            kwargs["device"] = "cpu"
        return real(*args, **kwargs)

    call.__name__ = getattr(real, "__name__", "factory")
    call.__qualname__ = call.__name__
    call.__doc__ = getattr(real, "__doc__", None)
    return call


def _to(real: Callable[..., Any]) -> Callable[..., Any]:
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and is_cuda(args[0]):
            args = ("cpu", *args[1:])
        if "device" in kwargs and is_cuda(kwargs["device"]):
            kwargs["device"] = "cpu"
        return real(self, *args, **kwargs)

    to.__name__ = to.__qualname__ = "to"
    to.__doc__ = getattr(real, "__doc__", None)
    return to


def factory_names(torch: Any) -> list[str]:
    """``torch.*`` functions whose ATen schema takes ``device``, plus the schema-less ones."""
    names = set(_EXTRA_FACTORIES)
    for schema in torch._C._jit_get_all_schemas():
        name = schema.name
        if not name.startswith("aten::") or name.startswith("aten::_"):
            continue
        if any(argument.name == "device" for argument in schema.arguments):
            names.add(name[len("aten::") :])
    builtin = type(torch.zeros)
    return sorted(n for n in names if isinstance(getattr(torch, n, None), builtin))


def _map_devices(torch: Any) -> list[Any]:
    """Patch the device consumers; the original Tensor methods replaced (for Dynamo)."""
    import torch.utils._device as device_module

    originals = set(device_module._device_constructors())
    for name in factory_names(torch):
        setattr(torch, name, _device_kwarg(getattr(torch, name)))
    wrapped = set(device_module._device_constructors())

    # `with torch.device("meta")` recognises the factories it fills in by identity: it sees the
    # real function (our wrapper calls it), Dynamo and Inductor may see the wrapper.
    constructors = tuple(originals | wrapped)

    def _device_constructors() -> set[Any]:
        return set(constructors)

    # torch's is an lru_cache'd function; ours returns the same set without a cache
    device_module._device_constructors = _device_constructors  # type: ignore[assignment]

    tensor = torch.Tensor
    methods = ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros")
    replaced = [
        getattr(tensor, n) for n in (*methods, "to", "cuda", "pin_memory") if hasattr(tensor, n)
    ]
    for name in methods:
        if hasattr(tensor, name):
            setattr(tensor, name, _device_kwarg_method(getattr(tensor, name)))
    tensor.to = _to(tensor.to)
    torch.nn.Module.to = _to(torch.nn.Module.to)

    def tensor_cuda(
        self: Any, device: Any = None, non_blocking: bool = False, **kwargs: Any
    ) -> Any:
        memory_format = kwargs.get("memory_format")
        return self if memory_format is None else self.contiguous(memory_format=memory_format)

    def module_cuda(self: Any, device: Any = None) -> Any:
        return self

    def pin_memory(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self

    real_to_empty = torch.nn.Module.to_empty

    def to_empty(self: Any, *, device: Any, recurse: bool = True) -> Any:
        return real_to_empty(self, device=_cpu(device), recurse=recurse)

    tensor.cuda = tensor_cuda
    tensor.pin_memory = pin_memory
    # AOTAutograd runs the graph on functional tensors, whose .cuda() asks the real CUDA
    # (their .to() reaches Tensor.to, mapped above).
    from torch._subclasses.functional_tensor import FunctionalTensor

    if "cuda" in vars(FunctionalTensor):
        FunctionalTensor.cuda = tensor_cuda
    torch.nn.Module.cuda = module_cuda
    torch.nn.Module.to_empty = to_empty

    real_context_init = device_module.DeviceContext.__init__

    def context_init(self: Any, device: Any) -> None:
        real_context_init(self, _cpu(device))

    device_module.DeviceContext.__init__ = context_init

    real_load = torch.load

    def load(*args: Any, **kwargs: Any) -> Any:
        # A checkpoint saved on a GPU restores onto a GPU unless map_location says otherwise.
        if len(args) > 1:
            args = (args[0], _map_location(args[1]), *args[2:])
        else:
            kwargs["map_location"] = _map_location(kwargs.get("map_location"))
        return real_load(*args, **kwargs)

    load.__name__ = load.__qualname__ = "load"
    load.__doc__ = real_load.__doc__
    torch.load = load
    return replaced


def _map_location(location: Any) -> Any:
    if location is None or is_cuda(location):
        return "cpu"
    if isinstance(location, dict):
        return {key: _cpu(value) for key, value in location.items()}
    return location  # a device that is not CUDA, or the script's own function


def _device_kwarg_method(real: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "device" in kwargs and is_cuda(kwargs["device"]):
            kwargs["device"] = "cpu"
        return real(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = getattr(real, "__name__", "method")
    method.__doc__ = getattr(real, "__doc__", None)
    return method


# -- torch.cuda / torch.accelerator ---------------------------------------------------------------


class _Event:
    """``torch.cuda.Event`` stand-in: ``elapsed_time`` is wall-clock milliseconds."""

    def __init__(self, enable_timing: bool = False, *args: Any, **kwargs: Any) -> None:
        self._at: float | None = None

    def record(self, stream: Any = None) -> None:
        self._at = time.perf_counter()

    def wait(self, stream: Any = None) -> None: ...

    def query(self) -> bool:
        return True

    def synchronize(self) -> None: ...

    def elapsed_time(self, end: _Event) -> float:
        if self._at is None or end._at is None:
            return 0.0
        return (end._at - self._at) * 1000.0


class _Stream:
    """``torch.cuda.Stream`` stand-in: work is synchronous on the CPU."""

    def __init__(self, device: Any = None, priority: int = 0, **kwargs: Any) -> None:
        self.device = device
        self.priority = priority

    def wait_stream(self, stream: Any) -> None: ...

    def wait_event(self, event: Any) -> None: ...

    def record_event(self, event: Any = None) -> _Event:
        event = event or _Event()
        event.record()
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None: ...

    def __enter__(self) -> _Stream:
        return self

    def __exit__(self, *exc: Any) -> None: ...


def _map_queries(
    torch: Any, state: _State, asked_by_torch: Callable[[], bool]
) -> list[Callable[..., Any]]:
    """Patch ``torch.cuda`` and ``torch.accelerator``; the query functions Dynamo should fold."""
    cuda = torch.cuda
    real = {
        name: getattr(cuda, name)
        for name in ("is_available", "device_count", "current_device", "get_device_properties")
    }

    def is_available() -> bool:
        return real["is_available"]() if asked_by_torch() else True

    def device_count() -> int:
        return real["device_count"]() if asked_by_torch() else state.count

    def current_device() -> int:
        return real["current_device"]() if asked_by_torch() else state.index

    def get_device_properties(device: Any = None) -> Any:
        if asked_by_torch():
            return real["get_device_properties"](device)
        return _properties()

    def set_device(device: Any) -> None:
        state.set(device)

    class device:
        """``with torch.cuda.device(i):`` sets the current index for the block."""

        def __init__(self, device: Any) -> None:
            self.index = _index_of(device)

        def __enter__(self) -> None:
            self.previous = state.index
            if self.index is not None and self.index >= 0:
                state.index = self.index

        def __exit__(self, *exc: Any) -> None:
            state.index = self.previous

    # One function object per name: Dynamo keys its trace rules by object, from the names.
    def nothing() -> Callable[..., None]:
        return lambda *args, **kwargs: None

    def zero() -> Callable[..., int]:
        return lambda *args, **kwargs: 0

    def rng_state(*args: Any, **kwargs: Any) -> Any:
        return torch.get_rng_state()

    patches: dict[str, Any] = {
        "is_available": is_available,
        "device_count": device_count,
        "current_device": current_device,
        "set_device": set_device,
        "device": device,
        "get_device_properties": get_device_properties,
        "get_device_name": lambda device=None: _properties().name,
        "get_device_capability": lambda device=None: (8, 0),
        "is_bf16_supported": lambda including_emulation=True: True,
        "synchronize": nothing(),
        "empty_cache": nothing(),
        "ipc_collect": nothing(),
        "init": nothing(),
        "reset_peak_memory_stats": nothing(),
        "reset_max_memory_allocated": nothing(),
        "reset_max_memory_cached": nothing(),
        "reset_accumulated_memory_stats": nothing(),
        "set_per_process_memory_fraction": nothing(),
        "memory_allocated": zero(),
        "max_memory_allocated": zero(),
        "memory_reserved": zero(),
        "max_memory_reserved": zero(),
        "memory_cached": zero(),
        "max_memory_cached": zero(),
        "memory_stats": lambda device=None: {},
        "memory_summary": lambda device=None, abbreviated=False: "",
        "mem_get_info": lambda device=None: (80 * _GIB, 80 * _GIB),
        "get_rng_state": rng_state,
        "get_rng_state_all": lambda: [torch.get_rng_state() for _ in range(state.count)],
        "set_rng_state": nothing(),
        "set_rng_state_all": nothing(),
        "Event": _Event,
        "Stream": _Stream,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "current_stream": lambda device=None: _Stream(device),
        "default_stream": lambda device=None: _Stream(device),
        "set_stream": nothing(),
    }
    for name, value in patches.items():
        setattr(cuda, name, value)
    nvtx = getattr(cuda, "nvtx", None)
    if nvtx is not None:
        for name in ("range_push", "range_pop", "mark", "range_start", "range_end"):
            setattr(nvtx, name, nothing())
        nvtx.range = lambda *args, **kwargs: contextlib.nullcontext()
    queries = [is_available, device_count, current_device, get_device_properties]

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        real_acc = {
            name: getattr(accelerator, name, None)
            for name in ("is_available", "device_count", "current_accelerator")
        }

        def acc_is_available() -> bool:
            return real_acc["is_available"]() if asked_by_torch() else True  # type: ignore[misc]

        def acc_device_count() -> int:
            return real_acc["device_count"]() if asked_by_torch() else state.count  # type: ignore[misc]

        def current_accelerator(check_available: bool = False) -> Any:
            if asked_by_torch():
                return real_acc["current_accelerator"](check_available)  # type: ignore[misc]
            return torch.device("cuda")

        def current_device_index() -> int:
            return state.index

        acc = {
            "is_available": acc_is_available,
            "device_count": acc_device_count,
            "current_accelerator": current_accelerator,
            "current_device_index": current_device_index,
            "current_device_idx": current_device_index,
            "set_device_index": lambda device: state.set(device),
            "set_device_idx": lambda device: state.set(device),
            "synchronize": nothing(),
        }
        for name, value in acc.items():
            if hasattr(accelerator, name):
                setattr(accelerator, name, value)
        queries += [acc_is_available, acc_device_count, current_accelerator]
    return queries


def _properties() -> Any:
    return types.SimpleNamespace(
        name="cpu (cuda mapped by distlint)",
        total_memory=80 * _GIB,
        major=8,
        minor=0,
        multi_processor_count=1,
        is_integrated=False,
        is_multi_gpu_board=False,
        gcnArchName="",
        uuid="",
        L2_cache_size=0,
    )


def _register_with_dynamo(queries: list[Callable[..., Any]], tensor_methods: list[Any]) -> None:
    """Dynamo treats the stand-ins as it treats the functions they replace.

    * the queries are folded in compiled code, as the real ones are;
    * the real Tensor methods the wrappers call stay tensor methods: Dynamo lists them from
      ``dir(torch.Tensor)``, where the wrappers now stand (it reaches them when a torch
      function mode such as ``torch.set_default_device`` is active).

    Dynamo builds both tables lazily (and again after a reset), from names or attributes; built
    before the patches or after, they are completed here.
    """
    try:
        from torch._dynamo import trace_rules
        from torch._dynamo.variables import torch as torch_variables
    except ImportError:  # pragma: no cover - every torch 2.x has them
        return
    in_graph = torch_variables.TorchInGraphFunctionVariable
    real_rule_map = trace_rules.get_torch_obj_rule_map
    real_tensor_methods = trace_rules.get_tensor_method

    @functools.cache
    def get_torch_obj_rule_map() -> dict[Any, Any]:
        rules = real_rule_map()
        for query in queries:
            rules.setdefault(query, in_graph)
        return rules

    @functools.cache
    def get_tensor_method() -> frozenset[Any]:
        return frozenset(real_tensor_methods()) | frozenset(tensor_methods)

    for mine, real in (
        (get_torch_obj_rule_map, real_rule_map),
        (get_tensor_method, real_tensor_methods),
    ):
        clear_own = mine.cache_clear

        def cache_clear(clear_own: Any = clear_own, real: Any = real) -> None:
            real.cache_clear()
            clear_own()

        mine.cache_clear = cache_clear
    trace_rules.get_torch_obj_rule_map = get_torch_obj_rule_map
    trace_rules.get_tensor_method = get_tensor_method
    for query in queries:
        # torch declares it a list, then rebinds it to a dict (torch/_dynamo/variables/torch.py)
        torch_variables.constant_fold_functions[query] = None  # type: ignore[call-overload]


def refuse(torch: Any, error: type[Exception]) -> None:
    """Make ``.cuda()`` and ``torch.cuda.set_device`` raise ``error`` with a clear message."""

    def refused(what: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise error(CUDA_HINT.format(what=what))

        return call

    torch.Tensor.cuda = refused("Tensor.cuda()")
    torch.nn.Module.cuda = refused("Module.cuda()")
    torch.cuda.set_device = refused("torch.cuda.set_device()")
