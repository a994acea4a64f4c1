"""Unit tests of DL210 distributed-sampler-without-set-epoch: what it reports, where, and what it
leaves alone.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Finding, Severity
from distlint.rules.registry import get_rule
from tests.rules.conftest import findings, where

PRELUDE = (
    "import torch.utils.data as tud\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "from tqdm import tqdm\n"
)


def dl210(body: str) -> list[Finding]:
    return findings(PRELUDE + textwrap.dedent(body), "DL210")


LOOP = """\
    for epoch in range(epochs):
        for batch in loader:
            step(batch)
"""


def train(setup: str, loop: str = LOOP) -> str:
    return "def train(ds, epochs):\n" + textwrap.indent(setup, "    ") + loop


def test_dl210_reports_the_sampler_call_with_the_epoch_loop() -> None:
    found = dl210(
        train("sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n")
    )
    assert where(found) == [("DL210", 5, 15)]
    finding = found[0]
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        "`sampler` is a `DistributedSampler` that shuffles (shuffle=True by default), and "
        "`loader` is iterated inside an outer loop, but nothing in this file calls `set_epoch`"
    )
    assert finding.message.endswith("Call `sampler.set_epoch(epoch)` at the start of each epoch.")
    assert [(r.span.start.line, r.span.start.column, r.message) for r in finding.related] == [
        (7, 5, "the epoch loop")
    ]


@pytest.mark.parametrize(
    ("setup", "loop", "shown"),
    [
        (  # the other import path, shuffle=True spelled out
            "from torch.utils.data.distributed import DistributedSampler as DS\n"
            "sampler = DS(ds, shuffle=True)\nloader = DataLoader(ds, sampler=sampler)\n",
            LOOP,
            "sampler",
        ),
        (  # built inside the loader: named through it
            "loader = tud.DataLoader(ds, batch_size=2, sampler=tud.DistributedSampler(ds))\n",
            LOOP,
            "loader.sampler",
        ),
        (  # None when not distributed; harmless reads of the loader
            "sampler = DistributedSampler(ds) if dist else None\n"
            "loader = DataLoader(ds, sampler=sampler, shuffle=sampler is None)\n"
            "print(len(loader), len(loader.dataset), loader.batch_size)\n",
            LOOP,
            "sampler",
        ),
        (  # a while loop of epochs, enumerate(tqdm(...)) inside
            "sampler: DistributedSampler = DistributedSampler(ds)\n"
            "loader = DataLoader(ds, sampler=sampler)\nepoch = 0\n",
            "    while epoch < epochs:\n"
            "        for i, batch in enumerate(tqdm(loader, total=len(loader))):\n"
            "            step(batch)\n"
            "        epoch += 1\n",
            "sampler",
        ),
        (  # the sampler itself iterated
            "sampler = DistributedSampler(ds, 2, 0, True)\n",
            "    for epoch in range(3):\n"
            "        for index in iter(sampler):\n"
            "            step(index)\n",
            "sampler",
        ),
    ],
)
def test_dl210_reports(setup: str, loop: str, shown: str) -> None:
    found = dl210(train(setup, loop))
    assert len(found) == 1, found
    assert found[0].message.startswith(f"`{shown}` is a `DistributedSampler`")
    assert f"Call `{shown}.set_epoch(epoch)`" in found[0].message


def test_dl210_at_module_level() -> None:
    source = (
        "ds = list(range(8))\nsampler = DistributedSampler(ds)\n"
        "loader = DataLoader(ds, sampler=sampler)\n"
        "for epoch in range(10):\n    for batch in loader:\n        print(batch)\n"
    )
    assert where(dl210(source)) == [("DL210", 5, 11)]


SILENT_SETUPS = [
    # no shuffle, or a shuffle the rule cannot read
    "sampler = DistributedSampler(ds, shuffle=False)\nloader = DataLoader(ds, sampler=sampler)\n",
    "sampler = DistributedSampler(ds, shuffle=cfg.shuffle)\n"
    "loader = DataLoader(ds, sampler=sampler)\n",
    "sampler = DistributedSampler(ds, 2, 0, False)\nloader = DataLoader(ds, sampler=sampler)\n",
    "sampler = DistributedSampler(ds, **kw)\nloader = DataLoader(ds, sampler=sampler)\n",
    # handed to code that may advance the epoch
    "loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
    "loader = accelerator.prepare(loader)\n",
    "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
    "trainer = Trainer(train_dataloader=loader)\n",
    "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
    "register(sampler)\n",
    "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
    "hooks = [lambda e: loader.sampler]\n",
    "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
    "self.loader = loader\n",
    # kept somewhere the rule does not follow
    "self.sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=self.sampler)\n",
    "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
    "loader = other_loader\n",
    "sampler = DistributedSampler(ds)\nloaders = [DataLoader(ds, sampler=sampler)]\n"
    "loader = loaders[0]\n",
    "sampler = DistributedSampler(ds)\nloader = MyLoader(ds, sampler=sampler)\n",
    # another sampler class
    "loader = DataLoader(ds, sampler=MyDistributedSampler(ds))\n",
]


@pytest.mark.parametrize("setup", SILENT_SETUPS)
def test_dl210_silent_setups(setup: str) -> None:
    assert dl210(train(setup)) == []


SAMPLER = "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"


@pytest.mark.parametrize(
    "loop",
    [
        # at most one pass by construction
        "    for epoch in range(1):\n        for batch in loader:\n            step(batch)\n",
        "    for epoch in [0]:\n        for batch in loader:\n            step(batch)\n",
        "    while False:\n        for batch in loader:\n            step(batch)\n",
        # one pass, no loop around it
        "    for batch in loader:\n        step(batch)\n",
        # the loader returned to the caller (who may advance the epoch)
        "    return loader\n",
        # iterated in a comprehension the rule does not follow
        "    for epoch in range(epochs):\n        step([b for b in loader])\n",
    ],
)
def test_dl210_silent_loops(loop: str) -> None:
    assert dl210(train(SAMPLER, loop)) == []


def test_dl210_fresh_sampler_inside_the_outer_loop_is_silent() -> None:
    loop = (
        "    for part in parts:\n"
        "        sampler = DistributedSampler(part)\n"
        "        loader = DataLoader(part, sampler=sampler)\n"
        "        for batch in loader:\n"
        "            step(batch)\n"
    )
    assert dl210(train("", loop)) == []


@pytest.mark.parametrize(
    "elsewhere",
    [
        "loader.sampler.set_epoch(epoch)",
        "train_sampler.set_epoch(epoch)",
        "set_epoch(something, epoch)",
        "if hasattr(loader.sampler, 'set_epoch'): pass",
    ],
)
def test_dl210_any_set_epoch_in_the_file_silences_it(elsewhere: str) -> None:
    source = train(SAMPLER) + f"\ndef other(loader, epoch):\n    {elsewhere}\n"
    assert dl210(source) == []


def test_dl210_metadata() -> None:
    rule = get_rule("DL210")
    assert rule is not None and rule.default_enabled
    assert rule.severity is Severity.WARNING
    assert rule.name == "distributed-sampler-without-set-epoch"
