"""Unit tests of DL106 train-step-in-compiled-region: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.findings import Severity
from tests.rules.compile.conftest import DL101_TO_DL110, HEADER, compiled
from tests.rules.conftest import run, where


def test_dl106_train_step() -> None:
    source = HEADER + (
        "model = torch.nn.Linear(4, 1)\n"
        "sgd = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "@torch.compile(fullgraph=True)\n"
        "def step(x):\n"
        "    sgd.zero_grad()\n"
        "    loss = model(x).sum()\n"
        "    loss.backward()\n"
        "    sgd.step()\n"
        "    self.optimizer.step()\n"
        "    return loss\n"
    )
    found = run(source, *DL101_TO_DL110)
    assert where(found) == [
        ("DL106", 8, 5),
        ("DL106", 10, 5),
        ("DL106", 11, 5),
        ("DL106", 12, 5),
    ]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB0008" in found[0].message
    assert "GB0123" in found[1].message
    assert "GB0025" in found[2].message


def test_dl106_traps() -> None:
    source = HEADER + (
        "@torch.compile\ndef f(x, counter, scheduler_like):\n"
        "    counter.step()\n    return x\n"
        "def train(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n"
    )
    assert run(source, *DL101_TO_DL110) == []


def test_the_file_is_walked_for_optimizer_names_only_when_a_name_needs_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``optimizer.step()`` says what it is by its name; only an unhinted receiver
    (``trainer.step()``) needs the file's ``torch.optim.X(...)`` assignments, a walk of it."""
    from distlint.rules.compile import train_step_in_compiled_region as rule

    walks: list[str] = []
    real = rule._optimizer_names

    def noting(ctx):  # type: ignore[no-untyped-def]
        walks.append(ctx.path)
        return real(ctx)

    monkeypatch.setattr(rule, "_optimizer_names", noting)
    assert [f.code for f in run(compiled("optimizer.step()\nreturn x\n"), "DL106")] == ["DL106"]
    assert walks == []
    source = compiled("trainer.step()\nreturn x\n").replace(
        HEADER, HEADER + "trainer = torch.optim.SGD([], lr=0.1)\n\n"
    )
    assert [f.code for f in run(source, "DL106")] == ["DL106"]
    assert len(walks) == 1
