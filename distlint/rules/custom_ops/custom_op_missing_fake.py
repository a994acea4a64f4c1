"""DL401 custom-op-missing-fake: see its docs page, docs/rules/DL401.md."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from distlint.findings import Finding, Location, Severity

if TYPE_CHECKING:
    from distlint.rules.project import Project
from distlint.rules.custom_ops._custom_ops import (
    OpRecord,
    _candidate_ops,
    _OpFacts,
    _OpIndex,
    _region_of,
    _span,
    _where,
)


def _lacks_fake(index: _OpIndex, op: OpRecord) -> bool:
    """A ``custom_op`` with no fake registered anywhere (DL401's candidates)."""
    return op.kind == "custom_op" and not index.has_fake(op)


def _compiled(project: Project, use: OpRecord) -> bool:
    """A use DL401 shows: one in a compiled region."""
    return _region_of(project, use)[0]


class CustomOpMissingFake(_OpFacts):
    code = "DL401"
    name = "custom-op-missing-fake"
    severity = Severity.WARNING
    summary = "A torch.library.custom_op has no register_fake: torch.compile fails on it."
    tags = ("correctness", "torch.compile", "custom-ops")
    precision = "high"
    graph_breaks = ("GB4315",)

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        index, candidates = _candidate_ops(project, cls.code, _lacks_fake, _compiled)
        for path, op, span in candidates:
            if op.mutates and (op.returns_none or op.inplace_or_out):
                continue  # torch generates the fake of a mutation-only, in-place or out= op
            compiled_uses = []
            related: list[Location] = []
            for use_path, use in index.uses_of(op):
                compiled, _, roots = _region_of(project, use)
                use_span = _span(project, use) if compiled else None
                if use_span is not None:
                    compiled_uses.append((use_path, use))
                    related.append(Location(use_path, use_span, "called in a compiled region"))
                    related.extend(roots)
            shown = op.shown or op.qualname
            message = (
                f"Custom op `{op.qualname}` has no fake implementation anywhere in the project: "
                "`torch.compile` fails on its first call with `TorchRuntimeError: RuntimeError "
                f"when making fake tensor call` (`There was no fake impl registered for "
                f"<CustomOpDef({op.qualname})>`), a hard error, not a graph break (GB4315). "
                f"Add one with `@{shown}.register_fake`."
            )
            if compiled_uses:
                use_path, use = compiled_uses[0]
                message += (
                    f" It is called in a compiled region at {_where(project, use_path, use)}."
                )
            yield project.finding(
                cls,
                path,
                span,
                message,
                severity=Severity.ERROR if compiled_uses else None,
                related=tuple(dict.fromkeys(related))[:6],
            )
