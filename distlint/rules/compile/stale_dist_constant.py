"""DL108: ``dist.get_rank()`` / ``get_world_size()`` / ``is_initialized()`` folded into a
compiled region that runs before ``init_process_group`` (or before the group is re-created).

Observed on torch 2.13.0 (tests/proof/test_proof_dl107_109.py, fixtures/DL108): the value is
folded into the graph as a constant without a guard, so later calls keep the stale value.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.compile._analysis import function_nodes
from distlint.rules.compile._bindings import compiled_bindings, region_functions
from distlint.rules.compile._region import _RegionRule
from distlint.rules.compile._script_flow import DIST, Event, flows, may_precede
from distlint.rules.context import RuleContext
from distlint.semantic.compile_sites import RootInfo

DIST_CONSTANTS = {
    "torch.distributed.get_rank": "dist.get_rank()",
    "torch.distributed.get_world_size": "dist.get_world_size()",
    "torch.distributed.is_initialized": "dist.is_initialized()",
}


def dist_reads(ctx: RuleContext, root: RootInfo) -> list[tuple[cst.Call, str]]:
    """Calls of the folded ``torch.distributed`` getters in the root's region (this file)."""
    found = []
    for func in region_functions(ctx, root).values():
        for node, _ in function_nodes(func):
            if isinstance(node, cst.Call):
                name = ctx.imports.resolve(node.func)
                if name in DIST_CONSTANTS:
                    found.append((node, name))
    return found


class StaleDistConstant(_RegionRule):
    code = "DL108"
    name = "stale-dist-constant"
    severity = Severity.WARNING
    summary = (
        "A compiled region reads dist.get_rank()/get_world_size()/is_initialized() and runs "
        "before init_process_group (or before the group is re-created): the folded value is "
        "not guarded and stays stale."
    )
    tags = ("correctness", "distributed", "torch.compile")
    precision = "high"

    def visit_Module(self, node: cst.Module) -> None:
        bindings = compiled_bindings(self.ctx)
        for flow in flows(self.ctx):
            if flow.of("reset"):
                continue  # torch._dynamo.reset() drops the stale graphs
            inits = flow.of("init")
            destroys = flow.of("destroy")
            if not inits:
                continue
            for name, items in bindings.items():
                calls = [e for e in flow.of("call") if e.name == name]
                if not calls:
                    continue
                reads = [r for b in items for r in dist_reads(self.ctx, b.root)]
                if not reads:
                    continue
                checks_init = any(n == DIST + "is_initialized" for _, n in reads)
                self._check(name, calls, inits, destroys, reads, checks_init)

    def _check(
        self,
        name: str,
        calls: list[Event],
        inits: list[Event],
        destroys: list[Event],
        reads: list[tuple[cst.Call, str]],
        checks_init: bool,
    ) -> bool:
        for first in calls:
            for init in inits:
                if not may_precede(first, init):
                    continue
                if not any(may_precede(init, later) for later in calls):
                    continue
                recreated = any(may_precede(first, d) and may_precede(d, init) for d in destroys)
                if not (recreated or checks_init):
                    continue  # get_rank() with no group raises: not a stale value
                read, resolved = reads[0]
                folded = DIST_CONSTANTS[resolved]
                when = (
                    "before the process group is re-created"
                    if recreated
                    else "before `init_process_group`"
                )
                related_nodes = [(init.node, "process group created here")]
                related_nodes.append((read, "folded into the compiled graph here"))
                self.report(
                    first.node,
                    f"`{name}` runs its compiled region here, {when}: `{folded}` in it is "
                    "folded into the graph as a constant without a guard, so later calls keep "
                    "the stale value on torch 2.13 (no recompile). Create the process group "
                    "before the first compiled call, or call `torch._dynamo.reset()` after "
                    "(re)creating it.",
                    related_nodes=tuple(related_nodes),
                )
                return True
        return False
