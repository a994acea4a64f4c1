"""The code that runs in the confirm child process: ``python -m distlint.confirm.child SPEC OUT``.

``SPEC`` is a JSON file describing one target (:class:`distlint.confirm.targets.Target`);
``OUT`` receives one JSON event per line, flushed as it happens, so that a target killed at its
timeout still leaves what it observed until then. Events:

* ``start``: torch version, pid and parent pid (the fork server's, when forked).
* ``frame``: a root frame Dynamo started to trace, once per function (a resume function counts
  as the function it resumes; a library frame that runs a user module, such as
  ``Module._call_impl``, as that module's ``forward``).
* ``graph``: a graph handed to the backend (root frame, op count).
* ``break``: a graph break Dynamo logged (``Gb_type``, GB id, reason, user stack, whether the
  whole frame fell back to eager).
* ``lines``: user-code lines Dynamo traced, per file (what "reached" means for a finding).
* ``compile_error``: an exception from Dynamo or the backend that reached the target's caller
  (``fullgraph=True`` failures, hard errors), with its user-code location.
* ``raised``: the target raised something that is not a compile error (its own bug, a CUDA
  request on CPU, ...).
* ``exit``: the target called ``sys.exit`` (its code and where).
* ``note``: something worth telling the user (a step limit reached, a backend replaced).
* ``end``: why the target stopped, Dynamo's graph-break counters and the run's nonce (see
  :func:`run_target`).

The file is capped at :data:`MAX_EVENT_BYTES`: past it, one note says so and only ``end`` is
still written.

Breaks are recorded by wrapping ``InstructionTranslatorBase.log_graph_break`` (every break
Dynamo resumes from or skips a frame for, including those before the first op that
``torch._dynamo.explain`` misses) and the ``graph_breaks`` artifact logger of
``convert_frame`` (frame skips raised outside the tracer). Graphs are counted by wrapping
``OutputGraph.call_user_compiler``, so any backend works; root frames by wrapping
``InstructionTranslator.__init__``.

The child runs either as ``python -m distlint.confirm.child SPEC OUT`` or, forked from the
warm fork server (:mod:`distlint.confirm.server`), through :func:`run_target`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path
from typing import Any

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+)_at_(?P<line>\d+)$")
_USER_CODE_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<name>\S+))?')
_MAX_MESSAGE = 4000
MAX_EVENT_BYTES = 32 * 1024 * 1024
REGISTRY_NAME = "graph_break_registry.json"


class StopTarget(BaseException):
    """Ends a script at its step or time limit (a BaseException: ``except Exception`` misses it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CudaRequested(RuntimeError):
    """The target asked for a CUDA device; confirm mode runs on CPU."""


class Recorder:
    """Writes events to the output file, one JSON object per line, flushed at once."""

    def __init__(self, path: str, limit: int = MAX_EVENT_BYTES) -> None:
        self._out = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self.lines: dict[str, set[int]] = defaultdict(set)
        self._flushed: dict[str, set[int]] = defaultdict(set)
        self.library_dirs: tuple[str, ...] = ()
        self._left = limit

    def emit(self, event: str, **data: Any) -> None:
        data["event"] = event
        line = json.dumps(data, default=str) + "\n"
        if event != "end":
            if self._left <= 0:
                return
            self._left -= len(line)
            if self._left <= 0:
                line = (
                    json.dumps(
                        {"event": "note", "text": "too many events: the rest were not recorded"}
                    )
                    + "\n"
                )
        self._out.write(line)
        self._out.flush()

    def flush_lines(self) -> None:
        for filename, lines in self.lines.items():
            new = lines - self._flushed[filename]
            if new:
                self.emit("lines", file=filename, lines=sorted(new))
                self._flushed[filename] |= new

    def is_user_file(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        return not filename.startswith(self.library_dirs)


# -- helpers --------------------------------------------------------------------------------------


def origin_code(code: Any) -> Any:
    """The function a Dynamo resume function (``torch_dynamo_resume_in_f_at_N``) continues."""
    try:
        from torch._dynamo.resume_execution import ContinueExecutionCache

        metadata = ContinueExecutionCache.generated_code_metadata
    except (ImportError, AttributeError):  # pragma: no cover - other torch versions
        return code
    for _ in range(64):  # resume functions of resume functions
        meta = metadata.get(code) if _RESUME.match(code.co_name) else None
        if meta is None or meta.code is code:
            break
        code = meta.code
    return code


def frame_key(code: Any) -> list[Any]:
    """[file, function, first line] of a compiled frame; resume functions map to their origin."""
    code = origin_code(code)
    match = _RESUME.match(code.co_name)
    if match:  # origin unknown
        return [code.co_filename, match.group("name"), None]
    return [code.co_filename, code.co_name, code.co_firstlineno]


_WRAPPED_MODULE = ("module", "_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module")


def user_forward(obj: Any, rec: Recorder) -> Any:
    """The code of the user-defined ``forward`` a library wrapper module runs, or None."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    for _ in range(8):
        if not isinstance(obj, torch.nn.Module):
            return None
        code = getattr(type(obj).forward, "__code__", None)
        if code is not None and rec.is_user_file(code.co_filename):
            return code
        obj = next(
            (
                getattr(obj, n)
                for n in _WRAPPED_MODULE
                if isinstance(getattr(obj, n, None), torch.nn.Module)
            ),
            None,
        )
    return None


def root_key(code: Any, f_locals: Any, rec: Recorder) -> list[Any]:
    """The user function a root frame compiles (see the ``frame`` event)."""
    key = frame_key(code)
    if not rec.is_user_file(key[0]) and isinstance(f_locals, dict):
        forward = user_forward(f_locals.get("self"), rec)
        if forward is not None:
            return frame_key(forward)
    return key


def stack_rows(stack: Any) -> list[list[Any]]:
    rows = []
    for frame in stack or ():
        rows.append([frame.filename, frame.lineno, frame.name])
    return rows


def user_code_frames(message: str) -> list[list[Any]]:
    """Frames of the ``from user code:`` section Dynamo appends to exception messages."""
    _, _, tail = message.partition("from user code:")
    return [
        [m.group("file"), int(m.group("line")), m.group("name") or ""]
        for m in _USER_CODE_FRAME.finditer(tail)
    ]


def first_lines(text: str) -> str:
    """The first line of a message, with the next one when it ends with ':' (``raised:``)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    return lines[0]


def trim(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


# -- hooks ----------------------------------------------------------------------------------------


def install_hooks(rec: Recorder, spec: dict[str, Any]) -> None:
    """Instrument Dynamo and ``torch.compile`` before any target code is imported."""
    import logging

    import torch
    import torch._dynamo
    from torch._dynamo import output_graph, symbolic_convert

    from distlint.confirm.gb import gb_id, ids_in_message

    torch_dir = os.path.dirname(torch.__file__)
    stdlib = os.path.dirname(os.__file__)
    rec.library_dirs = (torch_dir, stdlib, os.path.dirname(__file__))
    registry = os.path.join(torch_dir, "_dynamo", "graph_break_registry.json")

    def record_break(translator: Any, reason: str, exc: BaseException, source: str) -> None:
        stack = getattr(exc, "real_stack", None)
        if not stack:
            stack = torch._guards.TracingContext.extract_stack()
        root = translator
        while root is not None and getattr(root, "parent", None) is not None:
            root = root.parent
        message = str(getattr(exc, "msg", None) or exc)
        gb_type = getattr(exc, "gb_type", None) or type(exc).__name__
        key = None
        if root is not None:
            key = getattr(root, "_distlint_root", None) or frame_key(root.f_code)
        rec.emit(
            "break",
            source=source,
            frame=key,
            gb_type=gb_type,
            gb_id=gb_id(gb_type, message, registry),
            gb_ids=ids_in_message(message),
            reason=reason.strip().splitlines()[0] if reason.strip() else gb_type,
            message=trim(message),
            frame_skipped=bool(getattr(exc, "skip_frame", False))
            or gb_type == "graph break in loop"
            or "Skipping the function" in reason
            or "Skipping the frame" in message,
            stack=stack_rows(stack),
        )
        rec.flush_lines()

    original_log = symbolic_convert.InstructionTranslatorBase.log_graph_break

    def log_graph_break(self: Any, code_options: Any, reason: str, exc: Any) -> None:
        if not getattr(exc, "logged", False):
            try:
                record_break(self, reason, exc, "tracer")
            except Exception as error:  # never let recording change what Dynamo does
                rec.emit("note", text=f"internal: could not record a break: {error!r}")
        return original_log(self, code_options, reason, exc)

    symbolic_convert.InstructionTranslatorBase.log_graph_break = log_graph_break

    class SkipHandler(logging.Handler):
        """Frame skips raised in convert_frame (not logged by the tracer)."""

        def emit(self, record: logging.LogRecord) -> None:
            exc = record.exc_info[1] if record.exc_info else None
            if exc is None or getattr(exc, "logged", False):
                return
            try:
                record_break(None, str(exc).splitlines()[0] if str(exc) else "", exc, "frame")
                exc.logged = True  # type: ignore[attr-defined]  # Dynamo's mark, read above
            except Exception as error:
                rec.emit("note", text=f"internal: could not record a skip: {error!r}")

    skip_logger = logging.getLogger("torch._dynamo.convert_frame.__graph_breaks")
    skip_logger.setLevel(logging.DEBUG)
    skip_logger.addHandler(SkipHandler(logging.DEBUG))
    skip_logger.propagate = False

    original_starts_line = symbolic_convert.InstructionTranslatorBase.starts_line

    def starts_line(self: Any, lineno: int) -> None:
        filename = self.f_code.co_filename
        if rec.is_user_file(filename):
            rec.lines[filename].add(lineno)
        return original_starts_line(self, lineno)

    symbolic_convert.InstructionTranslatorBase.starts_line = starts_line

    original_translator_init = symbolic_convert.InstructionTranslator.__init__
    roots: set[tuple[Any, ...]] = set()

    def translator_init(self: Any, *args: Any, **kwargs: Any) -> None:
        # InstructionTranslator(instructions, f_code, f_locals, ...), by position or by name
        f_code = kwargs.get("f_code", args[1] if len(args) > 1 else None)
        f_locals = kwargs.get("f_locals", args[2] if len(args) > 2 else None)
        try:
            key = root_key(f_code, f_locals, rec)
            self._distlint_root = key
            if tuple(key) not in roots:
                roots.add(tuple(key))
                rec.emit("frame", frame=key, user=rec.is_user_file(key[0]))
        except Exception as error:
            rec.emit("note", text=f"internal: could not record a frame: {error!r}")
        original_translator_init(self, *args, **kwargs)

    symbolic_convert.InstructionTranslator.__init__ = translator_init

    original_user_compiler = output_graph.OutputGraph.call_user_compiler

    def call_user_compiler(self: Any, gm: Any, example_inputs: Any) -> Any:
        try:
            ops = sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))
            root = self.root_tx
            key = getattr(root, "_distlint_root", None) or frame_key(root.f_code)
            rec.emit("graph", frame=key, ops=ops)
        except Exception as error:
            rec.emit("note", text=f"internal: could not record a graph: {error!r}")
        return original_user_compiler(self, gm, example_inputs)

    output_graph.OutputGraph.call_user_compiler = call_user_compiler

    backend = spec.get("backend") or "aot_eager"
    real_compile = torch.compile
    replaced: set[str] = set()

    def compile(model: Any = None, **kwargs: Any) -> Any:
        if backend != "keep":
            dropped = [key for key in ("mode", "options") if kwargs.get(key) is not None]
            for key in dropped:
                kwargs.pop(key)
            wanted = kwargs.get("backend") or "inductor"
            if wanted != backend and isinstance(wanted, str) and wanted not in replaced:
                replaced.add(wanted)
                rec.emit(
                    "note",
                    text=f"backend {wanted!r} replaced by {backend!r} (graph breaks do not "
                    "depend on the backend; use --confirm-backend keep to compile for real)",
                )
            kwargs["backend"] = backend
        return real_compile(model, **kwargs) if model is not None else real_compile(**kwargs)

    compile.__doc__ = real_compile.__doc__
    compile.__wrapped__ = real_compile  # type: ignore[attr-defined]
    torch.compile = compile


def is_compile_error(exc: BaseException) -> bool:
    if "torch._dynamo" not in sys.modules:
        return False  # a bare run (nothing compiled)
    from torch._dynamo.exc import TorchDynamoException

    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, TorchDynamoException):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def traceback_rows(exc: BaseException) -> list[list[Any]]:
    return [[f.filename, f.lineno, f.name] for f in traceback.extract_tb(exc.__traceback__)]


def exception_frames(exc: BaseException) -> list[list[Any]]:
    """User-code frames of an exception, innermost last: Dynamo's stack, else the traceback."""
    stack = getattr(exc, "real_stack", None)
    if stack:
        return stack_rows(stack)
    frames = user_code_frames(str(exc))
    if frames:
        return frames
    return traceback_rows(exc)


_CUDA_TEXT = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "Distributed package doesn't have NCCL",
)


def record_exception(rec: Recorder, exc: BaseException, label: str) -> None:
    message = f"{type(exc).__name__}: {exc}"
    if is_compile_error(exc):
        import torch

        from distlint.confirm.gb import gb_id, ids_in_message

        registry = os.path.join(
            os.path.dirname(torch.__file__), "_dynamo", "graph_break_registry.json"
        )
        gb_type = getattr(exc, "gb_type", None)
        text = str(exc)
        rec.emit(
            "compile_error",
            label=label,
            exc_type=type(exc).__name__,
            gb_type=gb_type,
            gb_id=gb_id(gb_type, text, registry),
            gb_ids=ids_in_message(text),
            reason=first_lines(text) or type(exc).__name__,
            message=trim(text),
            stack=exception_frames(exc),
            call_stack=traceback_rows(exc),
        )
        return
    kind = "cuda" if isinstance(exc, CudaRequested) or any(t in message for t in _CUDA_TEXT) else ""
    rec.emit(
        "raised",
        label=label,
        kind=kind,
        exc_type=type(exc).__name__,
        message=trim(message),
        stack=traceback_rows(exc),
    )


# -- targets --------------------------------------------------------------------------------------


def load_entry(entry: str) -> Any:
    """``pkg.module:function`` or ``path/to/file.py:function``."""
    import importlib
    import importlib.util

    module_part, _, attr = entry.rpartition(":")
    if not module_part or not attr:
        raise ValueError(f"entry {entry!r} must look like 'pkg.module:function'")
    if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
        path = Path(module_part).resolve()
        name = f"_distlint_confirm_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_part)
    target = module
    for part in attr.split("."):
        target = getattr(target, part)
    return target


def normalize_calls(result: Any) -> list[tuple[Any, tuple, dict]]:
    """A factory's result as (callable, args, kwargs) triples."""
    if isinstance(result, tuple) and result and callable(result[0]):
        items = [result]
    elif isinstance(result, (list, tuple)):
        items = list(result)
    else:
        items = [result]
    calls = []
    for item in items:
        if not isinstance(item, (tuple, list)) or not item or not callable(item[0]):
            raise TypeError(
                "an entry factory must return (callable, args, kwargs) or a list of them, "
                f"got {type(item).__name__}"
            )
        fn = item[0]
        args = tuple(item[1]) if len(item) > 1 and item[1] is not None else ()
        kwargs = dict(item[2]) if len(item) > 2 and item[2] is not None else {}
        calls.append((fn, args, kwargs))
    return calls


def run_entry(rec: Recorder, spec: dict[str, Any]) -> str:
    factory = load_entry(spec["entry"])
    calls = normalize_calls(factory())
    for index, (fn, args, kwargs) in enumerate(calls):
        label = f"{spec['entry']}[{index}]" if len(calls) > 1 else spec["entry"]
        started = time.monotonic()
        try:
            fn(*args, **kwargs)
        except Exception as exc:
            record_exception(rec, exc, label)
        except SystemExit as exc:  # the run stops there, as it would outside distlint
            record_exit(rec, exc, label)
            return "done"
        finally:
            rec.emit("call", label=label, seconds=round(time.monotonic() - started, 3))
            rec.flush_lines()
    return "done"


def run_script(rec: Recorder, spec: dict[str, Any]) -> str:
    import runpy

    script = str(Path(spec["script"]).resolve())
    sys.argv = [script, *spec.get("argv", [])]
    sys.path.insert(0, os.path.dirname(script))
    max_steps = spec.get("max_steps")
    if max_steps and not spec.get("bare"):
        steps = {"n": 0}

        def count_step(optimizer: Any, args: Any, kwargs: Any) -> None:
            steps["n"] += 1
            if steps["n"] >= max_steps:
                raise StopTarget(f"step limit reached ({max_steps} optimizer steps)")

        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(count_step)
    time_limit = spec.get("time_limit")
    if time_limit:

        def on_alarm(signum: int, frame: Any) -> None:
            raise StopTarget(f"time limit reached ({time_limit:g} s)")

        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(time_limit))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        record_exit(rec, exc, spec["script"])
    except Exception as exc:
        record_exception(rec, exc, spec["script"])
    finally:
        if time_limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return "done"


def warm_up() -> None:
    """Import what every target needs (the fork server does this once, before forking)."""
    import torch
    import torch._dynamo
    import torch._functorch.aot_autograd
    import torch.nn.parallel

    if torch.distributed.is_available():
        import torch.distributed.device_mesh
        import torch.distributed.fsdp
        import torch.testing._internal.distributed.fake_pg


def run_target(
    spec_path: str, out_path: str, started: float | None = None, nonce: str | None = None
) -> int:
    """Run the target described by ``spec_path``; events go to ``out_path``.

    The last event, ``end``, carries ``nonce``: the parent counts a run as complete only with
    that record and a zero exit status, so a target that writes its own ``end`` and dies is
    still a crash. A spec with ``"bare": true`` runs the target without torch (no hooks, no
    fake process group): the sandbox's own tests use it.
    """
    started = time.monotonic() if started is None else started
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    rec = Recorder(out_path)
    for path in reversed(spec.get("sys_path", [])):
        if path not in sys.path:
            sys.path.insert(0, path)
    bare = bool(spec.get("bare"))
    version = None
    if not bare:
        import torch

        install_hooks(rec, spec)
        version = torch.__version__
    rec.emit(
        "start",
        torch=version,
        pid=os.getpid(),
        ppid=os.getppid(),
        startup_seconds=round(time.monotonic() - started, 3),
    )
    if not bare:
        prepare_torch(rec, spec)
    label = spec.get("entry") or spec.get("script") or "target"
    reason = "done"
    try:
        reason = run_script(rec, spec) if spec.get("kind") == "script" else run_entry(rec, spec)
    except StopTarget as stop:
        reason = stop.reason
        rec.emit("note", text=reason)
    except SystemExit as exc:  # importing the entry's module, or its factory
        record_exit(rec, exc, label)
    except BaseException as exc:  # KeyboardInterrupt and the like raised by the target too
        record_exception(rec, exc, label)
    rec.flush_lines()
    counts: dict[str, Any] = {}
    if not bare:
        from torch._dynamo.utils import counters

        counts = {
            "graph_break_counter": sum(counters["graph_break"].values()),
            "unique_graphs": counters["stats"].get("unique_graphs", 0),
        }
    rec.emit("end", reason=reason, nonce=nonce, **counts)
    return 0


def prepare_torch(rec: Recorder, spec: dict[str, Any]) -> None:
    """CUDA mapping and the fake process group, as the spec asks."""
    import torch

    if spec.get("map_cuda_to_cpu"):
        from distlint.confirm import cudamap

        cudamap.map_cuda_to_cpu(torch)
    if spec.get("kind") == "script" or spec.get("fake_pg"):
        from distlint.confirm import fakepg

        fakepg.install(
            rank=int(spec.get("rank", 0)),
            world_size=int(spec.get("world_size", 2)),
            map_cuda=bool(spec.get("map_cuda_to_cpu")),
            note=lambda text: rec.emit("note", text=text),
            error=CudaRequested,
        )


def record_exit(rec: Recorder, exc: SystemExit, label: str) -> None:
    """The target called ``sys.exit``: its status and where (the parent words the message)."""
    code = exc.code
    rec.emit(
        "exit",
        label=label,
        code=code if code is None or isinstance(code, int) else str(code),
        stack=traceback_rows(exc),
    )


def main(argv: list[str]) -> int:
    """``python -m distlint.confirm.child SPEC OUT [NONCE]`` (by hand; distlint forks it)."""
    return run_target(argv[1], argv[2], nonce=argv[3] if len(argv) > 3 else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
