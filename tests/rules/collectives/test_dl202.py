"""Unit tests of DL202 untraceable-collective: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl202.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from distlint.findings import Severity
from distlint.rules.registry import get_rule
from tests.rules.conftest import findings, rank_labels, where

HEADER = "import torch\nimport torch.distributed as dist\n"


def compiled(body: str, decorator: str = "@torch.compile") -> str:
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return f"{HEADER}\n{decorator}\ndef step(x, out, xs):\n{lines}\n    return x\n"


@pytest.mark.parametrize(
    "call, gb",
    [
        ("dist.broadcast(x, src=0)", "GB0007"),
        ("dist.barrier()", "GB0007"),
        ("dist.reduce(x, dst=0)", "GB0007"),
        ("dist.reduce_scatter(out, xs)", "GB0007"),
        ("dist.gather(x, xs, dst=0)", "GB0007"),
        ("dist.scatter(out, xs, src=0)", "GB0007"),
        ("dist.all_to_all(xs, xs)", "GB0007"),
        ("dist.new_group([0, 1])", "GB0007"),
        ("dist.send(x, dst=1)", "GB2696"),
        ("dist.recv(x, src=0)", "GB2696"),
        ("dist.isend(x, dst=1)", "GB2696"),
        ("dist.irecv(x, src=0)", "GB2696"),
        ("dist.P2POp(dist.isend, x, 1)", "GB1750"),
        ("dist.batch_isend_irecv(xs)", "GB9300"),
        ("dist.all_reduce(x, async_op=True)", "GB0172"),
        ("dist.all_gather(xs, x, None, True)", "GB0172"),
        ("dist.all_gather_into_tensor(out, x, async_op=True)", "GB0172"),
        ("dist.reduce_scatter_tensor(out, x, dist.ReduceOp.SUM, None, True)", "GB0172"),
        ("dist.all_to_all_single(out, x, async_op=True)", "GB0172"),
    ],
)
def test_dl202_reports_untraceable_collectives(call: str, gb: str) -> None:
    (finding,) = findings(compiled(call), "DL202")
    assert where([finding]) == [("DL202", 6, 5)]
    assert finding.severity is Severity.WARNING
    assert re.search(rf"[(, ]{gb}\)", finding.message), finding.message
    assert "breaks the graph of the compiled region" in finding.message
    assert "torch 2.13" in finding.message
    assert [(loc.path, loc.span.start.line) for loc in finding.related] == [("t.py", 4)]
    assert finding.related[0].message.startswith("compiled")


def test_dl202_is_an_error_under_fullgraph() -> None:
    source = compiled("dist.broadcast(x, src=0)", "@torch.compile(fullgraph=True)")
    (finding,) = findings(source, "DL202")
    assert finding.severity is Severity.ERROR
    assert finding.message.startswith(
        "`dist.broadcast` makes the fullgraph=True compile fail (`Unsupported`)"
    )
    assert "Use `funcol.broadcast(t, src, group)`" in finding.message
    assert [(loc.path, loc.span.start.line) for loc in finding.related] == [("t.py", 4)]
    assert "fullgraph=True" in finding.related[0].message


def test_dl202_messages() -> None:
    source = compiled(
        """
        dist.send(x, dst=1)
        dist.all_reduce(x, async_op=True)
        dist.barrier()
        """
    )
    send, async_reduce, barrier = findings(source, "DL202")
    assert send.message == (
        "`dist.send` breaks the graph of the compiled region: torch 2.13 does not compile "
        "point-to-point ops (`P2P compilation disabled for isend/irecv`, GB2696). Call it "
        "outside the compiled function."
    )
    assert async_reduce.message == (
        "`dist.all_reduce(..., async_op=True)` breaks the graph of the compiled region: torch "
        "2.13 does not trace `async_op=True for distributed collectives` (GB0172). Drop "
        "`async_op=True`: the synchronous `dist.all_reduce` traces."
    )
    assert barrier.message == (
        "`dist.barrier` breaks the graph of the compiled region: Dynamo does not trace "
        "`barrier` on torch 2.13 (GB0007). Call it outside the compiled function."
    )


def test_dl202_a_batch_and_each_p2p_op_built_in_it() -> None:
    source = compiled(
        """
        ops = [dist.P2POp(dist.isend, x, 1), dist.P2POp(dist.irecv, out, 1)]
        works = dist.batch_isend_irecv(ops)
        """,
        "@torch.compile(fullgraph=True)",
    )
    found = findings(source, "DL202")
    assert where(found) == [("DL202", 6, 12), ("DL202", 6, 42), ("DL202", 7, 13)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert found[0].message == (
        "`dist.P2POp(...)` makes the fullgraph=True compile fail (`Unsupported`): torch 2.13 "
        "does not compile point-to-point ops, not even the construction of a `P2POp` (`P2P "
        "compilation disabled for P2POp construction`, GB1750). Build the ops and call "
        "`batch_isend_irecv` outside the compiled function."
    )
    assert "`P2P compilation disabled for batch_isend_irecv`, GB9300" in found[2].message


def test_p2p_op_is_no_collective_for_the_loop_and_rank_analyses() -> None:
    """``P2POp`` is a class: DL202 alone reports building one. DL105 counts the breaks of the
    collectives table, DL201 the semantic collectives: neither holds it."""
    looped = "for peer in range(2):\n    {}"
    built = compiled(looped.format("op = dist.P2POp(dist.isend, x, peer)"))
    assert [f.code for f in findings(built, "DL105", "DL202")] == ["DL202"]
    sent = compiled(looped.format("dist.isend(x, peer)"))
    assert sorted(f.code for f in findings(sent, "DL105", "DL202")) == ["DL105", "DL202"]
    divergent = f"{HEADER}\ndef exchange(x):\n    if dist.get_rank() == 0:\n        {{}}\n"
    built = divergent.format("op = dist.P2POp(dist.isend, x, 1)")
    assert rank_labels(built) == []  # neither proven nor possible
    assert rank_labels(divergent.format("dist.barrier()")) != []


def test_dl202_spellings() -> None:
    source = (
        "import torch\nimport torch.distributed.distributed_c10d\n"
        "from torch.distributed import broadcast as bc, irecv\n\n"
        "@torch.compile\ndef step(x):\n"
        "    torch.distributed.distributed_c10d.barrier()\n"
        "    bc(x, 0)\n"
        "    irecv(x, 0)\n"
        "    return x\n"
    )
    assert where(findings(source, "DL202")) == [("DL202", 7, 5), ("DL202", 8, 5), ("DL202", 9, 5)]


@pytest.mark.parametrize(
    "body",
    [
        "dist.all_reduce(x)",
        "dist.all_reduce(x, op=dist.ReduceOp.MAX)",
        "dist.all_reduce(x, async_op=False)",
        "dist.all_reduce(x, dist.ReduceOp.SUM, None, False)",
        "dist.all_reduce(x, async_op=flag)",
        "dist.all_gather(xs, x)",
        "dist.all_gather_into_tensor(out, x)",
        "dist.all_gather_single(out, x)",
        "dist.reduce_scatter_tensor(out, x)",
        "dist.reduce_scatter_single(out, x)",
        "dist.all_to_all_single(out, x)",
        "dist.all_reduce(*args)",
        # functional collectives, including the broadcast look-alike
        "import torch.distributed._functional_collectives as funcol\n"
        "y = funcol.broadcast(x, 0, group)\n"
        "y = funcol.all_reduce(y, 'sum', group)\n"
        "y = funcol.all_gather_tensor(y, 0, group)\n"
        "y = funcol.reduce_scatter_tensor(y, 'sum', 0, group)\n"
        "y = funcol.all_to_all_single(y, None, None, group)",
        # a project function and methods that share c10d names
        "broadcast(x)\nmesh.barrier()\nself.group.send(x)",
        # object collectives are DL203, not DL202
        "dist.all_gather_object(xs, x)\ndist.monitored_barrier()",
    ],
)
def test_dl202_traps(body: str) -> None:
    assert findings(compiled(body), "DL202") == []


def test_dl202_is_silent_outside_compiled_regions() -> None:
    source = (
        f"{HEADER}\ndef eager(x):\n    dist.broadcast(x, 0)\n    dist.barrier()\n"
        "    dist.all_reduce(x, async_op=True).wait()\n\n"
        "@torch.compiler.disable\ndef helper(x):\n    dist.barrier()\n"
    )
    assert findings(source, "DL202") == []


def test_dl202_follows_other_root_forms_and_callees() -> None:
    source = (
        "import torch\nimport torch.distributed as dist\nfrom torch import nn\n\n"
        "def helper(x):\n    dist.barrier()\n    return x\n\n"
        "@torch.compile(fullgraph=True)\ndef step(x):\n    return helper(x)\n\n"
        "def sync(x):\n    dist.broadcast(x, 0)\n    return x\n\n"
        "compiled_sync = torch.compile(sync)\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        dist.reduce(x, 0)\n"
        "        return x\n\nmodel = torch.compile(Net())\n"
    )
    found = findings(source, "DL202")
    assert [(f.span.start.line, f.severity) for f in found] == [
        (6, Severity.ERROR),
        (14, Severity.WARNING),
        (21, Severity.WARNING),
    ]


@pytest.mark.parametrize("decorator", ["@torch.compile", "@torch.compile(fullgraph=True)"])
def test_dl202_is_silent_on_paths_the_compiled_call_may_not_take(decorator: str) -> None:
    """Reported only where the collective runs on every call of a root: a branch in the
    function or in a caller, or a call of one of several possible targets, makes it a path the
    analysis cannot show is taken (physicsnemo broadcasts only a sharded input; lmdeploy
    reduce-scatters only in one tensor-parallel mode). Four such findings on our corpus were
    all wrong."""
    source = (
        f"{HEADER}\n"
        "def replicate(x):\n"
        "    if getattr(x, 'device_mesh', None) is None:\n"
        "        return x\n"
        "    dist.broadcast(x, src=0)\n"
        "    return x\n\n"
        "def scatter(x, mode):\n"
        "    dist.reduce_scatter(x, [x])\n"
        "    return x\n\n"
        "def always(x):\n"
        "    dist.barrier()\n"
        "    return x\n\n"
        f"{decorator}\n"
        "def step(x, mode):\n"
        "    x = replicate(x)\n"
        "    if mode == 'dp_tp':\n"
        "        x = scatter(x, mode)\n"
        "    return always(x)\n"
    )
    assert [f.span.start.line for f in findings(source, "DL202")] == [15]


def test_dl202_and_dl203_do_not_overlap() -> None:
    source = compiled("dist.broadcast_object_list(xs, src=0)\ndist.broadcast(x, src=0)")
    assert where(findings(source, "DL202", "DL203")) == [("DL203", 6, 5), ("DL202", 7, 5)]


def test_dl202_metadata() -> None:
    rule = get_rule("DL202")
    assert rule is not None
    assert (rule.name, rule.severity, rule.scope) == (
        "untraceable-collective",
        Severity.WARNING,
        "region",
    )
    assert rule.default_enabled
