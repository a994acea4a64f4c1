"""A generator of torch-flavoured Python programs for fuzzing distlint.

:func:`program` turns a ``random.Random`` into a small project: one to three modules of a
package (``a.py`` ... , which import each other, cycles included), written the way training
code is written and mixing what distlint's rules look at:

* ``torch.compile`` as a decorator and a call, with valid and invalid ``mode``, ``backend``,
  ``fullgraph``, ``dynamic`` and ``options``; ``torch._dynamo.config`` assignments;
* collectives (``dist.all_reduce``, ``broadcast``, ``barrier``, object collectives, async work)
  under rank branches (``dist.get_rank() == 0``, ``rank % 2``, helpers), with ``return``,
  ``raise``, ``break`` and ``continue`` under them;
* loops with ``break`` / ``continue`` / ``return`` / ``raise`` / ``else``, ``try`` blocks,
  ``with`` blocks, ``match`` (literal, sequence, mapping, class and guarded patterns), walrus
  conditions, ``async def`` with ``await`` / ``async for`` / ``async with``, decorators,
  nested functions and lambdas, comprehensions;
* ``nn.Module`` classes with ``ModuleList`` / ``Sequential`` / ``ModuleDict``, buffers, DDP and
  FSDP wrapping, ``no_sync``;
* ``torch.library``: ``Library(...).define/impl``, ``custom_op``, ``register_fake``,
  ``register_autograd``;
* deep nesting, huge literals and long functions.

Every program it returns compiles with CPython (:func:`valid` checks; the generator keeps
``return``, ``break``, ``await`` and ``nonlocal`` where they are allowed). Nothing here imports
torch: the programs are only read, never run.
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass, field, replace

HEADER = [
    "import asyncio",
    "import contextlib",
    "import functools",
    "import os",
    "import torch",
    "import torch.distributed as dist",
    "import torch.nn as nn",
    "import torch.nn.functional as F",
    "from torch.nn.parallel import DistributedDataParallel as DDP",
]

MODES = [None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", "fast"]
BACKENDS = [None, "inductor", "eager", "aot_eager", "cudagraphs", "nvfuser", "ipex", "my_backend"]
OPTIONS = [
    "triton.cudagraphs",
    "max_autotune",
    "epilogue_fusion",
    "shape_padding",
    "trace.enabled",
    "no_such_option",
    "coordinate_descent_tuning",
]
DYNAMO_CONFIG = [
    "cache_size_limit",
    "suppress_errors",
    "capture_scalar_outputs",
    "optimize_ddp",
    "verbose",
    "automatic_dynamic_shapes",
    "no_such_flag",
]
COLLECTIVES = [
    "dist.all_reduce({t})",
    "dist.all_reduce({t}, op=dist.ReduceOp.SUM)",
    "dist.broadcast({t}, src=0)",
    "dist.reduce({t}, dst=0)",
    "dist.barrier()",
    "dist.all_gather([torch.empty_like({t}) for _ in range(dist.get_world_size())], {t})",
    "dist.all_gather_object(objs, {t}.tolist())",
    "dist.broadcast_object_list(objs, src=0)",
    "dist.reduce_scatter({t}, [{t}, {t}])",
    "dist.all_to_all_single({t}, {t})",
    "dist.send({t}, dst=1)",
    "dist.recv({t}, src=0)",
    "dist.all_reduce({t}, async_op=True).wait()",
    "dist.monitored_barrier()",
    "torch.distributed.all_reduce({t})",
    "dist.gather({t}, gather_list=None, dst=0)",
]
RANK_TESTS = [
    "dist.get_rank() == 0",
    "dist.get_rank() != 0",
    "rank == 0",
    "rank == {k}",
    "local_rank == 0",
    "rank % 2 == 1",
    "is_main_process()",
    "not is_main_process()",
    "dist.get_rank() in (0, 1)",
    "int(os.environ.get('RANK', 0)) == 0",
    "not dist.is_initialized()",
    "dist.get_rank() > {k}",
]
DATA_TESTS = [
    "{t}.sum() > 0",
    "{t}.item() > 0.5",
    "bool({t}.any())",
    "{t}.shape[0] > 2",
    "len({t}) > 1",
    "{t}.numel() == 0",
    "step % 2 == 0",
    "flag",
]
TENSOR_EXPRS = [
    "torch.randn(4, 4)",
    "torch.zeros({n})",
    "torch.ones({n}, device='cuda')",
    "({t} * 2 + 1)",
    "{t}.relu()",
    "F.relu({t})",
    "torch.cat([{t}, {t}])",
    "{t}.to('cpu')",
    "{t}.detach().clone()",
    "torch.tensor([{n}, {n}])",
    "{t}[0]",
    "{t}.view(-1)",
    "({t} @ {t}.T)",
    "torch.where({t} > 0, {t}, -{t})",
]
SCALAR_EXPRS = [
    "{t}.item()",
    "float({t}.sum())",
    "{t}.tolist()",
    "{n}",
    "step + {n}",
    "len(items)",
    "int(os.environ.get('WORLD_SIZE', '1'))",
]
HOST_CALLS = [
    "print({t})",
    "print(f'step {{step}}: {{loss}}')",
    "logger.info('%s', {t})",
    "torch._dynamo.graph_break()",
    "{t}.numpy()",
    "import pdb",
    "time.sleep(0)",
    "torch.cuda.synchronize()",
    "torch.save({t}, 'ckpt.pt')",
    "torch.manual_seed({n})",
    "os.makedirs('out', exist_ok=True)",
]
DECORATORS = [
    "@torch.compile",
    "@torch.compile()",
    "@torch.compiler.disable",
    "@torch._dynamo.disable",
    "@torch.no_grad()",
    "@functools.lru_cache(maxsize=None)",
    "@functools.wraps(len)",
    "@torch.inference_mode()",
    "@contextlib.contextmanager",
    "@staticmethod_like",
    "@torch.jit.ignore",
    "@torch._dynamo.assume_constant_result",
]


# Statements shaped like what particular rules look for (DL1xx-DL6xx).
BAIT = [
    "model.register_forward_hook(lambda m, i, o: None)",
    "torch._dynamo.config.cache_size_limit = {n}",
    "WORLD = dist.get_world_size()",
    "os.environ['TORCHINDUCTOR_CACHE_DIR'] = '/tmp/cache'",
    "model.weight.data.fill_({n})",
    "model.weight.add_(1)",
    "out = torch.sigmoid({t})\nout.mul_(2)",
    "model = torch.compile(DDP(model), fullgraph=True)",
    "model = DDP(model, bucket_cap_mb=1)",
    "model = DDP(model, bogus_option=1)",
    "dist.all_reduce({t}, opp=dist.ReduceOp.SUM)",
    "torch.cuda.amp.autocast()",
    "dist.reduce_op.SUM",
    "from torch._dynamo.utils import counters",
    "torch._dynamo.mark_dynamic({t}, 0)",
    "torch.compiler.reset()",
    "torch.distributed.barrier(device_ids=[local_rank])",
    "optimizer.step()",
    "loss.backward()",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "with torch.cuda.graph(g):\n    {t}.item()",
    "with torch.cuda.graph(g):\n    dist.all_reduce({t})",
    "static = graphed({t})\nstatic2 = graphed({t})\nprint(static)",
    "graphed = torch.cuda.make_graphed_callables(model, ({t},))",
    "torch._dynamo.config.patch(suppress_errors=True)(lambda: None)()",
    "torch.compile(lambda y: y.nonzero())({t})",
    "torch.compile(fullgraph=True)(torch.compiler.disable(lambda y: y))({t})",
    "model.module.weight.requires_grad_(rank == 0)",
]


@dataclass
class Ctx:
    """Where a statement goes: what is allowed there and what names exist."""

    depth: int = 0
    function: bool = False
    is_async: bool = False
    loop: bool = False
    method: bool = False
    blocks: int = 0  # statically nested loops / try / with (CPython allows 20)
    names: list[str] = field(default_factory=lambda: ["x"])


class Generator:
    """Builds one program from ``rng``; :meth:`files` returns it."""

    def __init__(self, rng: random.Random, modules: list[str]) -> None:
        self.rng = rng
        self.modules = modules
        self.counter = 0
        self.ops: list[str] = []
        self.budget = 0  # statements left in the current module

    # -- small pieces ------------------------------------------------------------------------

    def pick(self, items: list) -> object:
        return self.rng.choice(items)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def tensor(self, ctx: Ctx, depth: int = 0) -> str:
        name = self.pick(ctx.names)
        if depth > 2 or self.chance(0.4):
            return str(name)
        template = str(self.pick(TENSOR_EXPRS))
        return template.format(t=self.tensor(ctx, depth + 1), n=self.rng.randint(1, 8))

    def scalar(self, ctx: Ctx) -> str:
        return str(self.pick(SCALAR_EXPRS)).format(t=self.tensor(ctx), n=self.rng.randint(0, 9))

    def rank_test(self) -> str:
        return str(self.pick(RANK_TESTS)).format(k=self.rng.randint(0, 7))

    def data_test(self, ctx: Ctx) -> str:
        test = str(self.pick(DATA_TESTS)).format(t=self.tensor(ctx))
        if self.chance(0.15):
            return f"(n := {self.scalar(ctx)}) and {test}"
        return test

    def condition(self, ctx: Ctx) -> str:
        if self.chance(0.5):
            return self.rank_test()
        if self.chance(0.2):
            return f"{self.rank_test()} and {self.data_test(ctx)}"
        return self.data_test(ctx)

    def collective(self, ctx: Ctx) -> str:
        return str(self.pick(COLLECTIVES)).format(t=self.tensor(ctx))

    def compile_kwargs(self) -> str:
        parts = []
        mode = self.pick(MODES)
        if mode is not None:
            parts.append(f"mode={mode!r}")
        backend = self.pick(BACKENDS)
        if backend is not None:
            parts.append(f"backend={backend!r}")
        if self.chance(0.3):
            parts.append(f"fullgraph={self.pick(['True', 'False', 'flag'])}")
        if self.chance(0.2):
            parts.append(f"dynamic={self.pick(['True', 'False', 'None'])}")
        if self.chance(0.25):
            items = ", ".join(
                f"{self.pick(OPTIONS)!r}: {self.pick(['True', 'False', '1', repr('x')])}"
                for _ in range(self.rng.randint(1, 3))
            )
            parts.append(f"options={{{items}}}")
        self.rng.shuffle(parts)
        return ", ".join(parts)

    # -- statements --------------------------------------------------------------------------

    def block(self, ctx: Ctx, count: int) -> list[str]:
        lines: list[str] = []
        for _ in range(max(1, min(count, 5 - ctx.depth))):
            lines += self.statement(ctx)
        return lines or ["pass"]

    def statement(self, ctx: Ctx) -> list[str]:
        self.budget -= 1
        deep = ctx.depth >= 6 or self.budget <= 0
        kinds = [
            ("assign", 6),
            ("collective", 4),
            ("host", 2),
            ("rank_if", 0 if deep else 5),
            ("data_if", 0 if deep else 3),
            ("loop", 0 if deep or ctx.blocks >= 12 else 3),
            ("while", 0 if deep or ctx.blocks >= 12 else 1),
            ("try", 0 if deep or ctx.blocks >= 12 else 1),
            ("with", 0 if deep or ctx.blocks >= 12 else 2),
            ("match", 0 if deep else 1),
            ("exit", 2 if ctx.function or ctx.loop else 0),
            ("nested_def", 0 if deep else 1),
            ("config", 1),
            ("assert", 1),
            ("bait", 3),
        ]
        kind = self.rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        return getattr(self, f"_{kind}")(ctx)

    def _inner(self, ctx: Ctx, **changes: object) -> Ctx:
        return replace(ctx, depth=ctx.depth + 1, names=list(ctx.names), **changes)

    def _assign(self, ctx: Ctx) -> list[str]:
        name = self.fresh("t")
        value = self.scalar(ctx) if self.chance(0.25) else self.tensor(ctx)
        if self.chance(0.1):
            value = f"[{value} for _ in range({self.rng.randint(1, 4)})]"
        elif self.chance(0.05):
            value = f"(lambda y: {value})(None)"
        ctx.names.append(name)
        return [f"{name} = {value}"]

    def _collective(self, ctx: Ctx) -> list[str]:
        return [self.collective(ctx)]

    def _host(self, ctx: Ctx) -> list[str]:
        return [str(self.pick(HOST_CALLS)).format(t=self.tensor(ctx), n=self.rng.randint(0, 99))]

    def _config(self, ctx: Ctx) -> list[str]:
        flag = self.pick(DYNAMO_CONFIG)
        value = self.pick(["True", "False", "64", "None"])
        if self.chance(0.3):
            return [f"torch._dynamo.config.patch({flag}={value})"]
        return [f"torch._dynamo.config.{flag} = {value}"]

    def _bait(self, ctx: Ctx) -> list[str]:
        text = str(self.pick(BAIT)).format(t=self.tensor(ctx), n=self.rng.randint(0, 9))
        return text.split("\n")

    def _assert(self, ctx: Ctx) -> list[str]:
        return [f"assert {self.condition(ctx)}, 'bad'"]

    def _rank_if(self, ctx: Ctx) -> list[str]:
        inner = self._inner(ctx)
        lines = [f"if {self.rank_test()}:"]
        lines += indent(self.block(inner, self.rng.randint(1, 3)))
        for _ in range(self.rng.choice([0, 0, 1, 2])):
            lines.append(f"elif {self.rank_test()}:")
            lines += indent(self.block(self._inner(ctx), self.rng.randint(1, 2)))
        if self.chance(0.4):
            lines.append("else:")
            lines += indent(self.block(self._inner(ctx), self.rng.randint(1, 2)))
        return lines

    def _data_if(self, ctx: Ctx) -> list[str]:
        lines = [f"if {self.data_test(ctx)}:"]
        lines += indent(self.block(self._inner(ctx), self.rng.randint(1, 3)))
        if self.chance(0.3):
            lines.append("else:")
            lines += indent(self.block(self._inner(ctx), 1))
        return lines

    def _loop(self, ctx: Ctx) -> list[str]:
        inner = self._inner(ctx, loop=True, blocks=ctx.blocks + 1)
        var = self.fresh("i")
        inner.names.append(var)
        head = self.pick(
            [
                f"for {var} in range({self.rng.randint(1, 100)}):",
                f"for {var} in loader:",
                f"for {var}, batch in enumerate(loader):",
                f"for {var} in self.layers:" if ctx.method else f"for {var} in items:",
                f"async for {var} in stream():" if ctx.is_async else f"for {var} in zip(a, b):",
            ]
        )
        lines = [str(head)]
        lines += indent(self.block(inner, self.rng.randint(1, 4)))
        if self.chance(0.15):
            lines.append("else:")
            lines += indent(self.block(self._inner(ctx), 1))
        return lines

    def _while(self, ctx: Ctx) -> list[str]:
        inner = self._inner(ctx, loop=True, blocks=ctx.blocks + 1)
        lines = [f"while {self.condition(ctx)}:"]
        lines += indent(self.block(inner, self.rng.randint(1, 3)))
        return lines

    def _try(self, ctx: Ctx) -> list[str]:
        inner = self._inner(ctx, blocks=ctx.blocks + 1)
        lines = ["try:"]
        lines += indent(self.block(inner, self.rng.randint(1, 3)))
        handler = self.pick(["except Exception as e:", "except (RuntimeError, ValueError):"])
        lines.append(str(handler))
        lines += indent(self.block(self._inner(ctx, blocks=ctx.blocks + 1), 1))
        if self.chance(0.3):
            lines.append("finally:")
            lines += indent([self.collective(ctx) if self.chance(0.5) else "pass"])
        return lines

    def _with(self, ctx: Ctx) -> list[str]:
        inner = self._inner(ctx, blocks=ctx.blocks + 1)
        manager = self.pick(
            [
                "torch.no_grad()",
                "model.no_sync()",
                "contextlib.nullcontext()",
                "torch.autocast('cuda')",
                "torch.enable_grad()",
                "lock",
            ]
        )
        head = f"async with {manager}:" if ctx.is_async and self.chance(0.3) else f"with {manager}:"
        return [head, *indent(self.block(inner, self.rng.randint(1, 3)))]

    def _match(self, ctx: Ctx) -> list[str]:
        lines = [f"match {self.pick(['step', 'cfg', 'mode', 'batch', 'rank'])}:"]
        patterns = [
            "case 0:",
            "case 1 | 2:",
            "case 'train':",
            "case [a, b, *rest]:",
            "case {'k': v, **kw}:",
            "case Point(x=0, y=yy):",
            "case str() | bytes():",
            f"case _ if {self.rank_test()}:",
            "case (1, _):",
            "case None:",
        ]
        for pattern in self.rng.sample(patterns, self.rng.randint(1, 4)):
            lines.append(f"    {pattern}")
            lines += indent(indent(self.block(self._inner(ctx), self.rng.randint(1, 2))))
        if self.chance(0.5):
            lines.append("    case _:")
            lines += indent(indent(self.block(self._inner(ctx), 1)))
        return lines

    def _exit(self, ctx: Ctx) -> list[str]:
        options = []
        if ctx.function:
            options += ["return", f"return {self.tensor(ctx)}", "return None"]
        if ctx.loop:
            options += ["break", "continue"]
        options += ["raise RuntimeError('stop')", "raise"]
        return [str(self.pick(options))]

    def _nested_def(self, ctx: Ctx) -> list[str]:
        name = self.fresh("inner")
        inner = Ctx(depth=ctx.depth + 1, function=True, names=["x", *ctx.names[-3:]])
        lines = []
        if self.chance(0.3):
            lines.append(str(self.pick(DECORATORS)))
        lines.append(f"def {name}(x):")
        if self.chance(0.2) and ctx.function:
            lines.append(f"    nonlocal_target = {self.tensor(ctx)}")
        lines += indent(self.block(inner, self.rng.randint(1, 3)))
        lines.append(f"{name}({self.tensor(ctx)})")
        return lines

    # -- definitions -------------------------------------------------------------------------

    def function(self, name: str, compiled: bool, is_async: bool = False) -> list[str]:
        lines = []
        if compiled:
            if self.chance(0.5):
                lines.append(f"@torch.compile({self.compile_kwargs()})")
            else:
                lines.append("@torch.compile")
        elif self.chance(0.3):
            lines.append(str(self.pick(DECORATORS)))
        params = self.pick(
            ["x", "x, y=None", "x, *args, **kwargs", "x, /, flag=False", "x, *, n=2"]
        )
        keyword = "async def" if is_async else "def"
        lines.append(f"{keyword} {name}({params}):")
        ctx = Ctx(function=True, is_async=is_async, names=["x"])
        body = self.block(ctx, self.rng.randint(2, 8))
        if is_async and self.chance(0.7):
            body.insert(0, "await asyncio.sleep(0)")
        if self.chance(0.6):
            body.append(f"return {self.tensor(ctx)}")
        lines += indent(body)
        return lines

    def long_function(self, name: str) -> list[str]:
        ctx = Ctx(function=True, names=["x"])
        body = []
        for _ in range(self.rng.randint(100, 300)):
            body += self.statement(ctx) if self.chance(0.3) else self._assign(ctx)
        return ["@torch.compile", f"def {name}(x):", *indent(body), "    return x"]

    def deep_function(self, name: str) -> list[str]:
        depth = self.rng.randint(20, 60)
        lines = [f"def {name}(x):"]
        for level in range(depth):
            pad = "    " * (level + 1)
            test = self.rank_test() if self.chance(0.5) else f"x > {level}"
            lines.append(f"{pad}if {test}:")
        lines.append("    " * (depth + 1) + "dist.all_reduce(x)")
        lines.append("    return x")
        expression = "x"
        for _ in range(self.rng.randint(10, 40)):
            expression = f"({expression} + 1)"
        lines.append(f"y_{name} = {expression.replace('x', '1', 1)}")
        return lines

    def huge_literal(self) -> list[str]:
        kind = self.rng.randrange(5)
        n = self.rng.randint(500, 5000)
        if kind == 0:
            return ["TABLE = [" + ", ".join(str(i) for i in range(n)) + "]"]
        if kind == 1:
            return ["BIG = " + "9" * self.rng.randint(100, 4000)]
        if kind == 2:
            return ["TEXT = " + repr("ab\\x00é" * n)]
        if kind == 3:
            return ["MAP = {" + ", ".join(f"'k{i}': {i}" for i in range(n // 4)) + "}"]
        return ["CHAIN = x" + "".join(f".a{i}" for i in range(self.rng.randint(50, 400)))]

    def module_class(self, name: str) -> list[str]:
        container = self.pick(
            [
                "nn.ModuleList([nn.Linear(4, 4) for _ in range({n})])",
                "nn.Sequential(*[nn.Linear(4, 4) for _ in range({n})])",
                "nn.ModuleDict({{'a': nn.Linear(4, 4), 'b': nn.ReLU()}})",
                "[nn.Linear(4, 4) for _ in range({n})]",
            ]
        )
        lines = [
            f"class {name}(nn.Module):",
            "    def __init__(self, n=2):",
            "        super().__init__()",
            f"        self.layers = {str(container).format(n=self.rng.randint(1, 6))}",
            "        self.register_buffer('step', torch.zeros(1))",
        ]
        if self.chance(0.3):
            lines.append("        self.register_parameter('p', None)")
        if self.chance(0.3):
            lines.append(f"    @torch.compile({self.compile_kwargs()})")
        lines.append("    def forward(self, x):")
        ctx = Ctx(function=True, method=True, names=["x"])
        body = ["for layer in self.layers:", "    x = layer(x)"]
        body += self.block(ctx, self.rng.randint(1, 5))
        body.append("return x")
        lines += indent(indent(body))
        if self.chance(0.4):
            lines += [
                "    def extra(self, x):",
                *indent(indent(self.block(Ctx(function=True, method=True), 2))),
            ]
        return lines

    def autograd_function(self, name: str) -> list[str]:
        lines = [
            f"class {name}(torch.autograd.Function):",
            "    @staticmethod",
            "    def forward(ctx, x):",
            "        ctx.save_for_backward(x)",
            "        out = x.exp()",
        ]
        if self.chance(0.3):
            lines.append("        out.add_(1)")
        lines.append("        return out")
        if self.chance(0.6):
            lines += [
                "    @staticmethod",
                "    def backward(ctx, grad):",
                "        (x,) = ctx.saved_tensors",
                "        return grad * x.exp()",
            ]
        lines += [
            "@torch.compile",
            f"def apply_{name}(x):",
            f"    return {name}.apply(x)",
        ]
        return lines

    def library(self) -> list[str]:
        ns = self.pick(["mylib", "ops", "ext"])
        op = self.fresh("op")
        self.ops.append(f"{ns}::{op}")
        style = self.rng.randrange(3)
        if style == 0:
            lines = [
                f"lib_{op} = torch.library.Library({ns!r}, 'DEF')",
                f"lib_{op}.define('{op}(Tensor x) -> Tensor')",
                f"def {op}_impl(x):",
                "    return x.clone()",
                f"lib_{op}.impl({op!r}, {op}_impl, 'CPU')",
            ]
        elif style == 1:
            lines = [
                f"@torch.library.custom_op('{ns}::{op}', mutates_args=())",
                f"def {op}(x: torch.Tensor) -> torch.Tensor:",
                "    return x.clone()",
            ]
        else:
            lines = [
                f"torch.library.define('{ns}::{op}', '(Tensor x) -> Tensor')",
                f"@torch.library.impl('{ns}::{op}', 'cpu')",
                f"def {op}_cpu(x):",
                "    return x * 2",
            ]
        if self.chance(0.5):
            lines += [
                f"@torch.library.register_fake('{ns}::{op}')",
                f"def {op}_fake(x):",
                "    return torch.empty_like(x)",
            ]
        if self.chance(0.3):
            lines += [f"torch.library.register_autograd('{ns}::{op}', lambda ctx, g: g)"]
        lines += [
            "@torch.compile",
            f"def use_{op}(x):",
            f"    return torch.ops.{ns}.{op}(x)",
        ]
        return lines

    def main_block(self, functions: list[str]) -> list[str]:
        ctx = Ctx(loop=False, names=["x", "model"])
        body = [
            "dist.init_process_group(backend=os.environ.get('BACKEND', 'nccl'))",
            "rank = dist.get_rank()",
            "model = Net()",
        ]
        wrap = self.pick(
            [
                "model = DDP(model, device_ids=[local_rank])",
                "model = DDP(model, find_unused_parameters=True, broadcast_buffers=False)",
                "model = torch.compile(model{kw})",
                "model = FSDP(model, use_orig_params=False)",
                "model = DDP(torch.compile(model))",
            ]
        )
        kwargs = self.compile_kwargs()
        body.append(str(wrap).format(kw=f", {kwargs}" if kwargs else ""))
        inner = Ctx(depth=1, loop=True, names=["x", "model", "loss"])
        loop = [f"for step in range({self.rng.randint(1, 1000)}):"]
        loop += indent(["loss = model(x).sum()", "loss.backward()"])
        loop += indent(self.block(inner, self.rng.randint(1, 5)))
        for fn in self.rng.sample(functions, min(len(functions), 3)):
            loop += indent([f"{fn}(x)"])
        body += loop
        body += self.block(ctx, 1)
        return ["if __name__ == '__main__':", *indent(body)]

    def module(self, index: int) -> str:
        name = self.modules[index]
        self.budget = self.rng.randint(8, 60)
        lines = list(HEADER)
        others = [m for m in self.modules if m != name]
        for other in self.rng.sample(others, self.rng.randint(0, len(others))):
            lines.append(
                str(
                    self.pick(
                        [f"from . import {other}", f"from .{other} import *", f"import {other}"]
                    )
                )
            )
        lines += [
            "rank = int(os.environ.get('RANK', '0'))",
            "local_rank = int(os.environ.get('LOCAL_RANK', '0'))",
            "",
            "def is_main_process():",
            "    return dist.get_rank() == 0",
            "",
        ]
        functions: list[str] = []
        for _ in range(self.rng.randint(1, 5)):
            kind = self.rng.choices(
                [
                    "function",
                    "compiled",
                    "async",
                    "class",
                    "library",
                    "long",
                    "deep",
                    "literal",
                    "autograd",
                ],
                [4, 5, 1, 2, 1, 0.15, 0.3, 0.3, 0.5],
            )[0]
            name_ = self.fresh("f")
            if kind == "function":
                lines += self.function(name_, compiled=False)
                functions.append(name_)
            elif kind == "compiled":
                lines += self.function(name_, compiled=True)
                functions.append(name_)
            elif kind == "async":
                lines += self.function(name_, compiled=False, is_async=True)
            elif kind == "class":
                lines += self.module_class(self.fresh("Model"))
            elif kind == "library":
                lines += self.library()
            elif kind == "long":
                lines += self.long_function(name_)
            elif kind == "deep":
                lines += self.deep_function(name_)
            elif kind == "autograd":
                lines += self.autograd_function(self.fresh("Fn"))
            else:
                lines += self.huge_literal()
            lines.append("")
        for other in others:  # call into the modules it may import (a cycle when both do)
            if self.chance(0.4) and functions:
                lines += [
                    "@torch.compile",
                    f"def call_{other}(x):",
                    f"    return {other}.helper(x) if hasattr({other}, 'helper') else x",
                ]
        lines += ["def helper(x):", *indent(self.block(Ctx(function=True), 2)), "    return x"]
        lines += ["class Net(nn.Module):", "    def forward(self, x):", "        return x"]
        if self.chance(0.6):
            lines += self.main_block(functions or ["helper"])
        return "\n".join(lines) + "\n"


def indent(lines: list[str]) -> list[str]:
    return ["    " + line if line else line for line in lines]


def program(rng: random.Random) -> dict[str, str]:
    """One project: ``{"__init__.py": ..., "a.py": ..., ...}`` (one to three modules, and
    sometimes a C++ file registering the ops the modules use)."""
    modules = ["a", "b", "c"][: rng.choice([1, 1, 2, 2, 3])]
    generator = Generator(rng, modules)
    files = {"__init__.py": ""}
    for index, name in enumerate(modules):
        files[f"{name}.py"] = generator.module(index)
    if rng.random() < 0.15:
        files["ops.cpp"] = native(rng, generator.ops or ["mylib::op"])
    return files


def native(rng: random.Random, ops: list[str]) -> str:
    """A C++ file with ``TORCH_LIBRARY`` blocks for some of ``ops`` (DL404, DL408)."""
    lines = ["#include <torch/library.h>", "#define NS mylib", ""]
    by_namespace: dict[str, list[str]] = {}
    for op in ops:
        namespace, _, name = op.partition("::")
        by_namespace.setdefault(namespace, []).append(name)
    for namespace, names in by_namespace.items():
        block = rng.choice(["TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT"])
        lines.append(f"{block}({namespace}, m) {{")
        for name in names:
            if rng.random() < 0.7:
                lines.append(f'  m.def("{name}(Tensor x) -> Tensor");')
            if rng.random() < 0.3:
                schema = f"{namespace}::{name}_v2(Tensor x) -> Tensor"
                lines.append(f'  m.def(TORCH_SELECTIVE_SCHEMA("{schema}"));')
        lines.append("}")
        key = rng.choice(["CPU", "CUDA", "Meta", "Autograd", "CompositeImplicitAutograd"])
        lines.append(f"TORCH_LIBRARY_IMPL({namespace}, {key}, m) {{")
        for name in names:
            if rng.random() < 0.6:
                lines.append(f'  m.impl("{name}", &{name}_kernel);  // a "string" in a comment')
        lines.append("}")
    lines.append('/* unterminated R"x( raw */ auto s = R"delim(TORCH_LIBRARY(no, m) {})delim";')
    return "\n".join(lines) + "\n"


def valid(source: str, name: str = "<fuzz>") -> bool:
    """Whether CPython compiles ``source``."""
    try:
        with warnings.catch_warnings():  # invalid escapes: a campaign's output stays readable
            warnings.simplefilter("ignore")
            compile(source, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


MUTATION_TEXT = [
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ":",
    "'",
    '"',
    '"""',
    "\\",
    "\n",
    "\t",
    "#",
    "@",
    "=",
    ".",
    ",",
    "\x00",
    "\r",
    "\x0c",
    "é",
    "\u2028",
    "lambda: ",
    "await ",
    "yield ",
    "*",
    "**",
    "0x",
    "1e9999",
    "'\\N{NOPE}'",
    "'\\x'",
    "match ",
    "case ",
    ":=",
    "# noqa: DL2",
    "# type: ignore",
    "# -*- coding: rot13 -*-\n",
    "\ufeff",
    "9" * 5000,
    "if x:\n",
    "    ",
    "async ",
]


def mutate(rng: random.Random, text: str) -> str:
    """``text`` after a few random edits: mostly no longer valid Python (DL000 input)."""
    for _ in range(rng.randint(1, 4)):
        if not text:
            text = "x"
        start = rng.randrange(len(text))
        end = min(len(text), start + rng.randint(0, 200))
        action = rng.randrange(5)
        if action == 0:
            text = text[:start] + text[end:]
        elif action == 1:
            text = text[:end] + text[start:end] + text[end:]
        elif action == 2:
            text = text[:start] + rng.choice(MUTATION_TEXT) + text[start:]
        elif action == 3:
            lines = text.splitlines(keepends=True)
            if len(lines) > 1:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                text = "".join(lines)
        else:
            text = text[:start] + rng.choice(MUTATION_TEXT) * rng.randint(1, 300) + text[end:]
    return text
