"""The torch tables of a project's torch range, shared by the rules that judge arguments
against them (DL501, DL502, DL503)."""

from __future__ import annotations

from distlint.knowledge.torch_tables import TorchTable, tables_between
from distlint.rules.base import Rule


class TableRule(Rule):
    """Shared access to the torch tables of the project's torch range (lowest..highest).

    An argument is judged against every release in the range: rejected by all, it is an
    error; rejected by some only, a warning that names them.
    """

    _tables: tuple[TorchTable, ...] | None = None

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
