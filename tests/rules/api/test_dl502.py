"""Unit tests of DL502 invalid-compile-option: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl502.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.file_settings import FileSettings
from distlint.findings import Applicability, Finding, Severity
from tests.rules.conftest import check, positions

# torch 2.13's facts (the proof tests' torch)
DL502_ONLY = FileSettings(enabled=frozenset({"DL502"}), torch_floor="2.13", torch_ceiling="2.13")


def dl502(source: str) -> list[Finding]:
    return check(source, DL502_ONLY)


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


INVALID_BACKEND = (
    "Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for available backends."
)


MODES = "should be one of: default, lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune"


def test_dl502_unknown_backend_message() -> None:
    source = 'import torch\nmodel = torch.compile(model, backend="nvfuser")\n'
    (finding,) = dl502(source)
    assert positions([finding]) == [(2, 38)]  # the string literal
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
    assert positions([finding]) == [(2, 38)]
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


def test_dl502_unknown_mode_message_and_unsafe_fix() -> None:
    source = 'import torch\nmodel = torch.compile(model, mode="reduce_overhead")\n'
    (finding,) = dl502(source)
    assert positions([finding]) == [(2, 35)]
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
    assert positions(found) == [(2, 22), (3, 39), (4, 42)]
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
    assert positions([finding]) == [(2, 39)]  # the key
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
    assert positions([finding]) == [(2, column)]  # the value
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
        # visit_Call skips calls without a keyword: one after *args must still be seen
        ("import torch\ntorch.compile(m, *rest, mode='fast')\n", (2, 30)),
    ],
    ids=[
        "decorator-factory",
        "module-compile",
        "attribute-receiver",
        "partial",
        "partial-2",
        "alias",
        "after-star-args",
    ],
)
def test_dl502_call_forms(source: str, position: tuple[int, int]) -> None:
    assert positions(dl502(source)) == [position]


def test_dl502_checks_a_configured_compile_wrapper_like_torch_compile() -> None:
    source = (
        "import functools\nfrom mylib.jit import fast_compile\n"
        'model = fast_compile(model, backend="nvfuser")\n'
        'fn = functools.partial(fast_compile, mode="fast")(fn)\n'
    )
    assert dl502(source) == []  # not known to compile: its keywords are its own
    wrapped = FileSettings(
        enabled=frozenset({"DL502"}),
        torch_floor="2.13",
        torch_ceiling="2.13",
        compile_wrappers=("mylib.jit.fast_compile",),
    )
    assert positions(check(source, wrapped)) == [(3, 37), (4, 43)]
