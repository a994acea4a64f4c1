"""The graph-break detectors of DL101, DL102, DL104 and DL202, shared by their rules and by
DL105, which reports any of them inside a loop of a compiled function.

Every fact used here was observed on torch 2.13.0 and is re-observed by
tests/proof/test_proof_dl1xx.py (tests/proof/test_proof_dl202.py for the collectives).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.knowledge.collectives import UNTRACEABLE_COLLECTIVES
from distlint.rules.compile._analysis import (
    Conversion,
    classify_conversion,
    conversion_kind,
    tensor_branches,
)
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import is_compiling_test
from distlint.syntax.imports import scope_statements
from distlint.syntax.shapes import assignment_targets, keyword_is_true
from distlint.syntax.walker import descendants


@dataclass(frozen=True)
class Break:
    node: cst.CSTNode
    code: str  # the rule that reports it
    what: str  # short description for messages


def branch_breaks(rule: _RegionRule, node: cst.CSTNode) -> list[Break]:
    guess = rule.guess()
    return [
        Break(leaf, "DL101", f"branch on the tensor `{rule.spell(leaf)}`")
        for leaf in tensor_branches(node, guess)
    ]


def conversion_break(
    rule: _RegionRule, node: cst.Call, parents: Sequence[cst.CSTNode]
) -> Conversion | None:
    """The DL102 conversion at ``node`` that breaks or fails in this region, if any."""
    kind = conversion_kind(node, rule.ctx.resolve, rule.guess, rule.is_builtin)
    if kind is None:
        return None
    conversion = classify_conversion(node, kind, parents, rule.guess(), rule.is_builtin)
    region = rule.ctx.region
    captured = rule.enabled_anywhere("capture_scalar_outputs")  # module level included
    strict = (region is not None and region.fullgraph) or captured
    if strict and not conversion.breaks_with_capture:
        return None
    return conversion


# DL104: host calls that graph-break on torch 2.13.0, name -> GB id. Each entry is run by
# fixtures/DL104/bad_host_calls.py (a ``case_`` per name) and checked by the proof test.
HOST_CALLS = {
    "print": "0059",
    "breakpoint": "0059",
    "open": "0059",
    "warnings.warn": "0007",
    "time.time": "0007",
    "time.time_ns": "0007",
    "time.perf_counter": "0007",
    "time.perf_counter_ns": "0007",
    "time.monotonic": "0007",
    "time.monotonic_ns": "0007",
    "time.process_time": "0007",
    "time.sleep": "0007",
    # ``random.randint``, ``random.uniform`` and ``random.randrange`` are traced
    "random.random": "0007",
    "random.choice": "0007",
    "random.shuffle": "0007",
    "random.sample": "0007",
    "random.gauss": "0007",
    "random.seed": "0007",
    "gc.collect": "0007",
    "os.getpid": "0007",
    "os.cpu_count": "0007",
    "os.listdir": "0007",
    "os.makedirs": "0007",
    "os.path.exists": "0007",
    "os.path.isfile": "0007",
    "os.putenv": "0007",
    "socket.gethostname": "0007",
    "uuid.uuid4": "0007",
    "pickle.dumps": "0007",
    "traceback.format_stack": "0007",
    "torch.manual_seed": "0007",
    "torch.get_rng_state": "0007",
    "torch.set_rng_state": "0007",
    "torch.set_num_threads": "0007",
    "torch.save": "0007",
    "torch.autograd.set_detect_anomaly": "0008",
    "json.dumps": "0156",
    "datetime.datetime.now": "0156",
    "sys.stdout.write": "0156",
    "sys.stdout.flush": "0156",
    "sys.stderr.write": "0156",
    "torch.initial_seed": "0208",
    "torch.get_num_threads": "0208",
    "logging.debug": "4841",
    "logging.info": "4841",
    "logging.warning": "4841",
    "logging.error": "4841",
    "logging.exception": "4841",
    "logging.critical": "4841",
    "logging.log": "4841",
    "copy.deepcopy": "4198",
}
_BUILTINS = ("print", "breakpoint", "open")
HOST_PREFIXES = {"pdb.": "0007", "numpy.random.": "0033", "ctypes.": "0156", "zlib.": "0007"}
LOGGER_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"}
)


def _logger_names(ctx: RuleContext) -> frozenset[str]:
    return ctx.memo(_find_logger_names)


def _find_logger_names(ctx: RuleContext) -> frozenset[str]:
    names = set()
    for stmt in scope_statements(ctx.module.body):
        if (
            isinstance(stmt, cst.Assign)
            and isinstance(stmt.value, cst.Call)
            and ctx.imports.resolve(stmt.value.func) == "logging.getLogger"
        ):
            for target in stmt.targets:
                if isinstance(target.target, cst.Name):
                    names.add(target.target.value)
    return frozenset(names)


def host_call(rule: _RegionRule, node: cst.Call) -> tuple[str, str] | None:
    """(spelled call, GB id) when ``node`` is a host side effect that graph-breaks (spelled
    only then: every call of a compiled region is asked)."""
    gb = _host_gb(rule, node)
    return (rule.spell(node.func), gb) if gb is not None else None


def _host_gb(rule: _RegionRule, node: cst.Call) -> str | None:
    ctx = rule.ctx
    func = node.func
    for builtin in _BUILTINS:
        if rule.is_builtin(func, builtin):
            return HOST_CALLS[builtin]
    name = ctx.resolve(func)
    if name is not None:
        if name in HOST_CALLS:
            return HOST_CALLS[name]
        for prefix, gb in HOST_PREFIXES.items():
            if name.startswith(prefix):
                return gb
        return None
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method == "data_ptr" and not node.args:
            return "0088"
        receiver = func.value
        if method in LOGGER_METHODS and isinstance(receiver, (cst.Name, cst.Attribute)):
            last = receiver.value if isinstance(receiver, cst.Name) else receiver.attr.value
            if (last in _logger_names(ctx) or last.lower().endswith("logger")) and not (
                isinstance(receiver, cst.Name) and _chosen_by_is_compiling(rule, last)
            ):
                return "0291"
    return None


def _chosen_by_is_compiling(rule: _RegionRule, name: str) -> bool:
    """``logger = _Noop() if is_compiling() else logging.getLogger()`` in the function: what
    Dynamo traces is the compiling side, which the project chose not to be a logger."""
    function = rule.ctx.function
    if function is None:
        return False
    resolve = rule.ctx.resolve
    for node in descendants(function.body):
        if (
            type(node) is cst.Assign
            and _assigns(node, name)
            and type(node.value) is cst.IfExp
            and is_compiling_test(node.value.test, resolve) is not None
        ):
            return True
        if type(node) is cst.If and is_compiling_test(node.test, resolve) is not None:
            # ``if is_compiling(): logger = no_op_logger`` / ``else: logger = getLogger()``
            compiled_side = node.body if is_compiling_test(node.test, resolve) else node.orelse
            if compiled_side is not None and any(
                type(inner) is cst.Assign and _assigns(inner, name)
                for inner in descendants(compiled_side)
            ):
                return True
    return False


def _assigns(node: cst.Assign, name: str) -> bool:
    return any(type(t.target) is cst.Name and t.target.value == name for t in node.targets)


def environ_write(rule: _RegionRule, node: cst.CSTNode) -> cst.CSTNode | None:
    """The ``os.environ[...]`` target of an assignment ``node``, if it writes the environment."""
    if not isinstance(node, (cst.Assign, cst.AugAssign)):
        return None
    targets = assignment_targets(node)
    for target in targets:
        if isinstance(target, cst.Subscript) and rule.ctx.resolve(target.value) == "os.environ":
            return target
    return None


def collective_break(rule: _RegionRule, node: cst.Call) -> bool:
    name = rule.ctx.resolve(node.func)
    if name is None or not name.startswith("torch.distributed."):
        return False
    if name in UNTRACEABLE_COLLECTIVES:
        return True
    return keyword_is_true(node, "async_op")


def breaks_in(rule: _RegionRule, node: cst.CSTNode, parents: Sequence[cst.CSTNode]) -> list[Break]:
    """The DL101/DL102/DL104/DL202 breaks at ``node`` itself."""
    found = branch_breaks(rule, node)
    if isinstance(node, cst.Call):
        conversion = conversion_break(rule, node, parents)
        if conversion is not None:
            found.append(Break(node, "DL102", f"`{rule.spell(node)}`"))
        host = host_call(rule, node)
        if host is not None:
            found.append(Break(node, "DL104", f"`{host[0]}(...)`"))
        if collective_break(rule, node):
            found.append(Break(node, "DL202", f"`{rule.spell(node.func)}(...)`"))
    target = environ_write(rule, node)
    if target is not None:
        found.append(Break(target, "DL104", "a write to `os.environ`"))
    return found
