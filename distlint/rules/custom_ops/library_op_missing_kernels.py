"""DL404 library-op-missing-kernels: see its docs page, docs/rules/DL404.md."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity

if TYPE_CHECKING:
    from distlint.rules.project import Project
from distlint.rules.custom_ops._custom_ops import (
    OpRecord,
    _candidate_ops,
    _OpFacts,
    _OpIndex,
    native_kernels,
    scan_native_sources,
)


def _missing_kernels(
    index: _OpIndex, op: OpRecord, native: dict[str, set[str]]
) -> tuple[bool, bool]:
    """(no fake/Meta kernel, no Autograd kernel though a backward runs through it) of a
    ``Library.define`` op (DL404). The Autograd half needs a call in a module's forward with
    grad on: ops only called inside an autograd.Function, in export or inference code, or by
    other packages are left alone."""
    if op.kind != "define" or op.tensor_free:
        return False, False
    missing_fake = not index.has_fake(op, native)
    missing_autograd = (
        not op.no_outputs
        and not index.has_autograd(op, native)
        and any(use.training for _, use in index.uses_of(op))
    )
    return missing_fake, missing_autograd


class LibraryOpMissingKernels(_OpFacts):
    code = "DL404"
    name = "library-op-missing-kernels"
    severity = Severity.WARNING
    summary = "An op defined with torch.library.Library/define lacks a fake or Autograd kernel."
    tags = ("correctness", "torch.compile", "autograd", "custom-ops")
    precision = "medium"
    graph_breaks = ("GB0090",)

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        native = native_kernels(scan_native_sources(project))
        index, candidates = _candidate_ops(
            project, cls.code, lambda index, op: any(_missing_kernels(index, op, native))
        )
        for path, op, span in candidates:
            missing_fake, missing_autograd = _missing_kernels(index, op, native)
            problems = []
            if missing_fake:
                problems.append(
                    "no fake/Meta kernel: `torch.compile` breaks the graph at each call "
                    "(`Operator does not support running with fake tensors`, GB0090) and "
                    "`fullgraph=True` fails"
                )
            if missing_autograd:
                problems.append(
                    "no Autograd kernel: backward warns `an autograd kernel was not registered "
                    "to the Autograd key(s) but we are trying to backprop through it` and, with "
                    "an opaque kernel, gradients are silently `None`"
                )
            fixes = []
            if missing_fake:
                fixes.append(f'`torch.library.register_fake("{op.qualname}")`')
            if missing_autograd:
                fixes.append(f'`torch.library.register_autograd("{op.qualname}", ...)`')
            yield project.finding(
                cls,
                path,
                span,
                f"Operator `{op.qualname}` has "
                + "; and ".join(problems)
                + ". Register "
                + " and ".join(fixes)
                + " (or use `torch.library.custom_op`).",
            )
