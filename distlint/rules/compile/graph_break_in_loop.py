"""DL105: a graph break inside a loop of a compiled function.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL105): a break in a loop
makes Dynamo skip the whole frame (GB7000, ``graph break in loop``): nothing of the function is
compiled. The breaks counted are those of DL101, DL102, DL104 and DL202 (see ``_breaks``).
A compiled root that loops over FSDP2-sharded children graph-breaks at each child
(tests/proof/test_proof_dl107_109.py).
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.compile._bindings import first_positional
from distlint.rules.compile._breaks import Break, branch_breaks, breaks_in
from distlint.rules.compile._region import _RegionRule
from distlint.rules.compile._script_flow import DIST, names_in
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import self_attribute
from distlint.syntax.walker import descendants, nodes_with_parents


class GraphBreakInLoop(_RegionRule):
    code = "DL105"
    name = "graph-break-in-loop"
    severity = Severity.WARNING
    summary = (
        "A graph break inside a loop of a compiled function makes torch 2.13 skip the whole "
        "function: nothing of it is compiled."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0007", "GB7000")

    def visit_For(self, node: cst.For) -> None:
        self._check(node, node.body)

    def visit_While(self, node: cst.While) -> None:
        self._check(node, node.body)

    def _check(self, loop: cst.For | cst.While, body: cst.BaseSuite) -> None:
        region = self.ctx.region
        if region is None:
            return
        if self._fsdp2_children(loop, region):
            return
        if region.fullgraph:
            return  # under fullgraph=True the break itself is the (error) finding
        for parent in reversed(self.ctx.parents):
            if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                break
            if isinstance(parent, (cst.For, cst.While)) and self._first_break(parent):
                return  # the outer loop reports it
        found = self._first_break(loop)
        if found is None:
            return
        self.report(
            loop,
            f"{found.what} graph-breaks inside this loop ({found.code}): torch 2.13 then "
            "skips the whole function (GB7000, `graph break in loop`) and runs it eagerly, "
            "silently compiling nothing. Move the break out of the loop, or put the loop body "
            "in a separate compiled function.",
            related=region.related,
            related_nodes=((found.node, "graph break"),),
        )

    def _fsdp2_children(self, loop: cst.For | cst.While, region: Region) -> bool:
        """A compiled root looping over FSDP2-sharded children (proof: test_proof_dl107_109.py)."""
        children = sharded_children_loop(self.ctx, loop)
        if children is None:
            return False
        self.report_break(
            loop,
            region,
            fullgraph=(
                f"`{children}` holds `fully_shard` (FSDP2) modules, whose forward hooks are "
                "`torch._dynamo.disable`d: compiling this root with fullgraph=True fails on "
                "torch 2.13 (`Unsupported: Attempted to call function marked as skipped`, "
                "GB0007). Compile each block instead (`blk.compile()` per block)."
            ),
            breaks=(
                f"`{children}` holds `fully_shard` (FSDP2) modules: calling one graph-breaks "
                "in this loop (GB0007, FSDP hooks are `torch._dynamo.disable`d), so torch 2.13 "
                "skips this whole frame (GB7000, `graph break in loop`) and only the blocks' "
                "own `forward` compiles. Compile each block instead (`blk.compile()` per "
                "block: one graph, no break)."
            ),
        )
        return True

    def _first_break(self, loop: cst.For | cst.While) -> Break | None:
        cache = self.__dict__.setdefault("_loop_breaks", {})
        key = id(loop)
        if key not in cache:
            cache[key] = self._scan(loop)
        return cache[key]

    def _scan(self, loop: cst.For | cst.While) -> Break | None:
        prefix = tuple(self.ctx.parents)
        if isinstance(loop, cst.While):
            found = branch_breaks(self, loop)
            if found:
                return found[0]
        for node, parents in nodes_with_parents(loop.body):
            ancestors = (*prefix, loop, *parents)
            found = breaks_in(self, node, ancestors)
            if found and self.ctx.traced(ancestors):
                return found[0]
        return None


# -- FSDP2-sharded children looped over in a compiled root -----------------------------------------


def fully_sharded_attributes(ctx: RuleContext) -> frozenset[str]:
    """Attribute names whose elements the file passes to FSDP2's ``fully_shard``:
    ``for blk in model.layers: fully_shard(blk)`` or ``fully_shard(model.layers[i])``."""
    return ctx.memo(_fully_sharded_attributes)


def _fully_sharded_attributes(ctx: RuleContext) -> frozenset[str]:
    found: set[str] = set()
    loops: dict[str, str] = {}  # loop variable -> attribute iterated
    for node in descendants(ctx.module):
        if isinstance(node, cst.For) and isinstance(node.target, cst.Name):
            it = node.iter
            if isinstance(it, cst.Attribute):
                loops[node.target.value] = it.attr.value
            elif isinstance(it, cst.Subscript) and isinstance(it.value, cst.Attribute):
                loops[node.target.value] = it.value.attr.value
    for node in descendants(ctx.module):
        if not isinstance(node, cst.Call):
            continue
        name = ctx.imports.resolve(node.func) or ""
        if not (name.startswith(DIST) and name.endswith(".fully_shard")):
            continue
        arg = first_positional(node)
        if isinstance(arg, cst.Name) and arg.value in loops:
            found.add(loops[arg.value])
        elif isinstance(arg, cst.Subscript) and isinstance(arg.value, cst.Attribute):
            found.add(arg.value.attr.value)
    result = frozenset(found)
    return result


def sharded_children_loop(ctx: RuleContext, loop: cst.For | cst.While) -> str | None:
    """``self.layers`` when ``loop`` runs ``for blk in self.layers: blk(...)`` in a function
    that a whole-module compile root compiles, and the file fully_shards those children."""
    region = ctx.region
    if region is None or not isinstance(loop, cst.For):
        return None
    if not any(r.kind in ("module", "method") for r in region.roots) or not region.direct:
        return None
    it = loop.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "enumerate":
        first = first_positional(it)
        it = first if first is not None else it
    attr = self_attribute(it)
    if attr is None or attr not in fully_sharded_attributes(ctx):
        return None
    variables = names_in(loop.target)
    for node, _ in nodes_with_parents(loop.body):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Name)
            and node.func.value in variables
        ):
            return f"self.{attr}"
    return None
