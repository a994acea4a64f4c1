"""Unit tests of DL401 custom-op-missing-fake: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from distlint.rules.registry import get_rule
from tests.rules.custom_ops.conftest import FAKES, FIXTURES, MODEL, OPS, project


def test_metadata() -> None:
    expected = {
        "DL401": (Severity.WARNING, "project"),
        "DL402": (Severity.WARNING, "project"),
        "DL403": (Severity.ERROR, "file"),
        "DL404": (Severity.WARNING, "project"),
        "DL405": (Severity.ERROR, "file"),
        "DL406": (Severity.ERROR, "file"),
        "DL407": (Severity.ERROR, "file"),
        "DL408": (Severity.WARNING, "project"),
    }
    for code, (severity, scope) in expected.items():
        rule = get_rule(code)
        assert rule is not None, code
        assert (rule.severity, rule.scope, rule.default_enabled) == (severity, scope, True)


def test_dl401_links_fakes_and_uses_across_modules() -> None:
    found = project({"pkg/ops.py": OPS, "pkg/fakes.py": FAKES, "pkg/model.py": MODEL}, "DL401")
    assert [(f.path, f.span.start.line, f.span.start.column) for f in found] == [
        ("pkg/ops.py", 4, 2)
    ]
    (finding,) = found
    assert finding.severity is Severity.ERROR  # called in a compiled region
    assert "`demo::nofake`" in finding.message and "GB4315" in finding.message
    assert "pkg/model.py:16" in finding.message
    labels = {(r.path, r.span.start.line, r.message) for r in finding.related}
    assert ("pkg/model.py", 16, "called in a compiled region") in labels
    assert any(path == "pkg/model.py" and line == 14 for path, line, _ in labels)


def test_dl401_is_a_warning_without_compiled_use() -> None:
    found = project({"pkg/ops.py": OPS}, "DL401")
    assert [(f.span.start.line, f.severity) for f in found] == [
        (4, Severity.WARNING),
        (8, Severity.WARNING),
        (12, Severity.WARNING),
        (20, Severity.WARNING),
    ]


def test_dl401_use_in_torch_compile_of_a_function_from_another_module() -> None:
    main = """
    import torch
    from pkg.ops import nofake

    def step(x):
        return nofake(x)

    compiled = torch.compile(step)
    """
    found = project({"pkg/ops.py": OPS, "pkg/main.py": main}, "DL401")
    severities = {f.span.start.line: f.severity for f in found}
    assert severities[4] is Severity.ERROR


def test_custom_op_rules_leave_ops_a_test_defines_and_never_compiles() -> None:
    """ao's quantize tests, torch_xla's export tests: a test module defines ops to run them
    eagerly or export them; only a compiled use makes the missing registration a hazard."""
    library = """
lib = torch.library.Library("testlib", "FRAGMENT")
lib.define("scale(Tensor x) -> Tensor")
"""
    model = """
    import torch
    import torch.nn as nn
    from tests.test_ops import nofake

    class Net(nn.Module):
        def forward(self, x):
            return nofake(x) + torch.ops.testlib.scale(x)
    """
    files = {"tests/test_ops.py": OPS + library, "tests/test_model.py": model}
    for code in ("DL401", "DL402", "DL404"):
        assert project(files, code) == [], code
    files["tests/test_model.py"] += "\n    step = torch.compile(Net())\n"
    assert [f.span.start.line for f in project(files, "DL401")] == [4]
    assert [f.span.start.line for f in project(files, "DL402")] == [4]
    assert [f.span.start.line for f in project(files, "DL404")] == [25]
    assert len(project({"src/ops.py": OPS}, "DL401")) == 4  # outside tests: library API


@pytest.mark.parametrize("code", ["DL401", "DL402", "DL404"])
def test_project_rules_are_silent_on_their_good_and_traps_fixtures(code: str) -> None:
    folder = FIXTURES / code
    for kind in ("good", "traps"):
        text = (folder / f"{kind}.py").read_text(encoding="utf-8")
        assert project({f"{kind}.py": text}, code) == [], kind


def test_the_rules_measure_only_the_uses_they_show() -> None:
    """``_OpIndex.measure``: an op's uses are measured with it only where its rule shows them
    (DL401: compiled uses, DL402: uses in training, DL404: none), so that a file that only
    calls an op is not parsed again for a place no finding shows; the uses shown keep their
    places."""
    eager = """
    import torch
    from pkg.ops import nofake

    def helper(x):
        return nofake(x)
    """
    measured: dict = {}
    sources = {"pkg/ops.py": OPS, "pkg/model.py": MODEL, "pkg/eager.py": eager}
    found = project(sources, "DL401", "DL402", "DL404", measured=measured)
    (nofake,) = [f for f in found if "`demo::nofake`" in f.message]
    labels = {(r.path, r.span.start.line, r.message) for r in nofake.related}
    assert ("pkg/model.py", 16, "called in a compiled region") in labels
    assert "pkg/model.py" in measured
    assert "pkg/eager.py" not in measured  # an eager use: DL401 does not show it
