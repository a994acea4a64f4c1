"""DL126: ``F.one_hot(x)`` without ``num_classes`` inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl126.py, fixtures/DL126): the number of
classes is then read from the data, which Dynamo does not trace. ``one_hot(x)`` and
``one_hot(x, -1)`` stop at ``Attempted to use torch.nn.functional.one_hot with data-dependent
output shape`` (GB0246); ``one_hot(x, num_classes=-1)`` gets past that check and fails later,
``Could not extract specialized integer from data-dependent expression`` (GB0033). Either way
a graph break, and under ``fullgraph=True`` a compile error, whatever
``capture_dynamic_output_shape_ops`` or ``capture_scalar_outputs`` say.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules.base import in_region
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import literal_value
from distlint.semantic.regions_model import Region
from distlint.syntax.walker import keyword_arg

# torch.nn.functional.one_hot is the builtin torch._C._nn.one_hot (one object, two names)
ONE_HOT = frozenset({"torch.nn.functional.one_hot", "torch._C._nn.one_hot"})
_DATA_DEPENDENT = "Attempted to use `torch.nn.functional.one_hot` with data-dependent output shape"
_NO_INT = "Could not extract specialized integer from data-dependent expression"
_INSTEAD = (
    "Pass the number of classes as an int (`num_classes=cfg.num_classes`), which Dynamo "
    "traces, or compute the one-hot encoding outside the compiled function."
)


class OneHotWithoutNumClasses(_RegionRule):
    code = "DL126"
    name = "one-hot-without-num-classes"
    severity = Severity.WARNING
    summary = (
        "F.one_hot(x) without num_classes (or with -1) inside a compiled region: the output "
        "shape depends on the data, a graph break (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0033", "GB0246")

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self.active = "one_hot" in ctx.source

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        if self.ctx.resolve(node.func) not in ONE_HOT:
            return
        if not node.args or any(arg.star for arg in node.args):
            return  # nothing passed (a TypeError) or what is passed is not shown
        failure = _failure(node)
        if failure is None:
            return
        error, gb, text = failure
        spelled = self.spell(node)
        what = f"`{spelled}` leaves the number of classes to be read from the data"
        cited = f", {gb}" if error == "Unsupported" else ""  # a UserError names no GB id
        self.report_break(
            node,
            region,
            fullgraph=(
                f'{what}: under fullgraph=True this fails on torch 2.13 ({error}: "{text}"'
                f"{cited}). {_INSTEAD}"
            ),
            breaks=(
                f'{what}: on torch 2.13 the graph breaks at the call ({gb}, "{text}"), even '
                "with `capture_dynamic_output_shape_ops` or `capture_scalar_outputs`. "
                f"{_INSTEAD}"
            ),
            certain_only=True,
        )


def _failure(call: cst.Call) -> tuple[str, str, str] | None:
    """(exception, GB id, message) of a ``one_hot`` call that reads the number of classes from
    the data: Dynamo's check refuses one argument or a positional -1 (GB0246); a keyword -1
    passes it and fails when the size is needed (GB0033). None when a number is given."""
    keyword = keyword_arg(call, "num_classes")
    if keyword is not None:
        if literal_value(keyword.value) != -1:
            return None
        return ("UserError", "GB0033", _NO_INT)
    positional = [arg for arg in call.args if arg.keyword is None]
    if len(positional) >= 2 and literal_value(positional[1].value) != -1:
        return None
    return ("Unsupported", "GB0246", _DATA_DEPENDENT)
