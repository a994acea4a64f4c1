"""Helpers of the DL5xx rule tests: findings for a project on one torch release
(``findings``, 2.13 by default: the proof tests' torch) or on a range (``range_findings``), and
the code blocks of the rule pages."""

from __future__ import annotations

import textwrap

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Finding


def findings(source: str, code: str, torch_version: str = "2.13") -> list[Finding]:
    """Findings for a project on exactly ``torch_version`` (2.13: the proof tests' torch)."""
    settings = FileSettings(
        enabled=frozenset({code}), torch_floor=torch_version, torch_ceiling=torch_version
    )
    result = check_file(FileSource(textwrap.dedent(source), "t.py"), settings)
    assert result.errors == ()
    return list(result.findings)


def where(found: list[Finding]) -> list[tuple[int, int]]:
    return [(f.span.start.line, f.span.start.column) for f in found]


def fixed(finding: Finding) -> list[str]:
    assert finding.fix is not None
    return [edit.content for edit in finding.fix.edits]


HEADER = """\
import functools
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def dl501(body: str) -> list[Finding]:
    return findings(HEADER + textwrap.dedent(body), "DL501")


def dl503(source: str) -> list[Finding]:
    return findings(source, "DL503")


def dl504(source: str, torch_version: str | None = None) -> list[Finding]:
    return findings(source, "DL504", torch_version)


def code_block(page: str, section: str) -> str:
    from distlint.output.docs import docs_dir, parse_doc

    doc = parse_doc((docs_dir() / page).read_text(encoding="utf-8"))
    text = doc.sections[section]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def dl505(source: str, module_name: str | None = None) -> list[Finding]:
    settings = FileSettings(enabled=frozenset({"DL505"}))
    result = check_file(FileSource(textwrap.dedent(source), "t.py", module_name), settings)
    assert result.errors == ()
    return list(result.findings)


def range_findings(
    source: str, code: str, lowest: str | None, highest: str | None = None
) -> list[Finding]:
    """Findings of ``code`` for a project whose torch range is ``lowest``..``highest`` (None:
    not known; judged on the newest shipped release, up to the newest)."""
    settings = FileSettings(enabled=frozenset({code}), torch_floor=lowest, torch_ceiling=highest)
    result = check_file(FileSource(textwrap.dedent(source), "t.py"), settings)
    assert result.errors == ()
    return [f for f in result.findings if f.code == code]


def only(found: list[Finding]) -> Finding:
    assert len(found) == 1, [f.message for f in found]
    return found[0]
