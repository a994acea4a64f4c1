"""DL113: a ``class`` statement inside a compiled function.

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL113): Dynamo cannot
trace ``__build_class__``: ``Invalid call to __build_class__`` (GB8977), a graph break, and
under ``fullgraph=True`` a compile error.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.compile._region import _RegionRule


class ClassDefinitionInCompiledRegion(_RegionRule):
    code = "DL113"
    name = "class-definition-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "A class statement inside a compiled function graph-breaks (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "very-high"
    graph_breaks = ("GB8977",)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        region = self.ctx.region
        if region is None or self.ctx.function is None:
            return
        if any(isinstance(p, cst.ClassDef) for p in self._since_function()):
            return  # a class nested in a local class: the outer one is reported
        what = f"The `class {node.name.value}` statement inside a compiled function"
        advice = "Define the class at module level and use it here"
        self.report_break(
            node.name,
            region,
            fullgraph=(
                f"{what} fails under fullgraph=True on torch 2.13 (`Unsupported: Invalid call "
                f"to __build_class__`, GB8977). {advice}."
            ),
            breaks=(
                f"{what} graph-breaks on torch 2.13 (GB8977, `Invalid call to "
                f"__build_class__`): the graph ends here and resumes after it. {advice}."
            ),
        )

    def _since_function(self) -> list[cst.CSTNode]:
        found: list[cst.CSTNode] = []
        for parent in reversed(self.ctx.parents):
            if isinstance(parent, cst.FunctionDef):
                break
            found.append(parent)
        return found
