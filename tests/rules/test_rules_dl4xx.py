"""Unit tests of the DL4xx rules (custom ops and autograd).

File-scope rules (DL403, DL405, DL406, DL407) go through ``check_source``. Project-scope rules
(DL401, DL402, DL404, DL408) are checked over several modules at once: every file's first pass
(``analyze_source``), linked summaries, then the rule's ``check_project`` (see ``project``).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from distlint.engine.checker import analyze_source, check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from distlint.rules.project import FileRecords, Project
from distlint.rules.registry import get_rule
from distlint.semantic.link import link

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def findings(source: str, *codes: str) -> list[Finding]:
    settings = FileSettings(enabled=frozenset(codes))
    result = check_source(textwrap.dedent(source), "t.py", settings, "t")
    assert result.errors == ()
    return list(result.findings)


def where(found: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.code, f.span.start.line, f.span.start.column) for f in found]


def project(
    sources: dict[str, str], *codes: str, native: tuple[tuple[str, str], ...] = ()
) -> list[Finding]:
    """Findings of project rules over several modules (path "pkg/a.py" is module "pkg.a")."""
    settings = FileSettings(enabled=frozenset(codes))
    texts = {path: textwrap.dedent(text) for path, text in sources.items()}
    results = [
        analyze_source(text, path, settings, path[:-3].replace("/", "."))
        for path, text in texts.items()
    ]
    for result in results:
        assert result.errors == ()
    facts = link([r.summary for r in results if r.summary is not None], (), texts.get)
    proj = Project(
        [FileRecords(r.path, r.summary.key, r.records) for r in results if r.summary],
        facts,
        native,
    )
    found: list[Finding] = []
    for code in sorted(codes):  # spans of records are measured when reported
        rule = get_rule(code)
        assert rule is not None and rule.scope == "project"
        found.extend(rule.check_project(proj))
    return sorted(found, key=lambda f: f.sort_key)


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


# -- DL403 -----------------------------------------------------------------------------------------


def test_dl403_function_without_backward() -> None:
    found = findings(
        """
        import torch
        from torch.autograd import Function as F

        class A(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

        class B(F):
            @staticmethod
            def forward(ctx, x):
                ctx.scale = 2
                return x

        class Base(torch.autograd.Function):
            @staticmethod
            def jvp(ctx, g):
                return g

        class C(Base):
            @staticmethod
            def forward(x):
                return x

            @staticmethod
            def setup_context(context, inputs, output):
                context.mark_non_differentiable(output)
        """,
        "DL403",
    )
    assert where(found) == [("DL403", 5, 7), ("DL403", 11, 7), ("DL403", 22, 7)]
    assert found[0].severity is Severity.ERROR
    assert "`A` subclasses `torch.autograd.Function`" in found[0].message
    assert "NotImplementedError" in found[0].message and "GB0088" in found[0].message


def test_dl403_silent_on_forward_only_functions_by_design() -> None:
    found = findings(
        """
        import torch

        class InferenceKernel(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        class OnnxExport(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def symbolic(g, x):
                return g.op("Identity", x)

        class NewStyle(torch.autograd.Function):
            @staticmethod
            def forward(x):
                return x

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass
        """,
        "DL403",
    )
    assert found == []


INFERENCE_SCRIPT = """
import torch

class Bits(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x > 0).float()

if __name__ == "__main__":
    with torch.inference_mode():
        print(Bits.apply(torch.randn(3)))
"""


def test_dl403_silent_in_an_inference_script_but_not_where_a_backward_runs() -> None:
    assert findings(INFERENCE_SCRIPT, "DL403") == []
    trained = (
        INFERENCE_SCRIPT + "\nBits.apply(torch.randn(3, requires_grad=True)).sum().backward()\n"
    )
    assert [f.code for f in findings(trained, "DL403")] == ["DL403"]
    eager = INFERENCE_SCRIPT.replace("with torch.inference_mode():", "if True:")
    assert [f.code for f in findings(eager, "DL403")] == ["DL403"]


def test_dl403_traps() -> None:
    assert (
        findings(
            """
            import torch
            from somewhere import Mixin

            class WithBackward(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x
                @staticmethod
                def backward(ctx, g):
                    return g

            class Inherits(WithBackward):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

            class Vjp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x
                vjp = staticmethod(lambda ctx, g: g)

            class Assigned(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x
                backward = staticmethod(lambda ctx, g: g)

            class Abstract(torch.autograd.Function):
                pass

            class Foreign(Mixin, torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x

            class NotAFunction(torch.nn.Module):
                def forward(self, x):
                    return x
            """,
            "DL403",
        )
        == []
    )


# -- DL406 -----------------------------------------------------------------------------------------

NET_INIT = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.ones(4))
        self.frozen = nn.Parameter(torch.ones(4), requires_grad=False)
        self.register_parameter("b", nn.Parameter(torch.zeros(4)))
        self.register_buffer("ema", torch.zeros(4))
        self.norm = nn.LayerNorm(4)
        self.norm.weight.requires_grad_(False)

    def forward(self, x):
"""


def net(body: str) -> str:
    return NET_INIT + textwrap.indent(textwrap.dedent(body), " " * 8)


def test_dl406_inplace_on_parameters() -> None:
    found = findings(
        net(
            """
            self.l1.weight.mul_(0.999)
            self.w += 1
            self.b[0] = 0.0
            torch.clamp_(self.w, 0, 1)
            w = self.l1.bias
            w.zero_()
            self.w.view(-1).add_(1)
            for p in self.parameters():
                p.mul_(0.9)
            for name, q in self.named_parameters():
                q.add_(1)
            return x
            """
        ),
        "DL406",
    )
    assert [line for _, line, _ in where(found)] == [18, 19, 20, 21, 23, 24, 26, 28]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "`self.l1.weight`" in found[0].message and "GB4315" in found[0].message
    assert "a leaf Variable that requires grad" in found[0].message


def test_dl406_traps() -> None:
    source = net(
        """
        with torch.no_grad():
            self.w.mul_(2)
        with torch.set_grad_enabled(False):
            self.w.add_(1)
        with torch.inference_mode():
            self.l1.weight.zero_()
        self.l1.weight.data.mul_(2)
        self.w.detach().zero_()
        nn.init.normal_(self.l1.weight)
        self.frozen.mul_(2)
        self.norm.weight.fill_(1)
        self.ema.mul_(0.9)
        h = self.l1(x)
        h.add_(1)
        x.add_(1)
        return h
        """
    )
    source += textwrap.dedent(
        """
        class Other(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(4))

            def reset(self):
                self.w.zero_()

            @torch.no_grad()
            def forward(self, x):
                self.w.mul_(2)
                return x
        """
    )
    assert findings(source, "DL406") == []


# -- DL407 -----------------------------------------------------------------------------------------


def test_dl407_inplace_on_saved_outputs() -> None:
    found = findings(
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = nn.Linear(4, 4)
                self.gate = nn.Sigmoid()
                self.act = nn.ReLU(inplace=True)
                self.seq = nn.Sequential(nn.Tanh(), nn.ReLU(inplace=True))

            def forward(self, x):
                x = self.l1(x)
                a = torch.sigmoid(x)
                a.mul_(2)
                b = x.tanh()
                b += 1
                c = torch.exp(x)
                c[0] = 0.0
                d = F.softmax(x, dim=-1)
                F.relu(d, inplace=True)
                e = self.gate(x)
                self.act(e)
                f = torch.relu(x)
                torch.relu_(f)
                g = f
                g.view(-1).add_(1)
                return torch.sigmoid(x).mul_(2)
        """,
        "DL407",
    )
    assert where(found) == [
        ("DL407", 12, 45),
        ("DL407", 17, 9),
        ("DL407", 19, 9),
        ("DL407", 21, 9),
        ("DL407", 23, 9),
        ("DL407", 25, 9),
        ("DL407", 27, 9),
        ("DL407", 29, 9),
        ("DL407", 30, 16),
    ]
    assert "the output of `sigmoid`" in found[1].message
    assert "modified by an inplace operation" in found[1].message


def test_dl407_optional_input_paths_are_warnings() -> None:
    """A write only on the path where an optional input (default None/False) is passed: the
    rule cannot tell whether a training call passes it (LMOps passes cached keys only when
    generating). On the always-run path it stays an error."""
    found = findings(
        """
        import torch
        import torch.nn as nn

        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(4, 4)

            def forward(self, x, key_val=None, scale=1.0, use_cache=False):
                e = torch.exp(self.proj(x))
                if key_val is not None and scale > 0:
                    e *= 2
                if use_cache:
                    e.mul_(3)
                if scale > 1:
                    e.add_(1)
                return e
        """,
        "DL407",
    )
    assert [(f.span.start.line, f.severity) for f in found] == [
        (13, Severity.WARNING),
        (15, Severity.WARNING),
        (17, Severity.ERROR),
    ]
    assert "runs only when `key_val` is passed" in found[0].message
    assert "runs only when `use_cache` is passed" in found[1].message


def test_dl407_traps() -> None:
    assert (
        findings(
            """
            import torch
            import torch.nn as nn
            import torch.nn.functional as F

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.l1 = nn.Linear(4, 4)
                    self.act = nn.ReLU(inplace=True)
                    self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True))

                def forward(self, x):
                    h = self.l1(x)
                    h.add_(1)
                    torch.relu_(h)
                    h = F.relu(h, inplace=True)
                    m = h @ h
                    m.mul_(2)
                    s = torch.sigmoid(h).clone()
                    s.mul_(2)
                    t = torch.tanh(h)
                    t = t * 2
                    t.add_(1)
                    with torch.no_grad():
                        u = torch.exp(h)
                        u.mul_(2)
                    return self.act(self.l1(x))

            def helper(x):
                y = torch.sigmoid(x)
                y.mul_(2)
                return y
            """,
            "DL407",
        )
        == []
    )


# -- DL405 -----------------------------------------------------------------------------------------


def test_dl405_undeclared_mutations() -> None:
    found = findings(
        """
        import torch
        from torch.library import custom_op

        @torch.library.custom_op("t::a", mutates_args=())
        def a(x: torch.Tensor, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            x.add_(1)
            x.mul_(2)
            torch.mul(x, 2, out=out)
            y += 1
            return x.clone()

        @custom_op("t::b", mutates_args=["x"])
        def b(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> None:
            x.zero_()
            v = y.view(-1)
            v[0] = 1.0
            z.data.fill_(0)
        """,
        "DL405",
    )
    assert where(found) == [
        ("DL405", 7, 5),
        ("DL405", 9, 5),
        ("DL405", 10, 5),
        ("DL405", 17, 5),
        ("DL405", 18, 5),
    ]
    assert found[0].severity is Severity.ERROR
    assert "`x`" in found[0].message and "Argument x is not defined as mutable" in found[0].message
    assert found[0].related and found[0].related[0].message == "custom_op defined here"


def test_dl405_traps() -> None:
    assert (
        findings(
            """
            import torch

            @torch.library.custom_op("t::a", mutates_args=())
            def a(x: torch.Tensor) -> torch.Tensor:
                x = x.clone()
                x.add_(1)
                out = torch.empty_like(x)
                torch.mul(x, 2, out=out)
                return out

            @torch.library.custom_op("t::b", mutates_args="unknown")
            def b(x: torch.Tensor) -> None:
                x.zero_()

            @torch.library.custom_op("t::c", mutates_args={"x"})
            def c(x: torch.Tensor) -> None:
                x.view(-1).zero_()

            @torch.library.custom_op("t::d", mutates_args=(), schema="(Tensor x) -> Tensor")
            def d(x):
                x.zero_()
                return x

            @torch.library.custom_op("t::e", mutates_args=())
            def e(x: torch.Tensor) -> torch.Tensor:
                def inner(x):
                    x.add_(1)
                    return x
                return inner(x.clone())

            def not_an_op(x):
                x.add_(1)
            """,
            "DL405",
        )
        == []
    )


# -- DL401 / DL402 (project) -----------------------------------------------------------------------

OPS = """
import torch

@torch.library.custom_op("demo::nofake", mutates_args=())
def nofake(x: torch.Tensor) -> torch.Tensor:
    return x.sin()

@torch.library.custom_op("demo::faked_elsewhere", mutates_args=())
def faked_elsewhere(x: torch.Tensor) -> torch.Tensor:
    return x.sin()

@torch.library.custom_op("demo::by_name", mutates_args=())
def by_name(x: torch.Tensor) -> torch.Tensor:
    return x.cos()

@torch.library.custom_op("demo::fill", mutates_args=("x",))
def fill(x: torch.Tensor) -> None:
    x.fill_(1)

@torch.library.custom_op("demo::unused", mutates_args=())
def unused(x: torch.Tensor) -> torch.Tensor:
    return x
"""
FAKES = """
import torch
from pkg.ops import faked_elsewhere

@faked_elsewhere.register_fake
def _(x):
    return torch.empty_like(x)

torch.library.register_fake("demo::by_name", lambda x: torch.empty_like(x))
torch.library.register_autograd("demo::by_name", lambda ctx, g: g)
torch.library.impl_abstract("demo::unused")(lambda x: x)
"""
MODEL = """
import torch
import torch.nn as nn
from pkg import ops
from pkg.ops import nofake, faked_elsewhere

class Net(nn.Module):
    def forward(self, x):
        y = faked_elsewhere(x) + torch.ops.demo.by_name(x)
        with torch.no_grad():
            z = ops.unused(x)
        return y + z

@torch.compile(fullgraph=True)
def step(x):
    return nofake(x) + 1
"""


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


# -- DL404 (project) -------------------------------------------------------------------------------


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


# -- DL408 (project, C++) --------------------------------------------------------------------------


def test_dl408_reports_the_cpp_definition_line() -> None:
    cpp = textwrap.dedent(
        """\
        #include <torch/library.h>
        TORCH_LIBRARY(myops, m) {
          m.def("bare(Tensor x) -> Tensor");
          m.def("py_fake(Tensor x) -> Tensor");
          m.def("cpp_ad(Tensor x) -> Tensor");
          m.def("with_kernel(Tensor x) -> Tensor", &with_kernel);
        }
        TORCH_LIBRARY_IMPL(myops, CPU, m) {
          m.impl("bare", &bare_cpu);
        }
        """
    )
    cu = 'TORCH_LIBRARY_IMPL(myops, Autograd, m) { m.impl("cpp_ad", &ad); }\n'
    python = """
    import torch

    def load():
        torch.library.register_fake("myops::py_fake", lambda x: x)
    """
    found = project(
        {"pkg/load.py": python},
        "DL408",
        native=(("csrc/ops.cpp", cpp), ("csrc/ops_ad.cu", cu)),
    )
    assert [(f.path, f.span.start.line, f.span.start.column, f.span.end.column) for f in found] == [
        ("csrc/ops.cpp", 3, 3, 9)
    ]
    assert "`myops::bare`" in found[0].message and "GB0090" in found[0].message
    assert found[0].severity is Severity.WARNING


def test_dl408_without_native_sources_reports_nothing() -> None:
    assert project({"pkg/load.py": "import torch\n"}, "DL408") == []


_CPP_EXPECT = re.compile(r"//\s*expect:\s*(DL\d{3})@(\d+)")


def test_dl408_fixture_folder() -> None:
    folder = FIXTURES / "DL408"
    sources = {
        f"dl408/{p.name}": p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.py"))
    }
    native = tuple(
        (p.relative_to(folder).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted((folder / "csrc").iterdir())
    )
    expected = {
        (path, number, int(m.group(2)))
        for path, text in native
        for number, line in enumerate(text.splitlines(), start=1)
        if (m := _CPP_EXPECT.search(line))
    }
    found = project(sources, "DL408", native=native)
    assert {(f.path, f.span.start.line, f.span.start.column) for f in found} == expected
    assert expected  # bad_ops.cpp holds the bad cases


@pytest.mark.parametrize("code", ["DL401", "DL402", "DL404"])
def test_project_rules_are_silent_on_their_good_and_traps_fixtures(code: str) -> None:
    folder = FIXTURES / code
    for kind in ("good", "traps"):
        text = (folder / f"{kind}.py").read_text(encoding="utf-8")
        assert project({f"{kind}.py": text}, code) == [], kind


def test_dl406_module_classes_with_match_statements() -> None:
    """``match`` has cases, not a body (a crash met in physicsnemo's GALE block)."""
    source = """
import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        match mode:
            case "linear":
                self.proj = nn.Linear(8, 8)
            case _:
                self.proj = nn.Identity()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        match x.dim():
            case 2:
                self.scale += 0.01
            case _:
                pass
        return self.proj(x) * self.scale
"""
    settings = FileSettings(enabled=frozenset({"DL406", "DL407"}))
    result = check_source(source, "t.py", settings)
    assert result.errors == ()
    assert [(f.code, f.span.start.line) for f in result.findings] == [("DL406", 19)]


def test_dl407_binding_made_in_a_branch_holds_only_inside_it() -> None:
    found = findings(
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = nn.Linear(4, 4)

            def forward(self, x, last: bool):
                h = self.l1(x)
                if not last:
                    h = torch.relu(h)
                    h *= 2
                h += 1
                return h
        """,
        "DL407",
    )
    assert where(found) == [("DL407", 14, 13)]


def test_dl407_silent_on_the_activation_of_forward_own_input() -> None:
    source = """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = nn.Linear(4, 4)

            def forward(self, x):
                tmp = torch.relu(x)
                tmp += self.l1(x)
                return tmp
        """
    assert findings(source, "DL407") == []
    computed = source.replace("tmp = torch.relu(x)", "tmp = torch.relu(self.l1(x))")
    assert [f.code for f in findings(computed, "DL407")] == ["DL407"]


def test_custom_op_places_are_measured_in_one_pass_per_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file defining many ops: one position pass for all of them (one per op was
    quadratic: a 400 KB file with 200 ``lib.define`` calls took minutes)."""
    import distlint.syntax.spans as spans

    calls: list[int] = []
    real = spans.node_ranges

    def counting(module, nodes):  # type: ignore[no-untyped-def]
        nodes = list(nodes)
        calls.append(len(nodes))
        return real(module, nodes)

    monkeypatch.setattr(spans, "node_ranges", counting)
    ops = "\n".join(f"lib.define('op{i}(Tensor x) -> Tensor')" for i in range(30))
    source = f"import torch\nlib = torch.library.Library('ns', 'DEF')\n{ops}\n"
    found = project({"ops.py": source}, "DL404")
    assert len(found) == 30
    assert calls == [30]
