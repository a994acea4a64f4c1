"""DL601-DL604: CUDA graph capture and replay (observed on one H200, torch 2.11.0+cu130).

Capture regions are found in the file: the body of ``with torch.cuda.graph(g):``, the
statements between ``g.capture_begin()`` and ``g.capture_end()`` in one block, and the body of a
function of this file passed to ``torch.cuda.make_graphed_callables``; with project facts, also
every function that calls made under a capture run, in any module (a callable stored on
``self`` and called under capture included: ``FunctionSummary.passes``). ``reduce-overhead``
callables are compiled regions whose roots replay CUDA graphs (``region.cudagraphs``), plus, for
DL604's call sites, names bound in this file to ``torch.compile(..., mode="reduce-overhead")``.
"""

from __future__ import annotations

import re

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Location, Severity
from distlint.knowledge.captures import (
    GRAPH_CONTEXTS,
    GRAPHED_CALLABLES,
    graphed_items,
    statement_method,
)
from distlint.rules.registry import Rule
from distlint.semantic.regions import literal_value
from distlint.syntax.walker import children, descendants, parameters, scope_nodes

_CAPTURING = "is_current_stream_capturing"
_SYNC_FUNCTIONS = frozenset({"torch.cuda.synchronize", "torch.cuda.current_stream"})
_SYNC_METHODS = frozenset({"item", "cpu", "tolist", "numpy", "synchronize", "nonzero"})
_TENSOR_METHODS = frozenset(
    {"sum", "any", "all", "max", "min", "mean", "norm", "abs", "isnan", "isinf", "isfinite"}
)
_BARRIERS = frozenset(
    {
        "torch.distributed.barrier",
        "torch.distributed.monitored_barrier",
        "torch.distributed.all_gather_object",
        "torch.distributed.broadcast_object_list",
        "torch.distributed.gather_object",
        "torch.distributed.scatter_object_list",
    }
)
_COLLECTIVES = frozenset(
    {
        "torch.distributed.all_reduce",
        "torch.distributed.all_gather",
        "torch.distributed.all_gather_into_tensor",
        "torch.distributed.all_gather_single",
        "torch.distributed.reduce_scatter",
        "torch.distributed.reduce_scatter_tensor",
        "torch.distributed.reduce_scatter_single",
        "torch.distributed.all_to_all",
        "torch.distributed.all_to_all_single",
        "torch.distributed.broadcast",
        "torch.distributed.reduce",
        "torch.distributed.gather",
        "torch.distributed.scatter",
        "torch.distributed.send",
        "torch.distributed.recv",
        "torch.distributed.isend",
        "torch.distributed.irecv",
        "torch.distributed.batch_isend_irecv",
        "torch.distributed._all_gather_base",
        "torch.distributed._reduce_scatter_base",
    }
)
_FUNCOL = "torch.distributed._functional_collectives."

# A capture needs one of these words in the file: ``graph`` (``torch.cuda.graph`` and its
# aliases: the import line names it), ``capture_begin`` or ``make_graphed_callables``.
_CAPTURE_WORDS = re.compile(r"\bgraph\b|capture_begin|make_graphed_callables")
_GUARD_TYPES = frozenset({cst.If, cst.While, cst.IfExp})
# Code under these runs on some paths only (a function reached by calls is checked on its
# main path: see _CaptureRule._on_main_path).
_CONDITIONAL_TYPES = frozenset(
    {cst.If, cst.Else, cst.IfExp, cst.While, cst.ExceptHandler, cst.BooleanOperation, cst.Match}
    | {cst.CompIf, cst.Assert}
)


def _method(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


class _CaptureRule(Rule):
    """Knows whether the node being visited runs while a CUDA graph is being captured."""

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._spans: set[int] = set()  # ids of statements between capture_begin and capture_end
        self._graphed: set[str] = set()  # names of functions given to make_graphed_callables
        self._scanned = False
        source = ctx.source
        # Cheap per-file gate: without these words nothing in the file can be captured.
        self._may_capture = (
            "capture_begin" in source
            or "make_graphed_callables" in source
            or ("graph" in source and _CAPTURE_WORDS.search(source) is not None)
        )
        self._guard_words = _CAPTURING in source

    def _scan(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        source = self.ctx.source
        graphed = "make_graphed_callables" in source
        spans = "capture_begin" in source
        if not (graphed or spans):
            return
        resolve = self.ctx.imports.resolve
        pending: list[cst.CSTNode] = [self.ctx.module]
        while pending:
            node = pending.pop()
            kind = type(node)
            if kind is cst.Call:
                if graphed and node.args and resolve(node.func) in GRAPHED_CALLABLES:
                    items = graphed_items(node)
                    self._graphed.update(i.value for i in items if type(i) is cst.Name)
            elif spans and (kind is cst.IndentedBlock or kind is cst.Module):
                self._mark_spans(node.body)
            pending.extend(children(node))

    def _mark_spans(self, body) -> None:  # type: ignore[no-untyped-def]
        inside = False
        for stmt in body:
            name = statement_method(stmt)
            if name == "capture_begin":
                inside = True
            elif name == "capture_end":
                inside = False
            elif inside:
                self._spans.add(id(stmt))

    def capture(self) -> cst.CSTNode | Location | None:
        """What starts the capture the current node runs under, or None: a node of this file
        enclosing it, or (from the project facts) where a capture that calls the current
        function starts.

        Code under an ``if`` that tests ``torch.cuda.is_current_stream_capturing()`` is
        treated as guarded (not captured).
        """
        if not self._may_capture:
            return self._called_under_capture()
        self._scan()
        found: cst.CSTNode | None = None
        guards = self._guard_words
        for parent in self.ctx.parents:
            kind = type(parent)
            if guards and kind in _GUARD_TYPES and _mentions(parent.test, _CAPTURING):
                return None
            if found is not None:
                continue
            if kind is cst.With:
                for item in parent.items:
                    call = item.item
                    if type(call) is cst.Call and self.ctx.resolve(call.func) in GRAPH_CONTEXTS:
                        found = item
            elif id(parent) in self._spans or (
                kind is cst.FunctionDef and parent.name.value in self._graphed
            ):
                found = parent
        return found if found is not None else self._called_under_capture()

    def _called_under_capture(self) -> Location | None:
        """Where a capture that runs the current function by calls starts (project facts)."""
        facts = self.ctx.facts
        if facts is None or not facts.captures or not facts.has_captures(self.ctx.module_key):
            return None
        function = self.ctx.function_id
        where = facts.capture_of(function) if function is not None else None
        if where is None:
            return None
        if not self._on_main_path():
            return None
        return Location(where[0], where[1], "runs under the CUDA graph capture started here")

    def _on_main_path(self) -> bool:
        """Whether the current node runs whenever its function does: not under a branch, a
        handler, a short-circuit or a conditional expression, nor after an early exit. A
        function reached by calls may take other paths under capture than the ones we see."""
        parents = self.ctx.parents
        for index in range(len(parents) - 1, -1, -1):
            parent = parents[index]
            kind = type(parent)
            if kind is cst.FunctionDef:
                body = parent.body
                statement = parents[index + 2] if index + 2 < len(parents) else None
                if isinstance(body, cst.IndentedBlock) and statement is not None:
                    for earlier in body.body:
                        if earlier is statement:
                            break
                        if isinstance(earlier, cst.If) and _exits(earlier):
                            return False
                return True
            if kind in _CONDITIONAL_TYPES:
                return False
        return True

    def inside(self, start: cst.CSTNode | Location) -> str:
        """ "inside CUDA graph capture", naming the function when the capture calls it."""
        if isinstance(start, Location) and self.ctx.function is not None:
            name = self.ctx.function.name.value
            return f"in `{name}`, which runs inside CUDA graph capture,"
        return "inside CUDA graph capture"

    def related_to(self, start: cst.CSTNode | Location) -> dict:
        """The report keywords pointing at the capture's start."""
        if isinstance(start, Location):
            return {"related": (start,)}
        return {"related_nodes": ((start, "capture starts here"),)}


def _exits(node: cst.If) -> bool:
    """Whether an ``if`` statement may ``return`` or ``raise`` (an early exit)."""
    return any(isinstance(n, (cst.Return, cst.Raise)) for n in descendants(node))


def _ends_with(expr: cst.BaseExpression, name: str) -> bool:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == name
    return isinstance(expr, cst.Name) and expr.value == name


def _mentions(expr: cst.BaseExpression, name: str) -> bool:
    pending: list[cst.CSTNode] = [expr]
    while pending:
        node = pending.pop()
        if type(node) is cst.Name and node.value == name:
            return True
        pending.extend(children(node))
    return False


# -- DL601 ----------------------------------------------------------------------------------------


class HostSyncInCudaGraphCapture(_CaptureRule):
    code = "DL601"
    name = "host-sync-in-cuda-graph-capture"
    severity = Severity.ERROR
    summary = "A host synchronisation or CPU copy inside CUDA graph capture makes capture fail."
    tags = ("correctness", "cuda-graphs")
    precision = "high"

    def visit_Call(self, node: cst.Call) -> None:
        start = self.capture()  # cheaper than _sync_kind's name resolution: ask it first
        if start is None:
            return
        what = self._sync_kind(node)
        if what is None:
            return
        spelled = self.ctx.module.code_for_node(node)
        if len(spelled) > 40:
            spelled = self.ctx.module.code_for_node(node.func) + "(...)"
        if what == "cpu":
            effect = (
                "raises `RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA "
                "graph capture unless the CPU tensor is pinned`"
            )
        else:
            effect = "makes the capture fail with a CUDA error (GPU, torch 2.11)"
        self.report(
            node,
            f"`{spelled}` {self.inside(start)} {what_text(what)}: it {effect}. "
            "Move it out of the captured region, or guard it with "
            "`torch.cuda.is_current_stream_capturing()`.",
            **self.related_to(start),
        )

    def visit_If(self, node: cst.If) -> None:
        self._check_test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check_test(node.test)

    def _check_test(self, test: cst.BaseExpression) -> None:
        start = self.capture()
        if start is None or not self._tensor_valued(test):
            return
        self.report(
            test,
            f"Branching on a tensor {self.inside(start)} reads the value on the host, a "
            "synchronisation that makes the capture fail (GPU, torch 2.11). Use `torch.where` "
            "or compute the condition before capture.",
            **self.related_to(start),
        )

    def _sync_kind(self, call: cst.Call) -> str | None:
        name = self.ctx.resolve(call.func)
        if name in _SYNC_FUNCTIONS and name.endswith("synchronize"):
            return "sync"
        if name == "torch.nonzero":
            return "nonzero"
        if name == "print" or (
            name is None and isinstance(call.func, cst.Name) and call.func.value == "print"
        ):
            if any(_may_be_tensor(arg.value) for arg in call.args if arg.keyword is None):
                return "print"
            return None
        method = _method(call)
        if name is None and method in _SYNC_METHODS:
            if method == "cpu":
                return "cpu"
            return method
        if name is None and method == "to" and call.args:
            target = literal_value(call.args[0].value)
            if target == "cpu":
                return "cpu"
        return None

    def _tensor_valued(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            return self._tensor_valued(expr.left) or any(
                self._tensor_valued(c.comparator) for c in expr.comparisons
            )
        if isinstance(expr, cst.BooleanOperation):
            return self._tensor_valued(expr.left) or self._tensor_valued(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._tensor_valued(expr.expression)
        if isinstance(expr, cst.Call):
            name = self.ctx.resolve(expr.func)
            if name is not None:
                return name.startswith("torch.") and not name.startswith(
                    ("torch.cuda.", "torch.distributed.", "torch.compiler.", "torch._dynamo.")
                )
            return _method(expr) in _TENSOR_METHODS
        return False


_NOT_TENSOR_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})


def _may_be_tensor(expr: cst.BaseExpression) -> bool:
    """A print argument that may be a tensor (not a literal, a shape or dtype, or len())."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value not in _NOT_TENSOR_ATTRS
    if isinstance(expr, cst.Call):
        return not (isinstance(expr.func, cst.Name) and expr.func.value in ("len", "str", "type"))
    return isinstance(expr, (cst.Name, cst.Subscript))


def what_text(kind: str) -> str:
    return {
        "sync": "synchronises the host with the GPU",
        "nonzero": "needs the output size on the host",
        "print": "reads a tensor on the host if it prints one",
        "item": "reads the value on the host",
        "tolist": "reads the values on the host",
        "numpy": "copies to host memory",
        "synchronize": "synchronises the host with the GPU",
        "cpu": "copies to unpinned CPU memory",
    }.get(kind, "synchronises the host")


# -- DL602 ----------------------------------------------------------------------------------------


class CollectiveInCudaGraphCapture(_CaptureRule):
    code = "DL602"
    name = "collective-in-cuda-graph-capture"
    severity = Severity.ERROR
    summary = (
        "A collective inside CUDA graph capture: barriers and object collectives fail, other "
        "collectives need every rank to capture and replay the same sequence."
    )
    tags = ("correctness", "cuda-graphs", "distributed")
    precision = "high"

    def visit_Call(self, node: cst.Call) -> None:
        start = self.capture()  # cheaper than resolving the callee: ask it first
        if start is None:
            return
        name = self.ctx.resolve(node.func)
        if name is None:
            return
        fatal = name in _BARRIERS
        if not fatal and name not in _COLLECTIVES and not name.startswith(_FUNCOL):
            return
        if name.startswith(_FUNCOL) and name.rsplit(".", 1)[1] in ("wait_tensor",):
            return
        spelled = self.ctx.module.code_for_node(node.func)
        if fatal:
            how = (
                "a CUDA error"
                if name.endswith("barrier")
                else "`RuntimeError: Cannot copy between CPU and CUDA tensors during CUDA graph "
                "capture...`, the object is pickled through CPU memory"
            )
            self.report(
                node,
                f"`{spelled}` {self.inside(start)} makes the capture fail (GPU: {how}). "
                "Call it before or after the capture.",
                **self.related_to(start),
            )
            return
        self.report(
            node,
            f"`{spelled}` is captured into a CUDA graph"
            + ("" if not isinstance(start, Location) else f" ({self.inside(start)[:-1]})")
            + ": with NCCL this works only if every "
            "rank captures and replays the same collectives in the same order; a rank that "
            "captures or replays a different sequence deadlocks the others. Keep capture and "
            "replay unconditional on all ranks.",
            severity=Severity.WARNING,
            **self.related_to(start),
        )


# -- DL603 ----------------------------------------------------------------------------------------


class CudagraphMutatedInput(Rule):
    code = "DL603"
    name = "cudagraph-mutated-input"
    severity = Severity.WARNING
    summary = (
        'A mode="reduce-overhead" compiled function mutates an input in place, so CUDA graphs '
        "are silently skipped."
    )
    tags = ("performance", "torch.compile", "cuda-graphs")
    precision = "high"
    scope = "region"

    def _inputs(self) -> set[str]:
        func = self.ctx.function
        if func is None:
            return set()
        params = func.params
        names = [
            p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        ]
        return {n for n in names if n not in ("self", "cls")}

    def _region(self):  # type: ignore[no-untyped-def]
        region = self.ctx.region
        if region is None or not region.direct:
            return None
        if region.cudagraphs:
            return region
        func = self.ctx.function  # options={"triton.cudagraphs": True} on the decorator
        for decorator in func.decorators if func is not None else ():
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and _is_cudagraph_compile(expr, self.ctx):
                return region
        return None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return
        method = func.attr.value
        if not method.endswith("_") or method.startswith("_"):
            return
        self._check(node, func.value.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            self._check(target, target.value.value)

    def _check(self, node: cst.CSTNode, name: str) -> None:
        if name not in self._inputs():
            return
        region = self._region()
        if region is None:
            return
        self.report(
            node,
            f"`{self.ctx.module.code_for_node(node)}` mutates the input `{name}` of a function "
            'compiled with mode="reduce-overhead" (CUDA graphs): CUDA graphs are silently '
            "skipped for it (GPU: `skipping cudagraphs due to mutated inputs`, a log line "
            "only). Return a new tensor, and copy into the input outside the compiled function.",
            related=region.related,
        )


# -- DL604 ----------------------------------------------------------------------------------------


class CudagraphOutputReuse(Rule):
    code = "DL604"
    name = "cudagraph-output-reuse"
    severity = Severity.WARNING
    summary = (
        "The output of a reduce-overhead callable is read after a later call has overwritten it."
    )
    fix_availability = FixAvailability.SOMETIMES
    tags = ("correctness", "torch.compile", "cuda-graphs")
    precision = "medium"

    def visit_Module(self, node: cst.Module) -> None:
        source = self.ctx.source
        if "reduce-overhead" not in source and "cudagraphs" not in source:
            return  # no callable of this file can be compiled to replay CUDA graphs
        graphed = _cudagraph_callables(node, self.ctx)
        if not graphed:
            return
        _OutputUse(self, graphed).run(node)


def _is_cudagraph_compile(call: cst.Call, ctx) -> bool:  # type: ignore[no-untyped-def]
    if ctx.resolve(call.func) != "torch.compile":
        return False
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "mode" and literal_value(arg.value) == "reduce-overhead":
            return True
        if arg.keyword.value == "options" and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if (
                    isinstance(element, cst.DictElement)
                    and literal_value(element.key) == "triton.cudagraphs"
                    and literal_value(element.value) is True
                ):
                    return True
    return False


def _cudagraph_callables(module: cst.Module, ctx) -> set[str]:  # type: ignore[no-untyped-def]
    """Names bound in this file to CUDA-graph-replaying compiled callables: decorated functions
    anywhere, and module-level assignments (a function's own assignments are its locals, seen
    in source order by ``_OutputUse``; peft's tests rebind ``model`` per test)."""
    names: set[str] = set()

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            for decorator in node.decorators:
                expr = decorator.decorator
                if isinstance(expr, cst.Call) and _is_cudagraph_compile(expr, ctx):
                    names.add(node.name.value)
            self.depth += 1

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.depth -= 1

        def visit_Assign(self, node: cst.Assign) -> None:
            if (
                self.depth == 0
                and isinstance(node.value, cst.Call)
                and _is_cudagraph_compile(node.value, ctx)
            ):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        names.add(target.target.value)

    module.visit(Find())
    return names


def _local_cudagraph_names(function: cst.FunctionDef, ctx) -> set[str]:  # type: ignore[no-untyped-def]
    """Names a function binds itself to CUDA-graph-replaying compiled callables."""
    return {
        target.target.value
        for node in scope_nodes(function.body)
        if type(node) is cst.Assign
        and isinstance(node.value, cst.Call)
        and _is_cudagraph_compile(node.value, ctx)
        for target in node.targets
        if isinstance(target.target, cst.Name)
    }


def _locally_bound(function: cst.FunctionDef) -> set[str]:
    """Parameters and names the function assigns: they shadow module-level bindings."""
    names = {p.name.value for p in parameters(function.params)}
    for node in scope_nodes(function.body):
        if type(node) is cst.Assign:
            names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
    return names


class _OutputUse:
    """Source-order scan of each function: outputs kept across a later call of the callable."""

    def __init__(self, rule: CudagraphOutputReuse, graphed: set[str]) -> None:
        self.rule = rule
        self.module_graphed = graphed
        self.graphed = graphed  # the names that may be graphed in the function scanned
        self.active: set[str] = set()  # of those, the ones graphed at this point of the scan
        self.bound_values: dict[cst.CSTNode, cst.BaseExpression] = {}  # bind target -> value

    def run(self, module: cst.Module) -> None:
        scanner = self
        ctx = self.rule.ctx

        class Bodies(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                local = _local_cudagraph_names(node, ctx)
                # a module-level callable unless the function shadows its name
                scanner.active = scanner.module_graphed - _locally_bound(node)
                scanner.graphed = scanner.active | local
                if scanner.graphed:
                    scanner.scan(node.body)

        module.visit(Bodies())

    def _graph_call(self, expr: cst.BaseExpression) -> cst.Call | None:
        """``f(x)``, ``f(x)[0]`` or ``f(x).attr`` for a graphed ``f`` (still the output)."""
        while isinstance(expr, (cst.Subscript, cst.Attribute)):
            expr = expr.value
        if (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Name)
            and expr.func.value in self.active
        ):
            return expr
        return None

    def scan(self, body: cst.BaseSuite) -> None:
        events: list[tuple[str, cst.CSTNode, str | None]] = []
        scanner = self

        class Events(cst.CSTVisitor):
            def __init__(self) -> None:
                self.loops = 0

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False  # nested functions are scanned on their own

            def visit_For(self, node: cst.For) -> None:
                self.loops += 1

            def leave_For(self, node: cst.For) -> None:
                self.loops -= 1

            def visit_While(self, node: cst.While) -> None:
                self.loops += 1

            def leave_While(self, node: cst.While) -> None:
                self.loops -= 1

            def visit_Call(self, node: cst.Call) -> None:
                # list.append(f(x)) inside a loop keeps every step's output
                if (
                    self.loops
                    and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in ("append", "extend", "insert")
                    and node.args
                    and scanner._graph_call(node.args[-1].value) is not None
                ):
                    events.append(("keep", node.args[-1].value, node.func.attr.value))

            def leave_Call(self, node: cst.Call) -> None:
                if isinstance(node.func, cst.Name) and node.func.value in scanner.active:
                    events.append(("call", node, node.func.value))

            def visit_Assign(self, node: cst.Assign) -> None:
                node.value.visit(self)
                targets = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
                if isinstance(node.value, cst.Call) and _is_cudagraph_compile(
                    node.value, scanner.rule.ctx
                ):
                    scanner.active.update(targets)  # calls from here on replay graphs
                else:
                    scanner.active.difference_update(t for t in targets if t in scanner.graphed)
                if scanner._graph_call(node.value) is not None:
                    for target in node.targets:
                        if isinstance(target.target, cst.Name):
                            scanner.bound_values[target.target] = node.value
                            events.append(("bind", target.target, target.target.value))
                else:
                    for target in node.targets:
                        if isinstance(target.target, cst.Name):
                            events.append(("unbind", target.target, target.target.value))
                return False  # type: ignore[return-value]

            def visit_Name(self, node: cst.Name) -> None:
                events.append(("read", node, node.value))

        body.visit(Events())
        self._judge(events)

    def _judge(self, events: list[tuple[str, cst.CSTNode, str | None]]) -> None:
        bound: dict[str, tuple[int, cst.CSTNode]] = {}  # name -> (calls seen when bound, node)
        calls = 0
        last_call: cst.CSTNode | None = None
        reported: set[str] = set()
        for kind, node, name in events:
            # `cudagraph_mark_step_begin()` does not protect a kept output: on an H200 the
            # kept value was silently overwritten with and without it (rules/DL604.md).
            if kind == "call":
                calls += 1
                last_call = node
            elif kind == "bind" and name is not None:
                bound[name] = (calls, node)
            elif kind == "unbind" and name is not None:
                bound.pop(name, None)
            elif kind == "keep":
                self.rule.report(
                    node,
                    "The output of a reduce-overhead (CUDA graph) callable is kept across steps: "
                    "the next replay overwrites it in place. While the graph is being recorded, "
                    "reading it raises `RuntimeError: Error: accessing tensor output of "
                    "CUDAGraphs that has been overwritten by a subsequent run`; once recorded, "
                    "it silently holds the later step's values (GPU, torch 2.11; "
                    "`cudagraph_mark_step_begin()` does not prevent this). Keep `.clone()` (or "
                    "a Python value) instead.",
                    **self._clone_fix(node),  # type: ignore[arg-type]
                )
            elif kind == "read" and name in bound and name not in reported:
                when, _ = bound[name]
                if calls > when and last_call is not None:
                    reported.add(name)
                    self.rule.report(
                        node,
                        f"`{name}` holds the output of a reduce-overhead (CUDA graph) call that "
                        "a later call has overwritten in place: while the graph is being "
                        "recorded, reading it raises `RuntimeError: Error: accessing tensor "
                        "output of CUDAGraphs that has been overwritten by a subsequent run`; "
                        "once recorded, it silently holds the later call's values (GPU, torch "
                        "2.11; `cudagraph_mark_step_begin()` does not prevent this). `.clone()` "
                        "it before the next call.",
                        related_nodes=((last_call, "overwritten by this call"),),
                        **self._clone_fix(self.bound_values.get(bound[name][1])),  # type: ignore[arg-type]
                    )

    def _clone_fix(self, value: cst.CSTNode | None) -> dict[str, object]:
        """``fix``/``fix_nodes`` that keep ``value.clone()`` instead of the graph's output.

        Unsafe: the output may be a tuple or another container (then ``.clone()`` does not
        exist), and a copy per step costs memory. For a tensor it is the remedy torch's own
        error message names.
        """
        if not isinstance(value, cst.BaseExpression):
            return {}
        # the node's range leaves its own parentheses out
        text = self.rule.ctx.module.code_for_node(value.with_changes(lpar=(), rpar=()))
        if not isinstance(value, (cst.Call, cst.Subscript, cst.Attribute)):
            text = f"({text})"
        return {
            "fix": Fix("Keep a `.clone()` of the output", (), Applicability.UNSAFE),
            "fix_nodes": ((value, f"{text}.clone()"),),
        }
