"""DL119: ``with cm:`` inside a compiled region, where ``cm`` is a context-manager object made
outside the region (a module-level global, a ``self.<attr>``, a local of an enclosing
function): a grad-mode object (``torch.no_grad()``, ``enable_grad()``,
``set_grad_enabled(...)``, ``inference_mode()``) or an instance of a class of this file that
defines ``__enter__``.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL119): Dynamo can only
enter such context managers when they are created inside the compiled code: ``Unsupported
context manager`` (GB0142). Under ``fullgraph=True`` compilation fails; without it Dynamo
gives up on the function. Made outside, ``torch.autocast(...)`` and
``contextlib.nullcontext()`` trace, and every one of them traces when created in the ``with``
statement itself.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import binds_locally, bound_values, self_attribute_values
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import scope_statements, self_attribute

GRAD_MODES = frozenset(
    {
        "torch.no_grad",
        "torch.enable_grad",
        "torch.set_grad_enabled",
        "torch.inference_mode",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.enable_grad",
        "torch.autograd.grad_mode.set_grad_enabled",
        "torch.autograd.grad_mode.inference_mode",
    }
)


class OutsideContextManager(_RegionRule):
    code = "DL119"
    name = "context-manager-from-outside-region"
    severity = Severity.WARNING
    summary = (
        "`with cm:` in a compiled region on a grad-mode or user context-manager object made "
        "outside it: Dynamo cannot enter it (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0142",)

    @in_region
    def visit_WithItem(self, node: cst.WithItem, region: Region) -> None:
        item = node.item
        made = None
        if isinstance(item, cst.Name):
            made = self._made_outside(item.value)
        elif (attr := self_attribute(item)) is not None:
            made = self._self_attribute(attr)
        if made is None:
            return
        spelled = self.spell(item)
        what = f"`with {spelled}:` enters {made}, made outside the compiled region"
        advice = "Create it in the `with` statement inside the function (`with torch.no_grad():`)"
        self.report_break(
            item,
            region,
            fullgraph=(
                f"{what}: under fullgraph=True this fails on torch 2.13 (`Unsupported: "
                f"Unsupported context manager`, GB0142). {advice}."
            ),
            breaks=(
                f"{what}: torch 2.13 cannot enter it (GB0142, `Unsupported context manager`) "
                f"and gives up on the function, which runs eagerly. {advice}."
            ),
        )

    # -- where the object comes from --------------------------------------------------------

    def _made_outside(self, name: str) -> str | None:
        function = self.ctx.function
        if function is not None and binds_locally(function, name):
            return None  # made inside the compiled function
        for parent in reversed(self.ctx.parents[:-1] if self.ctx.parents else []):
            if isinstance(parent, cst.FunctionDef) and parent is not function:
                values = bound_values(scope_statements(parent.body.body), name)
                if values or binds_locally(parent, name):
                    return self._kind(values)
        return self._kind(bound_values(scope_statements(self.ctx.module.body), name))

    def _self_attribute(self, attr: str) -> str | None:
        values = self_attribute_values(self.ctx.parents, attr)
        return None if values is None else self._kind(values)

    def _kind(self, values: list[cst.BaseExpression | None]) -> str | None:
        """What every assigned value makes, when all make an unsupported context manager."""
        kinds = set()
        for value in values:
            kind = self._made_by(value)
            if kind is None:
                return None
            kinds.add(kind)
        return kinds.pop() if len(kinds) == 1 else ("a context manager" if kinds else None)

    def _made_by(self, value: cst.BaseExpression | None) -> str | None:
        if not isinstance(value, cst.Call):
            return None
        name = self.ctx.imports.resolve(value.func)
        if name in GRAD_MODES:
            return f"a `{name.rpartition('.')[2]}()` object"
        func = value.func
        if isinstance(func, cst.Name) and name is None:
            for stmt in self.ctx.module.body:
                if (
                    isinstance(stmt, cst.ClassDef)
                    and stmt.name.value == func.value
                    and _defines_enter(stmt)
                ):
                    return f"a `{func.value}` context manager"
        return None


def _defines_enter(cls: cst.ClassDef) -> bool:
    return any(
        isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__enter__"
        for stmt in scope_statements(cls.body.body)
    )
