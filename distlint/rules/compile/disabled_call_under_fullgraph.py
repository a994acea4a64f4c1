"""DL110: a call to a ``torch.compiler.disable``d function from a ``fullgraph=True`` region,
or a disabled function (or module) passed into a ``fullgraph=True`` function that calls it.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, test_proof_dl1xx.py,
fixtures/DL110): ``Unsupported: Skip calling `torch.compiler.disable()`d function`` (GB0098),
``Skip inlining ...`` for a method (GB0099), ``Unsupported function call (delayed)`` for a
disabled module (GB0148).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.findings import Location, Severity
from distlint.rules.compile._bindings import compiled_bindings, file_functions, positional_params
from distlint.rules.compile._region import _locally_bound, _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import DISABLE_FUNCTIONS, is_compile_disabled
from distlint.syntax.imports import scope_statements


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
    graph_breaks = ("GB0098", "GB0099", "GB0148")

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
        func = node.func
        if not isinstance(func, cst.Name) or _locally_bound(self.ctx, func.value):
            return
        bindings = compiled_bindings(self.ctx).get(func.value, ())
        functions = file_functions(self.ctx)
        for binding in bindings:
            target = functions.get(binding.root.target)
            info = binding.root
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
