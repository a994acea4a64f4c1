"""Unit tests of DL107 recompile-limit, DL108 stale-dist-constant, DL109 hook-after-compile and
DL105's FSDP2 case. The proof tests (tests/proof/test_proof_dl107_109.py) show that torch 2.13
behaves as the messages say.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from tests.project_util import check_sources

CODES = frozenset({"DL105", "DL107", "DL108", "DL109"})


def run(source: str, codes: frozenset[str] = CODES) -> list[Finding]:
    result = check_source(textwrap.dedent(source), "t.py", FileSettings(enabled=codes))
    assert result.errors == ()
    return sorted(result.findings, key=lambda f: (f.span.start.line, f.span.start.column))


def where(findings: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.code, f.span.start.line, f.span.start.column) for f in findings]


# -- DL107 ---------------------------------------------------------------------------------------

STATIC = """\
import torch

@torch.compile(dynamic=False{fg})
def f(x):
    return x * 2

"""


def test_dl107_varying_factory_shape_in_a_loop() -> None:
    found = run(STATIC.format(fg="") + "for n in range(2, 14):\n    f(torch.randn(n, 4))\n")
    assert where(found) == [("DL107", 8, 7)]
    assert found[0].severity is Severity.WARNING
    assert "dynamic=False" in found[0].message and "`n`" in found[0].message
    assert "silently runs eagerly" in found[0].message
    assert "mark_dynamic" in found[0].message
    assert found[0].related and "compiled" in found[0].related[0].message


def test_dl107_fullgraph_is_an_error() -> None:
    found = run(STATIC.format(fg=", fullgraph=True") + "for n in lengths:\n    f(x[:n])\n")
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
    assert where(run(source)) == [("DL107", 12, 15)]


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
    found = run(source)
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
    assert run(source) == []


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
    found = run(source)
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
    found = run(source)
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
    assert run(source) == []


# -- DL108 ---------------------------------------------------------------------------------------

DIST = """\
import os
import torch
import torch.distributed as dist

@torch.compile
def world(x):
    return x / (dist.get_world_size() if dist.is_initialized() else 1)

@torch.compile
def rank(x):
    return x + dist.get_rank()

@torch.compile
def env_rank(x):
    return x + int(os.environ["RANK"])

"""


def test_dl108_called_before_init() -> None:
    found = run(
        DIST + "world(x)\ndist.init_process_group('gloo')\nworld(x)\n", frozenset({"DL108"})
    )
    assert where(found) == [("DL108", 17, 1)]
    assert found[0].severity is Severity.WARNING
    assert "before `init_process_group`" in found[0].message
    assert "dist.get_world_size()" in found[0].message or "is_initialized" in found[0].message
    assert "torch._dynamo.reset()" in found[0].message
    labels = {r.message for r in found[0].related}
    assert {"process group created here", "folded into the compiled graph here"} <= labels


def test_dl108_process_group_recreated_in_a_function() -> None:
    source = DIST + (
        "def main(x):\n"
        "    dist.init_process_group('gloo')\n"
        "    rank(x)\n"
        "    dist.destroy_process_group()\n"
        "    dist.init_process_group('gloo')\n"
        "    rank(x)\n"
    )
    found = run(source, frozenset({"DL108"}))
    assert where(found) == [("DL108", 19, 5)]
    assert "re-created" in found[0].message


def test_dl108_traps() -> None:
    source = DIST + (
        "def good(x):\n"
        "    dist.init_process_group('gloo')\n"
        "    world(x)\n"
        "    rank(x)\n"
        "def env(x):\n"
        "    env_rank(x)\n"
        "    dist.init_process_group('gloo')\n"
        "    env_rank(x)\n"
        "def reset(x):\n"
        "    world(x)\n"
        "    dist.init_process_group('gloo')\n"
        "    torch._dynamo.reset()\n"
        "    world(x)\n"
        "def only_before(x):\n"
        "    world(x)\n"
        "    dist.init_process_group('gloo')\n"
    )
    assert run(source, frozenset({"DL108"})) == []


# -- DL109 ---------------------------------------------------------------------------------------

NET = """\
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

"""


def test_dl109_submodule_hook_after_first_call() -> None:
    source = NET + (
        "model = Net()\n"
        "compiled = torch.compile(model)\n"
        "compiled(x)\n"
        "model.fc.register_forward_hook(hook)\n"
        "compiled.fc.register_forward_pre_hook(hook)\n"
    )
    found = run(source, frozenset({"DL109"}))
    assert where(found) == [("DL109", 15, 1), ("DL109", 16, 1)]
    assert "never fires" in found[0].message
    assert found[0].related[0].message == "first compiled call"


def test_dl109_loop_over_modules_and_hook_in_a_training_loop() -> None:
    source = NET + (
        "def train(batches):\n"
        "    model = Net()\n"
        "    model.compile()\n"
        "    for step, x in enumerate(batches):\n"
        "        if step == 10:\n"
        "            for name, mod in model.named_modules():\n"
        "                mod.register_forward_hook(hook)\n"
        "        model(x)\n"
    )
    assert where(run(source, frozenset({"DL109"}))) == [("DL109", 18, 17)]


def test_dl109_model_called_from_a_compiled_function() -> None:
    source = NET + (
        "MODEL = Net()\n"
        "@torch.compile\n"
        "def step(x):\n"
        "    return MODEL(x).sum()\n"
        "step(x)\n"
        "MODEL.register_forward_hook(hook)\n"
    )
    assert where(run(source, frozenset({"DL109"}))) == [("DL109", 17, 1)]


def test_dl109_traps() -> None:
    source = NET + (
        "model = Net()\n"
        "model.fc.register_forward_hook(hook)\n"
        "compiled = torch.compile(model)\n"
        "compiled(x)\n"
        "compiled.register_forward_hook(hook)\n"
        "model.register_forward_pre_hook(hook)\n"
        "model.fc.weight.register_hook(hook)\n"
        "other = Net()\n"
        "other.fc.register_forward_hook(hook)\n"
        "def later():\n"
        "    m = Net()\n"
        "    c = torch.compile(m)\n"
        "    c(x)\n"
        "    m.fc.register_forward_hook(hook)\n"
        "    torch._dynamo.reset()\n"
        "    c(x)\n"
    )
    assert run(source, frozenset({"DL109"})) == []


# -- DL105: FSDP2 ----------------------------------------------------------------------------------

FSDP2 = """\
import torch
from torch import nn
from torch.distributed.fsdp import fully_shard

class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(2))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

model = Stack()
{shard}
fully_shard(model)
{compile}
"""


def test_dl105_compiled_root_over_sharded_children() -> None:
    source = FSDP2.format(
        shard="for block in model.layers:\n    fully_shard(block)",
        compile="model = torch.compile(model)",
    )
    found = run(source, frozenset({"DL105"}))
    assert where(found) == [("DL105", 11, 9)]
    assert found[0].severity is Severity.WARNING
    assert "GB7000" in found[0].message and "GB0007" in found[0].message
    assert "blk.compile()" in found[0].message


def test_dl105_fsdp2_fullgraph_and_module_compile() -> None:
    source = FSDP2.format(
        shard="fully_shard(model.layers[0])\nfully_shard(model.layers[1])",
        compile="model = torch.compile(model, fullgraph=True)",
    )
    found = run(source, frozenset({"DL105"}))
    assert where(found) == [("DL105", 11, 9)]
    assert found[0].severity is Severity.ERROR
    assert "Attempted to call function marked as skipped" in found[0].message
    method = FSDP2.format(
        shard="for block in model.layers:\n    fully_shard(block)", compile="model.compile()"
    )
    assert where(run(method, frozenset({"DL105"}))) == [("DL105", 11, 9)]


def test_dl105_fsdp2_traps() -> None:
    per_block = FSDP2.format(
        shard="for block in model.layers:\n    fully_shard(block)\n    block.compile()",
        compile="",
    )
    only_root = FSDP2.format(shard="", compile="model = torch.compile(model)")
    assert run(per_block, frozenset({"DL105"})) == []
    assert run(only_root, frozenset({"DL105"})) == []


def test_dl108_across_modules(tmp_path) -> None:
    results = check_sources(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": (
                "import torch.distributed as dist\n"
                "from torch import nn\n"
                "class Net(nn.Module):\n"
                "    def forward(self, x):\n"
                "        return x * dist.get_rank()\n"
            ),
            "pkg/train.py": (
                "import torch\n"
                "import torch.distributed as dist\n"
                "from pkg.model import Net\n"
                "model = torch.compile(Net())\n"
                "model(x)\n"
                "dist.init_process_group('gloo')\n"
                "model(x)\n"
            ),
        },
        enabled=["DL108"],
    )
    # the read lives in another file: not reported (the region's source is not in train.py)
    assert [f.code for r in results.values() for f in r.findings] == []


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
