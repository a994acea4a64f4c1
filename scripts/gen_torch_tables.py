"""Generate ``distlint/knowledge/data/torch-tables.json``: facts about torch releases as data.

distlint never imports torch while checking code. Everything a rule needs to know about a torch
release (valid ``torch.compile`` backends, modes and ``options``, the names in
``torch._dynamo.config`` / ``torch._inductor.config``, the exact error messages, and the
parameters of the public APIs training code calls) is read from a real torch by this script
and stored as JSON; ``distlint.knowledge.torch_tables`` loads it.

Tables (one set per torch ``major.minor``): ``compile_backends``, ``compile_modes``,
``inductor_options``, ``inductor_option_check`` (how torch checks an option's value:
``isinstance`` against its declared type, or on 2.4 ``exact``, ``type(value) is
type(default)``), ``dynamo_config``, ``inductor_config``, ``config_aliases``,
``config_deprecated``, ``compile_checks`` (DL502, DL503), ``signatures`` /
``signature_aliases`` (DL501): for each API in ``SIGNATURE_APIS`` (keyed by the canonical name
``distlint.syntax.imports.canonical_name`` gives), the names it accepts as keywords, its
positional-only parameters, whether it takes ``*args`` / ``**kwargs``, and the name Python
puts in its ``TypeError`` (``compile``, ``DistributedDataParallel.__init__``). Other spellings of
the same object (``torch.utils.data.dataloader.DataLoader``) map to the canonical name in
``signature_aliases``. APIs missing from a torch release, or implemented in C++ without an
introspectable signature, are left out. For DL504: ``api_names`` (which of the deprecated
names, their replacements and the drop-in replacements the release has), ``module_exports``
(the public names of the private shim modules and their public homes) and
``deprecation_markers`` (every deprecation marker in the release's source, found by
``scripts/gen_deprecations.py``'s scan, which reads the files and runs nothing; it dates each
DL504 entry, ``since``).

All releases' tables live in one merged file (see ``merge``): eleven releases cost about a
sixth of eleven copies. ``distlint.knowledge.torch_tables.expand`` gives one release's table
back, exactly as ``build`` made it.

Usage (with the target torch importable, from anywhere)::

    python scripts/gen_torch_tables.py                  # add/update this torch's table
    python scripts/gen_torch_tables.py --check          # exit 1 with a diff if it is stale
    python scripts/gen_torch_tables.py --json-out FILE  # write this torch's table to FILE
    python scripts/gen_torch_tables.py --add FILE...    # merge tables written by --json-out

Adding another torch version:

1. Make that torch importable in a throwaway environment. A CPU wheel is enough; a CUDA wheel
   (what PyPI serves) imports on a machine without a GPU once its ``nvidia-*`` requirements
   are installed too (``pip install --target`` them, no need for triton); the wheel can be
   unzipped instead of installed and put first on ``PYTHONPATH``, with this checkout's
   interpreter and its libcst.
2. Unset ``TORCHINDUCTOR_*`` / ``TORCHDYNAMO_*`` / ``TORCH_COMPILE_*`` variables (they can change
   config defaults) and run ``python scripts/gen_torch_tables.py --json-out FILE`` with it;
   then ``--add FILE`` (or run without ``--json-out`` to merge directly).
3. Read the new table's ``compile_checks`` section: its messages are captured live from torch,
   but its ``raised_at`` / ``condition`` notes were read from torch 2.13's source
   (``torch/__init__.py`` ``compile`` and ``_TorchCompileInductorWrapper``,
   ``torch/_dynamo/backends/registry.py``); re-read them and update ``COMPILE_NOTES`` below if
   they changed. Then run the proof tests
   (``pytest -m torch tests/knowledge/test_torch_tables.py``) under that torch; they check the
   recorded facts against the real behaviour.
4. If the release added or moved a public API that training code calls, add its names to
   ``SIGNATURE_APIS`` (canonical spelling first, then its other public spellings).
5. Run ``python scripts/gen_deprecations.py --redate`` (DL504's ``since`` from the markers) and
   commit both files. ``load_table(None)`` picks the newest version automatically.

The output is deterministic: sorted keys and lists, one line per list item and per mapping key,
trailing newline.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import typing
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO / "distlint" / "knowledge" / "data"
MERGED_PATH = DATA_DIR / "torch-tables.json"
_SENTINEL = "distlint_sentinel_xyz"

# Facts read from torch's source and proven by tests/knowledge/test_torch_tables.py
# (marker ``torch``).
COMPILE_NOTES: dict[str, Any] = {
    "raised_at": {
        "compile": (
            "raised by the torch.compile(model, ...) / nn.Module.compile(...) call itself, before "
            "anything runs (also with disable=True); with the decorator-factory form "
            "torch.compile(...) without a model, the check is deferred until the returned "
            "decorator is applied to a function (i.e. at its `def` for @torch.compile(...))"
        ),
        "first_call": "raised when the compiled callable is first called (frame compilation)",
    },
    "validating_backends": ["inductor"],
    "non_validating_backends": (
        "only backend == 'inductor' (exact string; also the default when backend is omitted) "
        "validates mode= and options= at the compile call. Every other backend receives "
        "mode=/options= as keyword arguments at first call; eager, aot_eager* and cudagraphs log "
        "'<backend> ignoring extra kwargs {...}' and run normally, other backends may fail then"
    ),
    "backend_lookup": {
        "case_sensitive": True,
        "how": (
            "exact dict lookup of the string in torch._dynamo.backends.registry._BACKENDS; on a "
            "miss, all torch._dynamo.backends submodules are imported and entry points are "
            "discovered once, then looked up again; no case folding or other normalisation, so "
            "'Inductor' and 'EAGER' raise InvalidBackend"
        ),
        "entry_point_group": "torch_dynamo_backends",
        "third_party": (
            "a package registers a backend string through an importlib.metadata entry point in "
            "group 'torch_dynamo_backends' (name = backend string, value = module:function, "
            "loaded lazily on first use), or code calls torch._dynamo.register_backend(fn, "
            "name=...) / decorates with @register_backend before torch.compile runs; such names "
            "are valid but are not in compile_backends"
        ),
        "default_backend": (
            "'inductor'; torch._dynamo.backends.registry.set_default_backend(...) changes the "
            "backend used when backend= is omitted"
        ),
    },
    "mode": {
        "default_values": [None, "", "default"],
        "note": "mode=None, '' and 'default' apply no options; other strings must be a key of "
        "compile_modes (inductor only)",
    },
    "options": {
        "key_normalization": "key.replace('-', '_') before lookup; messages show the key as given",
        "popped_keys": ["guard_filter_fn", "use_aoti"],
        "popped_note": (
            "torch.compile removes these keys from the options dict (mutating it) for every "
            "backend before validation, so they are always accepted"
        ),
        "alias_configs_rejected": (
            "inductor config names that are aliases (see config_aliases) are valid attributes but "
            "NOT valid options keys"
        ),
        "types": {
            "bool/int/float/str/NoneType/list/tuple/dict/...": (
                "isinstance(value, T): True/False are accepted where int is expected; an int is "
                "NOT accepted for float; NoneType accepts only None (options whose default is "
                "None and that have no annotation)"
            ),
            "any": "not checked by torch (generic, Union/Optional, Literal, Callable annotations)",
            "never": "torch's check itself raises TypeError for every value (broken annotation)",
        },
    },
}


# Public APIs whose keyword arguments DL501 checks. Within one entry, the first name is the
# canonical one (what ``distlint.syntax.imports.canonical_name`` makes of any spelling); the
# others are
# further public spellings of the same object. Names a torch release lacks are skipped.
SIGNATURE_APIS: tuple[tuple[str, ...], ...] = (
    # torch.compile and friends
    ("torch.compile",),
    ("torch.compiler.disable",),
    ("torch._dynamo.disable",),
    ("torch.compiler.cudagraph_mark_step_begin",),
    ("torch._dynamo.mark_dynamic",),
    ("torch._dynamo.mark_static",),
    ("torch._dynamo.reset", "torch.compiler.reset"),
    # process groups
    ("torch.distributed.init_process_group",),
    ("torch.distributed.destroy_process_group",),
    ("torch.distributed.new_group",),
    ("torch.distributed.new_subgroups",),
    ("torch.distributed.split_group",),
    ("torch.distributed.is_initialized",),
    ("torch.distributed.get_rank",),
    ("torch.distributed.get_world_size",),
    ("torch.distributed.get_backend",),
    ("torch.distributed.get_global_rank",),
    ("torch.distributed.set_debug_level",),
    ("torch.distributed.device_mesh.init_device_mesh", "torch.distributed.init_device_mesh"),
    # collectives
    ("torch.distributed.barrier",),
    ("torch.distributed.monitored_barrier",),
    ("torch.distributed.all_reduce",),
    ("torch.distributed.all_gather",),
    ("torch.distributed.all_gather_into_tensor",),
    ("torch.distributed.all_gather_single",),
    ("torch.distributed.all_gather_object",),
    ("torch.distributed.reduce",),
    ("torch.distributed.reduce_scatter",),
    ("torch.distributed.reduce_scatter_tensor",),
    ("torch.distributed.reduce_scatter_single",),
    ("torch.distributed.all_to_all",),
    ("torch.distributed.all_to_all_single",),
    ("torch.distributed.broadcast",),
    ("torch.distributed.broadcast_object_list",),
    ("torch.distributed.gather",),
    ("torch.distributed.gather_object",),
    ("torch.distributed.scatter",),
    ("torch.distributed.scatter_object_list",),
    ("torch.distributed.send",),
    ("torch.distributed.recv",),
    ("torch.distributed.isend",),
    ("torch.distributed.irecv",),
    ("torch.distributed.batch_isend_irecv",),
    ("torch.distributed.P2POp",),
    ("torch.distributed._all_gather_base",),
    ("torch.distributed._reduce_scatter_base",),
    ("torch.distributed._functional_collectives.all_reduce",),
    ("torch.distributed._functional_collectives.all_gather_tensor",),
    ("torch.distributed._functional_collectives.all_gather_single",),
    ("torch.distributed._functional_collectives.reduce_scatter_tensor",),
    ("torch.distributed._functional_collectives.reduce_scatter_single",),
    ("torch.distributed._functional_collectives.all_to_all_single",),
    ("torch.distributed._functional_collectives.broadcast",),
    ("torch.distributed._functional_collectives.wait_tensor",),
    # wrappers
    ("torch.nn.parallel.DistributedDataParallel",),
    (
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    ),
    ("torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard"),
    ("torch.distributed.fsdp.MixedPrecision",),
    ("torch.distributed.fsdp.MixedPrecisionPolicy",),
    ("torch.distributed.fsdp.CPUOffload",),
    ("torch.distributed.fsdp.CPUOffloadPolicy",),
    ("torch.distributed.optim.ZeroRedundancyOptimizer",),
    # checkpointing
    ("torch.utils.checkpoint.checkpoint",),
    ("torch.utils.checkpoint.checkpoint_sequential",),
    ("torch.distributed.checkpoint.save",),
    ("torch.distributed.checkpoint.load",),
    # custom ops
    ("torch.library.custom_op",),
    ("torch.library.triton_op",),
    ("torch.library.register_fake",),
    ("torch.library.register_autograd",),
    ("torch.library.register_kernel",),
    ("torch.library.define",),
    ("torch.library.impl",),
    ("torch.library.impl_abstract",),
    ("torch.library.opcheck",),
    ("torch.library.Library",),
    # CUDA graphs (Python classes and functions; the C++ CUDAGraph is not introspectable)
    ("torch.cuda.graph", "torch.cuda.graphs.graph"),
    ("torch.cuda.make_graphed_callables", "torch.cuda.graphs.make_graphed_callables"),
    # data, mixed precision, optimisation
    ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"),
    (
        "torch.utils.data.distributed.DistributedSampler",
        "torch.utils.data.DistributedSampler",
    ),
    ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"),
    ("torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"),
    ("torch.cuda.amp.GradScaler",),
    ("torch.nn.utils.clip_grad_norm_",),
    ("torch.optim.SGD",),
    ("torch.optim.Adam",),
    ("torch.optim.AdamW",),
)


def _torch_version(torch: Any) -> str:
    return str(torch.__version__).split("+")[0]


def _error(fn: Any) -> tuple[str, str]:
    """Run fn, which must raise; return (exception type name, message)."""
    try:
        fn()
    except Exception as e:
        cls = type(e)
        module = "" if cls.__module__ == "builtins" else f"{cls.__module__}."
        return module + cls.__qualname__, str(e)
    raise AssertionError(f"{fn} did not raise")


def _option_type(value_type: Any) -> str:
    """How _TorchCompileInductorWrapper.apply_options checks a value for this config type."""
    if typing.get_origin(value_type) is not None:
        return "any"  # torch skips subscripted generics / unions
    try:
        isinstance(None, value_type)
    except TypeError:
        return "never"
    return _type_name(value_type)


def _compile_errors(torch: Any) -> dict[str, Any]:
    from torch._inductor import config as inductor_config

    def ident(x: Any) -> Any:
        return x

    known = repr(list(inductor_config.get_config_copy().keys()))
    errors: dict[str, Any] = {}

    exc, msg = _error(lambda: torch.compile(ident, backend=_SENTINEL))
    errors["unknown_backend"] = {
        "exception": exc,
        "message": msg.replace(repr(_SENTINEL), "{name!r}"),
        "raised_at": "compile",
        "backends": "any string backend",
        "condition": "backend string not registered (in-tree, entry point or register_backend)",
    }
    exc, msg = _error(lambda: torch.compile(ident, mode=_SENTINEL))
    errors["unknown_mode"] = {
        "exception": exc,
        "message": msg.replace(_SENTINEL, "{mode}"),
        "raised_at": "compile",
        "backends": ["inductor"],
        "condition": "mode is truthy, != 'default' and not a key of compile_modes",
    }
    exc, msg = _error(lambda: torch.compile(ident, mode="default", options={}))
    errors["mode_and_options"] = {
        "exception": exc,
        "message": msg,
        "raised_at": "compile",
        "backends": "any backend",
        "condition": "mode is not None and options is not None (even mode='default', options={})",
    }
    exc, msg = _error(lambda: torch.compile(ident, options={_SENTINEL: 1}))
    errors["unknown_option"] = {
        "exception": exc,
        "message": msg.replace(_SENTINEL, "{key}").replace(known, "{known}"),
        "raised_at": "compile",
        "backends": ["inductor"],
        "condition": "key (dashes -> underscores) not in inductor_options",
    }
    exc, msg = _error(lambda: torch.compile(ident, options={"max_autotune": 1}))
    errors["option_type"] = {
        "exception": exc,
        "message": msg.replace("max_autotune", "{key}")
        .replace("got int", "got {got}")
        .replace("should be bool", "should be {expected}"),
        "raised_at": "compile",
        "backends": ["inductor"],
        "condition": "not isinstance(value, T) for an inductor_options type T (see options.types)",
    }
    never = sorted(k for k, v in _inductor_options(inductor_config).items() if v == "never")
    if never:
        exc, msg = _error(lambda: torch.compile(ident, options={never[0]: None}))
        errors["option_type_never"] = {
            "exception": exc,
            "message": msg,
            "raised_at": "compile",
            "backends": ["inductor"],
            "condition": "any value for an option whose type is 'never'",
        }
    return errors


def _popped_keys(torch: Any) -> list[str]:
    """The keys of COMPILE_NOTES' ``popped_keys`` that this torch's ``torch.compile`` really
    pops from ``options`` (read from its source; older releases pop none)."""
    import inspect

    source = inspect.getsource(torch.compile)
    return [k for k in COMPILE_NOTES["options"]["popped_keys"] if f'pop("{k}"' in source]


def _option_check(inductor_config: Any) -> str:
    """How torch.compile checks an ``options`` value: ``isinstance`` against the config's
    declared type (``get_type``), or, before torch had it (2.4), ``exact``: ``type(value) is
    type(default)`` (``True`` is then rejected where an int is expected)."""
    return "isinstance" if hasattr(type(inductor_config), "get_type") else "exact"


def _inductor_options(inductor_config: Any) -> dict[str, str]:
    names = inductor_config.get_config_copy()
    if _option_check(inductor_config) == "exact":
        return {name: _type_name(type(value)) for name, value in names.items()}
    return {name: _option_type(inductor_config.get_type(name)) for name in names}


def _type_name(value_type: type) -> str:
    if value_type.__module__ == "builtins":
        return value_type.__name__
    return f"{value_type.__module__}.{value_type.__qualname__}"


def _config_facts(module: Any, prefix: str) -> tuple[list[str], dict[str, str], list[str]]:
    # name -> _ConfigEntry (name -> value before torch 2.6, without aliases or deprecations);
    # the only names __setattr__ accepts
    entries = module._config
    names = sorted(entries)
    aliases = {f"{prefix}.{n}": a for n, e in entries.items() if (a := getattr(e, "alias", None))}
    deprecated = sorted(
        f"{prefix}.{n}" for n, e in entries.items() if getattr(e, "deprecated", False)
    )
    return names, aliases, deprecated


def _lookup(dotted: str) -> Any:
    """The object a dotted public name refers to, or None if this torch lacks it."""
    import importlib

    module_name, _, attr = dotted.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attr, None)


def _signature_entry(obj: Any) -> dict[str, Any] | None:
    """Keyword facts about one callable, or None if its signature cannot be read.

    For a class, Python binds the call against ``__new__`` when the class overrides it (its
    TypeError names ``Cls.__new__``), else against ``__init__``. A ``functools.singledispatch``
    function accepts the keywords of any registered implementation.
    """
    import inspect

    is_class = inspect.isclass(obj)
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    if is_class:
        overrides_new = obj.__new__ is not object.__new__ and inspect.isfunction(
            inspect.unwrap(obj.__new__)
        )
        target = inspect.unwrap(obj.__new__ if overrides_new else obj.__init__)
    else:
        target = inspect.unwrap(obj)
    error_name = getattr(target, "__qualname__", None)
    if not error_name or "<locals>" in error_name:
        return None  # a dummy or generated callable (e.g. C++ types on a CPU-only build)
    signatures = [signature]
    for impl in getattr(obj, "registry", {}).values() if hasattr(obj, "dispatch") else ():
        if impl is not obj:
            signatures.append(inspect.signature(impl))
    kinds = inspect.Parameter
    params = [p for sig in signatures for p in sig.parameters.values()]
    return {
        "kind": "class" if is_class else "function",
        "error_name": error_name,
        "keywords": list(
            dict.fromkeys(
                p.name
                for p in params
                if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
            )
        ),
        "positional_only": list(
            dict.fromkeys(p.name for p in params if p.kind is kinds.POSITIONAL_ONLY)
        ),
        "var_positional": any(p.kind is kinds.VAR_POSITIONAL for p in params),
        "var_keyword": any(p.kind is kinds.VAR_KEYWORD for p in params),
    }


def _signatures() -> tuple[dict[str, Any], dict[str, str]]:
    signatures: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for names in SIGNATURE_APIS:
        canonical, *others = names
        obj = _lookup(canonical)
        if obj is None:
            continue
        entry = _signature_entry(obj)
        if entry is None:
            continue
        signatures[canonical] = entry
        for other in others:
            if _lookup(other) is obj:
                aliases[other] = canonical
    return signatures, aliases


def _importable_distlint() -> None:
    """This checkout's distlint first on sys.path (the script runs from anywhere)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def _names_to_look_up() -> set[str]:
    """Dotted names whose presence per release DL504 needs: every deprecated name, its
    aliases, its replacement and its trigger, and DL504's drop-in replacements."""
    _importable_distlint()
    from distlint.rules.api.deprecated_torch_api import DROP_IN

    deprecated = json.loads((DATA_DIR / "deprecated_torch.json").read_text(encoding="utf-8"))
    names: set[str] = set()
    for entry in deprecated["entries"]:
        names.add(entry["name"])
        names.update(entry.get("aliases", ()))
        replacement = entry.get("replacement")
        if replacement and " " not in replacement and "(" not in replacement:
            names.add(replacement)
        trigger = entry.get("trigger", {})
        target = trigger.get("target")
        if target and ":" in target and trigger.get("how") != "shim":
            module, qualname = target.split(":", 1)
            names.add(f"{module}.{qualname}")
    names.update(DROP_IN)
    names.update(DROP_IN.values())
    return {n for n in names if n.startswith(("torch", "functorch"))}


def _exists(name: str) -> bool:
    """Whether ``name`` imports as a module, or is an attribute (chain) of the longest prefix
    of it that does (``torch.distributed.fsdp.FullyShardedDataParallel.state_dict_type``)."""
    import contextlib
    import importlib
    import io

    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                found: Any = importlib.import_module(".".join(parts[:end]))
        except BaseException:  # any failure to import: not usable
            continue
        try:
            for attr in parts[end:]:
                found = getattr(found, attr)
        except BaseException:
            return False
        return True
    return False


def _api_names() -> list[str]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(n for n in _names_to_look_up() if _exists(n))


def _shim_modules() -> list[str]:
    """The private module paths DL504 sends to a public module (no warning), and those."""
    deprecated = json.loads((DATA_DIR / "deprecated_torch.json").read_text(encoding="utf-8"))
    found = set()
    for entry in deprecated["entries"]:
        if entry["category"] is None and entry["kind"] == "module" and entry["replacement"]:
            found.update((entry["name"], entry["replacement"]))
    return sorted(found)


def _module_exports() -> dict[str, list[str]]:
    """Public names of each shim module, private and public (what a rewritten import needs):
    its attributes and its submodules."""
    import importlib
    import pkgutil
    import warnings

    exports: dict[str, list[str]] = {}
    for module in _shim_modules():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = importlib.import_module(module)
        except ImportError:
            continue
        # dir() holds the submodules imported so far (it varies with what ran before); every
        # submodule on disk is added, so that the list does not
        names = set(dir(found))
        names.update(info.name for info in pkgutil.iter_modules(getattr(found, "__path__", [])))
        exports[module] = sorted(n for n in names if not n.startswith("_"))
    return exports


def _deprecation_markers() -> list[str]:
    """``kind:module.qualname`` of every deprecation marker in this torch's source, found by
    scripts/gen_deprecations.py's scan (read, not run); it dates DL504's entries (``since``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gen_deprecations", Path(__file__).with_name("gen_deprecations.py")
    )
    assert spec is not None and spec.loader is not None
    scanner = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_deprecations", scanner)
    spec.loader.exec_module(scanner)
    found, _ = scanner.discover(scanner.torch_root())
    return sorted({f"{c.kind}:{c.defined_as}" for c in found})


def build() -> dict[str, Any]:
    """Collect the tables from the torch installed in this interpreter."""
    import torch
    import torch._dynamo
    import torch._inductor
    from torch._dynamo import config as dynamo_config
    from torch._dynamo.backends import registry
    from torch._inductor import config as inductor_config

    listed = set(torch._dynamo.list_backends())
    backends = {}
    # name -> compiler function; before torch 2.6 (or so) _BACKENDS itself held the functions
    compiler_fns = getattr(registry, "_COMPILER_FNS", registry._BACKENDS)
    for name in torch._dynamo.list_backends(exclude_tags=()):
        fn = compiler_fns.get(name)
        module = getattr(fn, "__module__", "") or ""
        if fn is None or not (module == "torch" or module.startswith("torch.")):
            continue  # entry-point or user-registered backend: not part of torch itself
        # the tags live on the function until torch 2.13, in _BACKEND_TAGS from 2.14
        tags = getattr(registry, "_BACKEND_TAGS", {}).get(name, getattr(fn, "_tags", ()))
        backends[name] = {"hidden": name not in listed, "tags": sorted(tags)}

    modes = torch._inductor.list_mode_options()
    options = _inductor_options(inductor_config)
    popped = _popped_keys(torch)
    for key in popped:
        options.setdefault(key, "any")

    dyn_names, dyn_aliases, dyn_deprecated = _config_facts(dynamo_config, "torch._dynamo.config")
    ind_names, ind_aliases, ind_deprecated = _config_facts(
        inductor_config, "torch._inductor.config"
    )
    signatures, signature_aliases = _signatures()
    return {
        "torch_version": _torch_version(torch),
        "compile_backends": backends,
        "compile_modes": {mode: dict(opts) for mode, opts in modes.items()},
        "inductor_options": options,
        "inductor_option_check": _option_check(inductor_config),
        "dynamo_config": dyn_names,
        "inductor_config": ind_names,
        "config_aliases": {**dyn_aliases, **ind_aliases},
        "config_deprecated": sorted(dyn_deprecated + ind_deprecated),
        "compile_checks": {
            **COMPILE_NOTES,
            "options": {**COMPILE_NOTES["options"], "popped_keys": popped},
            "errors": _compile_errors(torch),
        },
        "signatures": signatures,
        "signature_aliases": signature_aliases,
        "api_names": _api_names(),
        "module_exports": _module_exports(),
        "deprecation_markers": _deprecation_markers(),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


MERGED_COMMENT = (
    "Generated by scripts/gen_torch_tables.py from torch releases; do not edit. One table per "
    "torch major.minor (versions: the release each was read from), merged: lists: versions "
    "-> the items those versions have; maps: key -> [versions, value] pairs; values: "
    "[versions, value] pairs. Versions are runs over the listed ones, '2.4-2.9,2.11'. "
    "distlint.knowledge.torch_tables.expand gives one release's table back."
)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def _major_minor(torch_version: str) -> str:
    return ".".join(torch_version.split(".")[:2])


def merge(tables: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One file for several releases' tables (``major.minor`` -> table); see MERGED_COMMENT."""
    _importable_distlint()
    from distlint.knowledge.torch_tables import span

    known = list(tables)
    merged: dict[str, Any] = {
        "_comment": MERGED_COMMENT,
        "versions": {v: t["torch_version"] for v, t in tables.items()},
        "lists": {},
        "maps": {},
        "values": {},
    }
    sections = sorted({k for t in tables.values() for k in t} - {"torch_version"})
    for section in sections:
        present = {v: t[section] for v, t in tables.items() if section in t}
        sample = next(iter(present.values()))
        if isinstance(sample, list):
            holders: dict[str, list[str]] = {}
            for version, items in present.items():
                if items != sorted(set(items)):
                    raise ValueError(f"{section} of torch {version} is not a sorted set")
                for item in items:
                    holders.setdefault(item, []).append(version)
            by_span: dict[str, list[str]] = {}
            for item, versions in holders.items():
                by_span.setdefault(span(versions, known), []).append(item)
            merged["lists"][section] = {where: sorted(items) for where, items in by_span.items()}
        elif isinstance(sample, dict):
            variants: dict[str, list[tuple[str, Any]]] = {}
            for version, mapping in present.items():
                for key, value in mapping.items():
                    variants.setdefault(key, []).append((version, value))
            merged["maps"][section] = {key: _group(pairs, known) for key, pairs in variants.items()}
        else:
            merged["values"][section] = _group(list(present.items()), known)
    return merged


def _group(pairs: list[tuple[str, Any]], known: list[str]) -> list[list[Any]]:
    """[[versions, value], ...]: each distinct value once, with the versions that have it."""
    from distlint.knowledge.torch_tables import span

    by_value: dict[str, tuple[Any, list[str]]] = {}
    for version, value in pairs:
        by_value.setdefault(render(value), (value, []))[1].append(version)
    return [[span(vs, known), value] for value, vs in by_value.values()]


def shipped_tables() -> dict[str, dict[str, Any]]:
    """Every release's table in the merged file (``major.minor`` -> table)."""
    _importable_distlint()
    from distlint.knowledge.torch_tables import expand, version_key

    if not MERGED_PATH.exists():
        return {}
    merged = json.loads(MERGED_PATH.read_text(encoding="utf-8"))
    return {v: expand(merged, v) for v in sorted(merged["versions"], key=version_key)}


def render_merged(merged: dict[str, Any]) -> str:
    """The merged file: one line per list item and per mapping key (all its variants on that
    line), so that a diff shows what changed and the file stays small."""

    def dump(value: Any, path: tuple[str, ...]) -> str:
        compact = (path[:1] == ("maps",) and len(path) >= 3) or (
            path[:1] == ("values",) and len(path) >= 2
        )
        if compact or not isinstance(value, (dict, list)) or not value:
            return json.dumps(value, sort_keys=True, ensure_ascii=False)
        pad = " " * (len(path) + 1)
        if isinstance(value, list):
            inner = [pad + dump(v, (*path, "")) for v in value]
            return "[\n" + ",\n".join(inner) + "\n" + pad[:-1] + "]"
        inner = [
            pad + json.dumps(k, ensure_ascii=False) + ": " + dump(value[k], (*path, k))
            for k in sorted(value)
        ]
        return "{\n" + ",\n".join(inner) + "\n" + pad[:-1] + "}"

    return dump(merged, ()) + "\n"


def write_merged(tables: dict[str, dict[str, Any]]) -> None:
    _importable_distlint()
    from distlint.knowledge.torch_tables import version_key

    ordered = {v: tables[v] for v in sorted(tables, key=version_key)}
    MERGED_PATH.write_text(render_merged(merge(ordered)), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the shipped table is stale")
    parser.add_argument(
        "--json-out", type=Path, help="write this torch's table to FILE instead of merging it"
    )
    parser.add_argument(
        "--add",
        type=Path,
        nargs="+",
        metavar="FILE",
        help="merge tables written by --json-out (no torch needed)",
    )
    args = parser.parse_args(argv)

    tables = shipped_tables()
    if args.add:
        for path in args.add:
            data = json.loads(path.read_text(encoding="utf-8"))
            tables[_major_minor(data["torch_version"])] = data
        write_merged(tables)
        print(f"wrote {MERGED_PATH} (torch {', '.join(sorted(tables, key=_version_key))})")
        return 0

    data = build()
    version = _major_minor(data["torch_version"])
    text = render(data)
    if args.json_out:
        args.json_out.write_text(text, encoding="utf-8")
        print(f"wrote {args.json_out}")
        return 0
    if args.check:
        old = render(tables[version]) if version in tables else ""
        if old == text:
            print(f"{MERGED_PATH} is up to date for torch {data['torch_version']}")
            return 0
        diff = difflib.unified_diff(
            old.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"torch {version} (shipped)",
            tofile=f"torch {data['torch_version']} (installed)",
        )
        sys.stdout.writelines(diff)
        print(f"\n{MERGED_PATH} is stale: run python scripts/gen_torch_tables.py", file=sys.stderr)
        return 1
    tables[version] = data
    write_merged(tables)
    print(f"wrote {MERGED_PATH} (torch {version} added or updated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
