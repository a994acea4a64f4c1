"""Unit tests of DL402 custom-op-missing-autograd: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

from distlint.findings import Severity
from tests.rules.custom_ops.conftest import FAKES, MODEL, OPS, project


def test_dl402_uses_only_on_optional_or_eval_paths_are_not_training() -> None:
    """TransformerEngine converts its KV cache with a custom op only when ``inference_params``
    is passed; a use under ``if not self.training:`` is evaluation."""
    model = """
    import torch
    import torch.nn as nn
    from pkg.ops import faked_elsewhere

    class Attention(nn.Module):
        def forward(self, x, inference_params=None):
            if inference_params is not None:
                x = faked_elsewhere(x)
            if not self.training:
                x = faked_elsewhere(x)
            if inference_params is None:
                x = x + 1
            else:  # the KV-cache path again, written the other way round
                x = faked_elsewhere(x)
            return x
    """
    sources = {"pkg/ops.py": OPS, "pkg/fakes.py": FAKES, "pkg/model.py": model}
    assert project(sources, "DL402") == []
    sources["pkg/model.py"] = model.replace("return x", "return faked_elsewhere(x)")
    assert [f.span.start.line for f in project(sources, "DL402")] == [8]
    # the ``else`` of a test of some other name is training use
    sources["pkg/model.py"] = model.replace("if inference_params is None:", "if x is None:")
    assert [f.span.start.line for f in project(sources, "DL402")] == [8]


def test_dl402_training_use_without_autograd() -> None:
    found = project({"pkg/ops.py": OPS, "pkg/fakes.py": FAKES, "pkg/model.py": MODEL}, "DL402")
    assert [(f.path, f.span.start.line) for f in found] == [("pkg/ops.py", 8)]
    (finding,) = found
    assert finding.severity is Severity.WARNING
    assert "demo.faked_elsewhere.default but no autograd formula" in finding.message
    assert finding.related[0].path == "pkg/model.py" and finding.related[0].span.start.line == 9
