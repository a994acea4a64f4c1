"""Unit tests of DL407 inplace-on-saved-output: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.conftest import where
from tests.rules.custom_ops.conftest import findings


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


def test_dl407_optional_input_paths_are_not_reported() -> None:
    """A write only on the path where an optional input (default None/False) is passed: the
    rule cannot tell whether a training call passes it (LMOps passes cached keys only when
    generating, under no_grad; four such warnings on our corpus were all wrong). On the
    always-run path it stays an error."""
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
    assert [(f.span.start.line, f.severity) for f in found] == [(17, Severity.ERROR)]


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


@pytest.mark.parametrize(
    "test, found",
    [
        ("not self.training", False),
        ("self.training is False", False),
        ("self.training == False", False),
        ("self.training is not True", False),
        ("x.dim() > 1 and self.training is False", False),
        ("self.training is True", True),
        ("self.training != False", True),
        ("self.training is False or x.dim() > 1", True),
    ],
)
def test_dl407_eval_only_tests_of_self_training(test: str, found: bool) -> None:
    """A write under a test that holds only in eval mode (``self.training is False``, as
    ``not self.training``) precedes no backward; one that training may take is reported."""
    source = f"""
        import torch
        import torch.nn as nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = nn.Linear(4, 4)

            def forward(self, x):
                y = torch.sigmoid(self.l1(x))
                if {test}:
                    y[..., 0] = y[..., 0] * 2
                return y
        """
    assert bool(findings(source, "DL407")) is found


def test_dl407_sequential_in_a_file_without_forward() -> None:
    """The rule is switched off only in a file spelling neither ``forward`` nor
    ``Sequential``: a module built from nn.Sequential alone is still checked."""
    source = """
    import torch.nn as nn

    head = nn.Sequential(nn.Sigmoid(), nn.ReLU(inplace=True))
    """
    assert [f.code for f in findings(source, "DL407")] == ["DL407"]


def test_dl406_dl407_in_a_forward_with_no_other_trace_of_torch_modules() -> None:
    """``forward`` is the word the rules need: spelled only by the def, it keeps them on."""
    source = """
    import torch

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))

        def forward(self, x):
            self.w.add_(1)
            y = torch.sigmoid(self.w * 2)
            y.mul_(2)
            return y
    """
    assert sorted(f.code for f in findings(source, "DL406", "DL407")) == ["DL406", "DL407"]
