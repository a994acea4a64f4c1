"""DL101-DL106, DL110: graph breaks and compile failures inside compiled regions.

Every fact used here was observed on torch 2.13.0 and is re-observed by
tests/proof/test_proof_dl1xx.py: see each rule's docs page for the exact messages. A break
costs a new graph (``fullgraph=False``) or fails compilation (``fullgraph=True``); module-level
``torch._dynamo.config`` settings (``capture_scalar_outputs``,
``capture_dynamic_output_shape_ops``) change what breaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Location, Severity
from distlint.rules.compile._analysis import (
    SOME_PATHS,
    SOME_PATHS_NOTE,
    Conversion,
    classify_conversion,
    conversion_kind,
    own_nodes,
    tensor_branches,
    truth_tested,
)
from distlint.rules.compile._region import _locally_bound, _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import DISABLE_FUNCTIONS, is_compile_disabled, is_compiling_test
from distlint.syntax.imports import scope_statements
from distlint.syntax.walker import descendants

GB_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb{}.html"


# -- detectors shared by DL105 ------------------------------------------------------------------


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
    guess = rule.guess()
    kind = conversion_kind(node, guess, rule.is_builtin)
    if kind is None:
        return None
    conversion = classify_conversion(node, kind, parents, guess, rule.is_builtin)
    region = rule.ctx.region
    captured = rule.config.get("capture_scalar_outputs") is True
    strict = (region is not None and region.fullgraph) or captured
    if strict and not conversion.breaks_with_capture:
        return None
    return conversion


# DL104: host calls that graph-break on torch 2.13.0 (tests/proof/test_proof_dl1xx.py).
# name -> GB id.
HOST_CALLS = {
    "print": "0059",
    "breakpoint": "0059",
    "warnings.warn": "0007",
    "time.time": "0007",
    "time.perf_counter": "0007",
    "random.random": "0007",
    "torch.manual_seed": "0007",
    "torch.save": "0007",
    "copy.deepcopy": "4198",
    "os.putenv": "0007",
}
HOST_PREFIXES = {"pdb.": "0007", "numpy.random.": "0033", "ctypes.": "0156", "zlib.": "0007"}
LOGGER_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"}
)
_HOST_ADVICE = {
    "0059": "Remove it, or print the returned tensors after the compiled call",
    "0291": "Log after the compiled call, from the values it returns",
    "0033": "Use `torch.rand*` (traced) instead",
    "0156": "Do it outside the compiled region",
    "4198": "Copy outside the compiled region",
    "0088": "Do not read storage addresses inside the compiled region",
    "0007": "Move it outside the compiled region",
}


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
    """(spelled call, GB id) when ``node`` is a host side effect that graph-breaks."""
    ctx = rule.ctx
    func = node.func
    spelled = rule.spell(func)
    for builtin in ("print", "breakpoint"):
        if rule.is_builtin(func, builtin):
            return spelled, HOST_CALLS[builtin]
    name = ctx.resolve(func)
    if name is not None:
        if name in HOST_CALLS:
            return spelled, HOST_CALLS[name]
        for prefix, gb in HOST_PREFIXES.items():
            if name.startswith(prefix):
                return spelled, gb
        if name.startswith("logging.") and name.rpartition(".")[2] in LOGGER_METHODS:
            return spelled, "0291"
        return None
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method == "data_ptr" and not node.args:
            return spelled, "0088"
        receiver = func.value
        if method in LOGGER_METHODS and isinstance(receiver, (cst.Name, cst.Attribute)):
            last = receiver.value if isinstance(receiver, cst.Name) else receiver.attr.value
            if (last in _logger_names(ctx) or last.lower().endswith("logger")) and not (
                isinstance(receiver, cst.Name) and _chosen_by_is_compiling(rule, last)
            ):
                return spelled, "0291"
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
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    for target in targets:
        if isinstance(target, cst.Subscript) and rule.ctx.resolve(target.value) == "os.environ":
            return target
    return None


# DL202's untraceable collectives (tests/proof/test_proof_dl202.py), counted by DL105 as breaks
# in a loop.
UNTRACEABLE_COLLECTIVES = frozenset(
    f"torch.distributed.{name}"
    for name in (
        "broadcast",
        "barrier",
        "reduce",
        "reduce_scatter",
        "gather",
        "scatter",
        "all_to_all",
        "send",
        "recv",
        "isend",
        "irecv",
        "new_group",
    )
)


def collective_break(rule: _RegionRule, node: cst.Call) -> bool:
    name = rule.ctx.resolve(node.func)
    if name is None or not name.startswith("torch.distributed."):
        return False
    if name in UNTRACEABLE_COLLECTIVES:
        return True
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "async_op":
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False


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


# -- DL101 --------------------------------------------------------------------------------------


class DataDependentBranch(_RegionRule):
    code = "DL101"
    name = "data-dependent-branch"
    severity = Severity.WARNING
    summary = (
        "Branching on a tensor value inside a compiled region graph-breaks (fullgraph=True: "
        "compile error)."
    )
    tags = ("performance", "correctness", "torch.compile")
    precision = "high"

    def _check(self, node: cst.CSTNode) -> None:
        region = self.ctx.region
        if region is None:
            return
        for leaf in tensor_branches(node, self.guess()):
            spelled = self.spell(leaf)
            if region.fullgraph:
                message = (
                    f"`{spelled}` is a tensor: branching on it under fullgraph=True fails on "
                    "torch 2.13 with `Unsupported: Data-dependent branching` (GB0170). Use "
                    "`torch.where(...)` or `torch.cond(...)` instead of the Python branch."
                )
                severity = Severity.ERROR
            else:
                message = (
                    f"`{spelled}` is a tensor: branching on it graph-breaks on torch 2.13 "
                    "(GB0170, data-dependent branching): the graph ends here and the rest "
                    "runs eagerly until a new one starts. Use `torch.where(...)` or "
                    "`torch.cond(...)` instead of the Python branch."
                )
                severity = None
            self.report(leaf, message, severity=severity, related=region.related)

    def visit_If(self, node: cst.If) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        """``a and b`` outside a test still calls ``bool(a)``."""
        region = self.ctx.region
        if region is None:
            return
        parents = self.ctx.parents
        parent = parents[-1] if parents else None
        if isinstance(parent, (cst.BooleanOperation, cst.If, cst.While, cst.IfExp, cst.CompIf)):
            return
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
            return
        guess = self.guess()
        for leaf in truth_tested(node.left):
            if guess.is_tensor(leaf):
                self._report_leaf(leaf)

    def _report_leaf(self, leaf: cst.BaseExpression) -> None:
        region = self.ctx.region
        assert region is not None
        spelled = self.spell(leaf)
        if region.fullgraph:
            self.report(
                leaf,
                f"`{spelled}` is a tensor: `and`/`or` call `bool()` on it, which under "
                "fullgraph=True fails on torch 2.13 with `Unsupported: Data-dependent "
                "branching` (GB0170). Combine masks with `&`/`|` and select with "
                "`torch.where(...)`.",
                severity=Severity.ERROR,
                related=region.related,
            )
        else:
            self.report(
                leaf,
                f"`{spelled}` is a tensor: `and`/`or` call `bool()` on it, which graph-breaks "
                "on torch 2.13 (GB0170, data-dependent branching). Combine masks with `&`/`|` "
                "and select with `torch.where(...)`.",
                related=region.related,
            )


# -- DL102 --------------------------------------------------------------------------------------


class TensorToPython(_RegionRule):
    code = "DL102"
    name = "tensor-to-python"
    severity = Severity.NOTE
    summary = (
        "A tensor converted to a Python value (.item(), int(t), .tolist()) inside a compiled "
        "region graph-breaks, or fails under fullgraph=True when it drives control flow."
    )
    tags = ("performance", "torch.compile")
    precision = "high"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.ctx.region
        if region is None:
            return
        conversion = conversion_break(self, node, self.ctx.parents)
        if conversion is None:
            return
        spelled = self.spell(node)
        captured = self.config.get("capture_scalar_outputs") is True
        if region.fullgraph:
            message, severity = self._fullgraph_message(conversion, spelled), Severity.ERROR
            if conversion.use == "value" and not conversion.floating:
                severity = Severity.WARNING  # a list of an integer tensor is captured
            if not self.ctx.certain(node):
                message, severity = f"{message}{SOME_PATHS_NOTE}", Severity.WARNING
        else:
            message, severity = self._break_message(conversion, spelled, captured), None
        self.report(node, message, severity=severity, related=region.related)

    @staticmethod
    def _fullgraph_message(conversion: Conversion, spelled: str) -> str:
        if conversion.use == "control":
            return (
                f"`{spelled}` drives control flow: under fullgraph=True this fails on torch "
                "2.13 with `UserError: Consider annotating your code using torch._check*(). "
                "Could not guard on data-dependent expression ...`. Keep the value a tensor "
                "and use `torch.where(...)` or `torch.cond(...)`."
            )
        if conversion.use == "range":
            return (
                f"`{spelled}` is used as a loop count: under fullgraph=True this fails on "
                "torch 2.13 with `UserError: ... Could not extract specialized integer from "
                "data-dependent expression`. Pass the count as a Python int argument, or "
                "compute without a Python loop."
            )
        if not conversion.floating:
            return (
                f"`{spelled}` converts a tensor to a list: under fullgraph=True torch 2.13 fails "
                "if it holds floating-point values (`Unsupported: Tensor.tolist() with "
                "non-integer tensor`, GB0109); an integer tensor's list is captured. Return the "
                "tensor and call `.tolist()` after the compiled call."
            )
        return (
            f"`{spelled}` converts a float tensor to a list: under fullgraph=True this fails "
            "on torch 2.13 with `Unsupported: Tensor.tolist() with non-integer tensor` "
            "(GB0109). Return the tensor and call `.tolist()` after the compiled call."
        )

    @staticmethod
    def _break_message(conversion: Conversion, spelled: str, captured: bool) -> str:
        if conversion.use in ("control", "range"):
            what = "drives control flow" if conversion.use == "control" else "is a loop count"
            return (
                f"`{spelled}` {what}: in a compiled region this graph-breaks on torch 2.13 "
                "(GB0124), also with `capture_scalar_outputs=True`, and fails under "
                "fullgraph=True. Keep the value a tensor and use `torch.where(...)` or "
                "`torch.cond(...)`."
            )
        if conversion.kind == "tolist":
            if conversion.integer:
                return (
                    f"`{spelled}` graph-breaks on torch 2.13 (GB0033, data dependent "
                    "operator). Keep the tensor, or set "
                    "`torch._dynamo.config.capture_scalar_outputs = True`."
                )
            if captured and not conversion.floating:
                return (
                    f"`{spelled}` graph-breaks on torch 2.13 if the tensor holds floating-point "
                    "values (GB0109, `Tensor.tolist() with non-integer tensor`), even with "
                    "`capture_scalar_outputs=True`; an integer tensor's list is captured. "
                    "Return the tensor and call `.tolist()` after the compiled call."
                )
            if not conversion.floating:
                return (
                    f"`{spelled}` graph-breaks on torch 2.13: GB0109 (`Tensor.tolist() with "
                    "non-integer tensor`) for a floating-point tensor, GB0033 (`Data dependent "
                    "operator`) for an integer one. Return the tensor and call `.tolist()` "
                    "after the compiled call."
                )
            return (
                f"`{spelled}` graph-breaks on torch 2.13 (GB0109, `Tensor.tolist() with "
                "non-integer tensor`), even with `capture_scalar_outputs=True`. Return the "
                "tensor and call `.tolist()` after the compiled call."
            )
        return (
            f"`{spelled}` converts a tensor to a Python number: in a compiled region this "
            "graph-breaks on torch 2.13 (GB0124, `Unsupported Tensor.item() call with "
            "capture_scalar_outputs=False`). Keep it a tensor (e.g. `x * t.sum()`), or set "
            "`torch._dynamo.config.capture_scalar_outputs = True`."
        )


# -- DL103 --------------------------------------------------------------------------------------

_DYNAMIC_SHAPE_FUNCS = frozenset({"torch.nonzero", "torch.unique", "torch.masked_select"})
_DYNAMIC_SHAPE_METHODS = frozenset({"nonzero", "unique", "masked_select"})


class DynamicOutputShape(_RegionRule):
    code = "DL103"
    name = "dynamic-output-shape"
    severity = Severity.NOTE
    summary = (
        "An op whose output shape depends on tensor values (nonzero, unique, x[mask]) "
        "graph-breaks in a compiled region (not under fullgraph=True)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"

    def _active(self):  # type: ignore[no-untyped-def]
        region = self.ctx.region
        if region is None or region.fullgraph:
            return None
        if self.config.get("capture_dynamic_output_shape_ops") is True:
            return None
        return region

    def _report(self, node: cst.CSTNode, region) -> None:  # type: ignore[no-untyped-def]
        spelled = self.spell(node)
        self.report(
            node,
            f"`{spelled}` has a data-dependent output shape: it graph-breaks on torch 2.13 "
            "(GB0036, `Dynamic shape operator`), ending the graph. Set "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True` (fullgraph=True "
            "captures it too), or keep shapes static (`torch.where(mask, x, 0)`, `x * mask`).",
            related=region.related,
        )

    def visit_Call(self, node: cst.Call) -> None:
        region = self._active()
        if region is None:
            return
        guess = self.guess()
        name = self.ctx.resolve(node.func)
        positional = [arg for arg in node.args if arg.keyword is None]
        if name in _DYNAMIC_SHAPE_FUNCS:
            self._report(node, region)
        elif name == "torch.where":
            if len(node.args) == 1 and positional:
                self._report(node, region)
        elif name == "torch.repeat_interleave":
            repeats = _argument(node, 1, "repeats")
            if len(node.args) == 1 or (repeats is not None and guess.is_tensor(repeats)):
                self._report(node, region)
        elif name is None and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _DYNAMIC_SHAPE_METHODS and guess.is_tensor(node.func.value):
                self._report(node, region)
            elif method == "repeat_interleave":
                repeats = _argument(node, 0, "repeats")
                if repeats is not None and guess.is_tensor(repeats):
                    self._report(node, region)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        region = self._active()
        if region is None:
            return
        parent = self.ctx.parents[-1] if self.ctx.parents else None
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
            isinstance(parent, cst.AugAssign) and parent.target is node
        ):
            return  # x[mask] = v writes in place: no dynamic shape
        if len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index):
            return
        guess = self.guess()
        if guess.is_bool_mask(index.value) and guess.is_tensor(node.value):
            self._report(node, region)


def _argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position].value if len(positional) > position else None


# -- DL104 --------------------------------------------------------------------------------------


class HostSideEffect(_RegionRule):
    code = "DL104"
    name = "host-side-effect"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES
    summary = (
        "A host side effect (print, logging, time, random, pdb, torch.save...) inside a "
        "compiled region graph-breaks (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.ctx.region
        if region is None:
            return
        found = host_call(self, node)
        if found is None:
            return
        spelled, gb = found
        self._report(node, f"`{spelled}(...)`", gb, region, self._eager_guard(node, spelled))

    def visit_Assign(self, node: cst.Assign) -> None:
        region = self.ctx.region
        if region is None:
            return
        target = environ_write(self, node)
        if target is not None:
            self._report(target, "Writing `os.environ`", "0007", region)

    def _eager_guard(self, node: cst.Call, spelled: str) -> tuple[tuple[cst.CSTNode, str], ...]:
        """A statement that is only the call (``print(...)``, ``logger.info(...)``,
        ``warnings.warn(...)``): guarded by ``if not torch.compiler.is_compiling():``, which
        Dynamo folds to False (the statement then runs in eager mode only). Unsafe: compiled
        runs no longer print, log or warn there."""
        parents = self.ctx.parents
        if len(parents) < 2 or spelled.rpartition(".")[2] not in _GUARDABLE:
            return ()
        statement, line = parents[-1], parents[-2]
        if not (
            isinstance(statement, cst.Expr)
            and statement.value is node
            and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
        ):
            return ()
        if self.ctx.imports.resolve(cst.Name("torch")) != "torch":
            return ()  # ``torch`` is not the name of the torch module here
        code = self.ctx.module.code_for_node(node)
        return ((statement, f"if not torch.compiler.is_compiling(): {code}"),)

    def _report(
        self,
        node: cst.CSTNode,
        what: str,
        gb: str,
        region,  # type: ignore[no-untyped-def]
        guard: tuple[tuple[cst.CSTNode, str], ...] = (),
    ) -> None:
        advice = _HOST_ADVICE.get(gb, "Move it outside the compiled region")
        if region.fullgraph:
            certain = self.ctx.certain(node)
            message = (
                f"{what} inside a compiled region fails under fullgraph=True on torch 2.13 "
                f"(`Unsupported`, GB{gb}){'' if certain else SOME_PATHS}. {advice}."
            )
            severity = Severity.ERROR if certain else Severity.WARNING
        else:
            message = (
                f"{what} inside a compiled region graph-breaks on torch 2.13 (GB{gb}): the "
                f"graph ends here and resumes after it. {advice}."
            )
            severity = None
        fix = Fix(_GUARD_TITLE, (), Applicability.UNSAFE) if guard else None
        self.report(
            node, message, severity=severity, related=region.related, fix=fix, fix_nodes=guard
        )


_GUARDABLE = frozenset({"print", "warn", *LOGGER_METHODS})
_GUARD_TITLE = "Run it in eager mode only (if not torch.compiler.is_compiling())"


# -- DL105 --------------------------------------------------------------------------------------


class GraphBreakInLoop(_RegionRule):
    code = "DL105"
    name = "graph-break-in-loop"
    severity = Severity.WARNING
    summary = (
        "A graph break inside a loop of a compiled function makes torch 2.13 skip the whole "
        "function: nothing of it is compiled."
    )
    tags = ("performance", "torch.compile")
    precision = "high"

    def visit_For(self, node: cst.For) -> None:
        self._check(node, node.body)

    def visit_While(self, node: cst.While) -> None:
        self._check(node, node.body)

    def _check(self, loop: cst.For | cst.While, body: cst.BaseSuite) -> None:
        region = self.ctx.region
        if region is None:
            return
        if self._fsdp2_children(loop, region):
            return
        if region.fullgraph:
            return  # under fullgraph=True the break itself is the (error) finding
        for parent in reversed(self.ctx.parents):
            if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if isinstance(parent, (cst.For, cst.While)) and self._first_break(parent):
                return  # the outer loop reports it
        found = self._first_break(loop)
        if found is None:
            return
        self.report(
            loop,
            f"{found.what} graph-breaks inside this loop ({found.code}): torch 2.13 then "
            "skips the whole function (GB7000, `graph break in loop`) and runs it eagerly, "
            "silently compiling nothing. Move the break out of the loop, or put the loop body "
            "in a separate compiled function.",
            related=region.related,
            related_nodes=((found.node, "graph break"),),
        )

    def _fsdp2_children(self, loop: cst.For | cst.While, region) -> bool:  # type: ignore[no-untyped-def]
        """A compiled root looping over FSDP2-sharded children (proof: test_proof_dl107_109.py)."""
        from distlint.rules.compile.compile_state import sharded_children_loop

        children = sharded_children_loop(self.ctx, loop)
        if children is None:
            return False
        if region.fullgraph:
            self.report(
                loop,
                f"`{children}` holds `fully_shard` (FSDP2) modules, whose forward hooks are "
                "`torch._dynamo.disable`d: compiling this root with fullgraph=True fails on "
                "torch 2.13 (`Unsupported: Attempted to call function marked as skipped`, "
                "GB0007). Compile each block instead (`blk.compile()` per block).",
                severity=Severity.ERROR,
                related=region.related,
            )
        else:
            self.report(
                loop,
                f"`{children}` holds `fully_shard` (FSDP2) modules: calling one graph-breaks "
                "in this loop (GB0007, FSDP hooks are `torch._dynamo.disable`d), so torch 2.13 "
                "skips this whole frame (GB7000, `graph break in loop`) and only the blocks' "
                "own `forward` compiles. Compile each block instead (`blk.compile()` per "
                "block: one graph, no break).",
                related=region.related,
            )
        return True

    def _first_break(self, loop: cst.For | cst.While) -> Break | None:
        cache = self.__dict__.setdefault("_loop_breaks", {})
        key = id(loop)
        if key not in cache:
            cache[key] = self._scan(loop)
        return cache[key]

    def _scan(self, loop: cst.For | cst.While) -> Break | None:
        prefix = tuple(self.ctx.parents)
        if isinstance(loop, cst.While):
            found = branch_breaks(self, loop)
            if found:
                return found[0]
        for node, parents in own_nodes(loop.body):
            ancestors = (*prefix, loop, *parents)
            found = breaks_in(self, node, ancestors)
            if found and self.ctx.traced(ancestors):
                return found[0]
        return None


# -- DL106 --------------------------------------------------------------------------------------

_OPTIMIZER_HINTS = ("optim", "opt")


class TrainStepInCompiledRegion(_RegionRule):
    code = "DL106"
    name = "train-step-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "loss.backward(), optimizer.step() or zero_grad() inside a compiled region "
        "graph-break (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._optimizers = _optimizer_names(ctx)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.ctx.region
        if region is None:
            return
        func = node.func
        name = self.ctx.resolve(func)
        if name == "torch.autograd.backward":
            self._report(node, "backward", region)
            return
        if name is not None or not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method == "backward":
            self._report(node, "backward", region)
        elif method in ("step", "zero_grad") and self._is_optimizer(func.value):
            self._report(node, method, region)

    def _is_optimizer(self, receiver: cst.BaseExpression) -> bool:
        if isinstance(receiver, cst.Name):
            last = receiver.value
        elif isinstance(receiver, cst.Attribute):
            last = receiver.attr.value
        else:
            return False
        if last in self._optimizers:
            return True
        lowered = last.lower().lstrip("_")
        return lowered.startswith(_OPTIMIZER_HINTS) or lowered.endswith(("optimizer", "optim"))

    def _report(self, node: cst.Call, what: str, region) -> None:  # type: ignore[no-untyped-def]
        spelled = self.spell(node)
        if what == "backward":
            effect = "GB0123, `Unsupported Tensor.backward() call`"
        elif what == "step":
            effect = "GB0025: the optimizer step calls `torch._dynamo.graph_break()`"
        else:
            effect = "GB0008, `Attempted to inline function marked as skipped`"
        if region.fullgraph:
            message = (
                f"`{spelled}` inside a compiled region fails under fullgraph=True on torch "
                f"2.13 ({effect}). Compile the model or the loss function only and run "
                "backward and the optimizer step outside it (or use compiled autograd)."
            )
            severity = Severity.ERROR
        else:
            message = (
                f"`{spelled}` inside a compiled region graph-breaks on torch 2.13 ({effect}). "
                "Compile the model or the loss function only and run backward and the "
                "optimizer step outside it (or use compiled autograd)."
            )
            severity = None
        self.report(node, message, severity=severity, related=region.related)


def _optimizer_names(ctx: RuleContext) -> frozenset[str]:
    """Names and ``self.`` attributes assigned from ``torch.optim.X(...)`` anywhere in the file."""
    from distlint.syntax.walker import children

    names: set[str] = set()
    stack: list[cst.CSTNode] = [ctx.module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            name = ctx.imports.resolve(node.value.func) or ""
            if name.startswith("torch.optim.") and name.rpartition(".")[2][:1].isupper():
                for target in node.targets:
                    t = target.target
                    if isinstance(t, cst.Name):
                        names.add(t.value)
                    elif isinstance(t, cst.Attribute):
                        names.add(t.attr.value)
        stack.extend(children(node))
    return frozenset(names)


# -- DL110 --------------------------------------------------------------------------------------


class DisabledCallUnderFullgraph(_RegionRule):
    code = "DL110"
    name = "disabled-call-under-fullgraph"
    severity = Severity.ERROR
    summary = (
        "A call to a torch.compiler.disable'd function from a fullgraph=True region fails "
        "to compile."
    )
    tags = ("correctness", "torch.compile")
    precision = "very-high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._functions, self._methods = _disabled_callables(ctx)
        self._modules = _disabled_modules(ctx)

    def visit_Call(self, node: cst.Call) -> None:
        region = self.ctx.region
        if region is None:
            if self._functions or self._modules:
                self._check_arguments(node)
            return
        if not region.fullgraph:
            return
        func = node.func
        disabled, method = False, False
        if isinstance(func, cst.Name):
            disabled = func.value in self._functions and not _locally_bound(self.ctx, func.value)
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in ("self", "cls")
        ):
            cls = _enclosing_class(self.ctx.parents)
            disabled = method = cls is not None and (cls, func.attr.value) in self._methods
        if not disabled:
            return
        spelled = self.spell(func)
        error = (
            "Skip inlining `torch.compiler.disable()`d function` (GB0099)"
            if method
            else "Skip calling `torch.compiler.disable()`d function` (GB0098)"
        )
        self.report(
            node,
            f"`{spelled}` is disabled for compilation (`torch.compiler.disable`): calling it "
            f"from a fullgraph=True region fails on torch 2.13 with `Unsupported: {error}. "
            "Drop fullgraph=True for this region, or call the helper before or after the "
            "compiled function.",
            related=region.related,
        )

    def _check_arguments(self, node: cst.Call) -> None:
        """``step(x, record_stats)``: a disabled function (or a disabled module) passed from
        eager code into a fullgraph=True function that calls it."""
        from distlint.rules.compile.compile_state import compiled_bindings, file_functions
        from distlint.rules.compile.iterator_argument_to_compiled_function import positional_params

        func = node.func
        if not isinstance(func, cst.Name) or _locally_bound(self.ctx, func.value):
            return
        bindings = compiled_bindings(self.ctx).get(func.value, ())
        functions = file_functions(self.ctx)
        for binding in bindings:
            target = functions.get(binding.root.function)
            info = binding.root.info
            if not info.fullgraph or target is None:
                continue
            params = positional_params(target)
            for index, arg in enumerate(node.args):
                if arg.star:
                    break
                value = arg.value
                if not isinstance(value, cst.Name) or _locally_bound(self.ctx, value.value):
                    continue
                module = value.value in self._modules
                if not module and value.value not in self._functions:
                    continue
                name = arg.keyword.value if arg.keyword is not None else None
                if name is None and index < len(params):
                    name = params[index]
                call = _calls_parameter(target, name) if name else None
                if call is None:
                    continue
                error = (
                    "Unsupported function call (delayed)` (GB0148: the module is wrapped with "
                    "`torch.compiler.disable`)"
                    if module
                    else "Skip calling `torch.compiler.disable()`d function` (GB0098)"
                )
                self.report(
                    value,
                    f"`{value.value}` is disabled for compilation (`torch.compiler.disable`) and "
                    f"is passed as `{name}` into `{binding.name}`, compiled with fullgraph=True, "
                    f"which calls it: torch 2.13 fails with `Unsupported: {error}. Call it "
                    "before or after the compiled function, or drop fullgraph=True.",
                    related=(Location(info.path, info.span, info.label),),
                    related_nodes=((call, "called here"),),
                )
            return


def _calls_parameter(func: cst.FunctionDef, name: str) -> cst.Call | None:
    """The first call of ``func``'s parameter ``name`` in its own body (never rebound)."""
    from distlint.rules.compile._analysis import function_nodes

    found = None
    for node, _ in function_nodes(func):
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in targets):
                return None
        if (
            found is None
            and isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value == name
        ):
            found = node
    return found


def _disabled_modules(ctx: RuleContext) -> frozenset[str]:
    """Module-level names bound to ``torch.compiler.disable(<a module constructed here>)``."""
    resolve = ctx.imports.resolve
    classes = {stmt.name.value for stmt in ctx.module.body if isinstance(stmt, cst.ClassDef)}
    names: set[str] = set()
    for stmt in scope_statements(ctx.module.body):
        if (
            isinstance(stmt, cst.Assign)
            and isinstance(stmt.value, cst.Call)
            and resolve(stmt.value.func) in DISABLE_FUNCTIONS
            and stmt.value.args
            and isinstance(stmt.value.args[0].value, cst.Call)
        ):
            built = stmt.value.args[0].value.func
            name = resolve(built) or ""
            local = isinstance(built, cst.Name) and built.value in classes
            if local or (name.startswith("torch.nn.") and name.rpartition(".")[2][:1].isupper()):
                for target in stmt.targets:
                    if isinstance(target.target, cst.Name):
                        names.add(target.target.value)
    return frozenset(names)


def _enclosing_class(parents: Sequence[cst.CSTNode]) -> str | None:
    for parent in reversed(parents):
        if isinstance(parent, cst.ClassDef):
            return parent.name.value
    return None


def _disabled_callables(ctx: RuleContext) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """Module functions and class methods of this file cut out of compilation."""
    resolve = ctx.imports.resolve
    functions: set[str] = set()
    methods: set[tuple[str, str]] = set()
    for stmt in scope_statements(ctx.module.body):
        if isinstance(stmt, cst.FunctionDef) and is_compile_disabled(stmt, resolve):
            functions.add(stmt.name.value)
        elif isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Call):
            if resolve(stmt.value.func) in DISABLE_FUNCTIONS and stmt.value.args:
                for target in stmt.targets:
                    if isinstance(target.target, cst.Name):
                        functions.add(target.target.value)
        elif isinstance(stmt, cst.ClassDef):
            for item in scope_statements(stmt.body.body):
                if isinstance(item, cst.FunctionDef) and is_compile_disabled(item, resolve):
                    methods.add((stmt.name.value, item.name.value))
                elif (
                    isinstance(item, cst.Assign)
                    and isinstance(item.value, cst.Call)
                    and resolve(item.value.func) in DISABLE_FUNCTIONS
                    and item.value.args
                ):  # ``helper = torch.compiler.disable(fn)``: an alias called as self.helper
                    for target in item.targets:
                        if isinstance(target.target, cst.Name):
                            methods.add((stmt.name.value, target.target.value))
    return frozenset(functions), frozenset(methods)
