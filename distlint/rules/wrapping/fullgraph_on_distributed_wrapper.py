"""DL301: ``torch.compile(..., fullgraph=True)`` (or ``.compile(fullgraph=True)``) of a DDP
model, an FSDP1 model or a module whose submodules went through ``fully_shard``.

Observed on torch 2.13.0 with gloo (tests/proof/test_proof_dl3xx.py, fixtures/DL301): the
compile always fails (GB0156 or GB0003 for DDP, GB0208 for FSDP1 with ``use_orig_params=True``,
GB0007 for FSDP2's disabled hooks).
"""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.wrapping._wrapping import MISSING, SiteFacts, _WrappingRule


class FullgraphOnDistributedWrapper(_WrappingRule):
    code = "DL301"
    name = "fullgraph-on-distributed-wrapper"
    severity = Severity.ERROR
    summary = (
        "torch.compile(..., fullgraph=True) of a DDP model, an FSDP1 model or a module with "
        "fully_shard-ed submodules always fails."
    )
    tags = ("correctness", "torch.compile", "distributed")
    precision = "very-high"
    graph_breaks = ("GB0003", "GB0007", "GB0053", "GB0156", "GB0208")
    triggers = ("DistributedDataParallel", "FullyShardedDataParallel", "fully_shard")
    needs_fullgraph = True  # every finding is on an explicit `fullgraph=True`

    def check(self, facts: SiteFacts) -> None:
        site = facts.site
        if not site.options.fullgraph:
            return
        spelled = self.ctx.module.code_for_node(facts.target)
        wrapped = facts.wrapped
        method = site.kind == "method"  # X.compile(...) rather than torch.compile(X)
        how = f"`{spelled}.compile(fullgraph=True)`" if method else "fullgraph=True"
        if wrapped is not None and wrapped.kind == "ddp":
            if method:
                detail = "`Attempt to trace generator`, GB0003"
            else:
                detail = "`Unsupported method call` on DDP's `Logger`, GB0156"
            self.report(
                site.node,
                f"{how} on a `DistributedDataParallel` model always fails on torch 2.13 "
                f"(`Unsupported`: {detail}): DDP's forward cannot be captured in one graph. "
                "Compile the inner module instead (`DDP(torch.compile(model, "
                "fullgraph=True))`) or compile its blocks.",
                related_nodes=((wrapped.call, "wrapped here"),),
            )
            return
        if wrapped is not None and wrapped.kind == "fsdp1":
            orig = wrapped.use_orig_params
            if orig is MISSING or orig is False:
                return  # DL302 reports it (GB0053), as an error under fullgraph=True
            if method:
                return  # observed: FSDP1(use_orig_params=True).compile(fullgraph=True) passes
            self.report(
                site.node,
                "fullgraph=True on an FSDP1 `FullyShardedDataParallel` model fails on torch "
                "2.13: with `use_orig_params=True` Dynamo stops at `torch.* op returned "
                "non-Tensor` (GB0208), with `use_orig_params=False` at `FSDP with "
                "use_orig_params=False` (GB0053). Drop fullgraph=True, or compile the blocks "
                "inside the FSDP units.",
                related_nodes=((wrapped.call, "wrapped here"),),
            )
            return
        children = facts.sharded
        if children is not None:
            self.report(
                site.node,
                f"{how} on a module whose submodules went through `fully_shard` fails on "
                "torch 2.13: the FSDP2 hooks run `torch._dynamo.disable`d code (`Attempted to "
                "call function marked as skipped`, GB0007). Compile each block instead: "
                "`for blk in model.layers: blk.compile(fullgraph=True)`.",
                related_nodes=((children, "sharded here"),),
            )
