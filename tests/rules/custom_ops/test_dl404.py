"""Unit tests of DL404 library-op-missing-kernels: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.custom_ops.conftest import project


def test_dl404_library_ops() -> None:
    defs = """
    import torch

    lib = torch.library.Library("mylib", "DEF")
    lib.define("bare(Tensor x) -> Tensor")
    lib.impl("bare", lambda x: x, "CPU")
    lib.define("faked(Tensor x) -> Tensor")
    lib.define("full(Tensor x) -> Tensor")
    lib.define("cia(Tensor x) -> Tensor")
    lib.impl("cia", lambda x: x * 2, "CompositeImplicitAutograd")
    lib.define("metaonly(Tensor x) -> Tensor")
    lib.impl("metaonly", lambda x: x, "Meta")
    lib.define("inplace(Tensor(a!) x) -> ()")
    lib.define("nat(Tensor x) -> Tensor")
    torch.library.define("mylib::fn_defined", "(Tensor x) -> Tensor")
    lib.define("version() -> int")
    """
    regs = """
    import torch

    torch.library.register_fake("mylib::faked")(lambda x: x)
    torch.library.register_fake("mylib::full")(lambda x: x)
    torch.library.register_autograd("mylib::full", lambda ctx, g: g)
    torch.library.register_fake("mylib::inplace")(lambda x: None)
    frag = torch.library.Library("mylib", "IMPL", "Autograd")
    frag.impl("fn_defined", lambda x: x)
    """
    cpp = """
    TORCH_LIBRARY_IMPL(mylib, Meta, m) { m.impl("nat", &nat_meta); }
    TORCH_LIBRARY_IMPL(mylib, AutogradCPU, m) { m.impl("nat", &nat_ag); }
    """
    model = """
    import torch

    class Block(torch.nn.Module):
        def forward(self, x):
            x = torch.ops.mylib.bare(x) + torch.ops.mylib.faked(x)
            return torch.ops.mylib.metaonly(x) + torch.ops.mylib.fn_defined(x)
    """
    files = {"pkg/defs.py": defs, "pkg/regs.py": regs, "pkg/model.py": model}
    found = project(files, "DL404", native=(("csrc/nat.cpp", cpp),))
    by_line = {f.span.start.line: f.message for f in found if f.path == "pkg/defs.py"}
    assert sorted(by_line) == [5, 7, 11, 15]
    assert "no fake/Meta kernel" in by_line[5] and "no Autograd kernel" in by_line[5]
    assert "GB0090" in by_line[5]
    assert "no fake/Meta kernel" not in by_line[7] and "no Autograd kernel" in by_line[7]
    assert "no fake/Meta kernel" not in by_line[11] and "no Autograd kernel" in by_line[11]
    assert "no fake/Meta kernel" in by_line[15] and "no Autograd kernel" not in by_line[15]
    assert all(f.severity is Severity.WARNING for f in found)
    # without a training forward through them, only the missing fakes are reported
    alone = project({"pkg/defs.py": defs, "pkg/regs.py": regs}, "DL404")
    assert all("no Autograd kernel" not in f.message for f in alone)
    assert sorted(f.span.start.line for f in alone) == [5, 14, 15]  # 14: its C++ fake unseen


def test_custom_op_places_are_measured_in_one_pass_per_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file defining many ops: one position pass for all of them (one per op was
    quadratic: a 400 KB file with 200 ``lib.define`` calls took minutes)."""
    import distlint.syntax.spans as spans

    calls: list[int] = []

    class Counting(spans.Positions):
        def ranges(self, nodes):  # type: ignore[no-untyped-def]
            nodes = list(nodes)
            calls.append(len(nodes))
            return super().ranges(nodes)

    monkeypatch.setattr(spans, "Positions", Counting)
    ops = "\n".join(f"lib.define('op{i}(Tensor x) -> Tensor')" for i in range(30))
    source = f"import torch\nlib = torch.library.Library('ns', 'DEF')\n{ops}\n"
    found = project({"ops.py": source}, "DL404")
    assert len(found) == 30
    assert calls == [30]


def test_dl404_fake_registered_through_a_module_helper() -> None:
    """A fake registered by a module-level helper named by its first parameter counts, also
    when another function of that name comes first and other helpers are called before it
    (each helper's body is looked at when a call of its name is first seen)."""
    defs = """
    import torch
    from torch.library import register_fake as fake

    lib = torch.library.Library("mylib", "DEF")
    lib.define("helped(Tensor x) -> Tensor")
    lib.define("plain(Tensor x) -> Tensor")

    def reg(name):
        return name

    def other(name):
        return len(name)

    def reg(name):
        def deco(f):
            return fake(f"{name}")(f)
        return deco

    other("x")

    @reg("mylib::helped")
    def _(x):
        return x
    """
    found = project({"pkg/defs.py": defs}, "DL404")
    assert sorted(f.span.start.line for f in found) == [7]


_DEFS = """
import torch

lib = torch.library.Library("mylib", "DEF")
lib.define("helped(Tensor x) -> Tensor")
"""


@pytest.mark.parametrize(
    ("path", "helper"),
    [
        ("pkg/regs.py", "import torch.library as L\n\ndef reg(n):\n    L.impl_abstract(n)\n"),
        ("pkg/regs.py", "from torch import library\n\ndef reg(n):\n    library.fake(n)\n"),
        (
            "pkg/regs.py",
            "import torch\nrf = torch.library.register_fake\n\ndef reg(n):\n    rf(n)\n",
        ),
        # no 'library' in the text: the module's name spells it (a relative import)
        ("torch/library/regs.py", "from . import register_fake as r\n\ndef reg(n):\n    r(n)\n"),
    ],
)
def test_dl404_fake_helper_spellings_the_word_gate_must_see(path: str, helper: str) -> None:
    """_may_register_fakes lets each of these through: the helper's call registers the fake."""
    use = helper + '\n@reg("mylib::helped")\ndef _(x):\n    return x\n'
    assert project({"pkg/defs.py": _DEFS, path: use}, "DL404") == []
    assert len(project({"pkg/defs.py": _DEFS}, "DL404")) == 1


def test_dl404_kernels_registered_in_the_loop_that_defines_the_ops() -> None:
    """torch's own ``_functional_collectives.py``: each op of a schema list is defined and
    given a CompositeImplicitAutograd kernel in one loop, the kernel under a name sliced
    from the schema. Credited to the loop's ops; a name bound otherwise (not from the loop
    target, rebound after, or after the call) credits nothing."""
    defs = """
    import torch

    OPS = ["twice(Tensor x) -> Tensor", "thrice(Tensor x) -> Tensor"]
    lib = torch.library.Library("looplib", "DEF")
    impl = torch.library.Library("looplib", "IMPL")
    for op_def in OPS:
        op_name = op_def[0 : op_def.index("(")]
        kernel = getattr(torch, f"_{op_name}", lambda x: x * 2)  # a read of it
        lib.define(op_def)
        impl.impl(op_name, kernel, "CompositeImplicitAutograd")

    OTHER = ["plain(Tensor x) -> Tensor"]
    for op_def in OTHER:
        op_name = "fixed"
        lib.define(op_def)
        impl.impl(op_name, lambda x: x, "CompositeImplicitAutograd")

    LATE = ["late(Tensor x) -> Tensor"]
    for op_def in LATE:
        op_name = op_def[0 : op_def.index("(")]
        op_name = "elsewhere"
        lib.define(op_def)
        impl.impl(op_name, lambda x: x, "CompositeImplicitAutograd")

    AUG = ["aug(Tensor x) -> Tensor"]
    for op_def in AUG:
        op_name = op_def[0 : op_def.index("(")]
        op_name += "_v2"
        lib.define(op_def)
        impl.impl(op_name, lambda x: x, "CompositeImplicitAutograd")

    AFTER = ["after(Tensor x) -> Tensor"]
    for op_def in AFTER:
        lib.define(op_def)
        impl.impl(op_name, lambda x: x, "CompositeImplicitAutograd")
        op_name = op_def[0 : op_def.index("(")]
    """
    model = """
    import torch

    class Block(torch.nn.Module):
        def forward(self, x):
            x = torch.ops.looplib.twice(x) + torch.ops.looplib.thrice(x)
            x = torch.ops.looplib.plain(x) + torch.ops.looplib.late(x)
            x = torch.ops.looplib.aug(x)
            return torch.ops.looplib.after(x)
    """
    found = project({"pkg/defs.py": defs, "pkg/model.py": model}, "DL404")
    reported = sorted(f.message.split("`")[1] for f in found if f.path == "pkg/defs.py")
    assert reported == ["looplib::after", "looplib::aug", "looplib::late", "looplib::plain"]
