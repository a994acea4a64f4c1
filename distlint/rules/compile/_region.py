"""The base of rules that look inside compiled regions (DL1xx), shared by their modules.

Kept apart from the rules so that rule modules import it without importing each other.
"""

from __future__ import annotations

from functools import partial

import libcst as cst

from distlint.rules.base import RegionRule
from distlint.rules.compile._analysis import Bindings, TensorGuess, builtin_in
from distlint.rules.context import RuleContext
from distlint.syntax.shapes import is_name
from distlint.syntax.walker import descendants, keyword_arg

_MODULE = -1  # the module's bindings in _scope_bindings (other keys: id of a function or None)


def _scope_bindings(ctx: RuleContext) -> dict[int, Bindings]:
    """What each scope binds, for the region rules' tensor guesses (see TensorGuess)."""
    return {}


class _RegionRule(RegionRule):
    """Helpers for rules that look inside compiled regions."""

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._guesses: dict[int, TensorGuess] = {}
        self._module_guess: TensorGuess | None = None

    @property
    def config(self) -> dict[str, object]:
        return self.ctx.dynamo_config

    def enabled_anywhere(self, setting: str) -> bool:
        """Whether the file switches the Dynamo ``setting`` (one of ``SWITCHES``) to the value
        that lets Dynamo trace what a rule reports, anywhere: at module level, assigned in a
        function (torchrec's test helpers) or patched around a compiled call (``with
        torch._dynamo.config.patch(capture_scalar_outputs=True):``, thunder's and torchao's
        tests). Which runs it covers is not known, so what it allows is left alone in the
        whole file."""
        return setting in self.ctx.memo(_switched_on)

    def guess(self) -> TensorGuess:
        """The tensor guess of the innermost enclosing function (each rule its own; the
        scope's bindings are found once for all the region rules of the file)."""
        func = self.ctx.function
        key = id(func)
        found = self._guesses.get(key)
        if found is None:
            shared = self.ctx.memo(_scope_bindings)
            if self._module_guess is None:
                self._module_guess = TensorGuess(
                    self.ctx.imports.resolve,
                    partial(builtin_in, self.ctx.imports),
                    None,
                    module=self.ctx.module,
                    bindings=shared.get(_MODULE),
                )
                shared[_MODULE] = self._module_guess.bindings
            found = TensorGuess(
                self.ctx.resolve,
                partial(builtin_in, self.ctx.scope_table()),  # func's scope
                func,
                self._module_guess,
                bindings=shared.get(key),
            )
            shared[key] = found.bindings
            self._guesses[key] = found
        return found

    def is_builtin(self, func: cst.BaseExpression, name: str) -> bool:
        """``func`` is the builtin ``name`` (not shadowed by an import or a local)."""
        return builtin_in(self.ctx.scope_table(), func, name)

    def spell(self, node: cst.CSTNode, limit: int = 60) -> str:
        return self.ctx.spellings.spell(node, limit)


# Dynamo settings that make a region rule's break go away, looked for anywhere in the file
# (``_RegionRule.enabled_anywhere``), with the value that does it: DL102's scalar capture,
# DL106's and DL127's autograd ops, DL125's ``nn.Parameter`` constructor.
SWITCHES = {
    "capture_scalar_outputs": "True",
    "trace_autograd_ops": "True",
    "graph_break_on_nn_param_ctor": "False",
}


def _switched_on(ctx: RuleContext) -> frozenset[str]:
    """The ``SWITCHES`` the file sets to their value anywhere (one walk of the file, for all
    of them)."""
    named = {setting: value for setting, value in SWITCHES.items() if setting in ctx.source}
    if not named:
        return frozenset()
    found: set[str] = set()
    for node in descendants(ctx.module):
        if isinstance(node, cst.Assign):
            found.update(
                t.target.attr.value
                for t in node.targets
                if isinstance(t.target, cst.Attribute)
                and is_name(node.value, named.get(t.target.attr.value, ""))
            )
        elif isinstance(node, cst.Call):
            found.update(s for s, value in named.items() if _patches_to(node, s, value))
    return frozenset(found)


def _patches_to(call: cst.Call, setting: str, value: str) -> bool:
    """``config.patch(setting=value)`` / ``config.patch("setting", value)`` (also as a
    decorator), ``value`` the name ``True`` or ``False``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "patch"):
        return False
    keyword = keyword_arg(call, setting)
    if keyword is not None:
        return is_name(keyword.value, value)
    args = [a for a in call.args if a.keyword is None]
    return (
        len(args) == 2
        and isinstance(args[0].value, cst.SimpleString)
        and args[0].value.evaluated_value == setting
        and is_name(args[1].value, value)
    )


def _locally_bound(ctx: RuleContext, name: str) -> bool:
    table = ctx.scope_table()
    return table is not ctx.imports and name in getattr(table, "_bindings", {})
