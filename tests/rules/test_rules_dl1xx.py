"""Unit tests of the DL1xx rules (graph breaks and compile failures in compiled regions).

Small snippets through ``check_source``; the proof tests (tests/proof/test_proof_dl1xx.py) show
that torch 2.13 breaks or fails as the messages say.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity

CODES = frozenset({f"DL{n}" for n in range(101, 111)})
HEADER = "import torch\nimport torch._dynamo\n\n"


def run(source: str, codes: frozenset[str] = CODES) -> list[Finding]:
    result = check_source(textwrap.dedent(source), "t.py", FileSettings(enabled=codes))
    assert result.errors == ()
    return sorted(result.findings, key=lambda f: (f.span.start.line, f.span.start.column))


def where(findings: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.code, f.span.start.line, f.span.start.column) for f in findings]


def compiled(body: str, *, fullgraph: bool = False, params: str = "x: torch.Tensor") -> str:
    """A decorated compiled function (line 4 is the decorator, line 6 its first body line)."""
    options = "(fullgraph=True)" if fullgraph else ""
    return (
        HEADER
        + f"@torch.compile{options}\ndef f({params}):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
    )


# -- DL101 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, column",
    [
        ("if x.sum() > 0:\n    x = x + 1\nreturn x\n", 8),
        ("if (x > 4).any():\n    x = x + 1\nreturn x\n", 8),
        ("while x.sum() < 100:\n    x = x * 2\nreturn x\n", 11),
        ("if x:\n    x = x + 1\nreturn x\n", 8),
        ("return x if x.mean() > 0 else -x\n", 17),
        ("if not x.all():\n    x = x + 1\nreturn x\n", 12),
        ("n = torch.norm(x)\nif n > 1:\n    x = x / n\nreturn x\n", None),
        ("y = x.abs()\nif y.max() == 1.0:\n    x = x + 1\nreturn x\n", None),
        ("return [v for v in (x, -x) if v.sum() > 0]\n", 35),
    ],
)
def test_dl101_reports_tensor_tests(body: str, column: int | None) -> None:
    (finding,) = run(compiled(body), frozenset({"DL101"}))
    assert finding.code == "DL101"
    assert finding.severity is Severity.WARNING
    if column is not None:
        assert finding.span.start.column == column
    assert "GB0170" in finding.message
    assert "torch.where" in finding.message
    assert finding.related and finding.related[0].span.start.line == 4  # the root


def test_dl101_fullgraph_is_an_error_with_the_torch_message() -> None:
    (finding,) = run(compiled("if x.sum() > 0:\n    return x\nreturn -x\n", fullgraph=True))
    assert finding.severity is Severity.ERROR
    assert "`Unsupported: Data-dependent branching` (GB0170)" in finding.message


def test_dl101_and_or_report_the_tensor_operand() -> None:
    source = compiled(
        "if scale > 0 and x.norm() > scale:\n    x = x / 2\nreturn x\n",
        params="x: torch.Tensor, scale: float",
    )
    assert where(run(source)) == [("DL101", 6, 22)]


def test_dl101_boolean_operation_outside_a_test() -> None:
    source = compiled("ok = x.any() or x.sum() > 0\nreturn ok\n")
    assert where(run(source, frozenset({"DL101"}))) == [("DL101", 6, 10)]


@pytest.mark.parametrize(
    "body",
    [
        "if x.shape[0] > 8:\n    x = x[:8]\nreturn x\n",
        "if x.dim() == 2 and x.size(1) > 1:\n    x = x.sum(1)\nreturn x\n",
        "if x.dtype == torch.float64 or x.ndim > 3:\n    x = x.float()\nreturn x\n",
        "if bias is not None:\n    x = x + bias\nreturn x\n",
        "if isinstance(scale, int):\n    x = x * 2\nreturn x\n",
        "if scale > 1.0 and len(x) > 0:\n    x = x * scale\nreturn x\n",
        "assert (x > -10).all()\nreturn x\n",
        "if flag:\n    x = x + 1\nreturn x\n",  # unannotated: may be a Python bool
        "if x.device.type == 'cpu':\n    x = x + 1\nreturn x\n",
        "if x.numel() > 0:\n    x = x + 1\nreturn x\n",
    ],
)
def test_dl101_traps(body: str) -> None:
    source = compiled(body, params="x: torch.Tensor, bias=None, scale=1.0, flag=False")
    assert run(source, frozenset({"DL101"})) == []


def test_dl101_self_training_and_eager_code_are_silent() -> None:
    source = HEADER + (
        "class M(torch.nn.Module):\n"
        "    @torch.compile\n"
        "    def forward(self, x):\n"
        "        if self.training:\n"
        "            x = x * 2\n"
        "        return x\n"
        "\n"
        "def eager(x):\n"
        "    if x.sum() > 0:\n"
        "        return x\n"
        "    return -x\n"
    )
    assert run(source) == []


def test_dl101_module_level_tensor_flag() -> None:
    source = HEADER + (
        "STOP = torch.tensor(False)\n\n@torch.compile\ndef f(x):\n"
        "    if STOP:\n        return x\n    return x + 1\n"
    )
    assert where(run(source)) == [("DL101", 8, 8)]


# -- DL102 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr, gb",
    [
        ("x.sum().item()", "GB0124"),
        ("int(x)", "GB0124"),
        ("float(x.mean())", "GB0124"),
        ("x.long().tolist()", "GB0033"),
        ("x.tolist()", "GB0109"),
    ],
)
def test_dl102_notes_without_fullgraph(expr: str, gb: str) -> None:
    (finding,) = run(compiled(f"v = {expr}\nreturn v\n"), frozenset({"DL102"}))
    assert (finding.span.start.line, finding.span.start.column) == (6, 9)
    assert finding.severity is Severity.NOTE
    assert gb in finding.message


def test_dl102_fullgraph_arithmetic_and_size_uses_are_captured() -> None:
    body = (
        "a = x * x.sum().item()\n"
        "n = x.long().sum().item()\n"
        "b = torch.zeros(n)\n"
        "c = x.long().tolist()\n"
        "return a, b, c\n"
    )
    assert run(compiled(body, fullgraph=True), frozenset({"DL102"})) == []


@pytest.mark.parametrize(
    "body, text",
    [
        ("if bool(x.sum() > 0):\n    return x\nreturn -x\n", "Could not guard on data-dependent"),
        ("t = x.sum().item()\nif t > 0:\n    return x\nreturn -x\n", "Could not guard"),
        ("for _ in range(x.sum().item()):\n    x = x * 2\nreturn x\n", "specialized integer"),
        ("n = int(x.sum())\nfor _ in range(n):\n    x = x * 2\nreturn x\n", "specialized integer"),
        ("return x.float().tolist()\n", "Tensor.tolist() with non-integer tensor` (GB0109)"),
        ("y = torch.softmax(x, 0)\nreturn y.tolist()\n", "non-integer tensor` (GB0109)"),
    ],
)
def test_dl102_fullgraph_errors(body: str, text: str) -> None:
    (finding,) = run(compiled(body, fullgraph=True), frozenset({"DL102"}))
    assert finding.severity is Severity.ERROR
    assert text in finding.message


def test_dl102_fullgraph_list_of_a_tensor_of_unknown_dtype_is_a_warning() -> None:
    """torch 2.13 captures an integer tensor's ``.tolist()`` under fullgraph=True and fails
    on a floating-point one: without knowing which, the finding says both (physicsnemo's
    ``mesh.mesh.cpu().flatten().tolist()`` holds ranks)."""
    (finding,) = run(
        compiled("return x.flatten().tolist()\n", fullgraph=True), frozenset({"DL102"})
    )
    assert finding.severity is Severity.WARNING
    assert "fails if it holds floating-point values" in finding.message
    assert "an integer tensor's list is captured" in finding.message


def test_dl102_capture_scalar_outputs_keeps_only_failing_cases() -> None:
    source = HEADER + (
        "torch._dynamo.config.capture_scalar_outputs = True\n\n@torch.compile\ndef f(x):\n"
        "    a = x * x.sum().item()\n"
        "    if x.max().item() > 0:\n"
        "        a = a + 1\n"
        "    return a, x.tolist(), x.long().tolist()\n"
    )
    found = run(source, frozenset({"DL102"}))
    assert where(found) == [("DL102", 9, 8), ("DL102", 11, 15)]
    assert all(f.severity is Severity.NOTE for f in found)


@pytest.mark.parametrize(
    "body",
    [
        "return (x * 2).cpu() + x.to('cpu')\n",
        "return x * int(x.shape[0]) * float(scale)\n",
        "return [v for _, v in config.items()]\n",
        "return x.numpy()\n",
    ],
)
def test_dl102_traps(body: str) -> None:
    source = compiled(body, params="x: torch.Tensor, scale=1.0, config=None")
    assert run(source, frozenset({"DL102"})) == []


def test_dl102_eager_item_is_fine() -> None:
    source = HEADER + "def train(model, x):\n    loss = model(x)\n    return loss.item()\n"
    assert run(source) == []


# -- DL103 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "torch.nonzero(x)",
        "x.nonzero()",
        "torch.unique(x)",
        "x[x > 0]",
        "x[~torch.isnan(x)]",
        "torch.masked_select(x, x > 0)",
        "torch.where(x > 0)",
        "torch.repeat_interleave(x, x.long())",
    ],
)
def test_dl103_reports_dynamic_shapes(expr: str) -> None:
    (finding,) = run(compiled(f"return {expr}\n"), frozenset({"DL103"}))
    assert finding.severity is Severity.NOTE
    assert (finding.span.start.line, finding.span.start.column) == (6, 12)
    assert "GB0036" in finding.message


def test_dl103_mask_through_a_name() -> None:
    source = compiled("mask = x > 0\nreturn x[mask]\n")
    assert where(run(source)) == [("DL103", 7, 12)]


@pytest.mark.parametrize(
    "source",
    [
        compiled("return torch.nonzero(x)\n", fullgraph=True),
        HEADER
        + "torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
        + "@torch.compile\ndef f(x):\n    return torch.nonzero(x)\n",
        compiled("m = x > 0\nreturn torch.where(m, x, 0.0) + torch.repeat_interleave(x, 2)\n"),
        compiled("m = x > 0\nx[m] = 0.0\nreturn x * m\n"),
        compiled("return x[idx]\n", params="x: torch.Tensor, idx: torch.Tensor"),
    ],
    ids=["fullgraph", "capture-config", "static-where", "mask-write", "int-index"],
)
def test_dl103_silent(source: str) -> None:
    assert run(source, frozenset({"DL103"})) == []


# -- DL104 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "imports, call, gb",
    [
        ("", "print(x)", "GB0059"),
        ("", "breakpoint()", "GB0059"),
        ("import logging\nlogger = logging.getLogger(__name__)\n", "logger.debug('x')", "GB0291"),
        ("import logging\n", "logging.info('x')", "GB0291"),
        ("import warnings\n", "warnings.warn('x')", "GB0007"),
        ("import pdb\n", "pdb.set_trace()", "GB0007"),
        ("import time\n", "time.time()", "GB0007"),
        ("import time\n", "time.perf_counter()", "GB0007"),
        ("import random\n", "random.random()", "GB0007"),
        ("", "torch.manual_seed(0)", "GB0007"),
        ("import numpy as np\n", "np.random.rand()", "GB0033"),
        ("", "torch.save(x, 'x.pt')", "GB0007"),
        ("import copy\n", "copy.deepcopy(x)", "GB4198"),
        ("", "x.data_ptr()", "GB0088"),
        ("import ctypes\n", "ctypes.CDLL(None)", "GB0156"),
    ],
)
def test_dl104_host_calls(imports: str, call: str, gb: str) -> None:
    source = imports + HEADER + f"@torch.compile\ndef f(x):\n    {call}\n    return x\n"
    (finding,) = run(source, frozenset({"DL104"}))
    assert finding.severity is Severity.WARNING
    assert gb in finding.message
    assert finding.span.start.column == 5


def test_dl104_fullgraph_error_and_environ_write() -> None:
    source = "import os\n" + compiled("os.environ['A'] = '1'\nreturn x\n", fullgraph=True)
    (finding,) = run(source, frozenset({"DL104"}))
    assert finding.severity is Severity.ERROR
    assert "fails under fullgraph=True" in finding.message and "GB0007" in finding.message


@pytest.mark.parametrize(
    "body",
    [
        "k = random.randint(0, 3)\nreturn x * k + torch.rand(4)\n",
        "s = f'{x.sum()} {tuple(x.shape)}'\nreturn x * math.sqrt(4.0)\n",
        "with torch.no_grad():\n    y = x * 2\nreturn y\n",
        "r = os.environ.get('RANK', '0')\nreturn x * int(r)\n",
        "return x * dist.get_rank() * dist.get_world_size() * dist.is_initialized()\n",
        "return x.new_group()\n",
    ],
)
def test_dl104_traps(body: str) -> None:
    imports = "import math\nimport os\nimport random\nimport torch.distributed as dist\n"
    assert run(imports + compiled(body), frozenset({"DL104"})) == []


# -- DL105 ---------------------------------------------------------------------------------------


def test_dl105_reports_the_loop_and_the_break_is_reported_too() -> None:
    source = compiled("for i in range(3):\n    x = x * 2\n    print(i)\nreturn x\n")
    found = run(source)
    assert where(found) == [("DL105", 6, 5), ("DL104", 8, 9)]
    loop = found[0]
    assert "GB7000" in loop.message and "skips the whole function" in loop.message
    assert any(r.message == "graph break" and r.span.start.line == 8 for r in loop.related)


def test_dl105_outermost_loop_only_and_while_tests() -> None:
    source = compiled(
        "for i in range(2):\n    for j in range(2):\n        x = x + x.sum().item()\n"
        "while x.sum() < 10:\n    x = x * 2\nreturn x\n"
    )
    assert [w for w in where(run(source)) if w[0] == "DL105"] == [
        ("DL105", 6, 5),
        ("DL105", 9, 5),
    ]


@pytest.mark.parametrize(
    "source",
    [
        compiled("for i in range(3):\n    print(i)\nreturn x\n", fullgraph=True),
        compiled("for i in range(3):\n    x = x * torch.rand(4)\nreturn x\n"),
        HEADER + "def f(x):\n    for i in range(3):\n        print(i)\n    return x\n",
        compiled("for i in range(3):\n    def g():\n        print(i)\nreturn x\n"),
    ],
    ids=["fullgraph", "traceable", "eager", "nested-def"],
)
def test_dl105_silent(source: str) -> None:
    assert run(source, frozenset({"DL105"})) == []


# -- DL106 ---------------------------------------------------------------------------------------


def test_dl106_train_step() -> None:
    source = HEADER + (
        "model = torch.nn.Linear(4, 1)\n"
        "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "@torch.compile(fullgraph=True)\n"
        "def step(x):\n"
        "    sgd.zero_grad()\n"
        "    loss = model(x).sum()\n"
        "    loss.backward()\n"
        "    sgd.step()\n"
        "    self.optimizer.step()\n"
        "    return loss\n"
    )
    found = run(source)
    assert where(found) == [
        ("DL106", 8, 5),
        ("DL106", 10, 5),
        ("DL106", 11, 5),
        ("DL106", 12, 5),
    ]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB0008" in found[0].message
    assert "GB0123" in found[1].message
    assert "GB0025" in found[2].message


def test_dl106_traps() -> None:
    source = HEADER + (
        "@torch.compile\ndef f(x, counter, scheduler_like):\n"
        "    counter.step()\n    return x\n"
        "def train(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n"
    )
    assert run(source) == []


# -- DL110 ---------------------------------------------------------------------------------------


def test_dl110_disabled_helpers_under_fullgraph() -> None:
    source = HEADER + (
        "@torch.compiler.disable\ndef helper(x):\n    return x\n\n"
        "wrapped = torch._dynamo.disable(helper)\n\n"
        "class M(torch.nn.Module):\n"
        "    @torch._dynamo.disable\n    def dump(self, h):\n        pass\n\n"
        "    @torch.compile(fullgraph=True)\n    def forward(self, x):\n"
        "        self.dump(x)\n        return helper(x) + wrapped(x)\n"
    )
    found = run(source)
    assert where(found) == [("DL110", 17, 9), ("DL110", 18, 16), ("DL110", 18, 28)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB0099" in found[0].message and "GB0098" in found[1].message


def test_dl110_silent_without_fullgraph_or_when_shadowed() -> None:
    source = HEADER + (
        "@torch.compiler.disable\ndef helper(x):\n    return x\n\n"
        "@torch.compile\ndef f(x):\n    return helper(x)\n\n"
        "@torch.compile(fullgraph=True)\ndef g(x, helper):\n    return helper(x)\n"
    )
    assert run(source) == []


def test_fullgraph_errors_only_where_the_break_runs_on_every_compiled_call() -> None:
    """Under fullgraph=True a break is an error only where it runs whenever the compiled
    function runs: its body outside branches, and what it always calls. Under a branch, in a
    function called under one, or with several possible callees, it is a warning that says
    the compile fails only on some paths."""
    source = """
    import warnings

    import torch
    import torch.distributed as dist


    def always(x):
        print("always")
        return x


    def sometimes(x):
        print("sometimes")
        return x


    @torch.compile(fullgraph=True)
    def step(x: torch.Tensor, flag: bool, n: int):
        print("top")
        always(x)
        if flag:
            print("under if")
            sometimes(x)
        for _ in range(2):
            warnings.warn("loop body")
        y = x if flag else print("conditional expression")
        dist.barrier()
        if n > 1:
            return x
        dist.barrier()
        if x.sum().item() > 0:
            return x
        return x
    """
    found = [
        (f.code, f.span.start.line, f.severity)
        for f in run(source, frozenset({"DL102", "DL104", "DL202"}))
    ]
    error, warning = Severity.ERROR, Severity.WARNING
    assert found == [
        ("DL104", 9, error),
        ("DL104", 14, warning),
        ("DL104", 20, error),
        ("DL104", 23, warning),
        ("DL104", 26, error),
        ("DL104", 27, warning),
        ("DL202", 28, error),
        ("DL202", 31, warning),  # after an ``if`` that may return
        ("DL102", 32, warning),
    ]
    messages = {(f.code, f.span.start.line): f.message for f in run(source, CODES)}
    assert "it runs only on some paths of the compiled call" in messages[("DL104", 23)]
    assert "only on some paths" not in messages[("DL104", 20)]


SHARDED = """
import os

import torch
import torch.nn as nn


def mark(weight):
    os.environ["SKIP"] = "1"
    return weight


class Sharded(nn.Module):
    def __init__(self, mesh=None, verbose=False):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.mesh = mesh
        self.verbose = verbose

    def forward(self, x):
        if self.mesh and x.is_cuda:
            mark(self.fc.weight)
        if self.verbose:
            print("forward")
        return self.fc(x)


def enable(m):
    setattr(m, "verbose", True)


def main():
    model = CONSTRUCTION
    PREPARE
    return torch.compile(model, fullgraph=True)(torch.ones(2, 4))
"""


@pytest.mark.parametrize(
    ("construction", "prepare", "lines"),
    [
        ("Sharded().to('cpu')", "model.eval()", []),  # neither is set by this construction
        ("Sharded(verbose=True)", "pass", [24]),  # a literal passed: that side is taken
        ("Sharded(mesh=make_mesh())", "pass", [9]),  # a value not known: both sides may run
        ("Sharded(**options)", "pass", [9, 24]),  # what is passed is not known
        ("Sharded()", "model.verbose = True", [24]),  # written here
        ("Sharded()", "enable(model)", [24]),  # handed to code that writes `verbose`
        ("Sharded()", "models = [model]", [24]),  # stored: `enable` may reach it
        ("Sharded()", "setattr(model, name, 1)", [9, 24]),  # any attribute may be written
    ],
)
def test_compiled_instance_attributes_decide_self_tests(
    construction: str, prepare: str, lines: list[int]
) -> None:
    """``if self.<name>:`` in a compiled module's methods is decided from the construction the
    compile site shows, when ``__init__`` sets the attribute once from that argument (or a
    literal) and no other code may have written it."""
    source = SHARDED.replace("CONSTRUCTION", construction).replace("PREPARE", prepare)
    found = run(source, frozenset({"DL104"}))
    assert [f.span.start.line for f in found] == lines
