"""Unit tests of DL104 host-side-effect: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER, compiled
from tests.rules.conftest import run

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
    "imports, call, gb",
    [
        ("", "print(x)", "GB0059"),
        ("", "breakpoint()", "GB0059"),
        ("import logging\nlogger = logging.getLogger(__name__)\n", "logger.debug('x')", "GB0291"),
        ("import logging\n", "logging.info('x')", "GB4841"),
        ("import time\n", "time.monotonic()", "GB0007"),
        ("import gc\n", "gc.collect()", "GB0007"),
        ("import os\n", "os.path.exists('ckpt')", "GB0007"),
        ("import json\n", "json.dumps({})", "GB0156"),
        ("import sys\n", "sys.stdout.flush()", "GB0156"),
        ("", "torch.initial_seed()", "GB0208"),
        ("", "torch.autograd.set_detect_anomaly(True)", "GB0008"),
        ("", "open('log.txt')", "GB0059"),
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
    (finding,) = run(source, "DL104")
    assert finding.severity is Severity.WARNING
    assert gb in finding.message
    assert finding.span.start.column == 5


def test_dl104_fullgraph_error_and_environ_write() -> None:
    source = "import os\n" + compiled("os.environ['A'] = '1'\nreturn x\n", fullgraph=True)
    (finding,) = run(source, "DL104")
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
    assert run(imports + compiled(body), "DL104") == []


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
        (f.code, f.span.start.line, f.severity) for f in run(source, "DL102", "DL104", "DL202")
    ]
    error, warning = Severity.ERROR, Severity.WARNING
    assert found == [
        ("DL104", 9, error),
        ("DL104", 14, warning),
        ("DL104", 20, error),
        ("DL104", 23, warning),
        ("DL104", 26, error),
        ("DL104", 27, warning),
        ("DL202", 28, error),  # DL202 is silent after an ``if`` that may return (line 31)
        ("DL102", 32, warning),
    ]
    messages = {(f.code, f.span.start.line): f.message for f in run(source, *DL101_TO_DL110)}
    assert "it runs only on some paths of the compiled call" in messages[("DL104", 23)]
    assert "only on some paths" not in messages[("DL104", 20)]


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
    found = run(source, "DL104")
    assert [f.span.start.line for f in found] == lines


KEYWORDS = HEADER + (
    "import warnings\n\n"
    "def resolve(x, select_reset_only):\n"
    "    if select_reset_only:\n"
    "        return x\n"
    "    warnings.warn('state')\n"
    "    return x\n\n"
    "def reset(x, **kwargs):\n"
    "    PREPARE\n"
    "    select_reset_only = kwargs.POP('select_reset_only', DEFAULT)\n"
    "    return resolve(x, select_reset_only)\n\n"
    "@torch.compile\n"
    "def step(x):\n"
    "    return reset(x, ARGUMENTS)\n"
)


@pytest.mark.parametrize(
    "pop, default, prepare, arguments, found",
    [
        ("pop", "False", "pass", "select_reset_only=True", False),
        ("get", "False", "pass", "select_reset_only=True", False),
        ("pop", "True", "pass", "other=1", False),  # not passed: the literal default
        ("pop", "False", "pass", "select_reset_only=False", True),
        ("pop", "False", "pass", "other=1", True),
        ("pop", "False", "pass", "**options", True),  # anything may be passed
        ("pop", "False", "pass", "select_reset_only=flag", True),
        # kwargs changed before the pop: what the call passed is no longer what it holds
        ("pop", "False", "kwargs.update(select_reset_only=False)", "select_reset_only=True", True),
        ("pop", "False", "select_reset_only = 1", "select_reset_only=True", True),  # bound twice
    ],
)
def test_keyword_popped_from_kwargs_decides_tests_like_a_parameter(
    pop: str, default: str, prepare: str, arguments: str, found: bool
) -> None:
    """``flag = kwargs.pop("flag", False)`` holds what the call passed as ``flag=``: a compiled
    call passing a literal decides the callee's tests of it (torchrl's ``reset(td,
    select_reset_only=True)`` returns before the warning)."""
    source = (
        KEYWORDS.replace("PREPARE", prepare)
        .replace("POP", pop)
        .replace("DEFAULT", default)
        .replace("ARGUMENTS", arguments)
    )
    source = source.replace("def step(x):", "def step(x, flag=True, options=None):")
    assert bool(run(source, "DL104")) is found


@pytest.mark.parametrize(
    "test, found",
    [
        ("done[~mask].any()", False),  # a tensor's value: the graph ends at the test already
        ("flag and done.sum() > 0", False),  # one side of an ``and`` is enough
        ("not done.all()", False),
        ("flag", True),  # a Python value: the warning runs whenever flag is set
        ("done.shape[0] > 1", True),  # a shape is known when tracing, not data
    ],
)
def test_host_call_under_a_test_of_tensor_data_is_left_to_dl101(test: str, found: bool) -> None:
    """A warning about data that should not occur runs only if the data says so: the test
    itself is the break (DL101), and whether the warning ever runs compiled is not shown by
    the code (torchrl's partial-reset warning)."""
    source = compiled(
        f"if {test}:\n    warnings.warn('unexpected data')\nreturn done\n",
        params="done: torch.Tensor, mask: torch.Tensor, flag: bool",
    ).replace(HEADER, HEADER + "import warnings\n")
    assert bool(run(source, "DL104")) is found


def test_host_call_after_a_tensor_test_is_still_reported() -> None:
    """Only the test's own sides are left alone: what follows it runs on every call."""
    source = compiled(
        "if done.any():\n    done = done * 2\nprint('done')\nreturn done\n",
        params="done: torch.Tensor",
    )
    assert [f.span.start.line for f in run(source, "DL104")] == [8]
