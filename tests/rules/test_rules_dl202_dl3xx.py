"""Unit tests of DL202 (untraceable collectives), DL206/DL207 (hygiene) and DL301/DL302/DL304
(compiling DDP/FSDP wrappers).

Small snippets through ``check_source``; the proof tests show that torch behaves as the
messages say, these tests pin what distlint reports, where, and at which severity.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from distlint.rules.registry import get_rule


def findings(source: str, *codes: str) -> list[Finding]:
    settings = FileSettings(enabled=frozenset(codes))
    result = check_source(textwrap.dedent(source), "t.py", settings)
    assert result.errors == ()
    return list(result.findings)


def where(found: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.code, f.span.start.line, f.span.start.column) for f in found]


# -- DL202 -----------------------------------------------------------------------------------------

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


# -- DL301 / DL302 / DL304 ---------------------------------------------------------------------

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


def test_dl301_ddp_inline_name_and_method() -> None:
    found = wrapping(
        """
        a = torch.compile(DDP(net), fullgraph=True)
        model = DDP(net)
        model = torch.compile(model, fullgraph=True)
        other = DDP(net).to("cpu")
        other.compile(fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL301", 7, 9), ("DL301", 9, 13), ("DL301", 11, 5)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB0156" in found[0].message and "GB0156" in found[1].message
    assert "`other.compile(fullgraph=True)`" in found[2].message
    assert "Attempt to trace generator`, GB0003" in found[2].message
    assert "`DDP(torch.compile(model, fullgraph=True))`" in found[0].message
    assert [loc.message for loc in found[1].related] == ["wrapped here"]
    assert found[1].related[0].span.start.line == 8


def test_dl301_fsdp1_with_original_params() -> None:
    found = wrapping(
        """
        model = FSDP(net, use_orig_params=True)
        torch.compile(model, fullgraph=True)
        torch.compile(FSDP(net, **options), fullgraph=True)
        model.compile(fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL301", 8, 5), ("DL301", 9, 5)]
    assert "GB0208" in found[0].message


def test_dl301_fully_shard_children() -> None:
    found = wrapping(
        """
        for block in net.layers:
            fully_shard(block)
        fully_shard(net)
        compiled = torch.compile(net, fullgraph=True)
        other = Net()
        fully_shard(other.encoder)
        other.compile(fullgraph=True)
        third = Net()
        for i, blk in enumerate(third.blocks):
            for sub in blk.children():
                fully_shard(sub)
        torch.compile(third, fullgraph=True)
        fourth = Net()
        fully_shard(fourth.layers[0])
        torch.compile(fourth, fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [
        ("DL301", 10, 16),
        ("DL301", 13, 5),
        ("DL301", 18, 5),
        ("DL301", 21, 5),
    ]
    assert "GB0007" in found[0].message
    assert "blk.compile(fullgraph=True)" in found[0].message
    assert [loc.message for loc in found[0].related] == ["sharded here"]


@pytest.mark.parametrize(
    "body",
    [
        "torch.compile(DDP(net))",
        "torch.compile(DDP(net), fullgraph=False)",
        "DDP(torch.compile(net, fullgraph=True))",
        "model = DDP(net)\nmodel = net\ntorch.compile(model, fullgraph=True)",
        "model = DDP(net)\ntorch.compile(model.module, fullgraph=True)",
        "fully_shard(net)\ntorch.compile(net, fullgraph=True)",
        "model = fully_shard(net)\nmodel.compile(fullgraph=True)",
        "for blk in net.layers:\n    fully_shard(blk)\n    blk.compile(fullgraph=True)",
        "model = FSDP(net, use_orig_params=True)\nmodel.compile(fullgraph=True)",
        "torch.compile(other, fullgraph=True)",
        "import re\nre.compile('x')",
    ],
)
def test_dl301_traps(body: str) -> None:
    assert [f for f in wrapping(body, *WRAP_CODES) if f.code == "DL301"] == []


def test_dl301_wrapper_in_another_scope_is_not_connected() -> None:
    source = (
        f"{WRAP_HEADER}\nmodel = DDP(Net())\n\ndef main():\n"
        "    torch.compile(model, fullgraph=True)\n"
    )
    assert findings(source, *WRAP_CODES) == []


def test_dl301_at_module_level_and_on_attributes() -> None:
    source = (
        f"{WRAP_HEADER}\nmodel = DDP(Net())\nmodel = torch.compile(model, fullgraph=True)\n\n"
        "class Trainer:\n    def setup(self, net):\n        self.model = DDP(net)\n"
        "        self.model = torch.compile(self.model, fullgraph=True)\n"
    )
    assert where(findings(source, *WRAP_CODES)) == [("DL301", 7, 9), ("DL301", 12, 22)]


def test_dl302_flat_params() -> None:
    found = wrapping(
        """
        model = FSDP(net)
        torch.compile(model)
        flat = FSDP(net, use_orig_params=False)
        flat.compile()
        torch.compile(FSDP(net), fullgraph=True)
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL302", 8, 5), ("DL302", 10, 5), ("DL302", 11, 5)]
    assert [f.severity for f in found] == [Severity.WARNING, Severity.WARNING, Severity.ERROR]
    assert "FSDP1's default use_orig_params=False" in found[0].message
    assert "0 graphs compiled" in found[0].message
    assert "GB0053" in found[0].message
    assert "with use_orig_params=False:" in found[1].message
    assert "`Unsupported: FSDP with use_orig_params=False` (GB0053)" in found[2].message
    assert "`use_orig_params=True`" in found[2].message


@pytest.mark.parametrize(
    "body",
    [
        "FSDP(net)",
        "torch.compile(FSDP(net, use_orig_params=True))",
        "torch.compile(FSDP(net, use_orig_params=flag))",
        "torch.compile(FSDP(net, **kwargs))",
        "model = FSDP(net)\nmodel = net\ntorch.compile(model)",
        "torch.compile(DDP(net))",
    ],
)
def test_dl302_traps(body: str) -> None:
    assert [f for f in wrapping(body, *WRAP_CODES) if f.code == "DL302"] == []


def test_dl304_builtin_module_under_ddp() -> None:
    found = wrapping(
        """
        torch.compile(DDP(nn.Sequential(nn.Linear(2, 2))))
        seq = nn.Sequential(nn.Linear(2, 2))
        model = DDP(seq.to("cpu"))
        model = torch.compile(model)
        layer = DDP(torch.nn.TransformerEncoderLayer(8, 2))
        layer.compile()
        """,
        *WRAP_CODES,
    )
    assert where(found) == [("DL304", 7, 5), ("DL304", 10, 13), ("DL304", 12, 5)]
    assert all(f.severity is Severity.WARNING for f in found)
    assert found[0].message.startswith(
        "Compiling `DDP(nn.Sequential(...))` compiles nothing on torch 2.13"
    )
    assert "`DDP(torch.compile(module))`" in found[0].message
    assert "`nn.TransformerEncoderLayer(...)`" not in found[2].message
    assert "`DDP(nn.TransformerEncoderLayer(...))`" in found[2].message


@pytest.mark.parametrize(
    "body",
    [
        "torch.compile(nn.Sequential(nn.Linear(2, 2)))",
        "DDP(torch.compile(nn.Sequential(nn.Linear(2, 2))))",
        "DDP(nn.Sequential(nn.Linear(2, 2)))",
        "torch.compile(DDP(Net()))",
        "m = nn.Sequential()\nm = Net()\ntorch.compile(DDP(m))",
        "torch.compile(DDP(nn.ModuleList([net])))",
        "torch.compile(DDP(nn.parallel.DataParallel(net)))",
    ],
)
def test_dl304_traps(body: str) -> None:
    assert [f for f in wrapping(body, *WRAP_CODES) if f.code == "DL304"] == []


def test_dl304_defers_to_dl301_under_fullgraph() -> None:
    found = wrapping("torch.compile(DDP(nn.Sequential()), fullgraph=True)", *WRAP_CODES)
    assert [f.code for f in found] == ["DL301"]


# -- DL206 -----------------------------------------------------------------------------------------

DIST_HEADER = (
    "import math\nimport torch\nimport torch.distributed as dist\n"
    "import torch.distributed._functional_collectives as funcol\n"
)


def dl206(body: str) -> list[Finding]:
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return findings(f"{DIST_HEADER}\ndef check(stop, holder):\n{lines}\n", "DL206")


def test_dl206_reports_exact_float_comparisons_of_received_values() -> None:
    found = dl206(
        """
        dist.broadcast(stop, src=0)
        a = stop.item() == 1.0
        b = 2.0 != float(stop[0])
        flag = stop.item()
        c = flag == 1.0
        total = funcol.all_reduce(stop, "sum", group)
        d = total.item() != -1.0
        dist.broadcast_object_list(holder, src=0)
        e = holder[0] == 0.5
        """
    )
    assert where(found) == [
        ("DL206", 8, 9),
        ("DL206", 9, 9),
        ("DL206", 11, 9),
        ("DL206", 13, 9),
        ("DL206", 15, 9),
    ]
    assert all(f.severity is Severity.NOTE for f in found)
    assert dl206("dist.all_reduce(stop)\nz = stop.item() == 0.0\nw = 0.0 != stop[0]") == []
    assert found[0].message == (
        "Exact `==`/`!=` between `stop.item()` (a float received through `dist.broadcast`) "
        "and `1.0`: it holds only while the sender sets exactly that value and nothing "
        "averages or rescales it (a hygiene note, not an observed failure). Use an integer "
        "tensor for flags, or a threshold such as `> 0.5`."
    )
    assert "received through `funcol.all_reduce`" in found[3].message


@pytest.mark.parametrize(
    "body",
    [
        "dist.broadcast(stop, src=0)\nx = stop.item() == 1",
        "dist.broadcast(stop, src=0)\nx = stop.item() > 0.5",
        "dist.broadcast(stop, src=0)\nx = math.isclose(stop.item(), 1.0)",
        "stop = torch.zeros(1, dtype=torch.long)\ndist.broadcast(stop, 0)\nx = stop.item() == 1.0",
        "stop = torch.tensor([1, 0])\ndist.all_reduce(stop)\nx = stop[0].item() == 1.0",
        "stop = torch.ones(1).long()\ndist.all_reduce(stop)\nx = stop.item() != 0.0",
        "lr = 0.1\nx = lr == 0.1",
        "x = stop.item() == 1.0",
        "dist.broadcast(stop, src=0)\nx = stop.item() is None",
    ],
)
def test_dl206_traps(body: str) -> None:
    assert dl206(body) == []


def test_dl206_is_off_by_default() -> None:
    rule = get_rule("DL206")
    assert rule is not None and not rule.default_enabled
    assert rule.severity is Severity.NOTE


# -- DL207 -----------------------------------------------------------------------------------------


def dl207(body: str, launcher: str = "dist.init_process_group('nccl')\n") -> list[Finding]:
    source = (
        "import os\nimport socket\nfrom pathlib import Path\nimport torch.distributed as dist\n"
        "ROOT = '/shared/cache'\n" + textwrap.dedent(body) + launcher
    )
    return findings(source, "DL207")


def test_dl207_reports_fixed_cache_dirs() -> None:
    found = dl207(
        """\
        os.environ["TRITON_CACHE_DIR"] = "/shared/triton"
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(ROOT, "inductor"))
        os.environ["TRITON_CACHE_DIR"] = f"{ROOT}/triton"
        os.environ.update({"TRITON_CACHE_DIR": "/a"}, TORCHINDUCTOR_CACHE_DIR=str(Path(ROOT) / "b"))
        os.putenv("TRITON_CACHE_DIR", ROOT + "/t")
        """
    )
    assert where(found) == [
        ("DL207", 6, 34),
        ("DL207", 7, 50),
        ("DL207", 8, 34),
        ("DL207", 9, 40),
        ("DL207", 9, 71),
        ("DL207", 10, 31),
    ]
    assert all(f.severity is Severity.NOTE for f in found)
    assert found[0].message.startswith(
        "`TRITON_CACHE_DIR` is set to one fixed path in a file that runs several processes "
        "(`dist.init_process_group`)"
    )
    assert "is defaulted to one fixed path" in found[1].message
    assert "not an observed failure" in found[0].message


@pytest.mark.parametrize(
    "launcher",
    [
        "import torch.multiprocessing as mp\nmp.spawn(main, nprocs=2)\n",
        "rank = int(os.environ['LOCAL_RANK'])\n",
        "rank = int(os.environ.get('RANK', '0'))\n",
    ],
)
def test_dl207_launchers(launcher: str) -> None:
    found = dl207('os.environ["TRITON_CACHE_DIR"] = "/shared/triton"\n', launcher)
    assert len(found) == 1


@pytest.mark.parametrize(
    "body",
    [
        'os.environ["TRITON_CACHE_DIR"] = f"/tmp/triton-{dist.get_rank()}"\n',
        'os.environ["TRITON_CACHE_DIR"] = f"/tmp/{socket.gethostname()}/triton"\n',
        'os.environ["TRITON_CACHE_DIR"] = os.path.join(ROOT, os.environ["LOCAL_RANK"])\n',
        'os.environ["TORCHINDUCTOR_CACHE_DIR"] = args.cache_dir\n',
        'os.environ["OMP_NUM_THREADS"] = "1"\n',
        'cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/tmp/x")\n',
        'os.environ.setdefault("NCCL_DEBUG", "WARN")\n',
    ],
)
def test_dl207_traps(body: str) -> None:
    assert dl207(body) == []


def test_dl207_single_process_file_is_silent() -> None:
    assert dl207('os.environ["TRITON_CACHE_DIR"] = "/shared/triton"\n', launcher="") == []


def test_dl207_is_off_by_default() -> None:
    rule = get_rule("DL207")
    assert rule is not None and not rule.default_enabled
    assert rule.severity is Severity.NOTE
