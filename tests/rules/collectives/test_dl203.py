"""Unit tests of DL203 object-collective-in-compiled-region: what it reports, where, and what it
leaves alone.

The proof tests (tests/proof/test_proof_dl203.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import pytest

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from distlint.rules.registry import get_rule
from tests.rules.conftest import check, positions

DL203_ONLY = FileSettings(enabled=frozenset({"DL203"}))


def dl203(source: str, settings: FileSettings = DL203_ONLY) -> list[Finding]:
    return check(source, settings)


HEADER = """\
import datetime
import torch
import torch.distributed as dist
"""


def test_metadata() -> None:
    dl203_rule, dl502_rule = get_rule("DL203"), get_rule("DL502")
    assert dl203_rule is not None and dl502_rule is not None
    assert dl203_rule.severity is Severity.ERROR and dl203_rule.default_enabled
    assert dl502_rule.severity is Severity.ERROR and dl502_rule.default_enabled
    assert dl203_rule.fix_availability.value == "none"
    assert dl502_rule.fix_availability.value == "sometimes"


@pytest.mark.parametrize(
    "call",
    [
        "dist.all_gather_object(out, obj)",
        "dist.broadcast_object_list(objs, src=0)",
        "dist.gather_object(obj, out, dst=0)",
        "dist.scatter_object_list(out, objs, src=0)",
        "dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))",
        "torch.distributed.all_gather_object(out, obj)",
        "torch.distributed.distributed_c10d.broadcast_object_list(objs)",
    ],
)
def test_dl203_reports_each_object_collective(call: str) -> None:
    source = HEADER + f"\n@torch.compile\ndef step(x, out, obj, objs):\n    {call}\n    return x\n"
    found = dl203(source)
    assert positions(found) == [(7, 5)]
    (finding,) = found
    assert finding.code == "DL203"
    assert finding.name == "object-collective-in-compiled-region"
    assert finding.severity is Severity.ERROR
    assert finding.fix is None
    callee = call.split("(", 1)[0]
    assert finding.message.startswith(f"`{callee}` inside a compiled region")
    # The span is the whole call.
    assert finding.span.end.column == 5 + len(call)


def test_dl203_message_says_what_happens_and_what_to_do() -> None:
    (finding,) = dl203(
        HEADER + "@torch.compile(backend='eager')\ndef step(x):\n"
        "    dist.all_gather_object([None], 1)\n    return x\n"
    )
    message = finding.message
    assert "crashes compilation" in message
    assert "with or without fullgraph=True" in message
    assert "InternalTorchDynamoError" in message
    assert "GB2078" in message
    assert "outside the compiled function" in message
    assert "all_gather_single" in message


def test_dl203_related_location_is_the_compile_decorator() -> None:
    source = """\
    import torch
    import torch.distributed as dist


    def log_calls(fn):
        return fn


    class Trainer:
        # the hot loop
        @log_calls
        @torch.compile(fullgraph=True)
        def step(self, x):
            dist.broadcast_object_list([x.shape], src=0)
            return x
    """
    (finding,) = dl203(source)
    assert positions([finding]) == [(14, 9)]
    (related,) = finding.related
    assert related.message == "compiled (fullgraph=True)"
    assert related.path == "t.py"
    assert (related.span.start.line, related.span.start.column) == (12, 5)
    assert related.span.end.line == 12


@pytest.mark.parametrize(
    "imports, call",
    [
        ("from torch.distributed import all_gather_object", "all_gather_object([None], 1)"),
        (
            "from torch.distributed import gather_object as collect",
            "collect(1, [None], dst=0)",
        ),
        ("import torch.distributed.distributed_c10d as c10d", "c10d.scatter_object_list([], [])"),
        ("from torch import distributed", "distributed.monitored_barrier()"),
        (
            "import torch.distributed as dist\nshare = dist.broadcast_object_list",
            "share([1], src=0)",
        ),
    ],
)
def test_dl203_resolves_import_spellings(imports: str, call: str) -> None:
    source = f"import torch\n{imports}\n\n@torch.compile\ndef step(x):\n    {call}\n    return x\n"
    assert [f.code for f in dl203(source)] == ["DL203"]


def test_dl203_configured_compile_wrapper_is_a_region() -> None:
    source = """\
    import torch.distributed as dist
    from myproject.jit import fast_compile


    @fast_compile
    def step(x):
        dist.all_gather_object([None], 1)
        return x
    """
    assert dl203(source) == []
    settings = FileSettings(
        enabled=frozenset({"DL203"}), compile_wrappers=("myproject.jit.fast_compile",)
    )
    assert positions(dl203(source, settings)) == [(7, 5)]


@pytest.mark.parametrize(
    "source",
    [
        # eager code
        HEADER + "def sync(obj):\n    dist.all_gather_object([None], obj)\n",
        # a name that mentions compile
        HEADER + "def compile_metrics(obj):\n    dist.gather_object(obj, [None], dst=0)\n",
        # traceable tensor collectives
        HEADER + "@torch.compile\ndef step(x):\n    dist.all_reduce(x)\n"
        "    out = torch.empty(2)\n    dist.all_gather_into_tensor(out, x)\n    return out\n",
        # a project function with the torch name
        HEADER + "def all_gather_object(items):\n    return items\n\n"
        "@torch.compile\ndef step(x):\n    all_gather_object([x])\n    return x\n",
        # a parameter that shadows the import
        HEADER + "@torch.compile\ndef step(x, dist):\n    dist.all_gather_object([None], 1)\n",
        # the collective lives in a disabled helper
        HEADER + "@torch.compiler.disable\ndef sync():\n    dist.monitored_barrier()\n\n"
        "@torch.compile\ndef step(x):\n    sync()\n    return x\n",
        # re.compile is not torch.compile
        HEADER + "import re\n@re.compile\ndef step(x):\n    dist.all_gather_object([None], 1)\n",
    ],
    ids=[
        "eager",
        "named-compile",
        "traceable",
        "local-name",
        "shadowing-param",
        "disabled-helper",
        "not-torch-compile",
    ],
)
def test_dl203_stays_silent(source: str) -> None:
    assert dl203(source) == []


def test_dl203_follows_the_region_into_callees_and_every_root_form() -> None:
    source = """\
    import torch
    import torch.distributed as dist
    import torch.nn as nn


    def share(v):
        dist.broadcast_object_list([v], src=0)


    @torch.compile
    def step(x):
        def nested(v):
            dist.all_gather_object([None], v)

        nested(1)
        share(2)
        return x


    class Net(nn.Module):
        def forward(self, x):
            dist.gather_object(x, [None], dst=0)
            return x


    def plain(x):
        dist.monitored_barrier()
        return x


    model = torch.compile(Net())
    fast = torch.compile(plain)
    """
    findings = dl203(source)
    assert positions(findings) == [(7, 5), (13, 9), (22, 9), (27, 5)]
    labels = {
        f.span.start.line: [(r.message, r.span.start.line) for r in f.related] for f in findings
    }
    assert labels == {
        7: [("compiled", 10)],
        13: [("compiled", 10)],
        22: [("compiled", 31)],
        27: [("compiled", 32)],
    }


def test_dl203_off_when_not_enabled() -> None:
    source = HEADER + "@torch.compile\ndef step(x):\n    dist.all_gather_object([None], 1)\n"
    assert check(source, FileSettings(enabled=frozenset({"DL502"}))) == []


def test_dl203_inline_suppression_covers_a_multiline_call() -> None:
    source = HEADER + (
        "@torch.compile\ndef step(x):\n    dist.all_gather_object(\n        [None],\n"
        "        1,  # noqa: DL203\n    )\n    return x\n"
    )
    result = check_file(FileSource(source, "t.py"), DL203_ONLY)
    assert result.findings == ()
    assert result.suppressed == 1
