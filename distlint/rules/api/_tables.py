"""The torch tables of a project's torch range, shared by the rules that judge arguments
against them (DL501, DL502, DL503)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from distlint.knowledge.torch_tables import (
    TorchTable,
    available_versions,
    tables_between,
    version_key,
)
from distlint.rules.base import Rule

if TYPE_CHECKING:
    from distlint.rules.context import RuleContext


class TableRule(Rule):
    """Shared access to the torch tables of the project's torch range (lowest..highest).

    An argument is judged against every release in the range: rejected by all, it is an
    error; rejected by some only, a warning that names them.
    """

    _tables: tuple[TorchTable, ...] | None = None

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        highest = ctx.settings.torch_range[1]
        if highest is not None and version_key(highest) < version_key(available_versions()[0]):
            # every release the project supports is older than the oldest table: a name missing
            # there may still exist in the project's torch (FSDP's ``ignored_parameters``, torch
            # 2.0, renamed ``ignored_states`` later), so nothing is judged
            self.active = False

    @property
    def tables(self) -> tuple[TorchTable, ...]:
        """The releases of the project's torch range (lowest..highest), oldest first."""
        if self._tables is None:
            self._tables = tables_between(*self.ctx.settings.torch_range)
        return self._tables

    @property
    def table(self) -> TorchTable:
        """The newest release of the range: messages and suggestions come from it."""
        return self.tables[-1]


def passes_no_keyword(call: cst.Call) -> bool:
    """Whether ``call`` passes no keyword argument (and is not ``x.compile(...)``): the
    keywords are all that DL501 and DL502 judge (those of a ``functools.partial`` too, which
    are the call's own), so such a call has nothing for them.

    ``x.compile()`` is not skipped: it asks ``ctx.module_compile_receiver``, whose per-file
    memo is built by the first rule that asks, in the scope it asks from.
    """
    for arg in call.args:  # a loop, not any(): asked twice of every call
        if arg.keyword is not None:
            return False
    func = call.func
    return not (type(func) is cst.Attribute and func.attr.value == "compile")
