"""Helpers shared by the DL4xx rule tests: file rules through ``check_file`` (as module ``t``),
project rules over several modules at once (every file's first pass, linked summaries, then
the rule's ``check_project``), and the modules they share.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distlint.engine.checker import FileSource, analyze_file, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Finding
from distlint.rules.project import FileRecords, Project
from distlint.rules.registry import get_rule
from distlint.semantic.link import link

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def findings(source: str, *codes: str) -> list[Finding]:
    settings = FileSettings(enabled=frozenset(codes))
    result = check_file(FileSource(textwrap.dedent(source), "t.py", "t"), settings)
    assert result.errors == ()
    return list(result.findings)


def project(
    sources: dict[str, str],
    *codes: str,
    native: tuple[tuple[str, str], ...] = (),
    measured: dict | None = None,
) -> list[Finding]:
    """Findings of project rules over several modules (path "pkg/a.py" is module "pkg.a");
    ``measured`` receives what the rules measured (by path: lazily located keys)."""
    settings = FileSettings(enabled=frozenset(codes))
    texts = {path: textwrap.dedent(text) for path, text in sources.items()}
    results = [
        analyze_file(FileSource(text, path, path[:-3].replace("/", ".")), settings)
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
    if measured is not None:
        measured.update(facts.measured)
    return sorted(found, key=lambda f: f.sort_key)


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
