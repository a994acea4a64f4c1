"""Helpers shared by the DL1xx rule tests: compiled-function snippets and the codes enabled
together.
"""

from __future__ import annotations

import textwrap

# The codes a DL101-DL106/DL110 test enables unless it names its own: the others stay silent.
DL101_TO_DL110 = frozenset({f"DL{n}" for n in range(101, 111)})
# Likewise for DL107-DL109 (the rules that follow the script flow) and DL105's FSDP2 case.
FLOW_CODES = frozenset({"DL105", "DL107", "DL108", "DL109"})
HEADER = "import torch\nimport torch._dynamo\n\n"


def compiled(body: str, *, fullgraph: bool = False, params: str = "x: torch.Tensor") -> str:
    """A decorated compiled function (line 4 is the decorator, line 6 its first body line)."""
    options = "(fullgraph=True)" if fullgraph else ""
    return (
        HEADER
        + f"@torch.compile{options}\ndef f({params}):\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
    )
