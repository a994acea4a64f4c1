"""DL503: ``torch._dynamo.config`` / ``torch._inductor.config`` names that do not exist, judged
against every release of the project's torch range.

Facts come from data shipped with distlint, never from an imported torch: the config names in
``distlint/knowledge/data/torch-tables.json``, generated from torch by
``scripts/gen_torch_tables.py``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.knowledge.torch_tables import TorchTable, closest, describe_versions, version_advice
from distlint.rules.api._tables import TableRule
from distlint.rules.api._version_guards import (
    EarlyExitGuards,
    guarded_here,
    only_called_behind_guards,
)
from distlint.rules.context import RuleContext
from distlint.semantic.regions import literal_value
from distlint.syntax.guards import ByAncestor
from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import descendants

_CONFIG_MODULES = ("torch._dynamo.config", "torch._inductor.config")
_PATCHES = {f"{module}.patch": module for module in _CONFIG_MODULES}  # -> the module


class UnknownCompilerConfig(TableRule):
    code = "DL503"
    name = "unknown-compiler-config"
    severity = Severity.ERROR
    summary = (
        "A torch._dynamo.config / torch._inductor.config name that does not exist is set "
        "(AttributeError)."
    )
    fix_availability = FixAvailability.SOMETIMES
    tags = ("correctness", "torch.compile", "api")
    precision = "very-high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._helpers_behind_guards: dict[int, bool] = {}  # id(function) -> answer
        self._early_exits = EarlyExitGuards()
        # guarded_here of the walk's ancestors (asked at every attribute assignment)
        self._guarded_here = ByAncestor(
            lambda ancestors: guarded_here(ancestors, self._early_exits)
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_target(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "setattr":
            # setattr(torch._dynamo.config, "name", value), unless `setattr` is rebound
            if not self.ctx.imports.is_bound("setattr") and len(node.args) >= 2:
                module = self.ctx.resolve(node.args[0].value)
                attr = literal_value(node.args[1].value)
                if module in _CONFIG_MODULES and isinstance(attr, str):
                    self._check_name(node.args[1].value, module, attr, "`setattr` raises")
            return
        if type(func) is cst.Attribute and func.attr.value != "patch":
            return  # a chain resolves to a name ending with its last attribute: not a patch
        module = _PATCHES.get(self.ctx.resolve(func) or "")
        if module is not None and not self._guarded():
            self._check_patch(node, module)

    def _check_target(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute):
            return
        resolved = self.ctx.resolve(target)
        if resolved is None:
            return
        # the config module first: the guards (a walk up the ancestors, or of the file for a
        # helper's calls) only excuse, so they are asked of config names alone
        for module in _CONFIG_MODULES:
            if resolved.startswith(module + "."):
                break
        else:
            return
        if self._guarded():
            return  # ``try: ...config.new_flag = True`` / ``except AttributeError``
        if self._rebound_locally(target):
            return
        self._check_name(target, module, resolved[len(module) + 1 :], "the assignment raises")

    def _guarded(self) -> bool:
        """Under a version/feature guard (also after one that returns early), or in a private
        helper whose every call in the file is (lmdeploy sets ``recompile_limit`` in
        ``_configure_decode_torch_compile()``, called only after ``if version < 2.8:
        return``)."""
        parents = self.ctx.parents
        if self._guarded_here(parents):
            return True
        outer = next((p for p in parents if type(p) is cst.FunctionDef), None)
        if outer is None:
            return False
        known = self._helpers_behind_guards.get(id(outer))
        if known is None:
            known = only_called_behind_guards(self.ctx.module, outer, self._early_exits)
            self._helpers_behind_guards[id(outer)] = known
        return known

    def _rebound_locally(self, target: cst.Attribute) -> bool:
        """``from torch._dynamo import config`` in a function that also assigns ``config =
        PretrainedConfig()``: which one a line sees depends on the order (LMOps' tests)."""
        base = target.value
        while isinstance(base, cst.Attribute):
            base = base.value
        function = self.ctx.function
        if not isinstance(base, cst.Name) or function is None:
            return False
        name = base.value
        return any(
            type(node) is cst.Assign
            and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets)
            for node in descendants(function.body)
        )

    def _check_patch(self, call: cst.Call, module: str) -> None:
        where = "the patch raises, when entered or when a function it decorates is called,"
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        for arg in call.args:
            if arg.keyword is not None:
                self._check_name(arg.keyword, module, arg.keyword.value, where)
        if not positional:
            return
        first = positional[0].value
        if isinstance(first, cst.Dict):
            for element in first.elements:
                if isinstance(element, cst.DictElement):
                    key = literal_value(element.key)
                    if isinstance(key, str):
                        self._check_name(element.key, module, key, where)
        else:
            key = literal_value(first)
            if isinstance(key, str):
                self._check_name(first, module, key, where)

    def _check_name(self, node: cst.CSTNode, module: str, name: str, where: str) -> None:
        missing = [t.version for t in self.tables if not _has_config(t, module, name)]
        if not missing:
            return
        full = f"{module}.{name}"
        error = f"`AttributeError: {full} does not exist`"
        if len(missing) < len(self.tables):
            present = [t.version for t in self.tables if t.version not in missing]
            self.report(
                node,
                f"`{full}` exists only in torch {describe_versions(present)}: on torch "
                f"{describe_versions(missing)}, which the project supports, {where} {error}. "
                + version_advice(present, missing),
                severity=Severity.WARNING,
            )
            return
        names = self.table.config_names(module)
        message = f"`{full}` does not exist in torch {describe_versions(missing)}: {where} {error}."
        group = name + "."
        members = sorted(n for n in names if n.startswith(group))
        if members:
            message += (
                f" `{name}` is a group of settings; set one of them, e.g. `{module}.{members[0]}`."
            )
            self.report(node, message)
            return
        # a suggestion every release of the range has
        common = frozenset.intersection(*(t.config_names(module) for t in self.tables))
        suggestion = closest(name, [n for n in common if not n.startswith("_")])
        if suggestion is not None:
            message += f" Did you mean `{suggestion}`?"
        rename = isinstance(node, (cst.Attribute, cst.Name)) and suggestion is not None
        self.report(
            node,
            message,
            fix=Fix(f"Use {suggestion!r}", (), Applicability.UNSAFE) if rename else None,
            fix_nodes=((node, _respell(node, name, suggestion)),) if rename else (),
        )


def _has_config(table: TorchTable, module: str, name: str) -> bool:
    """Whether ``module.name`` can be set on this release (a config, or an attribute of an
    object-valued one)."""
    names = table.config_names(module)
    if name in names:
        return True
    parts = name.split(".")
    return any(".".join(parts[:i]) in names for i in range(1, len(parts)))


def _respell(node: cst.CSTNode, name: str, suggestion: str | None) -> str:
    """The target with its config name replaced, keeping the spelled module (``dc.``)."""
    assert suggestion is not None
    dotted = dotted_name(node) if isinstance(node, cst.Attribute) else None
    if dotted is None:
        return suggestion  # a patch(keyword=...) name
    prefix = dotted.split(".")[: -(name.count(".") + 1)]
    return ".".join([*prefix, suggestion])
