"""Generate DL504's and DL505's data from torch itself: what it deprecates, what is private.

distlint never imports torch while checking code. This script reads the installed torch and writes:

``distlint/knowledge/data/deprecated_torch.json`` (DL504 deprecated-torch-api)
    Every callable, class, attribute and module that torch marks as deprecated, found in torch's
    source (no hand-written list of names):

    * ``@deprecated`` / ``@typing_extensions.deprecated`` on a function, a class, a class's
      ``__init__`` / ``__new__`` (the class), a static or class method (``Class.method``), or a
      ``__getattribute__`` (every module-level instance of that class, e.g. ``reduce_op``);
    * ``warnings.warn(..., FutureWarning | DeprecationWarning)`` as a statement of the function's
      body itself (not inside a loop or a branch on its arguments; a branch that only skips it
      while compiling, ``if not torch.compiler.is_compiling():``, counts as unconditional);
    * a call, in the body itself, to a warning helper (``_deprecated(...)``,
      ``warn_deprecated(...)``) or to a function found above in the same module
      (``weight_norm`` calls the deprecated ``WeightNorm.apply``);
    * ``warnings.warn(..., FutureWarning | DeprecationWarning)`` at the top level of a module
      (also inside a top-level ``with``): importing the module warns.

    Instance methods and properties are left out (a linter cannot tell what ``x.method`` is),
    and so are the entries of ``EXCLUDE`` (each with its reason). ``SEEDS`` adds what torch marks
    in a way the scan above cannot see as a user-facing name (ShardedTensor, whose warning is
    issued by its methods), and ``SHIMS`` the private module paths whose public home holds the
    very same objects (they do not warn; the identity is checked here).

    Every entry is then *observed*: a subprocess triggers it on the installed torch (calls it
    with ``None`` for each required argument and enters the result when it is a context
    manager, creates one, reads the attribute, imports the module in a fresh interpreter, or
    runs the seed's code, on a single-rank gloo group) and records the first
    ``FutureWarning``/``DeprecationWarning`` it emits, category and exact message. A candidate
    that emits none is dropped (e.g. ``@deprecated`` on an ``@overload`` stub, or
    ``category=None``). Each entry keeps its trigger, so that
    ``tests/proof/test_proof_dl5xx.py`` re-observes every entry on the installed torch.

    The public spellings of an entry are found by identity: every public torch (and functorch)
    module that holds the same object. ``name`` is the shortest, ``aliases`` the rest, both as
    ``distlint.syntax.imports.canonical_name`` spells them. ``replacement`` is read from the warning
    text (``Please use `X` instead``, ``in favor of``, ``renamed to``...); where torch's
    wording does not name one, ``REPLACEMENTS`` says it (``None``: there is nothing to use
    instead, the message quotes torch). ``since`` is the first torch version with a shipped
    table in which the entry was observed; existing entries keep theirs.

``distlint/knowledge/data/private_torch_modules.json`` (DL505 private-torch-module)
    ``modules``: every module path of the installed torch whose last part is its first
    private (``_``-prefixed, not dunder) part, read from the files on disk (so
    ``from torch.utils import _pytree`` can be told from ``from torch.nn.modules.module import
    _addindent``). ``public_homes``: for the public names defined in a private module, the
    public torch module that exports the same object in its ``__all__``
    (``torch.utils.data._utils.collate.default_collate`` is ``torch.utils.data.default_collate``).

Usage (with the target torch installed, from the repository root)::

    python scripts/gen_deprecations.py          # write both files
    python scripts/gen_deprecations.py --check  # exit 1 and print a diff if either is stale
    python scripts/gen_deprecations.py --report # also list the candidates left out, and why

After a torch upgrade: run it, read the diff (new entries, entries gone, changed messages), add a
``REPLACEMENTS`` line for each new warning whose replacement is not named in backticks, and run
``pytest -m torch tests/proof/test_proof_dl5xx.py``.

The output is deterministic: sorted entries and keys, ``indent=1``, trailing newline.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO / "distlint" / "knowledge" / "data"
DEPRECATED_PATH = DATA_DIR / "deprecated_torch.json"
PRIVATE_PATH = DATA_DIR / "private_torch_modules.json"
WARNING_CATEGORIES = ("FutureWarning", "DeprecationWarning")
MARKER = "@@gen_deprecations@@"

# Trees of torch's source that are not read: tests, C++ headers, vendored code.
SKIPPED_TREES = ("torch.testing._internal", "torch.include", "torch._vendor", "torch.test")

# Candidates found by the scan that are not deprecations of an API a user calls.
EXCLUDE: dict[str, str] = {
    "torch.autograd.function.Function": (
        "the warning in Function.__init__ is about instantiating an autograd.Function "
        "subclass; subclassing Function and calling .apply is the documented API"
    ),
    "torch.nn.attention.flex_attention.flex_attention": (
        "@deprecated on an @overload stub: only return_lse=True is deprecated"
    ),
    "torch.autograd._functions.tensor.Type.forward": (
        "the forward of a private autograd.Function: torch calls it through Type.apply"
    ),
}

_DCP_STATE_DICT = "torch.distributed.checkpoint.state_dict.get_state_dict / set_state_dict"
# Replacements that the warning text does not name in a form the patterns below read. The key is
# the entry's name; None: torch names nothing to use instead.
REPLACEMENTS: dict[str, str | None] = {
    "torch.cuda.reset_max_memory_allocated": "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.reset_max_memory_cached": "torch.cuda.reset_peak_memory_stats",
    "torch.distributed._sharded_tensor": "torch.distributed.tensor",
    "torch.distributed._sharding_spec": "torch.distributed.tensor",
    "torch.distributed._symmetric_memory.enable_symm_mem_for_group": None,
    "torch.distributed.elastic.metrics.profile": "torch.distributed.elastic.metrics.prof",
    "torch.distributed.elastic.metrics.publish_metric": (
        "torch.distributed.elastic.metrics.put_metric"
    ),
    "torch.distributed.all_reduce_coalesced": "torch.distributed.all_reduce",
    "torch.distributed.all_gather_coalesced": "torch.distributed.all_gather",
    "torch.distributed.tensor._api._shard_tensor": "torch.distributed.tensor.distribute_tensor",
    "torch.fx.experimental.symbolic_shapes.guard_size_oblivious": (
        "torch.fx.experimental.symbolic_shapes.guard_or_false"
    ),
    "torch.hub._legacy_zip_load": None,
    "torch.utils.cpp_extension._get_pybind11_abi_build_flags": None,
    "torch.utils.hipify.constants": None,
    "torch.utils.data.datapipes.gen_pyi.materialize_lines": None,
    "torch.utils.data.datapipes.gen_pyi.gen_from_template": None,
    "torch.utils.data.graph.traverse": "torch.utils.data.graph.traverse_dps",
    "torch._custom_op.impl.custom_op": "torch.library.custom_op",
    "torch.nn.parallel.scatter_gather.is_namedtuple": None,
    "torch.fx.experimental.unification.multipledispatch.halt_ordering": None,
    "torch.fx.experimental.unification.multipledispatch.restart_ordering": None,
    "torch.nn.Container": "torch.nn.Module",
    "torch.jit.fork": "torch.compile",
    "torch.jit.wait": "torch.compile",
    "torch.jit.freeze": "torch.compile",
    "torch.jit.optimize_for_inference": "torch.compile",
    "torch.jit.set_fusion_strategy": "torch.compile",
    "torch.jit.interface": "torch.compile",
    "torch._custom_op.impl.CustomOp": "torch.library.custom_op",
    "torch.autograd.gradcheck.get_numerical_jacobian": None,
    "torch.autograd.gradcheck.get_analytical_jacobian": None,
    "torch.distributed.fsdp.FullyShardedDataParallel.set_state_dict_type": _DCP_STATE_DICT,
    "torch.distributed.fsdp.FullyShardedDataParallel.state_dict_type": _DCP_STATE_DICT,
    "torch.nn.modules.conv._ConvTransposeMixin": None,
    "torch.onnx._internal.exporter._dynamic_shapes.from_dynamic_axes_to_dynamic_shapes": None,
    "torch.onnx._internal.torchscript_exporter.utils.setup_onnx_logging": None,
    "torch.onnx._internal.torchscript_exporter.utils.unconvertible_ops": None,
    "torch.utils.hipify.hipify_python.is_pytorch_file": None,
    "torch.utils.hipify.hipify_python.is_cusparse_file": None,
    "torch.utils.hipify.hipify_python.is_special_file": None,
    "torch.utils.hipify.hipify_python.is_caffe2_gpu_file": None,
}
# torch.ao.quantization's eager and FX entry points share one long message that points to
# torchao: its eager-mode quantize_ API, and its pt2e API for the FX graph mode.
_TORCHAO_EAGER = "torchao.quantization.quantize_"
_TORCHAO_PT2E = "torchao.quantization.pt2e (prepare_pt2e, convert_pt2e)"

# Deprecations the scan cannot see under a user-facing name: (name, kind, code run on a
# single-rank gloo group that must emit the warning, what the rule says triggers it, reference,
# other spellings). ShardedTensor warns from its methods (``__torch_function__``, ``reshard``)
# and ``_init_from_local_tensor``, not on import: importing ``torch.distributed._shard``,
# naming ShardedTensor, building a spec or ``sharded_tensor.empty`` /
# ``init_from_local_shards`` (nothing applied to the tensor) emit nothing on torch 2.13, so the
# seeds are the public calls that do warn, each observed on its own.
_SHARD_SPEC = (
    "from torch.distributed._shard.sharding_spec import ChunkShardingSpec\n"
    "spec = ChunkShardingSpec(dim=0, placements=['rank:0/cpu'])\n"
)
_SHARDED_TENSOR_API = "torch/distributed/_shard/sharded_tensor/api.py"
_SHARDED_TENSOR_WARNS = (
    f"{_SHARDED_TENSOR_API}: @deprecated(DEPRECATE_MSG) on ShardedTensor.__torch_function__, "
    "which the initializer applied to the new tensor calls"
)


def _sharded_tensor_creator(name: str, args: str) -> dict[str, str]:
    return {
        "name": f"torch.distributed._shard.sharded_tensor.{name}",
        "kind": "function",
        "code": (
            f"{_SHARD_SPEC}from torch.distributed._shard import sharded_tensor\n"
            f"sharded_tensor.{name}(spec, {args})\n"
        ),
        "when": "calling it",
        "reference": _SHARDED_TENSOR_WARNS,
    }


def _shard_api(name: str, code: str) -> dict[str, str]:
    return {
        "name": f"torch.distributed._shard.{name}",
        "aliases": f"torch.distributed._shard.api.{name}",
        "kind": "function",
        "code": f"{_SHARD_SPEC}from torch.distributed._shard import {name}\n{code}",
        "when": "calling it",
        "reference": (
            "torch/distributed/_shard/api.py: the parameter it replaces with a ShardedTensor "
            "is read through ShardedTensor.__torch_function__ (@deprecated(DEPRECATE_MSG))"
        ),
    }


SEEDS: tuple[dict[str, str], ...] = (
    *(
        _sharded_tensor_creator(name, args)
        for name, args in (
            ("zeros", "4"),
            ("ones", "4"),
            ("full", "(4,), 1.0"),
            ("rand", "4"),
            ("randn", "4"),
        )
    ),
    {
        "name": "torch.distributed._shard.sharded_tensor.ShardedTensor._init_from_local_tensor",
        "kind": "function",
        "code": (
            f"{_SHARD_SPEC}import torch\n"
            "from torch.distributed._shard.sharded_tensor import ShardedTensor\n"
            "ShardedTensor._init_from_local_tensor(torch.zeros(4), spec, 4)\n"
        ),
        "when": "calling it",
        "reference": (
            f"{_SHARDED_TENSOR_API}: @deprecated(DEPRECATE_MSG) on "
            "ShardedTensor._init_from_local_tensor"
        ),
    },
    _shard_api(
        "shard_parameter", "import torch\nshard_parameter(torch.nn.Linear(4, 4), 'weight', spec)\n"
    ),
    _shard_api(
        "shard_module",
        "import torch\nfrom torch.distributed._shard.sharding_plan import ShardingPlan\n"
        "shard_module(torch.nn.Sequential(torch.nn.Linear(4, 4)), "
        "ShardingPlan(plan={'0.weight': spec}))\n",
    ),
)

# Private module paths whose public home holds the very same objects; they emit no warning.
SHIMS: dict[str, tuple[str, str]] = {
    "torch.distributed._composable.fsdp": (
        "torch.distributed.fsdp",
        "https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",
    ),
    "torch.distributed._tensor": (
        "torch.distributed.tensor",
        "https://docs.pytorch.org/docs/stable/distributed.tensor.html",
    ),
}

_REPLACEMENT_PATTERNS = (
    re.compile(r"[Pp]lease use `([^`]+)`"),
    re.compile(r"[Pp]lease see `([^`]+)`"),
    re.compile(r"\b[Uu]se `([^`]+)`"),
    re.compile(r"in favor of `([^`]+)`"),
    re.compile(r"renamed to `([^`]+)`"),
    re.compile(r"replaced by ``([^`]+)``"),
    re.compile(r"[Uu]se (torch\.[\w.]+)"),
    re.compile(r"[Pp]lease use ([\w.]+(?:\(\))?) instead"),
)
_HELPER_NAME = re.compile(r"warn|deprecat", re.IGNORECASE)


# -- scanning torch's source -----------------------------------------------------------------------


@dataclass
class Candidate:
    """A deprecation found in torch's source, before it is observed."""

    module: str  # the defining module
    qualname: str  # "f", "Class", "Class.method" or, for attributes, the instance's name
    kind: str  # function | class | attribute | module
    marker: str  # what in the source says so
    path: str  # torch/... relative path
    line: int
    trigger: dict[str, str] = field(default_factory=dict)

    @property
    def defined_as(self) -> str:
        return f"{self.module}.{self.qualname}" if self.qualname else self.module


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise SystemExit("torch is not installed in this interpreter")
    return Path(spec.origin).parent


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _source_files(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        if any(module == tree or module.startswith(tree + ".") for tree in SKIPPED_TREES):
            continue
        yield module, path


def _warning_category(node: ast.AST) -> str | None:
    """The category of a ``warnings.warn(msg, Category)`` call, if a deprecation one."""
    if not isinstance(node, ast.Call):
        return None
    if ast.unparse(node.func) not in ("warnings.warn", "warn"):
        return None
    category = node.args[1] if len(node.args) > 1 else None
    for keyword in node.keywords:
        if keyword.arg == "category":
            category = keyword.value
    if category is None:
        return None
    name = ast.unparse(category).rsplit(".", 1)[-1]
    return name if name in WARNING_CATEGORIES else None


def _eager_only(test: ast.expr) -> bool:
    """``not torch.compiler.is_compiling()``: true on every eager call."""
    return (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and "is_compiling" in ast.unparse(test.operand)
    )


def _body_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run on every (eager) call: the body itself, and eager-only branches."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If) and _eager_only(stmt.test):
            yield from stmt.body


def _top_warning(body: list[ast.stmt]) -> str | None:
    for stmt in _body_statements(body):
        if isinstance(stmt, ast.Expr) and _warning_category(stmt.value):
            return "warnings.warn in the body" + (
                " (eager only, not while compiling)" if stmt not in body else ""
            )
    return None


def _top_calls(body: list[ast.stmt]) -> Iterator[str]:
    """Dotted names called by the statements of the body itself (``x = f(...)``, ``f(...)``)."""
    for stmt in _body_statements(body):
        value = getattr(stmt, "value", None)
        if isinstance(stmt, (ast.Expr, ast.Assign, ast.Return)) and isinstance(value, ast.Call):
            yield ast.unparse(value.func)


def _is_deprecated_decorator(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(func).rsplit(".", 1)[-1] == "deprecated"


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(ast.unparse(func).rsplit(".", 1)[-1])
    return names


def _module_warns(tree: ast.Module) -> bool:
    statements: list[ast.stmt] = []
    for stmt in tree.body:
        statements.append(stmt)
        if isinstance(stmt, ast.With):
            statements.extend(stmt.body)
    return any(isinstance(s, ast.Expr) and _warning_category(s.value) for s in statements)


def discover(root: Path) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Deprecation candidates in torch's source, and (name, reason) for those left out."""
    found: list[Candidate] = []
    skipped: list[tuple[str, str]] = []
    for module, path in _source_files(root):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        rel = path.relative_to(root.parent).as_posix()
        if _module_warns(tree):
            found.append(Candidate(module, "", "module", "warnings.warn at import", rel, 1))
        # (qualname, node, class or None) of module-level defs and the methods of module-level
        # classes; the marked ones, then the ones that call a marked one or a helper.
        defs: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]] = []
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.append((stmt.name, stmt, None))
            elif isinstance(stmt, ast.ClassDef):
                if any(_is_deprecated_decorator(d) for d in stmt.decorator_list):
                    found.append(
                        Candidate(module, stmt.name, "class", "@deprecated", rel, stmt.lineno)
                    )
                for item in stmt.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        defs.append((f"{stmt.name}.{item.name}", item, stmt))
        marked: dict[str, str] = {}
        helpers: set[str] = set()
        for qualname, node, _ in defs:
            if "overload" in _decorator_names(node):
                continue
            if any(_is_deprecated_decorator(d) for d in node.decorator_list):
                marked[qualname] = "@deprecated"
            elif (warning := _top_warning(node.body)) is not None:
                if _HELPER_NAME.search(node.name):
                    helpers.add(qualname)
                else:
                    marked[qualname] = warning
        for qualname, node, _ in defs:
            if qualname in marked or "overload" in _decorator_names(node):
                continue
            for called in _top_calls(node.body):  # f(...) or Class.method(...) of this module
                if called in helpers:
                    marked[qualname] = f"calls the warning helper {called} in the body"
                    break
                if called in marked and called != qualname:
                    marked[qualname] = f"calls the deprecated {called} in the body"
                    break
        for qualname, node, cls in defs:
            marker = marked.get(qualname)
            if marker is None:
                continue
            candidate = _candidate(module, qualname, node, cls, marker, rel)
            if isinstance(candidate, str):
                skipped.append((f"{module}.{qualname}", candidate))
            else:
                found.append(candidate)
    return found, skipped


def _candidate(
    module: str,
    qualname: str,
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    cls: ast.ClassDef | None,
    marker: str,
    rel: str,
) -> Candidate | str:
    """The candidate for a marked def, or why a linter cannot use it."""
    if cls is None:
        return Candidate(module, qualname, "function", marker, rel, node.lineno)
    decorators = _decorator_names(node)
    if node.name in ("__init__", "__new__"):
        return Candidate(module, cls.name, "class", f"{marker} on {node.name}", rel, node.lineno)
    if node.name == "__getattribute__":
        # the instances are found when the module is imported (see _observable)
        return Candidate(module, cls.name, "attribute", f"{marker} on __getattribute__", rel, 0)
    if node.name.startswith("__"):
        return "a special method: torch calls it, not user code"
    if decorators & {"staticmethod", "classmethod"}:
        if cls.name.startswith("_") or node.name.startswith("_"):
            return "a private method of a class"
        return Candidate(module, qualname, "function", marker, rel, node.lineno)
    return "an instance method or property: what `x.name` is cannot be told statically"


# -- the observing subprocess ----------------------------------------------------------------------


def _observer() -> None:
    """Run in a subprocess: trigger each request read from stdin, print what warned."""
    import inspect
    import signal
    import warnings

    import torch
    import torch.distributed as dist

    requests = json.loads(sys.stdin.read())
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)

    def resolve(target: str) -> Any:
        module, _, qualname = target.partition(":")
        obj: Any = importlib.import_module(module)
        for part in qualname.split(".") if qualname else ():
            obj = getattr(obj, part)
        return obj

    def call(obj: Any) -> None:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            signature = None
        for param in signature.parameters.values() if signature else ():
            if param.default is not inspect.Parameter.empty:
                continue
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                args.append(None)
            elif param.kind is param.KEYWORD_ONLY:
                kwargs[param.name] = None
        result = obj(*args, **kwargs)
        if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
            with result:
                pass
        elif inspect.isgenerator(result):
            next(result, None)

    def timeout(*_: Any) -> None:
        raise TimeoutError("trigger took too long")

    signal.signal(signal.SIGALRM, timeout)
    results: dict[str, Any] = {}
    for key, trigger in requests.items():
        caught: list[tuple[str, str]] = []
        error = None
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            signal.alarm(20)
            try:
                how = trigger["how"]
                if how == "call":
                    call(resolve(trigger["target"]))
                elif how == "access":
                    getattr(resolve(trigger["target"]), "__doc__", None)
                elif how == "code":
                    exec(compile(trigger["code"], key, "exec"), {"torch": torch})
                else:
                    raise ValueError(f"unknown trigger {how}")
            except BaseException as exc:
                error = f"{type(exc).__name__}: {str(exc)[:200]}"
            finally:
                signal.alarm(0)
            for record in records:
                if issubclass(record.category, (FutureWarning, DeprecationWarning)):
                    caught.append((record.category.__name__, str(record.message)))
        results[key] = {"warnings": caught, "error": error}
    with contextlib.suppress(Exception):
        dist.destroy_process_group()
    print(MARKER + json.dumps(results))


def _import_observer(module: str) -> None:
    import warnings

    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        try:
            importlib.import_module(module)
            error = None
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
    caught = [
        (r.category.__name__, str(r.message))
        for r in records
        if issubclass(r.category, (FutureWarning, DeprecationWarning))
    ]
    print(MARKER + json.dumps({"warnings": caught, "error": error}))


def _run(args: list[str], stdin: str = "") -> Any:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("TORCH_LOGS", None)
    proc = subprocess.run(
        [sys.executable, __file__, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=900,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER) :])
    raise RuntimeError(f"observer failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def observe(triggers: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """What each trigger emits on the installed torch: {key: {"warnings": [...], "error": ...}}.

    Imports run each in a fresh interpreter (a module warns only the first time); the other
    triggers share one subprocess with a single-rank gloo process group.
    """
    results: dict[str, dict[str, Any]] = {}
    others = {k: t for k, t in triggers.items() if t["how"] != "import"}
    if others:
        results.update(_run(["--observe"], json.dumps(others)))
    for key, trigger in triggers.items():
        if trigger["how"] == "import":
            results[key] = _run(["--observe-import", trigger["target"]])
    return results


def first_warning(result: dict[str, Any]) -> tuple[str, str] | None:
    warnings = result.get("warnings") or []
    return (warnings[0][0], warnings[0][1]) if warnings else None


# -- spellings -------------------------------------------------------------------------------------


def _is_public(module: str) -> bool:
    return not any(p.startswith("_") and not p.startswith("__") for p in module.split("."))


def _spellings_index() -> dict[int, set[str]]:
    """id(object) -> every ``module.attr`` of an imported public torch/functorch module."""
    index: dict[int, set[str]] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "torch" or name.startswith(("torch.", "functorch"))):
            continue
        if not _is_public(name):
            continue
        for attr, value in list(vars(module).items()):
            if not attr.startswith("__"):
                index.setdefault(id(value), set()).add(f"{name}.{attr}")
    return index


def _canonical(name: str) -> str:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from distlint.syntax.imports import canonical_name

    return canonical_name(name)


def _spell(candidate: Candidate, obj: Any, index: dict[int, set[str]]) -> list[str]:
    """The spellings of ``obj``: its definition and every public module holding it."""
    spellings = {candidate.defined_as}
    if "." in candidate.qualname and candidate.kind == "function":
        owner, method = candidate.qualname.rsplit(".", 1)
        cls = getattr(importlib.import_module(candidate.module), owner)
        spellings |= {f"{s}.{method}" for s in index.get(id(cls), ())}
    else:
        spellings |= index.get(id(obj), set())
    return sorted({_canonical(s) for s in spellings})


def _choose_name(spellings: list[str], previous: set[str], defined_in: str) -> str:
    """The name an entry is listed under: the one it had, else its most natural spelling.

    A re-export by a package above the definition (``torch.nn.NLLLoss2d``) before other modules
    that import it (``torch.quantization.prepare`` for ``torch.ao.quantization``), public
    before private, then the shortest.
    """
    for spelling in spellings:
        if spelling in previous:
            return spelling

    def rank(s: str) -> tuple[int, int, int, int, str]:
        module, _, attr = s.rpartition(".")
        above = defined_in == module or defined_in.startswith(module + ".")
        package = hasattr(sys.modules.get(module), "__path__")
        return (
            0 if _is_public(module) and (above or package) else 1,
            0 if above else 1,
            1 if attr.startswith("_") else 0,
            s.count("."),
            s,
        )

    return min(spellings, key=rank)


# -- building the tables ---------------------------------------------------------------------------


def replacement_for(name: str, message: str) -> tuple[str | None, bool]:
    """(replacement, whether it was found); REPLACEMENTS first, then the warning text.

    A name the warning gives relative to the entry (``load`` for
    ``torch.distributed.checkpoint.load_state_dict``) is qualified where it resolves.
    """
    if name in REPLACEMENTS:
        return REPLACEMENTS[name], True
    if "we are deprecating ShardedTensor" in message:  # "Please use DTensor instead"
        return "torch.distributed.tensor", True
    if "torch.ao.quantization is deprecated" in message:
        return (_TORCHAO_PT2E if name.endswith("_fx") else _TORCHAO_EAGER), True
    for pattern in _REPLACEMENT_PATTERNS:
        match = pattern.search(message)
        if match:
            found = match.group(1).rstrip(".")
            if re.fullmatch(r"[\w.]+\(\)", found):
                found = found[:-2]  # `torch.testing.assert_close()`
            return _qualify(name, found), True
    return None, False


def _qualify(name: str, replacement: str) -> str:
    if not re.fullmatch(r"[\w.]+", replacement):
        return replacement  # an expression: torch.amp.autocast('cuda', args...)
    if replacement.startswith(("torch.", "functorch.")):
        return _canonical(replacement)
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        candidate = ".".join([*parts[:end], replacement])
        if _lookup(candidate) is not None:
            return _canonical(candidate)
    return replacement


def _lookup(dotted: str) -> Any:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:end]))
        except Exception:
            continue
        try:
            for part in parts[end:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        return obj
    return None


_WHEN = {"function": "calling it", "class": "creating one", "attribute": "using it"}


def _observable(candidates: list[Candidate]) -> list[Candidate]:
    """Give each candidate its trigger; attribute candidates become one per instance."""
    out: list[Candidate] = []
    for candidate in candidates:
        if candidate.kind == "module":
            candidate.trigger = {"how": "import", "target": candidate.module}
            out.append(candidate)
        elif candidate.kind == "attribute":
            module = importlib.import_module(candidate.module)
            cls = getattr(module, candidate.qualname)
            for attr, value in sorted(vars(module).items()):
                if type(value) is cls:
                    out.append(
                        Candidate(
                            candidate.module,
                            attr,
                            "attribute",
                            f"{candidate.marker} of {candidate.qualname}",
                            candidate.path,
                            candidate.line,
                            {"how": "access", "target": f"{candidate.module}:{attr}"},
                        )
                    )
        else:
            candidate.trigger = {
                "how": "call",
                "target": f"{candidate.module}:{candidate.qualname}",
            }
            out.append(candidate)
    return out


def _previous_entries() -> dict[str, dict[str, Any]]:
    if not DEPRECATED_PATH.exists():
        return {}
    return {e["name"]: e for e in json.loads(DEPRECATED_PATH.read_text("utf-8"))["entries"]}


def _marker_key(entry: dict[str, Any]) -> str | None:
    """The entry's deprecation marker as the torch tables' ``deprecation_markers`` spell it."""
    trigger = entry["trigger"]
    target = trigger.get("target", "")
    if trigger.get("how") == "call" and ":" in target:
        module, qualname = target.split(":", 1)
        return f"{entry['kind']}:{module}.{qualname}"
    if trigger.get("how") == "import":
        return f"module:{target}"
    return None  # a seed, a shim, or an instance whose class carries the marker


def _holds(entry: dict[str, Any], table: dict[str, Any], observed: dict[str, Any]) -> bool | None:
    """Whether a release (its torch table) has what the entry reports; None: cannot tell.
    ``observed``: the table of the release the entry was observed on."""
    key = _marker_key(entry)
    if key is not None:
        return key in table.get("deprecation_markers", ())
    if entry["trigger"].get("how") == "shim":
        # the names the private module shares with its public home on the observed release
        # (the very same objects there) are all exported by the public module on this one
        private, public = entry["name"], entry["replacement"]
        exports, seen = table.get("module_exports", {}), observed.get("module_exports", {})
        if private not in exports or public not in exports:
            return False
        shared = set(seen.get(private, ())) & set(seen.get(public, ()))
        return bool(shared) and shared & set(exports[private]) <= set(exports[public])
    return None


def date_entries(entries: list[dict[str, Any]], observed_on: str) -> None:
    """Set each entry's ``since``: the oldest shipped torch table from which on, through the
    torch it was observed on, torch's source marks it (``deprecation_markers``; for a shim,
    the public module exports the names they share on the observed release). The oldest table
    means "that release or earlier". Entries whose marker the tables cannot show keep theirs."""
    for folder in (REPO, REPO / "scripts"):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    from gen_torch_tables import shipped_tables

    from distlint.knowledge.torch_tables import version_key

    tables = shipped_tables()
    newest_first = [v for v in reversed(tables) if version_key(v) <= version_key(observed_on)]
    if not newest_first or newest_first[0] != observed_on:
        return  # no table of the observed release: nothing to date against
    observed = tables[observed_on]
    for entry in entries:
        if _holds(entry, observed, observed) is None:
            continue  # a seed or an instance: the tables cannot show it
        since = observed_on  # also when even the observed release's scan misses it
        for version in newest_first:
            if not _holds(entry, tables[version], observed):
                break
            since = version
        entry["since"] = since


def build_comment() -> str:
    return (
        "Generated by scripts/gen_deprecations.py from the installed torch; do not edit. "
        "DL504 deprecated-torch-api. name/aliases: the public spellings (see "
        "distlint.syntax.imports.canonical_name). kind: function (calls and references), class "
        "(calls, subclassing, references outside annotations and isinstance checks), "
        "attribute (any reference), module (imports of it or a submodule, and attribute "
        "chains through it). when: what emits the warning. category/message: the exact "
        "warning torch emitted when the generator ran trigger (null for a private path "
        "that does not warn; note says what was checked instead). since: the oldest torch "
        "release of the shipped torch tables from which on torch's source marks it (the "
        "oldest table: that release or earlier); the rule is silent for a project whose "
        "lowest torch is older."
    )


def build_deprecated(report: list[str] | None = None) -> dict[str, Any]:
    import torch

    version = torch.__version__.split("+")[0]
    major_minor = ".".join(version.split(".")[:2])
    root = torch_root()
    candidates, skipped = discover(root)
    kept = []
    for candidate in candidates:
        if candidate.defined_as in EXCLUDE:
            skipped.append((candidate.defined_as, EXCLUDE[candidate.defined_as]))
            continue
        kept.append(candidate)
    candidates = _observable(kept)
    triggers = {c.defined_as: c.trigger for c in candidates}
    for seed in SEEDS:
        triggers[seed["name"]] = {"how": "code", "code": seed["code"]}
    observed = observe(triggers)

    previous = _previous_entries()
    previous_names = set(previous)
    index = _spellings_index_after_imports(candidates)
    entries: list[dict[str, Any]] = []
    missing_replacement = []
    for candidate in candidates:
        warning = first_warning(observed[candidate.defined_as])
        if warning is None:
            skipped.append(
                (candidate.defined_as, f"no warning observed ({observed[candidate.defined_as]})")
            )
            continue
        obj = _resolve(candidate) if candidate.kind != "module" else None
        spellings = _spell(candidate, obj, index) if obj is not None else [candidate.defined_as]
        name = _choose_name(spellings, previous_names, candidate.module)
        replacement, known = replacement_for(name, warning[1])
        if not known:
            missing_replacement.append(f"{name}: {warning[1]}")
        marker = candidate.marker + (f" on {candidate.qualname}" if candidate.qualname else "")
        entries.append(
            {
                "name": name,
                "aliases": [s for s in spellings if s != name],
                "kind": candidate.kind,
                "when": "importing it" if candidate.kind == "module" else _WHEN[candidate.kind],
                "replacement": replacement,
                "since": previous.get(name, {}).get("since", major_minor),
                "category": warning[0],
                "message": warning[1],
                "trigger": candidate.trigger,
                "reference": f"{candidate.path}"
                + (f":{candidate.line}" if candidate.line else "")
                + f" (torch {version}), {marker}",
            }
        )
    for seed in SEEDS:
        warning = first_warning(observed[seed["name"]])
        if warning is None:
            raise SystemExit(f"seed {seed['name']} no longer warns: {observed[seed['name']]}")
        replacement, _ = replacement_for(seed["name"], warning[1])
        entries.append(
            {
                "name": seed["name"],
                "aliases": [seed["aliases"]] if "aliases" in seed else [],
                "kind": seed["kind"],
                "when": seed["when"],
                "replacement": replacement,
                "since": previous.get(seed["name"], {}).get("since", major_minor),
                "category": warning[0],
                "message": warning[1],
                "trigger": {"how": "code", "code": seed["code"]},
                "reference": f"{seed['reference']} (torch {version})",
            }
        )
    for private, (public, reference) in SHIMS.items():
        entries.append(_shim_entry(private, public, reference, previous, major_minor, version))
    if missing_replacement:
        raise SystemExit(
            "no replacement found in these warnings; add them to REPLACEMENTS:\n  "
            + "\n  ".join(missing_replacement)
        )
    date_entries(entries, major_minor)
    lost = sorted(set(previous) - {e["name"] for e in entries})
    if report is not None:
        report.extend(f"left out: {name}: {reason}" for name, reason in sorted(skipped))
        report.extend(f"no longer found: {name}" for name in lost)
    return {
        "_comment": build_comment(),
        "torch_version": version,
        "entries": sorted(entries, key=lambda e: e["name"]),
    }


def _resolve(candidate: Candidate) -> Any:
    try:
        obj: Any = importlib.import_module(candidate.module)
        for part in candidate.qualname.split(".") if candidate.qualname else ():
            obj = getattr(obj, part)
        return obj
    except Exception:
        return None


def _spellings_index_after_imports(candidates: list[Candidate]) -> dict[int, set[str]]:
    import torch.distributed.checkpoint
    import torch.distributed.fsdp
    import torch.distributed.nn  # noqa: F401

    for module in sorted({c.module for c in candidates if c.kind != "module"}):
        try:
            importlib.import_module(module)
        except Exception:
            continue
    with contextlib.suppress(ImportError):
        import functorch  # noqa: F401 - functorch.vmap & co. are spellings of torch objects
    return _spellings_index()


def _shim_entry(
    private: str,
    public: str,
    reference: str,
    previous: dict[str, dict[str, Any]],
    major_minor: str,
    version: str,
) -> dict[str, Any]:
    """A private path whose public names are the very objects of its public home."""
    private_module = importlib.import_module(private)
    public_module = importlib.import_module(public)
    names = sorted(
        n
        for n in getattr(private_module, "__all__", dir(private_module))
        if not n.startswith("_") and hasattr(public_module, n)
    )
    different = [n for n in names if getattr(private_module, n) is not getattr(public_module, n)]
    if not names or different:
        raise SystemExit(f"{private} is no longer a shim of {public}: {different or 'no names'}")
    return {
        "name": private,
        "aliases": [],
        "kind": "module",
        "when": None,
        "replacement": public,
        "since": previous.get(private, {}).get("since", major_minor),
        "category": None,
        "message": None,
        "note": (
            f"private path, no warning: {', '.join(f'{private}.{n}' for n in names[:4])}"
            + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            + f" are the very objects of {public} (checked by the generator on torch {version})"
        ),
        "trigger": {"how": "shim", "target": f"{private}:{public}"},
        "reference": reference,
    }


def build_private(root: Path) -> dict[str, Any]:
    """The first private module paths of torch and the public homes of their public names."""
    import torch

    modules: set[str] = set()
    every: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        every.add(module)
        parts = module.split(".")
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                modules.add(".".join(parts[: i + 1]))
                break
    # torch._C's submodules are extension modules, not files; the rule never reports torch._C.
    for name in sorted(modules):  # so that their public names can be looked for
        if not name.startswith(SKIPPED_TREES):
            with contextlib.suppress(Exception):
                importlib.import_module(name)
    homes: dict[str, dict[str, str]] = {}
    index = _spellings_index_for_homes()
    for name in sorted(m for m in every if not _is_public(m)):
        if name.startswith(SKIPPED_TREES):
            continue
        module = sys.modules.get(name)
        if module is None:
            continue
        found: dict[str, str] = {}
        for attr, value in sorted(vars(module).items()):
            # a torch object (torch often sets __module__ to the public home), not a module
            owner = getattr(value, "__module__", None)
            if attr.startswith("_") or not isinstance(owner, str) or not owner.startswith("torch"):
                continue
            if type(value) is type(sys):
                continue
            public = sorted(
                (s.count("."), s.rsplit(".", 1)[0])
                for s in index.get(id(value), ())
                if s.rsplit(".", 1)[1] == attr and _exports(s.rsplit(".", 1)[0], attr)
            )
            if public:
                found[attr] = public[0][1]
        if found:
            homes[name] = found
    return {
        "_comment": (
            "Generated by scripts/gen_deprecations.py from the installed torch; do not edit. "
            "DL505 private-torch-module. modules: every module path of this torch whose last "
            "part is its first _-prefixed part (read from the files on disk). public_homes: "
            "for a private module (already imported by `import torch` and the public packages), "
            "its public names that a public torch module exports (in its __all__) as the very "
            "same object, and that module."
        ),
        "torch_version": torch.__version__.split("+")[0],
        "modules": sorted(modules),
        "public_homes": homes,
    }


def _exports(module: str, attr: str) -> bool:
    """Whether a public torch module lists ``attr`` in its ``__all__`` (a real public home,
    not a module that imports the object for its own use)."""
    return module.startswith("torch") and attr in getattr(sys.modules.get(module), "__all__", ())


def _spellings_index_for_homes() -> dict[int, set[str]]:
    import torch.distributed.checkpoint
    import torch.distributed.fsdp
    import torch.distributed.tensor
    import torch.export
    import torch.utils.data  # noqa: F401

    return _spellings_index()


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a shipped file is stale")
    parser.add_argument("--report", action="store_true", help="list what was left out and why")
    parser.add_argument(
        "--redate",
        action="store_true",
        help="only set each entry's since from the shipped torch tables (no torch needed)",
    )
    parser.add_argument("--observe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--observe-import", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.observe:
        _observer()
        return 0
    if args.observe_import:
        _import_observer(args.observe_import)
        return 0

    if args.redate:
        data = json.loads(DEPRECATED_PATH.read_text(encoding="utf-8"))
        date_entries(data["entries"], ".".join(data["torch_version"].split(".")[:2]))
        data["_comment"] = build_comment()
        DEPRECATED_PATH.write_text(render(data), encoding="utf-8")
        print(f"wrote {DEPRECATED_PATH.relative_to(REPO)}")
        return 0

    report: list[str] = []
    outputs = {
        DEPRECATED_PATH: render(build_deprecated(report)),
        PRIVATE_PATH: render(build_private(torch_root())),
    }
    if args.report:
        print("\n".join(report))
    stale = 0
    for path, text in outputs.items():
        if args.check:
            old = path.read_text(encoding="utf-8") if path.exists() else ""
            if old != text:
                stale += 1
                sys.stdout.writelines(
                    difflib.unified_diff(
                        old.splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        fromfile=f"{path} (shipped)",
                        tofile=f"{path} (installed torch)",
                    )
                )
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(REPO)}")
    if stale:
        print("\nstale: run python scripts/gen_deprecations.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
