"""The fixes rules offer: each is applied, the file is checked again (the rule no longer
fires) and fixing again changes nothing. Running the fixed fixtures under torch is in
tests/proof/test_proof_fixes.py."""

from __future__ import annotations

import textwrap

from distlint.engine.checker import FileSource, check_file
from distlint.engine.fixes import applicable, fix_project, parse_error
from distlint.file_settings import FileSettings
from distlint.findings import Finding

# -- the rules' fixes -----------------------------------------------------------------------------


def _findings(text: str, code: str, lowest: str | None = None) -> list[Finding]:
    settings = FileSettings(enabled=frozenset({code}), torch_floor=lowest)
    return [f for f in check_file(FileSource(text, "m.py"), settings).findings if f.code == code]


def fixed(source: str, code: str, unsafe: bool = False, lowest: str | None = None) -> str:
    """Fix ``source`` for ``code``; assert the rule is then silent and a second fix a no-op.
    ``lowest``: the project's lowest torch."""
    text = textwrap.dedent(source)
    run = fix_project(
        lambda texts: _findings(texts.get("m.py", text), code, lowest), lambda _: text, unsafe
    )
    result = run.texts.get("m.py", text)
    assert parse_error(result) is None
    assert not [f for f in _findings(result, code, lowest) if applicable(f.fix, unsafe)], result
    again = fix_project(
        lambda texts: _findings(texts.get("m.py", result), code, lowest), lambda _: result, unsafe
    )
    assert again.texts.get("m.py", result) == result
    return result


DIST = "import torch\nimport torch.distributed as dist\n\n"


def test_dl206_fix_compares_within_a_tolerance() -> None:
    source = DIST + textwrap.dedent(
        """\
        def check(stop, holder):
            dist.broadcast(stop, src=0)
            dist.broadcast_object_list(holder, src=0)
            a = stop.item() == 1.0
            b = 0.5 != holder[0]
            c = (stop == 1.0) & True
            d = not stop.item() == -1.0
            return a, b, c, d
        """
    )
    assert fixed(source, "DL206") == source  # unsafe: not applied by default
    out = fixed(source, "DL206", unsafe=True)
    assert "a = abs(stop.item() - 1.0) < 1e-6" in out
    assert "b = abs(holder[0] - 0.5) >= 1e-6" in out
    assert "c = (abs(stop - 1.0) < 1e-6) & True" in out
    assert "d = not abs(stop.item() - -1.0) < 1e-6" in out


def test_dl206_chained_comparison_gets_no_fix() -> None:
    source = DIST + "def f(t):\n    dist.all_reduce(t)\n    return 0 < t.item() == 1.0\n"
    finding = _findings(source, "DL206")[0]
    assert finding.fix is None


DL207 = """\
\"\"\"Docstring.\"\"\"
from __future__ import annotations

import os

import torch.distributed as dist

ROOT = "/tmp/cache"


def setup():
    os.environ["TRITON_CACHE_DIR"] = "/tmp/triton"
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(ROOT, "inductor"))
    dist.init_process_group("gloo")
"""


def test_dl207_fix_adds_the_host_and_the_import() -> None:
    out = fixed(DL207, "DL207", unsafe=True)
    assert (
        'os.environ["TRITON_CACHE_DIR"] = os.path.join("/tmp/triton", socket.gethostname())' in out
    )
    assert 'os.path.join(ROOT, "inductor", socket.gethostname())' in out
    assert out.count("import socket\n") == 1
    assert out.index("from __future__") < out.index("import socket") < out.index("import os")


def test_dl207_no_fix_when_socket_is_something_else() -> None:
    source = DL207.replace("ROOT = ", "socket = None\nROOT = ")
    assert all(f.fix is None for f in _findings(source, "DL207"))


def test_dl504_drop_in_fix_respells_in_place() -> None:
    source = DIST + textwrap.dedent(
        """\
        import functorch
        import torch.distributed._functional_collectives as funcol

        def f(out, t):
            dist._all_gather_base(out, t)
            funcol.all_gather_tensor(t, 0, dist.group.WORLD)
            torch.cuda.memory_cached()
            torch.nn.utils.clip_grad_norm([], 1.0)
            return functorch.vmap(torch.sin)(t)
        """
    )
    out = fixed(source, "DL504")  # safe: applied by --fix
    assert "dist.all_gather_single(out, t)" in out
    assert "funcol.all_gather_single(t, 0, dist.group.WORLD)" in out
    assert "torch.cuda.memory_reserved()" in out
    assert "torch.nn.utils.clip_grad_norm_([], 1.0)" in out
    assert "return torch.vmap(torch.sin)(t)" in out


def test_dl504_no_fix_without_a_drop_in() -> None:
    source = DIST + textwrap.dedent(
        """\
        from torch.cuda import memory_cached

        def f():
            memory_cached()
            with torch.cuda.amp.autocast():
                pass
            torch.testing.assert_allclose(torch.ones(1), torch.ones(1))
        """
    )
    findings = _findings(source, "DL504")
    assert len(findings) == 3
    assert all(f.fix is None for f in findings)


def test_dl504_full_path_needs_torch_imported() -> None:
    source = "import functorch\n\nf = functorch.vmap(abs)\n"
    (finding,) = _findings(source, "DL504")
    assert finding.fix is None


PRIVATE_IMPORTS = """\
from torch.distributed._tensor import DTensor, Shard
from torch.distributed._composable.fsdp import FSDPModule, fully_shard as shard
"""


def test_dl504_private_import_fix_imports_the_same_objects_from_the_public_module() -> None:
    out = fixed(PRIVATE_IMPORTS, "DL504", lowest="2.13")  # safe: applied by --fix
    assert out == (
        "from torch.distributed.tensor import DTensor, Shard\n"
        "from torch.distributed.fsdp import FSDPModule, fully_shard as shard\n"
    )
    assert _findings(out, "DL504", "2.13") == []


def test_dl504_private_import_fix_only_where_the_lowest_torch_has_the_public_names() -> None:
    """torch.distributed.fsdp exports fully_shard from 2.6 on; torch.distributed.tensor its
    DTensor API from 2.5 on. Before that the private path is the only one: nothing to say."""
    assert [f.message.split("`")[1] for f in _findings(PRIVATE_IMPORTS, "DL504", "2.5")] == [
        "torch.distributed._tensor"
    ]
    assert _findings(PRIVATE_IMPORTS, "DL504", "2.4") == []
    out = fixed(PRIVATE_IMPORTS, "DL504", lowest="2.5")
    assert out.splitlines() == [
        "from torch.distributed.tensor import DTensor, Shard",
        "from torch.distributed._composable.fsdp import FSDPModule, fully_shard as shard",
    ]


def test_dl504_private_import_without_a_drop_in_gets_no_fix() -> None:
    source = (
        "from torch.distributed._tensor import DTensor, _internal_helper\n"
        "from torch.distributed._tensor.placement_types import Shard\n"
        "from torch.distributed._tensor import *\n"
        "import torch.distributed._tensor as dt\n"
        "from torch.distributed import _tensor\n"
    )
    found = _findings(source, "DL504", "2.13")
    assert [f.span.start.line for f in found] == [1, 2, 3, 4, 5]
    assert all(f.fix is None for f in found)


DL604 = """\
import torch
import torch.nn as nn


@torch.compile(mode="reduce-overhead")
def predict(x):
    return x * 2


def step():
    y1 = predict(torch.ones(4))
    y2 = predict(torch.ones(4))
    model = torch.compile(nn.Linear(4, 4), mode="reduce-overhead")
    kept = []
    for _ in range(3):
        kept.append(model(torch.randn(2, 4))[0])
    return y1 + y2, kept
"""


def test_dl604_fix_clones_the_kept_output() -> None:
    assert fixed(DL604, "DL604") == DL604
    out = fixed(DL604, "DL604", unsafe=True)
    assert "y1 = predict(torch.ones(4)).clone()" in out
    assert "kept.append(model(torch.randn(2, 4))[0].clone())" in out
    assert out.count(".clone()") == 3  # y2 too: the later `model(...)` calls replay graphs


def test_dl104_fix_runs_host_only_statements_in_eager_mode_only() -> None:
    source = textwrap.dedent(
        """\
        import logging
        import warnings
        import torch

        logger = logging.getLogger(__name__)

        @torch.compile(fullgraph=True)
        def step(x):
            print("step", x.shape)  # a comment stays
            logger.info("scaling")
            warnings.warn("slow path")
            y = print("x") or x
            return x * 2
        """
    )
    assert fixed(source, "DL104") == source  # unsafe: compiled runs stop printing
    out = fixed(source, "DL104", unsafe=True)
    guard = "    if not torch.compiler.is_compiling(): "
    assert guard + 'print("step", x.shape)  # a comment stays' in out
    assert guard + 'logger.info("scaling")' in out
    assert guard + 'warnings.warn("slow path")' in out
    assert '    y = print("x") or x' in out  # not a statement of its own: no fix
    remaining = [f.span.start.line for f in _findings(out, "DL104")]
    assert remaining == [12]


def test_dl104_offers_no_guard_without_the_torch_name() -> None:
    source = "import torch as t\n\n@t.compile\ndef f(x):\n    print(x)\n    return x\n"
    (finding,) = _findings(source, "DL104")
    assert finding.fix is None
