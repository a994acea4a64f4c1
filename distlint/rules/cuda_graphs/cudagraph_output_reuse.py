"""DL604 cudagraph-output-reuse: see its docs page, docs/rules/DL604.md."""

from __future__ import annotations

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.rules.base import FixArgs, Rule
from distlint.rules.context import RuleContext
from distlint.rules.cuda_graphs._capture import _is_cudagraph_compile
from distlint.syntax.walker import parameters, scope_nodes


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


def _cudagraph_callables(module: cst.Module, ctx: RuleContext) -> set[str]:
    """Names bound in this file to CUDA-graph-replaying compiled callables: decorated functions
    anywhere, and module-level assignments (a function's own assignments are its locals, seen
    in source order by ``_OutputUse``; peft's tests rebind ``model`` per test)."""
    names: set[str] = set()

    class Find(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if _graph_decorated(node, ctx):
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


def _graph_decorated(function: cst.FunctionDef, ctx: RuleContext) -> bool:
    """Decorated with a compile that replays CUDA graphs (``@torch.compile(mode=...)``)."""
    return any(
        isinstance(d.decorator, cst.Call) and _is_cudagraph_compile(d.decorator, ctx)
        for d in function.decorators
    )


def _local_cudagraph_names(function: cst.FunctionDef, ctx: RuleContext) -> set[str]:
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
    """Source-order scan of each function and of the module's own statements: outputs kept
    across a later call of the callable."""

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
        # the module's own statements (a script's top level, its ``if __name__ == ...:``
        # block): decorated callables replay graphs from the start, assigned ones from their
        # assignment on
        scanner.active = {
            statement.name.value
            for statement in module.body
            if isinstance(statement, cst.FunctionDef) and _graph_decorated(statement, ctx)
        }
        scanner.graphed = set(scanner.module_graphed)
        scanner.scan(module)

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

    def scan(self, body: cst.BaseSuite | cst.Module) -> None:
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

            def visit_Assign(self, node: cst.Assign) -> bool:
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
                return False  # the value was visited above; the targets are not reads

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
            # kept value was silently overwritten with and without it (docs/rules/DL604.md).
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
                    **self._clone_fix(node),
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
                        **self._clone_fix(self.bound_values.get(bound[name][1])),
                    )

    def _clone_fix(self, value: cst.CSTNode | None) -> FixArgs:
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
