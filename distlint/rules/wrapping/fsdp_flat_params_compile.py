"""DL302: ``torch.compile`` of an FSDP1 model with ``use_orig_params=False`` (FSDP1's
default).

Observed on torch 2.13.0 with gloo (tests/proof/test_proof_dl3xx.py, fixtures/DL302): Dynamo
skips it (``FSDP with use_orig_params=False``, GB0053) and the model runs eagerly, 0 graphs
compiled; under ``fullgraph=True`` the compile fails.
"""

from __future__ import annotations

from distlint.findings import Severity
from distlint.rules.wrapping._wrapping import MISSING, SiteFacts, _WrappingRule


class FsdpFlatParamsCompile(_WrappingRule):
    code = "DL302"
    name = "fsdp-flat-params-compile"
    severity = Severity.WARNING
    summary = (
        "torch.compile of an FSDP1 model with use_orig_params=False (the default) compiles "
        "nothing, and fails under fullgraph=True."
    )
    tags = ("performance", "torch.compile", "distributed")
    precision = "very-high"
    graph_breaks = ("GB0053", "GB0208")
    triggers = ("FullyShardedDataParallel",)

    def check(self, facts: SiteFacts) -> None:
        site, wrapped = facts.site, facts.wrapped
        if wrapped is None or wrapped.kind != "fsdp1":
            return
        orig = wrapped.use_orig_params
        if orig is not MISSING and orig is not False:
            return
        given = (
            "use_orig_params=False" if orig is False else "FSDP1's default use_orig_params=False"
        )
        if site.options.fullgraph:
            effect = (
                "the fullgraph=True compile fails with `Unsupported: FSDP with "
                "use_orig_params=False` (GB0053)"
            )
        else:
            effect = (
                "Dynamo skips it (`FSDP with use_orig_params=False`, GB0053) and the whole "
                "model runs eagerly, with 0 graphs compiled"
            )
        self.report(
            site.node,
            f"Compiling an FSDP1 model with {given}: {effect} on torch 2.13. Pass "
            "`use_orig_params=True` to `FullyShardedDataParallel`, or move to `fully_shard` "
            "and compile per block.",
            severity=Severity.ERROR if site.options.fullgraph else None,
            related_nodes=((wrapped.call, "wrapped here"),),
        )
