"""Unit tests of DL107 recompile-limit: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl107_109.py) show that torch behaves as the messages
say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from distlint.findings import Severity
from tests.project_util import check_sources
from tests.rules.compile.conftest import FLOW_CODES
from tests.rules.conftest import run, where

STATIC = """\
import torch

@torch.compile(dynamic=False{fg})
def f(x):
    return x * 2

"""


def test_dl107_varying_factory_shape_in_a_loop() -> None:
    found = run(
        STATIC.format(fg="") + "for n in range(2, 14):\n    f(torch.randn(n, 4))\n", *FLOW_CODES
    )
    assert where(found) == [("DL107", 8, 7)]
    assert found[0].severity is Severity.WARNING
    assert "dynamic=False" in found[0].message and "`n`" in found[0].message
    assert "silently runs eagerly" in found[0].message
    assert "mark_dynamic" in found[0].message
    assert found[0].related and "compiled" in found[0].related[0].message


def test_dl107_fullgraph_is_an_error() -> None:
    found = run(
        STATIC.format(fg=", fullgraph=True") + "for n in lengths:\n    f(x[:n])\n", *FLOW_CODES
    )
    assert where(found) == [("DL107", 8, 7)]
    assert found[0].severity is Severity.ERROR
    assert "FailOnRecompileLimitHit" in found[0].message


def test_dl107_shape_through_a_local_and_a_compiled_module() -> None:
    source = """\
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            return x

    def train(buckets):
        model = torch.compile(Net(), dynamic=False)
        for size in buckets:
            batch = torch.zeros(size, 8)
            model(batch)
    """
    assert where(run(source, *FLOW_CODES)) == [("DL107", 12, 15)]


def test_dl107_automatic_dynamic_shapes_off() -> None:
    source = """\
    import torch
    import torch._dynamo
    torch._dynamo.config.automatic_dynamic_shapes = False

    @torch.compile
    def f(x):
        return x

    for n in range(20):
        f(torch.ones(n))
    """
    found = run(source, *FLOW_CODES)
    assert where(found) == [("DL107", 10, 7)]
    assert "automatic_dynamic_shapes = False" in found[0].message


def test_dl107_traps() -> None:
    source = """\
    import torch
    import torch._dynamo

    @torch.compile
    def dyn(x):
        if x.shape[0] > 8:
            return x[:8]
        return x

    @torch.compile(dynamic=False)
    def f(x):
        return x

    for n in range(2, 14):
        dyn(torch.ones(n, 4))
    for n in range(2, 14):
        x = torch.ones(n, 4)
        torch._dynamo.mark_dynamic(x, 0)
        f(x)
    for n in (16, 32, 64):
        f(torch.ones(n, 4))
    for batch in loader:
        f(batch)
    for step in range(100):
        f(torch.ones(4, 4))
    """
    assert run(source, *FLOW_CODES) == []


def test_dl107_module_global_int_rebound_in_a_loop() -> None:
    source = """\
    import torch

    STEP = 0

    @torch.compile(fullgraph=True)
    def f(x):
        return x + STEP

    def train():
        global STEP
        for i in range(100):
            STEP = i
            f(torch.ones(2))
    """
    found = run(source, *FLOW_CODES)
    assert where(found) == [("DL107", 7, 16)]
    assert found[0].severity is Severity.ERROR
    assert "G['STEP']" in found[0].message
    assert [r.message for r in found[0].related][-1] == "rebound here"


def test_dl107_module_level_loop_rebinding() -> None:
    source = """\
    import torch

    PHASE = 0

    @torch.compile
    def f(x):
        return x * PHASE

    while True:
        PHASE += 1
        f(torch.ones(2))
    """
    found = run(source, *FLOW_CODES)
    assert where(found) == [("DL107", 7, 16)]
    assert found[0].severity is Severity.WARNING


def test_dl107_global_traps() -> None:
    source = """\
    import torch

    LR = 0.1
    STEP = 0
    FIXED = 3

    @torch.compile
    def f(x, STEP):
        return x * LR + STEP + FIXED

    def set_once():
        global STEP
        STEP = 5

    for i in range(100):
        LR = 0.1 / (i + 1)
        f(torch.ones(2), i)
    """
    assert run(source, *FLOW_CODES) == []


def test_dl107_reads_the_setting_in_the_compiled_module_s_file(tmp_path: Path) -> None:
    results = check_sources(
        tmp_path,
        {
            "model.py": """
            import torch
            import torch._dynamo
            torch._dynamo.config.automatic_dynamic_shapes = False

            class Net(torch.nn.Module):
                def forward(self, x):
                    return x * 2
            """,
            "train.py": """
            import torch
            from model import Net

            model = torch.compile(Net())
            for n in range(20):
                model(torch.ones(n))
            """,
        },
        enabled=["DL107"],
    )
    assert [(f.code, f.span.start.line) for f in results["train.py"].findings] == [("DL107", 7)]


def test_dl107_sizes_read_from_each_element_s_shape_are_not_reported() -> None:
    """A loop over parameters slicing each by its own shape compiles once per distinct shape
    (nanochat's sharded AdamW step); a size that also uses an integer loop value still counts."""
    loop = (
        "for p in params:\n"
        "    half = p.shape[0] // 2\n"
        "    f(p[:half])\n"
        "    f(p[: len(p) // 2])\n"
        "    f(torch.zeros(p.size(0), p.numel()))\n"
    )
    assert run(STATIC.format(fg=", fullgraph=True") + loop, *FLOW_CODES) == []
    mixed = "for p in params:\n    f(x[: p.numel() + p])\n"
    assert where(run(STATIC.format(fg="") + mixed, *FLOW_CODES)) == [("DL107", 8, 7)]


def test_each_scope_is_listed_once_for_the_flows_and_the_library_built_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The script flows and the library-built models both read every scope's nodes: listed
    once per scope and pass, not once per reader."""
    from distlint.rules.compile import _script_flow

    listed: list[int] = []
    real = _script_flow._list_scope_nodes

    def noting(scope):  # type: ignore[no-untyped-def]
        listed.append(id(scope))
        return real(scope)

    monkeypatch.setattr(_script_flow, "_list_scope_nodes", noting)
    source = (
        "import torch\nimport torch.nn as nn\n\nmodel = nn.Linear(4, 4)\n"
        "compiled = torch.compile(model, dynamic=False)\n"
        + STATIC.format(fg="")
        + "def g():\n    for n in range(2, 14):\n        f(torch.randn(n, 4))\n"
    )
    found = run(source, *FLOW_CODES)
    assert [code for code, _, _ in where(found)] == ["DL107"]
    assert listed and len(listed) == len(set(listed))


def test_dl107_a_compiled_name_is_seen_called_in_every_spelling() -> None:
    """The flows are built only when the text may call a compiled name
    (``called_somewhere``): a parenthesized name, a comment or a line continuation before
    the ``(``, a call in an f-string still count; a ``def`` of the name alone does not."""
    from distlint.rules.compile._script_flow import called_somewhere

    names = {"f"}
    for called in (
        "f(x)",
        "(f)(x)",
        "f (x)",
        "y = (f  # why\n)(x)",
        "f \\\n(x)",
        'print(f"{f(x)}")',
        "g(f(x))",
        "def f(x): pass\nf(1)",
    ):
        assert called_somewhere(called, names), called
    for not_called in ("def f(x): pass", "async def  f(x): pass", "f = g\nf.x(1)", "ff(1)", "f"):
        assert not called_somewhere(not_called, names), not_called
    assert not called_somewhere("f(x)", set())
    assert called_somewhere("def a·b(): pass", {"a·b"})  # no \w identifier: kept
    # a comment runs to its line's end: a banner of ``#`` after a name is one part, not one
    # of 2**n splits to backtrack through (this took 20 s for a 40-character banner)
    banner = "f  " + "#" * 60 + "\n" + "# " * 40 + "\nx = 1\n"
    assert not called_somewhere(banner, names)
    assert called_somewhere("y = (f  ### why ##\n  # more\n)(x)", names)
    loop = STATIC.format(fg="") + "for n in range(2, 14):\n    (f  # c\n    )(torch.randn(n, 4))\n"
    assert [code for code, *_ in where(run(loop, *FLOW_CODES))] == ["DL107"]
