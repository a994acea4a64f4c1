"""DL109: a forward hook registered, after the first compiled call, on a module that runs
inside the compiled frame (a submodule of a compiled model, or a module its compiled function
calls).

Observed on torch 2.13.0 (tests/proof/test_proof_dl107_109.py, fixtures/DL109): Dynamo does not
guard on the hooks of modules inside the frame (``skip_nnmodule_hook_guards``): the hook never
fires.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.compile._analysis import function_nodes
from distlint.rules.compile._bindings import Binding, compiled_bindings, region_functions
from distlint.rules.compile._region import _RegionRule
from distlint.rules.compile._script_flow import (
    Flow,
    flows,
    library_module_bindings,
    may_precede,
)
from distlint.rules.context import RuleContext
from distlint.semantic.compile_sites import RootInfo

MODULE_ITERATORS = frozenset({"modules", "named_modules", "children", "named_children"})


class HookAfterCompile(_RegionRule):
    code = "DL109"
    name = "hook-after-compile"
    severity = Severity.WARNING
    summary = (
        "A forward hook registered after the first compiled call on a module that runs inside "
        "the compiled frame (a submodule of a compiled model) never fires."
    )
    tags = ("correctness", "torch.compile")
    precision = "high"

    def visit_Module(self, node: cst.Module) -> None:
        known = compiled_bindings(self.ctx)
        library = library_module_bindings(self.ctx)
        if not known and not any(library.values()):
            return
        for flow in flows(self.ctx):
            if flow.of("reset"):
                continue
            bindings = {**known, **library.get(id(flow.scope), {})}
            loop_modules = _module_loop_vars(flow, self.ctx)
            for hook in flow.of("hook"):
                assert hook.receiver is not None
                for name, items in bindings.items():
                    inside = self._runs_inside(hook.receiver, name, items, loop_modules)
                    if inside is None:
                        continue
                    first = [e for e in flow.of("call") if e.name == name and may_precede(e, hook)]
                    if not first:
                        continue
                    call = hook.node
                    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    method = call.func.attr.value
                    self.report(
                        call,
                        f"`{self.spell(hook.receiver)}.{method}(...)` comes after the first "
                        f"call of the compiled `{name}`, and {inside} runs inside the compiled "
                        "frame: torch 2.13 does not guard on its hooks "
                        "(`skip_nnmodule_hook_guards`), so this hook never fires. Register "
                        "hooks before the first compiled call, or call "
                        "`torch._dynamo.reset()` after registering.",
                        related_nodes=((first[0].node, "first compiled call"),),
                    )
                    break

    def _runs_inside(
        self,
        receiver: cst.BaseExpression,
        name: str,
        items: list[Binding],
        loop_modules: dict[str, str],
    ) -> str | None:
        """How ``receiver`` is a module run inside the compiled frame of ``name``, or None."""
        modules: set[str] = set()
        for binding in items:
            if binding.root.kind in ("module", "method"):
                modules.add(binding.name)
                if binding.origin is not None:
                    modules.add(binding.origin)
        called: set[str] = set()
        for binding in items:
            if binding.root.kind in ("decorator", "call"):
                called |= _modules_called(self.ctx, binding.root)
        base, depth = _chain_base(receiver)
        if base is None:
            return None
        if base in loop_modules and loop_modules[base] in modules | called:
            return f"`{base}` (a submodule of `{loop_modules[base]}`)"
        if base in modules and depth >= 1:
            return "this submodule"
        if base in called:
            return f"`{self.spell(receiver)}`" if depth == 0 else "this submodule"
        return None


def _chain_base(expr: cst.BaseExpression) -> tuple[str | None, int]:
    """``m`` and the number of steps for ``m.a.b[0]`` / ``m.get_submodule("a")``."""
    depth = 0
    while True:
        if isinstance(expr, cst.Name):
            return expr.value, depth
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr, depth = expr.value, depth + 1
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in ("get_submodule", "__getitem__")
        ):
            expr, depth = expr.func.value, depth + 1
        else:
            return None, depth


def _module_loop_vars(flow: Flow, ctx: RuleContext) -> dict[str, str]:
    """``mod`` -> ``m`` for ``for mod in m.modules()`` / ``for name, mod in
    m.named_modules()`` / ``for blk in m.layers`` loops of the flow's events."""
    found: dict[str, str] = {}
    seen: set[int] = set()
    for event in flow.events:
        for loop in event.loops:
            if id(loop) in seen or not isinstance(loop, cst.For):
                continue
            seen.add(id(loop))
            it = loop.iter
            target: cst.BaseExpression = loop.target
            if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute):
                method = it.func.attr.value
                if method not in MODULE_ITERATORS:
                    continue
                base, _ = _chain_base(it.func.value)
                if method.startswith("named_") and isinstance(target, cst.Tuple):
                    target = target.elements[-1].value
            else:
                base, depth = _chain_base(it)
                if depth < 1:
                    continue
            if base is not None and isinstance(target, cst.Name):
                found[target.value] = base
    return found


def _modules_called(ctx: RuleContext, root: RootInfo) -> set[str]:
    """Module-global names called inside the root's region functions of this file."""
    names: set[str] = set()
    for func in region_functions(ctx, root).values():
        local = {p.name.value for p in func.params.params}
        for node, _ in function_nodes(func):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        local.add(target.target.value)
        for node, _ in function_nodes(func):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Name)
                and node.func.value not in local
            ):
                names.add(node.func.value)
    return names
