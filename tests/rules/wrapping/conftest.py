"""Helpers shared by the DL301, DL302 and DL304 tests: a snippet with the DDP/FSDP imports."""

from __future__ import annotations

import textwrap

from distlint.findings import Finding
from tests.rules.conftest import findings

WRAP_HEADER = """\
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard
"""


def wrapping(body: str, *codes: str) -> list[Finding]:
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return findings(f"{WRAP_HEADER}\ndef main(net):\n{lines}\n", *codes)


WRAP_CODES = ("DL301", "DL302", "DL304")
