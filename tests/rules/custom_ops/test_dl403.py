"""Unit tests of DL403 autograd-function-missing-backward: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

from distlint.findings import Severity
from tests.rules.conftest import where
from tests.rules.custom_ops.conftest import findings

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
