"""Helpers shared by the DL6xx rule tests: a capture snippet, finding lines, project checks."""

from __future__ import annotations

from distlint.findings import Finding


def lines(found: list[Finding]) -> list[int]:
    return [f.span.start.line for f in found]


CAPTURE = """\
import torch
import torch.distributed as dist

g = torch.cuda.CUDAGraph()
x = torch.ones(4, device="cuda")
"""


def project_findings(tmp_path, files: dict[str, str]) -> list[tuple[str, str, int, str]]:
    """(path, code, line, first related location) of DL601/DL602 in a small project."""
    from tests.project_util import check_sources

    results = check_sources(tmp_path, files, enabled=("DL601", "DL602"))
    found = []
    for path, result in sorted(results.items()):
        assert result.errors == (), result.errors
        for f in result.findings:
            where = f"{f.related[0].path}:{f.related[0].span.start.line}" if f.related else ""
            found.append((path, f.code, f.span.start.line, where))
    return sorted(found)
