"""Growth of the analysis time: an adversarial corpus, each input at size N and 4N.

Every generator here once made the analysis quadratic (a scan per call of the whole module,
a codegen of the whole chain per link, a scan of the function per conversion...). For each,
the analysis of one file (``engine.check_file``: first pass, linking, second pass) is timed
at N and 4N in CPU time, the best of three, and the ratio must stay well below quadratic
(16): under 8.

The parse itself is left out (each text is parsed once beforehand and the engine is handed
the tree): LibCST's own parser is super-linear on long call chains (a bare
``libcst.parse_module`` of an 800-link ``.b(c)`` chain takes about 20x the time of a
200-link one), which is not ours to fix.

A chain of N ``elif rank == i:`` branches (``elif_chain``) once lost the file outright (the
worker could not pickle a summary that deep: tests/engine/test_transport.py), then took
quadratic time: DL201's comparison went through the rest of the chain at every branch (2,400
branches: 36 s of CPU for the whole command), and DL501/DL504 read all the ancestors of every
call for a version guard (a statement deep in the chain has one per branch before it). A flat
run of exiting rank branches (``exit_runs``) was quadratic in the divergence walk and
exponential in a caller's signature (each branch's rest computed again by every branch before
it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest
from libcst._nodes.base import CSTCodegenError

import distlint.syntax.source
from distlint.config.settings import CliOverrides, ConfigResolver, settings_for
from distlint.engine.checker import FileSource, check_file
from distlint.syntax.source import parse_module

RATIO = 8.0  # for 4x the size; quadratic growth gives 16


def unterminated_strings(n: int) -> str:
    """Brackets, then unterminated triple quotes and line continuations (the lexing scans)."""
    return ")(" + "()" * 200 + "'''\n\\" * n


def custom_ops(n: int) -> str:
    """``lib.define`` ops with kernels, all called from a compiled function."""
    ops = "".join(
        f"lib.define('op{i}(Tensor x) -> Tensor')\n\n\n"
        f"@torch.library.impl(lib, 'op{i}', 'CPU')\ndef op{i}(x):\n    return x.clone()\n\n\n"
        for i in range(n)
    )
    calls = "".join(f"    x = torch.ops.myops.op{i}(x)\n" for i in range(n))
    head = "import torch\n\nlib = torch.library.Library('myops', 'DEF')\n\n\n"
    return head + ops + "@torch.compile\ndef f(x):\n" + calls + "    return x\n"


def conversions(n: int) -> str:
    """A long compiled function of ``.item()`` conversions whose names are used later."""
    lines = [f"    n{i} = x.sum().item()\n    x = x * n{i}\n" for i in range(n)]
    tests = [f"    if n{i} > 0:\n        x = x + 1\n" for i in range(0, n, 2)]
    head = "import torch\n\n\n@torch.compile\ndef f(x):\n"
    return head + "".join(lines + tests) + "    return x\n"


def rank_branches(n: int) -> str:
    """A long compiled function: collectives under rank branches, loops, no_grad blocks."""
    lines = []
    for i in range(n):
        v = f"v{i % 40}"
        lines.append(
            f"    {v} = x.sum() + y.mean() + {v if i >= 40 else 'x'}\n"
            f"    if rank == {i % 3}:\n        dist.all_reduce({v})\n"
            f"    for k in range({v}.item()):\n        x = x + {v} * k\n"
            f"    with torch.no_grad():\n        y.add_({v})\n"
        )
    head = "import torch\nimport torch.distributed as dist\n\n\n"
    head += "@torch.compile(fullgraph=True)\ndef f(x, y, rank):\n"
    return head + "".join(lines) + "    return x\n"


def call_chain(n: int) -> str:
    """A method chain in a compiled function (each link spelled in a message)."""
    head = "import torch\n\n\n@torch.compile\ndef f(x):\n"
    return head + "    return (x" + ".relu().float()" * n + ")\n"


def chains_in_a_module(n: int) -> str:
    """Call and attribute chains in a compiled module's forward: tests, prints, conversions,
    collectives under a rank branch, in-place writes; and a graph break."""
    c = "x" + ".relu().float()" * n
    a = "self" + ".m" * n
    return (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "class M(torch.nn.Module):\n    def forward(self, x):\n"
        f"        if {c}.sum() > 0:\n            print({c})\n        y = {c}.item()\n"
        f"        {a}.append(x)\n        {a}[0] = x\n"
        f"        if dist.get_rank() == 0:\n            dist.all_reduce({c})\n"
        f"        with torch.no_grad():\n            x.add_({c})\n        return {c}.tolist()\n\n\n"
        "m = torch.compile(M(), fullgraph=True)\n\n\n"
        f"@torch.compile\ndef g(x):\n    torch._dynamo.graph_break()\n    return {c}.numpy()\n"
    )


def elif_chain(n: int) -> str:
    """An ``elif`` chain of rank tests, each compared by the divergence walk (DL201, DL208 and
    the possible places of ``explain-ranks``) with the rest of the chain (its else side): a
    collective in some branches, none in others, a nested ``if`` with a
    collective on each side, an exit after a collective, an else at the end."""
    branches = (
        "        dist.all_reduce(t)\n",
        "        t = t + 1\n",
        "        if t.sum() > 0:\n            dist.all_reduce(t)\n"
        "        else:\n            dist.broadcast(t, 0)\n",
        "        dist.broadcast(t, 0)\n        return t\n",
    )
    lines = ["import torch.distributed as dist\n\n\ndef f(t):\n    rank = dist.get_rank()\n"]
    for i in range(n):
        lines.append(f"    {'elif' if i else 'if'} rank == {i}:\n{branches[i % 4]}")
    lines.append("    else:\n        dist.barrier()\n    dist.all_reduce(t)\n    return t\n")
    return "".join(lines)


def exit_runs(n: int) -> str:
    """A flat run of ``if rank == i: all_reduce(t); return t`` (each exiting side compared with
    the staying side plus the rest of the block: n^2 once), called under a rank test from
    another function (its signature: 2^n once, 16 branches took 590,000 passes)."""
    lines = ["import torch.distributed as dist\n\n\ndef f(t):\n    rank = dist.get_rank()\n"]
    lines += [
        f"    if rank == {i}:\n        dist.all_reduce(t)\n        return t\n" for i in range(n)
    ]
    lines.append("    dist.barrier()\n    return t\n\n\n")
    lines.append("def g(t):\n    if dist.get_rank() == 0:\n        f(t)\n    dist.barrier()\n")
    return "".join(lines)


def deep_nesting(n: int) -> str:
    """Brackets nested 190 deep (CPython allows 200) and ``if`` blocks nested 90 deep."""
    brackets = "".join(f"v{i} = " + "[" * 190 + "]" * 190 + "\n" for i in range(n))
    ifs = "".join(" " * (i + 1) + f"if x > {i}:\n" for i in range(90))
    block = "def g(x):\n" + ifs + " " * 91 + "return x\n\n\n"
    return brackets + block * n


def sampler_epochs(n: int) -> str:
    """One function with a ``DistributedSampler`` (DL210): N blocks of loops over its loader
    (``for epoch in range(1)``, under an ``if``, through ``enumerate``, a fresh loader per epoch,
    a nested function), a sum of 4N harmless reads of the loader (an expression 4N deep), and an
    epoch loop at the end. DL210 once copied every node's ancestors and searched them for a
    nested function at every read of a followed name."""
    head = (
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def train(ds, model, steps):\n"
        "    sampler = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, batch_size=8, sampler=sampler)\n"
    )
    blocks = "".join(
        f"    for epoch in range(1):\n        for batch in loader:\n            model(batch)\n"
        f"    if steps > {i}:\n        for step, batch in enumerate(loader):\n"
        f"            if step > {i}:\n                model(batch)\n"
        f"    for epoch in range(steps):\n        fresh = DataLoader(ds, sampler=sampler)\n"
        f"        for batch in fresh:\n            model(batch)\n"
        f"    def step{i}(batch):\n        return model(batch)\n"
        for i in range(n)
    )
    total = "    total = " + " + ".join("loader.batch_size" for _ in range(4 * n)) + "\n"
    tail = (
        "    for epoch in range(steps):\n        for batch in loader:\n            model(batch)\n"
    )
    return head + blocks + total + tail


# generator, N (4N is measured too)
CORPUS: dict[str, tuple[Callable[[int], str], int]] = {
    "unterminated_strings": (unterminated_strings, 50_000),
    "custom_ops": (custom_ops, 100),
    "conversions": (conversions, 100),
    "rank_branches": (rank_branches, 60),
    "call_chain": (call_chain, 100),
    "chains_in_a_module": (chains_in_a_module, 50),
    "deep_nesting": (deep_nesting, 5),
    "elif_chain": (elif_chain, 150),
    "exit_runs": (exit_runs, 150),
    "sampler_epochs": (sampler_epochs, 100),
}


@pytest.fixture(scope="module")
def settings():
    overrides = CliOverrides(select=("ALL",))
    return settings_for(ConfigResolver().for_path(Path("/")), overrides, Path("/corpus.py"))


def analysis_seconds(text: str, settings, monkeypatch: pytest.MonkeyPatch) -> float:  # type: ignore[no-untyped-def]
    """Best CPU time of three analyses of ``text``, its parse done beforehand."""
    try:
        tree = parse_module(text)
    except Exception:  # invalid Python: the engine reports it before any tree is needed
        tree = None

    def parsed(source: str):  # type: ignore[no-untyped-def]
        return tree if tree is not None and source == text else parse_module(source)

    # the engine and lazy spans (parse_source) both parse through this one
    monkeypatch.setattr(distlint.syntax.source, "parse_module", parsed)
    data = text.encode()
    best = float("inf")
    for _ in range(3):
        started = time.process_time()  # the analysis runs on a thread: process CPU time
        check_file(FileSource(data, "corpus.py"), settings)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_analysis_time_grows_linearly(name: str, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    generate, size = CORPUS[name]
    small = analysis_seconds(generate(size), settings, monkeypatch)
    large = analysis_seconds(generate(4 * size), settings, monkeypatch)
    # a floor of 5 ms keeps timer noise on tiny inputs from deciding the ratio
    ratio = large / max(small, 0.005)
    print(f"{name}: N={size} {small:.3f} s, 4N {large:.3f} s, {ratio:.1f}x")
    assert ratio < RATIO, f"{name}: {small:.3f} s at N={size}, {large:.3f} s at 4N ({ratio:.1f}x)"


def test_short_spellings_match_the_full_codegen() -> None:
    """distlint.syntax.spelling gives exactly what spelling from the whole codegen gave, for every
    node of the DL101-DL104 fixtures and of a chain (memoised prefixes included)."""
    from distlint.syntax.spelling import Spellings

    root = Path(__file__).resolve().parents[2] / "fixtures"
    texts = [path.read_text() for path in sorted(root.glob("DL10[1-4]/*.py"))]
    assert len(texts) >= 12  # bad, good and traps of four rules
    texts.append(chains_in_a_module(20) + "\n\nz = (\n    a  # comment\n    .b(\n\n  c)\n)" * 3)
    for text in texts:
        module = parse_module(text)
        seen: list = []
        stack = [module]
        while stack:
            node = stack.pop()
            seen.append(node)
            stack.extend(node.children)
        spellings = Spellings(module)
        for node in seen:
            if not isinstance(node, cst.BaseExpression):  # what rules spell
                continue
            for limit in (20, 60):
                whole = " ".join(module.code_for_node(node).split())
                expected = whole if len(whole) <= limit else whole[: limit - 3] + "..."
                assert spellings.spell(node, limit) == expected


def test_whole_code_matches_the_codegen() -> None:
    """``Spellings.code`` (codegen without LibCST's per-node position context) gives exactly
    ``module.code_for_node`` for every node of the DL2xx fixtures (comments, decorators, tests
    over several lines, default indentation and newlines of their own)."""
    from distlint.syntax.spelling import Spellings

    root = Path(__file__).resolve().parents[2] / "fixtures"
    texts = [path.read_text() for path in sorted(root.glob("DL20*/*.py"))]
    assert len(texts) >= 12
    texts.append("if (a  # why\n    and not b):\r\n\tpass\r\n")
    for text in texts:
        module = parse_module(text)
        spellings = Spellings(module)
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            try:
                expected = module.code_for_node(node)
            except CSTCodegenError:  # an annotation alone: both refuse
                with pytest.raises(CSTCodegenError):
                    spellings.code(node)
                continue
            assert spellings.code(node) == expected
