"""DL104: a host side effect (``print``, logging, ``time``, ``random``, ``pdb``,
``torch.save``, a write to ``os.environ``...) inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, test_proof_dl1xx.py,
fixtures/DL104): each graph-breaks (the GB id is in the message) and fails under
``fullgraph=True``. A statement that is only the call gets an unsafe fix:
``if not torch.compiler.is_compiling(): ...``.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import tensor_branches
from distlint.rules.compile._breaks import LOGGER_METHODS, environ_write, host_call
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions_model import Region

_HOST_ADVICE = {
    "0059": "Remove it, or print the returned tensors after the compiled call",
    "0291": "Log after the compiled call, from the values it returns",
    "4841": "Log after the compiled call, from the values it returns",
    "0208": "Read it outside the compiled region and pass the value in",
    "0033": "Use `torch.rand*` (traced) instead",
    "0156": "Do it outside the compiled region",
    "4198": "Copy outside the compiled region",
    "0088": "Do not read storage addresses inside the compiled region",
    "0007": "Move it outside the compiled region",
}


class HostSideEffect(_RegionRule):
    code = "DL104"
    name = "host-side-effect"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES
    summary = (
        "A host side effect (print, logging, time, random, pdb, torch.save...) inside a "
        "compiled region graph-breaks (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = (
        "GB0007",
        "GB0008",
        "GB0033",
        "GB0059",
        "GB0088",
        "GB0156",
        "GB0208",
        "GB0264",
        "GB0291",
        "GB4198",
        "GB4841",
    )

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        found = host_call(self, node)
        if found is None or self._under_tensor_test():
            return
        spelled, gb = found
        self._report(node, f"`{spelled}(...)`", gb, region, self._eager_guard(node, spelled))

    @in_region
    def visit_Assign(self, node: cst.Assign, region: Region) -> None:
        target = environ_write(self, node)
        if target is not None:
            self._report(target, "Writing `os.environ`", "0007", region)

    def _under_tensor_test(self) -> bool:
        """Whether an enclosing ``if``/``while`` of the function tests a tensor's value
        (``if done[~reset].any(): warnings.warn(...)``): the graph already ends at that test
        (DL101's hazard), and a side effect there reports data that should not occur, so
        whether it ever runs compiled is not something the code shows (torchrl's partial-reset
        warning)."""
        guess = None
        for parent in reversed(self.ctx.parents):
            if isinstance(parent, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(parent, (cst.If, cst.While)):
                guess = guess or self.guess()
                if tensor_branches(parent, guess):
                    return True
        return False

    def _eager_guard(self, node: cst.Call, spelled: str) -> tuple[tuple[cst.CSTNode, str], ...]:
        """A statement that is only the call (``print(...)``, ``logger.info(...)``,
        ``warnings.warn(...)``): guarded by ``if not torch.compiler.is_compiling():``, which
        Dynamo folds to False (the statement then runs in eager mode only). Unsafe: compiled
        runs no longer print, log or warn there."""
        parents = self.ctx.parents
        if len(parents) < 2 or spelled.rpartition(".")[2] not in _GUARDABLE:
            return ()
        statement, line = parents[-1], parents[-2]
        if not (
            isinstance(statement, cst.Expr)
            and statement.value is node
            and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1
        ):
            return ()
        if self.ctx.imports.resolve(cst.Name("torch")) != "torch":
            return ()  # ``torch`` is not the name of the torch module here
        code = self.ctx.module.code_for_node(node)
        return ((statement, f"if not torch.compiler.is_compiling(): {code}"),)

    def _report(
        self,
        node: cst.CSTNode,
        what: str,
        gb: str,
        region: Region,
        guard: tuple[tuple[cst.CSTNode, str], ...] = (),
    ) -> None:
        advice = _HOST_ADVICE.get(gb, "Move it outside the compiled region")
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what} inside a compiled region fails under fullgraph=True on torch 2.13 "
                f"(`Unsupported`, GB{gb})"
            ),
            breaks=(
                f"{what} inside a compiled region graph-breaks on torch 2.13 (GB{gb}): the "
                "graph ends here and resumes after it"
            ),
            certain_only=True,
            then=f". {advice}.",
            fix=Fix(_GUARD_TITLE, (), Applicability.UNSAFE) if guard else None,
            fix_nodes=guard,
        )


_GUARDABLE = frozenset({"print", "warn", *LOGGER_METHODS})
_GUARD_TITLE = "Run it in eager mode only (if not torch.compiler.is_compiling())"
