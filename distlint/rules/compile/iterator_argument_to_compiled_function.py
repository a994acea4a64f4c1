"""DL114: a one-shot iterator (``zip``, ``map``, ``filter``, ``enumerate``, ``reversed``,
``iter``, a generator expression, ``.items()`` / ``.values()`` of a dict) passed into a
compiled function that iterates it.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL114): Dynamo cannot
iterate such an object made outside the frame: ``missing tp_iter`` (GB0811). Under
``fullgraph=True`` compilation fails; without it Dynamo gives up on the whole function, which
runs eagerly (no graph at all). Passing one without iterating it compiles, and so does
``.keys()``: neither is reported.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Location, Severity
from distlint.rules.compile._analysis import IsBuiltin, function_nodes
from distlint.rules.compile._bindings import (
    Binding,
    compiled_bindings,
    file_functions,
    positional_params,
)
from distlint.rules.compile._region import _locally_bound, _RegionRule
from distlint.syntax.imports import scope_statements
from distlint.syntax.shapes import is_name
from distlint.syntax.walker import descendants, parameters

ITERATOR_BUILTINS = frozenset({"zip", "map", "filter", "enumerate", "reversed", "iter"})
DICT_VIEWS = frozenset({"items", "values"})
# builtins that iterate their first argument
CONSUMERS = frozenset(
    {"list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max", "any", "all"}
)
CONSUMERS |= frozenset({"enumerate", "zip", "map", "filter"})


class IteratorArgument(_RegionRule):
    code = "DL114"
    name = "iterator-argument-to-compiled-function"
    severity = Severity.WARNING
    summary = (
        "A zip/map/filter/enumerate/reversed/iter object, generator or dict view passed into a "
        "compiled function that iterates it: torch.compile gives up on the function "
        "(fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "very-high"
    graph_breaks = ("GB0811",)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Name) or self.ctx.region is not None:
            return  # called from compiled code, the callee is inlined: the iterator traces
        bindings = compiled_bindings(self.ctx).get(func.value)
        if not bindings:
            return
        if _locally_bound(self.ctx, func.value):
            # a local of that name: only a compile bound in this very function counts
            local = self._own_nodes()
            bindings = [b for b in bindings if b.node is not None and id(b.node) in local]
        functions = file_functions(self.ctx)
        for binding in bindings:
            target = functions.get(binding.root.target)
            if target is None:
                continue
            params = positional_params(target)
            for index, arg in enumerate(node.args):
                if arg.star:
                    break
                kind = self._iterator_kind(arg.value)
                if kind is None:
                    continue
                if arg.keyword is not None:
                    name = arg.keyword.value
                elif index < len(params):
                    name = params[index]
                else:
                    continue
                iterated = _iteration_of(target, name, self.is_builtin)
                if iterated is not None:
                    self._report(arg.value, kind, name, binding, iterated)
            return

    def _own_nodes(self) -> set[int]:
        function = self.ctx.function
        if function is None:
            return set()
        cache = self.__dict__.setdefault("_function_nodes", {})
        key = id(function)
        if key not in cache:
            cache[key] = {id(node) for node in descendants(function)}
        return cache[key]

    def _iterator_kind(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.GeneratorExp):
            return "a generator"
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        for name in ITERATOR_BUILTINS:
            if self.is_builtin(func, name):
                article = "an" if name[0] in "aeiou" else "a"
                return f"{article} `{name}` object"
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in DICT_VIEWS
            and not expr.args
            and self._is_dict(func.value)
        ):
            return f"a dict view (`.{func.attr.value}()`)"
        return None

    def _is_dict(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, (cst.Dict, cst.DictComp)):
            return True
        if isinstance(expr, cst.Call):
            return self.is_builtin(expr.func, "dict")
        if not isinstance(expr, cst.Name):
            return False
        scope = self.ctx.function
        body = scope.body.body if scope is not None else self.ctx.module.body
        values = [
            stmt.value
            for stmt in scope_statements(body)
            if isinstance(stmt, cst.Assign)
            and any(
                isinstance(t.target, cst.Name) and t.target.value == expr.value
                for t in stmt.targets
            )
        ]
        return bool(values) and all(
            isinstance(v, (cst.Dict, cst.DictComp))
            or (isinstance(v, cst.Call) and self.is_builtin(v.func, "dict"))
            for v in values
        )

    def _report(
        self,
        node: cst.BaseExpression,
        kind: str,
        param: str,
        binding: Binding,
        iterated: cst.CSTNode,
    ) -> None:
        info = binding.root
        spelled = self.spell(node)
        what = (
            f"`{spelled}` is {kind}, passed as `{param}` into the compiled `{binding.name}`, "
            "which iterates it"
        )
        advice = "Pass a list or tuple instead (`list(...)`), or build the iterator inside"
        if info.fullgraph:
            message = (
                f"{what}: under fullgraph=True this fails on torch 2.13 (`Unsupported: missing "
                f"tp_iter`, GB0811). {advice}."
            )
            severity = Severity.ERROR
        elif isinstance(iterated, cst.BaseExpression) and not isinstance(iterated, cst.Call):
            message = (
                f"{what} in a loop: torch 2.13 cannot iterate it (GB0811, `missing tp_iter`) "
                f"and gives up on the whole function, which runs eagerly (nothing compiled). "
                f"{advice}."
            )
            severity = None
        else:
            message = (
                f"{what}: torch 2.13 cannot iterate it (GB0811, `missing tp_iter`): the graph "
                f"breaks there. {advice}."
            )
            severity = None
        self.report(
            node,
            message,
            severity=severity,
            related=(*self._root_location(binding),),
            related_nodes=((iterated, "iterated here"),),
        )

    def _root_location(self, binding: Binding) -> tuple[Location, ...]:
        info = binding.root
        return (Location(info.path, info.span, info.label),)


def _iteration_of(func: cst.FunctionDef, name: str, is_builtin: IsBuiltin) -> cst.CSTNode | None:
    """Where ``func`` iterates its parameter ``name`` (if it never rebinds it)."""
    if name not in {p.name.value for p in parameters(func.params)}:
        return None
    found: cst.CSTNode | None = None
    for node, _ in function_nodes(func):
        if _rebinds(node, name):
            return None
        if found is not None:
            continue
        if isinstance(node, (cst.For, cst.CompFor)) and is_name(node.iter, name):
            found = node.iter
        elif isinstance(node, cst.Call) and node.args:
            first = node.args[0]
            if (
                first.keyword is None
                and not first.star
                and is_name(first.value, name)
                and any(is_builtin(node.func, c) for c in CONSUMERS)
            ):
                found = node
            if any(a.star == "*" and is_name(a.value, name) for a in node.args):
                found = node
    return found


def _rebinds(node: cst.CSTNode, name: str) -> bool:
    if isinstance(node, cst.Assign):
        return any(is_name(t.target, name) for t in node.targets)
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        return is_name(node.target, name)
    return False
