"""DL112: calls Dynamo refuses to trace inside a compiled region: ``unittest.TestCase``'s own
assertion methods (GB0008), ``torch.compiler.disable(...)`` / ``torch._dynamo.disable(...)``
called there and ``torch.nn.utils.rnn``'s packing functions (GB0007).

Observed on torch 2.13.0 (tests/proof/test_proof_graph_breaks.py, fixtures/DL112): Dynamo skips the
``unittest`` module, the ``disable`` function itself and ``pack_padded_sequence`` /
``pad_packed_sequence`` (``pack_sequence`` calls the first); each call ends the graph, and under
``fullgraph=True`` compilation fails. A project's own helper methods on a ``TestCase``
subclass trace normally.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _RegionRule
from distlint.semantic.regions import DISABLE_FUNCTIONS
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import scope_statements, self_attribute

TEST_CASES = frozenset({"unittest.TestCase", "unittest.IsolatedAsyncioTestCase"})
_SKIPPED_METHODS = frozenset({"fail", "skipTest"})
# torch functions Dynamo marks as skipped (torch 2.13: GB0007 at the call, fixtures/DL112).
# ``pack_sequence`` breaks in its own call of ``pack_padded_sequence``; ``pad_sequence`` and
# ``unpad_sequence`` trace (traps).
SKIPPED_FUNCTIONS = frozenset(
    {
        "torch.nn.utils.rnn.pack_padded_sequence",
        "torch.nn.utils.rnn.pad_packed_sequence",
        "torch.nn.utils.rnn.pack_sequence",
    }
)


def _is_unittest_method(name: str) -> bool:
    return name.startswith(("assert", "fail")) or name in _SKIPPED_METHODS


class SkippedFunctionCall(_RegionRule):
    code = "DL112"
    name = "skipped-function-call"
    severity = Severity.WARNING
    summary = (
        "A unittest assertion, a torch.compiler.disable(...) or a pack_padded_sequence-style "
        "call inside a compiled region: "
        "Dynamo skips it and breaks the graph (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "very-high"
    graph_breaks = ("GB0007", "GB0008")

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        name = self.ctx.resolve(node.func)
        if name in DISABLE_FUNCTIONS:
            self._report(
                node,
                f"`{self.spell(node.func)}(...)` called inside a compiled region",
                "0007",
                "Attempted to call function marked as skipped",
                "Apply `torch.compiler.disable` once, outside the compiled function (as a "
                "decorator or at module level), and call the result",
                region,
            )
            return
        if name in SKIPPED_FUNCTIONS:
            self._report(
                node,
                f"`{self.spell(node.func)}(...)` called inside a compiled region",
                "0007",
                "Attempted to call function marked as skipped",
                "Pack and unpack outside the compiled function (or compile the parts around "
                "the recurrent module)",
                region,
            )
            return
        method = self_attribute(node.func) if name is None else None
        if method is not None and _is_unittest_method(method) and self._unittest_method(method):
            self._report(
                node,
                f"`unittest.TestCase.{method}` called inside a compiled region",
                "0008",
                "Attempted to inline function marked as skipped",
                "Return the values from the compiled function and assert on them outside it",
                region,
            )

    def _unittest_method(self, method: str) -> bool:
        """The enclosing class derives from unittest.TestCase (through classes of this file)
        and neither it nor a base of this file defines ``method``."""
        for parent in reversed(self.ctx.parents):
            if isinstance(parent, cst.ClassDef):
                return self._inherits_test_case(parent, method, set())
        return False

    def _inherits_test_case(self, cls: cst.ClassDef, method: str, seen: set[str]) -> bool:
        if cls.name.value in seen:
            return False
        seen.add(cls.name.value)
        if any(
            isinstance(stmt, cst.FunctionDef) and stmt.name.value == method
            for stmt in scope_statements(cls.body.body)
        ):
            return False  # the project's own method: traced
        resolve = self.ctx.imports.resolve
        for base in cls.bases:
            if base.keyword is not None:
                continue
            if resolve(base.value) in TEST_CASES:
                return True
            if isinstance(base.value, cst.Name):
                local = self._module_class(base.value.value)
                if local is not None and self._inherits_test_case(local, method, seen):
                    return True
        return False

    def _module_class(self, name: str) -> cst.ClassDef | None:
        found = [
            stmt
            for stmt in self.ctx.module.body
            if isinstance(stmt, cst.ClassDef) and stmt.name.value == name
        ]
        return found[0] if len(found) == 1 else None

    def _report(
        self, node: cst.Call, what: str, gb: str, text: str, advice: str, region: Region
    ) -> None:
        self.report_break(
            node,
            region,
            fullgraph=(
                f"{what} fails under fullgraph=True on torch 2.13 (`Unsupported: {text}`, "
                f"GB{gb}). {advice}."
            ),
            breaks=(
                f"{what} graph-breaks on torch 2.13 (GB{gb}, `{text}`): Dynamo does not trace "
                f"it, the graph ends here and resumes after it. {advice}."
            ),
        )
