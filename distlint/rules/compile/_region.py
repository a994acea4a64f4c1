"""The base of rules that look inside compiled regions (DL1xx), shared by their modules.

Kept apart from the rules so that rule modules import it without importing each other.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import RegionRule
from distlint.rules.compile._analysis import SOME_PATHS_NOTE, Bindings, TensorGuess
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region

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
                    None,
                    module=self.ctx.module,
                    bindings=shared.get(_MODULE),
                )
                shared[_MODULE] = self._module_guess.bindings
            found = TensorGuess(
                self.ctx.resolve, func, self._module_guess, bindings=shared.get(key)
            )
            shared[key] = found.bindings
            self._guesses[key] = found
        return found

    def is_builtin(self, func: cst.BaseExpression, name: str) -> bool:
        """``func`` is the builtin ``name`` (not shadowed by an import or a local)."""
        if not isinstance(func, cst.Name) or func.value != name:
            return False
        return not self.ctx.scope_table().is_bound(name)

    def spell(self, node: cst.CSTNode, limit: int = 60) -> str:
        return self.ctx.spellings.spell(node, limit)

    def report_break(
        self,
        node: cst.CSTNode,
        region: Region,
        *,
        fullgraph: str,
        breaks: str,
        certain_only: bool = False,
    ) -> None:
        """Report what graph-breaks in ``region``: under fullgraph=True a compile error (the
        ``fullgraph`` message, severity error), otherwise the ``breaks`` message at the rule's
        severity; related to the region's roots either way. With ``certain_only`` the error is
        kept for a node that runs whenever a fullgraph=True root runs (``ctx.certain``); one
        on some paths only is a warning that says so."""
        if region.fullgraph:
            message, severity = fullgraph, Severity.ERROR
            if certain_only and not self.ctx.certain(node):
                message, severity = f"{fullgraph}{SOME_PATHS_NOTE}", Severity.WARNING
        else:
            message, severity = breaks, None
        self.report(node, message, severity=severity, related=region.related)


def _locally_bound(ctx: RuleContext, name: str) -> bool:
    table = ctx.scope_table()
    return table is not ctx.imports and name in getattr(table, "_bindings", {})
