"""Unit tests of DL123 requires-grad-change-in-compiled-region: what it reports, where, and
what it leaves alone.

The proof tests (tests/proof/test_proof_dl123.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER, compiled
from tests.rules.conftest import run, where


def module(body: str) -> str:
    """A module class compiled whole (its ``forward`` starts at line 10)."""
    source = HEADER + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)
                self.pos = torch.nn.Parameter(torch.zeros(4))
                self.scale = 0.5
        """
    )
    body = textwrap.indent(textwrap.dedent(body), "    ")
    return source + body + "\nnet = torch.compile(Net())\n"


# -- GB0206: t.requires_grad = ... -------------------------------------------------------------


def test_dl123_setting_requires_grad_on_tensors_and_parameters() -> None:
    source = module(
        """\
        def forward(self, x: torch.Tensor, tgt):
            x.requires_grad = True
            y = x * 2
            y.requires_grad = False
            self.lin.weight.requires_grad = False
            self.lin.bias.requires_grad = False
            self.pos.requires_grad = False
            for p in self.lin.parameters():
                p.requires_grad = False
            for name, q in self.named_parameters():
                setattr(q, "requires_grad", False)
            for r in list(self.lin.parameters()):
                r.data.requires_grad = False
            tgt.requires_grad = False
            bias = compute_bias(x)
            bias.requires_grad = True
            return y
        """
    )
    found = run(source, "DL123")
    assert [line for _, line, _ in where(found)] == [11, 13, 14, 15, 16, 18, 20, 22, 23, 25]
    assert all("GB0206" in f.message and f.severity is Severity.WARNING for f in found)
    assert "setattr() on Tensor.requires_grad" in found[0].message
    # in a loop: the whole function is skipped
    assert "GB7000" in found[5].message and "GB7000" not in found[0].message
    # clearing the flag on a value: detach instead; on a parameter: freeze before compiling
    assert "`y = y.detach()`" in found[1].message
    assert "before compiling" in found[2].message


def test_dl123_plain_names_through_unpacking_and_optional_annotations() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from typing import Optional

        @torch.compile
        def loss(outputs, targets, position_bias: Optional[torch.Tensor] = None):
            mel_target, gate_target = targets[0], targets[1]
            mel_target.requires_grad = False
            feats = outputs.new_zeros(4)
            feats += outputs
            feats.requires_grad = True
            position_bias.requires_grad = True
            return mel_target, feats, position_bias
        """
    )
    assert [line for _, line, _ in where(run(source, "DL123"))] == [9, 12, 13]


def test_dl123_non_tensor_receivers_are_left_alone() -> None:
    source = module(
        """\
        def forward(self, x, model: torch.nn.Module, *parts):
            self.requires_grad = False
            self.lin.requires_grad = False
            self.scale.requires_grad = False
            model.requires_grad = False
            parts.requires_grad = False
            cfg = Config()
            cfg.requires_grad = True
            head = torch.nn.Linear(4, 4)
            head.requires_grad = False
            flags = {}
            flags.requires_grad = True
            settings.requires_grad = False
            for m in self.modules():
                m.requires_grad = False
            if x.requires_grad:
                x = x * 2
            return self.lin(x)
        """
    )
    assert run(source, "DL123") == []


def test_dl123_severity_follows_fullgraph_and_paths() -> None:
    source = compiled(
        """\
        x.requires_grad = False
        if flag:
            x.requires_grad = True
        return x
        """,
        fullgraph=True,
        params="x: torch.Tensor, flag: bool",
    )
    first, second = run(source, "DL123")
    assert first.severity is Severity.ERROR
    assert "fails under fullgraph=True on torch 2.13" in first.message
    assert second.severity is Severity.WARNING and "only on some paths" in second.message


def test_dl123_outside_regions_and_on_the_eager_side_is_silent() -> None:
    source = HEADER + textwrap.dedent(
        """\
        def freeze(model):
            for p in model.parameters():
                p.requires_grad = False
            return torch.tensor(0.0, requires_grad=True)

        @torch.compile
        def f(x: torch.Tensor):
            if not torch.compiler.is_compiling():
                x.requires_grad = False
            return x * 2
        """
    )
    assert run(source, "DL123") == []


# -- GB0225: a factory with requires_grad=True -------------------------------------------------


def test_dl123_factories_with_requires_grad_true() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import torch as th
        from torch import tensor

        @torch.compile
        def f(x: torch.Tensor):
            a = torch.tensor(0.0, requires_grad=True)
            b = th.zeros(4, requires_grad=True)
            c = tensor([1.0], requires_grad=True)
            d = torch.randn_like(x, requires_grad=True)
            e = x.new_tensor([1.0], requires_grad=True)
            with torch.no_grad():
                g = torch.ones(4, device=x.device, requires_grad=True)
            return a + b + c + d + e + g
        """
    )
    found = run(source, "DL123")
    assert [line for _, line, _ in where(found)] == [9, 10, 11, 12, 13, 15]
    assert all("GB0225" in f.message for f in found)
    assert "Attempted to use tensor creation function with requires_grad=True" in found[0].message
    assert "`torch.tensor(..., requires_grad=True)`" in found[0].message
    assert "`x.new_zeros(...)`" in found[4].message


def test_dl123_factory_look_alikes_are_left_alone() -> None:
    source = compiled(
        """\
        a = torch.zeros(4, requires_grad=False)
        b = torch.zeros(4, requires_grad=RG)
        c = x.new_zeros(4, requires_grad=True)
        d = x.new_full((4,), 1.0, requires_grad=True)
        e = torch.nn.Parameter(torch.zeros(4), requires_grad=True)
        f = torch.as_strided(x, (2,), (1,))
        g = helper(requires_grad=True)
        return a + b + c + d + e + f + g
        """
    )
    assert run(source, "DL123") == []


def test_dl123_factory_in_a_loop_skips_the_function() -> None:
    source = compiled(
        """\
        for _ in range(3):
            x = x + torch.zeros(4, requires_grad=True)
        return x
        """
    )
    (finding,) = run(source, "DL123")
    assert "GB7000" in finding.message


# -- GB7324 / GB8985: requires_grad_() on a returned intermediate ----------------------------------


def test_dl123_requires_grad_on_an_intermediate_that_is_returned() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile(fullgraph=True)
        def chained(x: torch.Tensor):
            w = torch.ones(4).requires_grad_()
            loss = (x * w).sum()
            return loss

        @torch.compile
        def statement(x: torch.Tensor):
            y = x.detach().clone()
            y.requires_grad_(True)
            outs = []
            outs.append(y * 2)
            return outs

        @torch.compile
        def returned_directly(x):
            return {"w": x.detach().requires_grad_(requires_grad=True)}
        """
    )
    found = run(source, "DL123")
    assert [line for _, line, _ in where(found)] == [6, 13, 20]
    assert found[0].severity is Severity.ERROR
    assert "returning intermediate with requires_grad_()" in found[0].message
    assert "GB7324" in found[0].message
    assert found[1].severity is Severity.WARNING and "GB8985" in found[1].message


def test_dl123_requires_grad_look_alikes_are_left_alone() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile(fullgraph=True)
        def kept_inside(x: torch.Tensor, w: torch.Tensor):
            y = x.detach()
            before = y + 1
            y.requires_grad_()
            values = (y * 3).detach()
            z = torch.ones(4).requires_grad_()
            size = z.shape[0]
            off = torch.zeros(4).requires_grad_(False)
            x.requires_grad_()
            w.requires_grad_(False)
            made = torch.zeros(4, requires_grad=False)
            made = made + x
            made.requires_grad_()
            return before + values + off + made, size, float(z.sum())

        def helper(x):
            return x.detach().requires_grad_()

        @torch.compile(fullgraph=True)
        def calls_helper(x):
            return helper(x)
        """
    )
    assert run(source, "DL123") == []
