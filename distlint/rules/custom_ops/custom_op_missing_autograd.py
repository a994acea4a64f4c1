"""DL402 custom-op-missing-autograd: see its docs page, docs/rules/DL402.md."""

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
    _span,
    _where,
)


def _lacks_autograd(index: _OpIndex, op: OpRecord) -> bool:
    """A ``custom_op`` with outputs, no autograd formula, called in training (DL402's)."""
    return (
        op.kind == "custom_op"
        and not op.returns_none
        and not index.has_autograd(op)
        and any(use.training for _, use in index.uses_of(op))
    )


class CustomOpMissingAutograd(_OpFacts):
    code = "DL402"
    name = "custom-op-missing-autograd"
    severity = Severity.WARNING
    summary = "A custom_op called in a module's forward has no register_autograd."
    tags = ("correctness", "autograd", "custom-ops")
    precision = "medium"

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        index, candidates = _candidate_ops(
            project, cls.code, _lacks_autograd, lambda project, use: use.training
        )
        for path, op, span in candidates:
            training = [(p, u) for p, u in index.uses_of(op) if u.training and _span(project, u)]
            if not training:
                continue
            use_path, use = training[0]
            assert op.qualname is not None  # a custom_op or define record always names its op
            shown = op.shown or op.qualname
            yield project.finding(
                cls,
                path,
                span,
                f"Custom op `{op.qualname}` has no autograd formula but is called in a module's "
                f"`forward` ({_where(project, use_path, use)}): `backward()` raises `RuntimeError: "
                f"Trying to backward through {op.qualname.replace('::', '.')}.default but no "
                "autograd formula was "
                "registered. Please use register_autograd to add one.` (under `torch.compile`, "
                f"at the first compiled call). Add `{shown}.register_autograd(backward, "
                "setup_context=...)`.",
                related=tuple(
                    Location(p, use_span, "called in forward")
                    for p, u in training[:5]
                    if (use_span := _span(project, u)) is not None  # kept above: always
                ),
            )
