"""Unit tests of DL203 (object collectives in compiled code) and DL502 (invalid compile options).

Small snippets through ``check_source``; the proof tests show that torch fails as the messages
say, these tests pin what distlint reports, where, and the fixes it offers.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Applicability, Finding, Severity
from distlint.rules.registry import get_rule

DL203_ONLY = FileSettings(enabled=frozenset({"DL203"}))
# torch 2.13's facts (the proof tests' torch)
DL502_ONLY = FileSettings(enabled=frozenset({"DL502"}), torch_floor="2.13", torch_ceiling="2.13")


def findings(source: str, settings: FileSettings) -> list[Finding]:
    result = check_source(textwrap.dedent(source), "t.py", settings)
    assert result.errors == ()
    return list(result.findings)


def dl203(source: str, settings: FileSettings = DL203_ONLY) -> list[Finding]:
    return findings(source, settings)


def dl502(source: str) -> list[Finding]:
    return findings(source, DL502_ONLY)


def where(found: list[Finding]) -> list[tuple[int, int]]:
    return [(f.span.start.line, f.span.start.column) for f in found]


def apply_fix(source: str, finding: Finding) -> str:
    """``source`` with the finding's fix applied (edits on one line each)."""
    assert finding.fix is not None
    lines = source.splitlines(keepends=True)
    for edit in sorted(finding.fix.edits, key=lambda e: e.span.start, reverse=True):
        start, end = edit.span.start, edit.span.end
        assert start.line == end.line
        line = lines[start.line - 1]
        lines[start.line - 1] = line[: start.column - 1] + edit.content + line[end.column - 1 :]
    return "".join(lines)


def test_metadata() -> None:
    dl203_rule, dl502_rule = get_rule("DL203"), get_rule("DL502")
    assert dl203_rule is not None and dl502_rule is not None
    assert dl203_rule.severity is Severity.ERROR and dl203_rule.default_enabled
    assert dl502_rule.severity is Severity.ERROR and dl502_rule.default_enabled
    assert dl203_rule.fix_availability.value == "none"
    assert dl502_rule.fix_availability.value == "sometimes"


# -- DL203 -----------------------------------------------------------------------------------------

HEADER = """\
import datetime
import torch
import torch.distributed as dist
"""


@pytest.mark.parametrize(
    "call",
    [
        "dist.all_gather_object(out, obj)",
        "dist.broadcast_object_list(objs, src=0)",
        "dist.gather_object(obj, out, dst=0)",
        "dist.scatter_object_list(out, objs, src=0)",
        "dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))",
        "torch.distributed.all_gather_object(out, obj)",
        "torch.distributed.distributed_c10d.broadcast_object_list(objs)",
    ],
)
def test_dl203_reports_each_object_collective(call: str) -> None:
    source = HEADER + f"\n@torch.compile\ndef step(x, out, obj, objs):\n    {call}\n    return x\n"
    found = dl203(source)
    assert where(found) == [(7, 5)]
    (finding,) = found
    assert finding.code == "DL203"
    assert finding.name == "object-collective-in-compiled-region"
    assert finding.severity is Severity.ERROR
    assert finding.fix is None
    callee = call.split("(", 1)[0]
    assert finding.message.startswith(f"`{callee}` inside a compiled region")
    # The span is the whole call.
    assert finding.span.end.column == 5 + len(call)


def test_dl203_message_says_what_happens_and_what_to_do() -> None:
    (finding,) = dl203(
        HEADER + "@torch.compile(backend='eager')\ndef step(x):\n"
        "    dist.all_gather_object([None], 1)\n    return x\n"
    )
    message = finding.message
    assert "crashes compilation" in message
    assert "with or without fullgraph=True" in message
    assert "InternalTorchDynamoError" in message
    assert "GB2078" in message
    assert "outside the compiled function" in message
    assert "all_gather_single" in message


def test_dl203_related_location_is_the_compile_decorator() -> None:
    source = """\
    import torch
    import torch.distributed as dist


    def log_calls(fn):
        return fn


    class Trainer:
        # the hot loop
        @log_calls
        @torch.compile(fullgraph=True)
        def step(self, x):
            dist.broadcast_object_list([x.shape], src=0)
            return x
    """
    (finding,) = dl203(source)
    assert where([finding]) == [(14, 9)]
    (related,) = finding.related
    assert related.message == "compiled (fullgraph=True)"
    assert related.path == "t.py"
    assert (related.span.start.line, related.span.start.column) == (12, 5)
    assert related.span.end.line == 12


@pytest.mark.parametrize(
    "imports, call",
    [
        ("from torch.distributed import all_gather_object", "all_gather_object([None], 1)"),
        (
            "from torch.distributed import gather_object as collect",
            "collect(1, [None], dst=0)",
        ),
        ("import torch.distributed.distributed_c10d as c10d", "c10d.scatter_object_list([], [])"),
        ("from torch import distributed", "distributed.monitored_barrier()"),
        (
            "import torch.distributed as dist\nshare = dist.broadcast_object_list",
            "share([1], src=0)",
        ),
    ],
)
def test_dl203_resolves_import_spellings(imports: str, call: str) -> None:
    source = f"import torch\n{imports}\n\n@torch.compile\ndef step(x):\n    {call}\n    return x\n"
    assert [f.code for f in dl203(source)] == ["DL203"]


def test_dl203_configured_compile_wrapper_is_a_region() -> None:
    source = """\
    import torch.distributed as dist
    from myproject.jit import fast_compile


    @fast_compile
    def step(x):
        dist.all_gather_object([None], 1)
        return x
    """
    assert dl203(source) == []
    settings = FileSettings(
        enabled=frozenset({"DL203"}), compile_wrappers=("myproject.jit.fast_compile",)
    )
    assert where(dl203(source, settings)) == [(7, 5)]


@pytest.mark.parametrize(
    "source",
    [
        # eager code
        HEADER + "def sync(obj):\n    dist.all_gather_object([None], obj)\n",
        # a name that mentions compile
        HEADER + "def compile_metrics(obj):\n    dist.gather_object(obj, [None], dst=0)\n",
        # traceable tensor collectives
        HEADER + "@torch.compile\ndef step(x):\n    dist.all_reduce(x)\n"
        "    out = torch.empty(2)\n    dist.all_gather_into_tensor(out, x)\n    return out\n",
        # a project function with the torch name
        HEADER + "def all_gather_object(items):\n    return items\n\n"
        "@torch.compile\ndef step(x):\n    all_gather_object([x])\n    return x\n",
        # a parameter that shadows the import
        HEADER + "@torch.compile\ndef step(x, dist):\n    dist.all_gather_object([None], 1)\n",
        # the collective lives in a disabled helper
        HEADER + "@torch.compiler.disable\ndef sync():\n    dist.monitored_barrier()\n\n"
        "@torch.compile\ndef step(x):\n    sync()\n    return x\n",
        # re.compile is not torch.compile
        HEADER + "import re\n@re.compile\ndef step(x):\n    dist.all_gather_object([None], 1)\n",
    ],
    ids=[
        "eager",
        "named-compile",
        "traceable",
        "local-name",
        "shadowing-param",
        "disabled-helper",
        "not-torch-compile",
    ],
)
def test_dl203_stays_silent(source: str) -> None:
    assert dl203(source) == []


def test_dl203_follows_the_region_into_callees_and_every_root_form() -> None:
    source = """\
    import torch
    import torch.distributed as dist
    import torch.nn as nn


    def share(v):
        dist.broadcast_object_list([v], src=0)


    @torch.compile
    def step(x):
        def nested(v):
            dist.all_gather_object([None], v)

        nested(1)
        share(2)
        return x


    class Net(nn.Module):
        def forward(self, x):
            dist.gather_object(x, [None], dst=0)
            return x


    def plain(x):
        dist.monitored_barrier()
        return x


    model = torch.compile(Net())
    fast = torch.compile(plain)
    """
    findings = dl203(source)
    assert where(findings) == [(7, 5), (13, 9), (22, 9), (27, 5)]
    labels = {
        f.span.start.line: [(r.message, r.span.start.line) for r in f.related] for f in findings
    }
    assert labels == {
        7: [("compiled", 10)],
        13: [("compiled", 10)],
        22: [("compiled", 31)],
        27: [("compiled", 32)],
    }


def test_dl203_off_when_not_enabled() -> None:
    source = HEADER + "@torch.compile\ndef step(x):\n    dist.all_gather_object([None], 1)\n"
    assert findings(source, FileSettings(enabled=frozenset({"DL502"}))) == []


def test_dl203_inline_suppression_covers_a_multiline_call() -> None:
    source = HEADER + (
        "@torch.compile\ndef step(x):\n    dist.all_gather_object(\n        [None],\n"
        "        1,  # noqa: DL203\n    )\n    return x\n"
    )
    result = check_source(source, "t.py", DL203_ONLY)
    assert result.findings == ()
    assert result.suppressed == 1


# -- DL502: backends -------------------------------------------------------------------------------

INVALID_BACKEND = (
    "Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends."
)


def test_dl502_unknown_backend_message() -> None:
    source = 'import torch\nmodel = torch.compile(model, backend="nvfuser")\n'
    (finding,) = dl502(source)
    assert where([finding]) == [(2, 38)]  # the string literal
    assert finding.span.end.column == 38 + len('"nvfuser"')
    assert finding.severity is Severity.ERROR
    message = finding.message
    assert message.startswith("'nvfuser' is not a torch.compile backend in torch 2.13")
    assert f"torch.compile raises InvalidBackend ({INVALID_BACKEND.format(name='nvfuser')})" in (
        message
    )
    assert "Built-in backends: cudagraphs, inductor, openxla, tvm" in message
    assert "eager and aot_eager" in message


@pytest.mark.parametrize(
    "literal, fixed",
    [
        ('"Inductor"', '"inductor"'),
        ("'Inductor'", "'inductor'"),
        ('"""INDUCTOR"""', '"""inductor"""'),
        ("'Eager'", "'eager'"),
        ('"AOT_EAGER"', '"aot_eager"'),
    ],
)
def test_dl502_case_mismatch_has_a_safe_fix_keeping_the_quotes(literal: str, fixed: str) -> None:
    source = f"import torch\nmodel = torch.compile(model, backend={literal})\n"
    (finding,) = dl502(source)
    assert where([finding]) == [(2, 38)]
    assert finding.message.startswith("Backend names are case-sensitive: torch.compile raises")
    assert "InvalidBackend" in finding.message
    assert finding.fix is not None
    assert finding.fix.applicability is Applicability.SAFE
    assert finding.fix.title == f"Use backend {fixed.strip(chr(34) + chr(39))!r}"
    (edit,) = finding.fix.edits
    assert (edit.span.start.column, edit.span.end.column) == (38, 38 + len(literal))
    assert edit.content == fixed
    assert apply_fix(source, finding) == (
        f"import torch\nmodel = torch.compile(model, backend={fixed})\n"
    )


def test_dl502_close_backend_name_gets_an_unsafe_fix() -> None:
    source = "import torch\nmodel = torch.compile(model, backend='inductr')\n"
    (finding,) = dl502(source)
    assert "Did you mean 'inductor'?" in finding.message
    assert finding.fix is not None
    assert finding.fix.applicability is Applicability.UNSAFE
    assert apply_fix(source, finding) == (
        "import torch\nmodel = torch.compile(model, backend='inductor')\n"
    )


def test_dl502_far_backend_name_gets_no_fix() -> None:
    (finding,) = dl502('import torch\ntorch.compile(m, backend="aot_ts_nvfuser")\n')
    assert finding.fix is None
    assert "Did you mean" not in finding.message


@pytest.mark.parametrize(
    "source",
    [
        'import torch\ntorch.compile(m, backend="eager")\n',
        'import torch\ntorch.compile(m, backend="aot_eager_decomp_partition")\n',
        'import torch\ntorch.compile(m, backend="tensorrt")\n',
        'import torch\ntorch.compile(m, backend="openvino")\n',
        'import torch\ntorch.compile(m, backend="neuron")\n',
        'import torch\ntorch.compile(m, backend="hpu_backend")\n',
        "import torch\nname = 'nvfuser'\ntorch.compile(m, backend=name)\n",
        "import torch\ndef my_backend(gm, ex):\n    return gm\n"
        "torch.compile(m, backend=my_backend)\n",
        "import torch\nfrom torch._dynamo import register_backend\n\n@register_backend\n"
        "def mine(gm, ex):\n    return gm\n\ntorch.compile(m, backend='mine')\n",
        "import torch\nimport torch._dynamo\n\n@torch._dynamo.register_backend(name='fast')\n"
        "def mine(gm, ex):\n    return gm\n\ntorch.compile(m, backend='fast')\n",
        "import torch\nfrom torch._dynamo import register_backend\n"
        "def mine(gm, ex):\n    return gm\nregister_backend(compiler_fn=mine, name='counting')\n"
        "torch.compile(m, backend='counting')\n",
    ],
    ids=[
        "eager",
        "hidden-in-tree",
        "tensorrt",
        "openvino",
        "neuron",
        "hpu",
        "variable",
        "callable",
        "registered-decorator",
        "registered-decorator-name",
        "registered-call",
    ],
)
def test_dl502_accepts_backends(source: str) -> None:
    assert dl502(source) == []


# -- DL502: modes and options ----------------------------------------------------------------------

MODES = "should be one of: default, lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune"


def test_dl502_unknown_mode_message_and_unsafe_fix() -> None:
    source = 'import torch\nmodel = torch.compile(model, mode="reduce_overhead")\n'
    (finding,) = dl502(source)
    assert where([finding]) == [(2, 35)]
    assert finding.message == (
        "Unknown torch.compile mode 'reduce_overhead': torch.compile raises RuntimeError "
        f"('Unrecognized mode=reduce_overhead, {MODES}'). Did you mean 'reduce-overhead'?"
    )
    assert finding.fix is not None
    assert finding.fix.applicability is Applicability.UNSAFE
    assert apply_fix(source, finding) == (
        'import torch\nmodel = torch.compile(model, mode="reduce-overhead")\n'
    )


def test_dl502_mode_and_options_reported_at_mode_for_any_backend() -> None:
    source = (
        "import torch\n"
        'a = torch.compile(m, mode="max-autotune", options={"epilogue_fusion": False})\n'
        'b = torch.compile(m, backend="eager", mode="default", options={})\n'
        "c = torch.compile(m, backend=my_backend, mode='', options=opts)\n"
    )
    found = dl502(source)
    assert where(found) == [(2, 22), (3, 39), (4, 42)]
    for finding in found:
        assert finding.message.startswith("`mode=` and `options=` cannot be combined")
        assert (
            "Either mode or options can be specified, but both can't be specified at the "
            "same time." in finding.message
        )
        assert "Drop `mode=`" in finding.message
        assert finding.fix is None


def test_dl502_unknown_option_key() -> None:
    source = 'import torch\nmodel = torch.compile(model, options={"cuda_graphs": True})\n'
    (finding,) = dl502(source)
    assert where([finding]) == [(2, 39)]  # the key
    assert finding.message.startswith("'cuda_graphs' is not an inductor option in torch 2.13")
    assert "Unexpected optimization option cuda_graphs" in finding.message
    assert "Did you mean 'triton.cudagraphs'?" in finding.message
    assert finding.fix is not None
    assert finding.fix.applicability is Applicability.UNSAFE
    assert apply_fix(source, finding) == (
        'import torch\nmodel = torch.compile(model, options={"triton.cudagraphs": True})\n'
    )


@pytest.mark.parametrize(
    "entry, column, message",
    [
        (
            '"max_autotune": "true"',
            55,
            "Option 'max_autotune' expects bool, got str 'true': torch.compile raises "
            "RuntimeError ('Unexpected type of attr max_autotune, got str should be bool').",
        ),
        (
            '"cpu_gpu_bw": 50',
            53,
            "Option 'cpu_gpu_bw' expects float, got int 50: torch.compile raises RuntimeError "
            "('Unexpected type of attr cpu_gpu_bw, got int should be float').",
        ),
    ],
)
def test_dl502_option_value_type(entry: str, column: int, message: str) -> None:
    source = f"import torch\nmodel = torch.compile(model, options={{{entry}}})\n"
    (finding,) = dl502(source)
    assert where([finding]) == [(2, column)]  # the value
    assert finding.message == message
    assert finding.fix is None


@pytest.mark.parametrize(
    "source",
    [
        # only inductor validates mode= and options=
        'import torch\ntorch.compile(m, backend="eager", mode="max-autotune")\n',
        'import torch\ntorch.compile(m, backend="aot_eager", mode="whatever")\n',
        'import torch\ntorch.compile(m, backend="eager", options={"no_such_option": 1})\n',
        'import torch\ntorch.compile(m, backend=b, mode="whatever")\n',
        # default spellings of mode, and None does not count as given
        'import torch\ntorch.compile(m, mode="default")\n',
        'import torch\ntorch.compile(m, mode="")\n',
        'import torch\ntorch.compile(m, mode=None, options={"max_autotune": False})\n',
        'import torch\ntorch.compile(m, mode="max-autotune", options=None)\n',
        # options torch accepts
        'import torch\ntorch.compile(m, options={"epilogue-fusion": True})\n',
        'import torch\ntorch.compile(m, options={"combo_kernels_autotune": True})\n',
        'import torch\ntorch.compile(m, options={"cpu_gpu_bw": 50.0, "triton.cudagraphs": True})\n',
        "import torch\nopts = {'bogus': 1}\ntorch.compile(m, options=opts)\n",
        "import torch\ntorch.compile(m, options={**base, 'max_autotune': True})\n",
        # not torch.compile
        'import re\nimport torch\npattern = re.compile(r"layers\\.(\\d+)", flags=re.I)\n',
        "import torch\nmodel.compile()\nmodel.compile(fullgraph=True)\n",
        'import torch\ncode = compile(source, "f.py", mode="exec")\n',
        'model.compile(mode="fastest")\n',  # torch is not imported in this file
    ],
)
def test_dl502_stays_silent(source: str) -> None:
    assert dl502(source) == []


@pytest.mark.parametrize(
    "source, position",
    [
        ("import torch\n\n@torch.compile(mode='fast')\ndef step(x):\n    return x\n", (3, 21)),
        ("import torch\nmodel.compile(mode='fastest')\n", (2, 20)),
        ("import torch\nself.net.compile(backend='nvfuser')\n", (2, 26)),
        ("import functools\nimport torch\nfunctools.partial(torch.compile, mode='x')\n", (3, 39)),
        (
            "from functools import partial\nimport torch\npartial(torch.compile, mode='x')\n",
            (3, 29),
        ),
        ("from torch import compile as tc\ntc(m, backend='nvfuser')\n", (2, 15)),
    ],
    ids=[
        "decorator-factory",
        "module-compile",
        "attribute-receiver",
        "partial",
        "partial-2",
        "alias",
    ],
)
def test_dl502_call_forms(source: str, position: tuple[int, int]) -> None:
    assert where(dl502(source)) == [position]
