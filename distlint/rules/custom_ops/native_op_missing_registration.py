"""DL408 native-op-missing-registration: see its docs page, docs/rules/DL408.md."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from distlint.findings import Finding, Severity, Span, make_position

if TYPE_CHECKING:
    from distlint.rules.project import Project
from distlint.rules.custom_ops._custom_ops import (
    AUTOGRAD_KEYS,
    FAKE_KEYS,
    _OpFacts,
    _OpIndex,
    native_kernels,
    scan_native_sources,
)


class NativeOpMissingRegistration(_OpFacts):
    code = "DL408"
    name = "native-op-missing-registration"
    severity = Severity.WARNING
    summary = "A C++ TORCH_LIBRARY op has no Autograd and no Meta/fake kernel anywhere."
    tags = ("correctness", "torch.compile", "autograd", "custom-ops")
    precision = "medium"
    graph_breaks = ("GB0090",)

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        if not project.native_sources:
            return
        index = _OpIndex.build(project.records(cls.code))
        scanned = scan_native_sources(project)
        native = native_kernels(scanned)
        wildcard: dict[str, set[str]] = defaultdict(set)  # op name -> keys (unknown namespace)
        for _, _, entries in scanned:
            for entry in entries:
                if entry.kernel_key is not None and entry.namespace_is_macro:
                    wildcard[entry.name].add(entry.kernel_key)
        python_fake = {q for q in index.fake if "::" in q}
        python_autograd = {q for q in index.autograd if "::" in q}
        for q, keys in index.kernels.items():
            if "::" in q:
                if keys & FAKE_KEYS:
                    python_fake.add(q)
                if keys & AUTOGRAD_KEYS:
                    python_autograd.add(q)
        for path, text, entries in scanned:
            lines = re.split(r"\r\n|\r|\n", text)
            for entry in entries:
                if entry.kind != "def" or entry.kernel_key is not None:
                    continue
                qualname = f"{entry.namespace}::{entry.name}"
                keys = native.get(qualname, set()) | wildcard.get(entry.name, set())
                if entry.namespace_is_macro:
                    keys |= {
                        k
                        for q, ks in native.items()
                        if q.split("::", 1)[1] == entry.name
                        for k in ks
                    }
                    fake = any(q.split("::", 1)[1] == entry.name for q in python_fake)
                    autograd = any(q.split("::", 1)[1] == entry.name for q in python_autograd)
                else:
                    fake = qualname in python_fake
                    autograd = qualname in python_autograd
                fake = fake or bool(keys & FAKE_KEYS)
                autograd = autograd or bool(keys & AUTOGRAD_KEYS)
                if fake or autograd:
                    continue
                start = make_position(lines, entry.line, entry.column)
                end = make_position(lines, entry.line, entry.end_column)
                yield project.finding(
                    cls,
                    path,
                    Span(start, end),
                    f"Operator `{qualname}` is defined in C++ with no Autograd and no Meta/fake "
                    "kernel anywhere in the project: `torch.compile` breaks the graph at each "
                    "call (`Operator does not support running with fake tensors`, GB0090; "
                    "`fullgraph=True` fails), and backward through it warns `an autograd kernel "
                    "was not registered to the Autograd key(s)` (gradients can be silently "
                    f"wrong). Add `TORCH_LIBRARY_IMPL({entry.namespace}, Meta, m)` (or "
                    f'`torch.library.register_fake("{qualname}")`) and an Autograd kernel.',
                )
