"""Unit tests of DL122 rnn-module-in-compiled-region: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl122_recurrent_attributes_locals_and_constructions() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.lstm = torch.nn.LSTM(4, 4)
                self.gru = torch.nn.GRU(4, 4) if cfg.gru else torch.nn.RNN(4, 4)
                self.cell = torch.nn.LSTMCell(4, 4)
                self.proj = torch.nn.Linear(4, 4)

            def forward(self, x):
                a = self.lstm(x)
                b = self.gru(x)
                c = self.cell(x)
                d = self.proj(x)
                rnn = torch.nn.RNN(4, 4)
                e = rnn(x)
                f = torch.nn.GRU(4, 4)(x)
                return a, b, c, d, e, f

        net = torch.compile(Net(None))
        """
    )
    found = run(source, "DL122")
    assert where(found) == [
        ("DL122", 13, 13),
        ("DL122", 14, 13),
        ("DL122", 18, 13),
        ("DL122", 19, 13),
    ]
    assert all(f.severity is Severity.WARNING and "GB0014" in f.message for f in found)
    assert "`nn.GRU` / `nn.RNN`" in found[1].message


def test_dl122_is_an_error_under_fullgraph_and_silent_outside_regions() -> None:
    source = HEADER + textwrap.dedent(
        """\
        lstm = torch.nn.LSTM(4, 4)

        @torch.compile(fullgraph=True)
        def step(x):
            rnn = torch.nn.LSTM(4, 4)
            return rnn(x)

        def eager(x):
            rnn = torch.nn.LSTM(4, 4)
            return rnn(x)
        """
    )
    (finding,) = run(source, "DL122")
    assert finding.severity is Severity.ERROR and "fails on torch 2.13" in finding.message


def test_dl122_configured_or_mixed_values_are_left_alone() -> None:
    mixed = HEADER + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.core = torch.nn.LSTM(4, 4) if cfg.rnn else torch.nn.Identity()
                self.other = torch.nn.GRU(4, 4)

            def reset(self):
                self.other = make_other()

            def forward(self, x):
                return self.core(x), self.other(x)

        net = torch.compile(Net(None))
        """
    )
    assert run(mixed, "DL122") == []
    allowed = HEADER + textwrap.dedent(
        """\
        torch._dynamo.config.allow_rnn = True

        @torch.compile(fullgraph=True)
        def step(x):
            rnn = torch.nn.LSTM(4, 4)
            return rnn(x)
        """
    )
    assert run(allowed, "DL122") == []


def test_dl122_a_method_call_is_the_first_use_and_the_call_after_it_is_not_reached() -> None:
    source = HEADER + textwrap.dedent(
        """\
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = torch.nn.LSTM(4, 4)
                self.gru = torch.nn.GRU(4, 4)
                self.cell = torch.nn.LSTMCell(4, 4)

            def forward(self, x):
                self.lstm.flatten_parameters()
                self.cell.train()
                with torch.no_grad():
                    a = self.lstm(x)
                if x.shape[0] > 1:
                    self.gru.flatten_parameters()
                b = self.gru(x)
                return a, b

            def setup(self):
                self.lstm.flatten_parameters()

        net = torch.compile(Net())
        """
    )
    found = run(source, "DL122")
    assert where(found) == [("DL122", 12, 9), ("DL122", 17, 13), ("DL122", 18, 13)]
    assert "`self.lstm.flatten_parameters(...)` uses an `nn.LSTM`" in found[0].message
    assert "breaks at this first use of the module" in found[0].message
    assert "`self.gru(x)` runs an `nn.GRU`" in found[2].message
