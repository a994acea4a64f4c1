"""DL304: ``torch.compile`` of ``DDP(nn.Sequential(...))`` (or of DDP around any built-in
``torch.nn`` module).

Observed on torch 2.13.0 with gloo (tests/proof/test_proof_dl3xx.py, fixtures/DL304): after
DDP's forward breaks the graph, the built-in module's ``forward`` is not compiled as a frame of
its own: 0 graphs, the model runs eagerly.
"""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.wrapping._wrapping import SiteFacts, _WrappingRule


class CompiledDdpOfBuiltinContainer(_WrappingRule):
    code = "DL304"
    name = "compiled-ddp-of-builtin-container"
    severity = Severity.WARNING
    summary = (
        "torch.compile of DDP(nn.Sequential(...)) (or any built-in torch.nn module) compiles "
        "nothing: the model runs eagerly."
    )
    tags = ("performance", "torch.compile", "distributed")
    precision = "high"
    graph_breaks = ("GB0007", "GB0156")
    triggers = ("DistributedDataParallel",)

    def check(self, facts: SiteFacts) -> None:
        site, wrapped = facts.site, facts.wrapped
        if site.options.fullgraph:
            return  # DL301: the compile fails outright
        if wrapped is None or wrapped.kind != "ddp" or wrapped.builtin is None:
            return
        short = "nn." + wrapped.builtin.rsplit(".", 1)[-1]
        self.report(
            site.node,
            f"Compiling `DDP({short}(...))` compiles nothing on torch 2.13: after DDP's forward "
            f"breaks the graph, the built-in `{short}.forward` is not compiled as a frame of its "
            f"own, so 0 graphs are compiled and the model runs eagerly, silently. Compile the "
            "module before wrapping it: `DDP(torch.compile(module))`.",
            related_nodes=((wrapped.call, "wrapped here"),),
        )
