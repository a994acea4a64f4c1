"""Compiled regions: every root form distlint recognises, options per root, cut-outs, negatives."""

from __future__ import annotations

from pathlib import Path

from tests.project_util import check_sources, facts_of


def roots(tmp_path: Path, files: dict[str, str], **extra: object) -> dict[str, tuple]:
    facts = facts_of(tmp_path, files, **extra)
    return {
        r.target.split(":", 1)[1]: (r.kind, r.fullgraph, r.mode, r.dynamic) for r in facts.roots
    }


def region_names(tmp_path: Path, files: dict[str, str], **extra: object) -> set[str]:
    facts = facts_of(tmp_path, files, **extra)
    return {f.split(":", 1)[1] for f in facts.regions}


def test_decorator_forms_bare_called_and_aliased(tmp_path: Path) -> None:
    found = roots(
        tmp_path,
        {
            "m.py": """
            import torch
            from torch import compile as tc
            import torch as t
            jit_fuser = torch.compile

            @torch.compile
            def bare(x): return x

            @torch.compile(fullgraph=True, mode="max-autotune", dynamic=False, backend="eager")
            def called(x): return x

            @t.compile()
            def via_alias(x): return x

            @tc
            def from_import(x): return x

            @jit_fuser
            def fuser(x): return x
            """
        },
    )
    assert found == {
        "bare": ("decorator", False, None, None),
        "called": ("decorator", True, "max-autotune", False),
        "via_alias": ("decorator", False, None, None),
        "from_import": ("decorator", False, None, None),
        "fuser": ("decorator", False, None, None),
    }


def test_partial_and_auto_detected_wrappers_across_modules(tmp_path: Path) -> None:
    found = roots(
        tmp_path,
        {
            "pkg/__init__.py": "from .compiling import compile_fg, maybe_compile\n",
            "pkg/compiling.py": """
            import functools
            import torch

            compile_fg = functools.partial(torch.compile, fullgraph=True)

            def maybe_compile(fn):
                return torch.compile(fn, mode="reduce-overhead")
            """,
            "pkg/model.py": """
            import functools
            import torch
            from pkg import compile_fg, maybe_compile

            @compile_fg
            def a(x): return x

            @maybe_compile
            def b(x): return x

            @functools.partial(torch.compile, dynamic=True)
            def c(x): return x
            """,
        },
    )
    assert found == {
        "a": ("decorator", True, None, None),
        "b": ("decorator", False, "reduce-overhead", None),
        "c": ("decorator", False, None, True),
    }


def test_configured_compile_wrapper(tmp_path: Path) -> None:
    files = {
        "m.py": """
        from mylib.jit import fuse

        @fuse
        def f(x): return x
        """
    }
    assert roots(tmp_path / "off", files) == {}
    found = roots(tmp_path / "on", files, compile_wrappers=("mylib.jit.fuse",))
    assert found == {"f": ("decorator", False, None, None)}


def test_call_forms_function_module_method_and_blocks(tmp_path: Path) -> None:
    found = roots(
        tmp_path,
        {
            "model.py": """
            import torch
            import torch.nn as nn

            class Block(nn.Module):
                def forward(self, x): return x

            class Head(nn.Module):
                def forward(self, x): return x
                def score(self, x): return x

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([Block() for _ in range(4)])
                    self.head = Head()
                def forward(self, x): return self.head(x)
                def loss_fn(self, x): return x
                def compile_parts(self):
                    self.head = torch.compile(self.head)
                    self.loss = torch.compile(self.loss_fn, fullgraph=True)
            """,
            "train.py": """
            import torch
            from model import Net, Head

            def helper(x): return x

            def main():
                f2 = torch.compile(helper, dynamic=True)
                model = Net()
                model = torch.compile(model)
                head = Head()
                head.compile(mode="max-autotune")
                scorer = torch.compile(head.score)
                for blk in model.layers:
                    blk.compile(fullgraph=True)
            """,
        },
    )
    assert found == {
        "helper": ("call", False, None, True),
        "Net.forward": ("module", False, None, None),
        "Head.forward": ("method", False, "max-autotune", None),
        "Head.score": ("call", False, None, None),
        "Block.forward": ("block", True, None, None),
        "Net.loss_fn": ("call", True, None, None),
    }


def test_torch_compile_of_self_attribute_instance(tmp_path: Path) -> None:
    found = roots(
        tmp_path,
        {
            "m.py": """
            import torch
            import torch.nn as nn

            class Block(nn.Module):
                def forward(self, x): return x

            class Trainer:
                def __init__(self):
                    self.block = Block()
                    self.compiled = torch.compile(self.block, fullgraph=True)
            """
        },
    )
    assert found == {"Block.forward": ("module", True, None, None)}


def test_regions_follow_calls_and_stop_at_disabled_functions(tmp_path: Path) -> None:
    names = region_names(
        tmp_path,
        {
            "util.py": """
            import torch

            def leaf(x): return x

            def helper(x): return leaf(x)

            @torch.compiler.disable
            def logged(x):
                return leaf2(x)

            @torch._dynamo.disable
            def logged2(x): return x

            @torch._disable_dynamo
            def logged3(x): return leaf2(x)

            @torch.library.custom_op("t::op", mutates_args=())
            def op(x: torch.Tensor) -> torch.Tensor:
                return leaf2(x)

            def leaf2(x): return x
            """,
            "main.py": """
            import torch
            from util import helper, logged, logged2, logged3, op

            @torch.compile
            def step(x):
                y = helper(x)
                logged(y)
                logged3(y)
                if not torch.compiler.is_compiling():
                    helper2(y)
                return logged2(op(y))

            def helper2(x):
                return x

            def eager(x):
                return helper(x)
            """,
        },
    )
    assert names == {"step", "helper", "leaf"}


def test_regions_stop_at_functions_a_project_decorator_disables(tmp_path: Path) -> None:
    """A project decorator that hands functions to ``torch.compiler.disable`` (itself, through
    a helper, or from a factory, TransformerEngine's ``@no_torch_dynamo(when=...)``) cuts them
    out; one that does not disable leaves them compiled."""
    names = region_names(
        tmp_path,
        {
            "jit.py": """
            import functools
            import torch

            def eager_only(f):
                return torch.compiler.disable(f)

            def no_dynamo(recursive=True, when=None):
                def _disable(f):
                    return torch._dynamo.disable(f, recursive=recursive)

                def decorator(f):
                    disabled = _disable(f)

                    @functools.wraps(f)
                    def wrapper(*args, **kwargs):
                        if when is None or when(kwargs) is not None:
                            return disabled(*args, **kwargs)
                        return f(*args, **kwargs)

                    return wrapper

                return decorator

            def timed(f):
                @functools.wraps(f)
                def wrapper(*args, **kwargs):
                    return f(*args, **kwargs)

                return wrapper
            """,
            "main.py": """
            import torch
            from jit import eager_only, no_dynamo, timed

            @eager_only
            def a(x): return x

            @no_dynamo()
            def b(x): return x

            @no_dynamo(when=lambda call: None)
            def c(x): return x

            @timed
            def d(x): return x

            @torch.compile
            def step(x):
                return a(b(c(d(x))))
            """,
        },
    )
    assert names == {"step", "d"}


def test_negatives_strings_disable_and_other_compiles(tmp_path: Path) -> None:
    names = region_names(
        tmp_path,
        {
            "m.py": """
            import re
            import torch

            def mentions():
                return "torch.compile(model)"

            @torch.compiler.disable
            def disabled(x): return x

            def regex():
                pattern = re.compile("a+")
                return pattern

            @torch.no_grad()
            def evaluate(x): return x
            """
        },
    )
    assert names == set()


def test_region_roots_are_related_locations_with_options(tmp_path: Path) -> None:
    facts = facts_of(
        tmp_path,
        {
            "m.py": """
            import torch

            def shared(x): return x

            @torch.compile(fullgraph=True)
            def a(x): return shared(x)

            @torch.compile
            def b(x): return shared(x)
            """
        },
    )
    region = facts.region_of("m:shared")
    assert region is not None and region.fullgraph and not region.direct
    assert [(r.path, r.span.start.line, r.label) for r in region.roots] == [
        ("m.py", 6, "compiled (fullgraph=True)"),
        ("m.py", 9, "compiled"),
    ]
    assert [loc.message for loc in region.related] == ["compiled (fullgraph=True)", "compiled"]
    assert facts.region_of("m:a").direct  # type: ignore[union-attr]


def test_module_chains_keep_the_compiled_module(tmp_path: Path) -> None:
    """``GPT(cfg).to(device)``, ``.cuda().train()``, ``.half()``: nn.Module's own methods return
    the module, so the compile root is still its forward (and what it calls)."""
    files = {
        "m.py": """
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def forward(self, x): return x

        class GPT(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.h = nn.ModuleList([Block() for _ in range(cfg)])

            def forward(self, x):
                for block in self.h:
                    x = block(x)
                return x

        class Head(nn.Module):
            def forward(self, x): return x

        def main(cfg, device):
            model = GPT(cfg).to(device)
            return torch.compile(model)

        class Trainer:
            def __init__(self, cfg):
                self.model = Head().cuda().train()

            def setup(self):
                self.model = torch.compile(self.model)

        def factory(cfg):
            return torch.compile(GPT(cfg).half().requires_grad_(False))

        def not_a_module(x):
            return torch.compile(x.numpy().astype("f"))
        """
    }
    assert roots(tmp_path, files) == {
        "GPT.forward": ("module", False, None, None),
        "Head.forward": ("module", False, None, None),
    }
    assert region_names(tmp_path, files) == {"GPT.forward", "Block.forward", "Head.forward"}


def test_function_compiled_through_a_global_declaration(tmp_path: Path) -> None:
    files = {
        "m.py": """
        import torch

        def step(x): return x

        def helper(x): return x

        def setup():
            global step
            step = torch.compile(step, fullgraph=True)

        def local_only():
            helper = torch.compile(helper)  # UnboundLocalError at run time: not a root
        """
    }
    assert roots(tmp_path, files) == {"step": ("call", True, None, None)}


ARGUMENT_REGIONS = {
    "kernels.py": """
    import torch

    def fill_cpu(counts):
        return [c.item() for c in counts]

    def fill_gpu(counts):
        return torch.cumsum(counts, 0)

    def fill_sorted(counts):
        return torch.sort(counts).values

    def permute(counts, use_cpu: bool = False, mode: str = "plain"):
        if use_cpu:
            return fill_cpu(counts)
        if mode == "sorted":
            return fill_sorted(counts)
        return fill_gpu(counts)
    """,
    "train.py": """
    import torch
    from kernels import permute

    @torch.compile(fullgraph=True)
    def step(counts):
        return permute(counts)

    def eager_reference(counts):
        return permute(counts, use_cpu=True)
    """,
}


def test_a_helper_called_only_under_a_branch_the_arguments_rule_out_is_not_compiled(
    tmp_path: Path,
) -> None:
    """torchao: ``fill_indices_cpu`` runs only under ``if use_cpu:``, and no compiled caller
    passes ``use_cpu=True`` (the default is False): it is not in the region."""
    found = region_names(tmp_path, ARGUMENT_REGIONS)
    assert {"step", "permute", "fill_gpu"} <= found
    assert "fill_cpu" not in found and "fill_sorted" not in found


def test_arguments_that_select_the_branch_keep_the_helper_compiled(tmp_path: Path) -> None:
    files = dict(ARGUMENT_REGIONS)
    both = 'return permute(counts, True) + permute(counts, mode="sorted")\n'
    files["train.py"] = files["train.py"].replace("return permute(counts)\n", both)
    assert {"fill_cpu", "fill_sorted", "fill_gpu"} <= region_names(tmp_path, files)


def test_an_unpacked_call_or_a_compiled_function_own_parameter_decides_nothing(
    tmp_path: Path,
) -> None:
    """``permute(counts, **options)`` may pass ``use_cpu``; a root's own ``use_cpu`` comes
    from its compiled callers, which are not followed."""
    files = dict(ARGUMENT_REGIONS)
    files["train.py"] = files["train.py"].replace(
        "def step(counts):\n        return permute(counts)\n",
        "def step(counts, **options):\n        return permute(counts, **options)\n",
    )
    assert "fill_cpu" in region_names(tmp_path, files)
    files["train.py"] = ARGUMENT_REGIONS["train.py"].replace(
        "def step(counts):\n        return permute(counts)\n",
        "def step(counts, use_cpu=False):\n        return permute(counts, use_cpu)\n",
    )
    assert "fill_cpu" in region_names(tmp_path, files)


# -- statements on a side of a parameter test that no compiled call takes ---------------------

SIDE_REGIONS = {
    "mesh.py": """
    import torch

    def smooth(points, n_iter, convergence: float = 0.0, use_cpu=False, max_len=None):
        for _ in range(n_iter):
            points = points * 0.5
            if convergence > 0:
                if points.abs().max() < convergence:
                    break
        if not use_cpu:
            points = points + 1
        else:
            print("host path")
        if max_len is None:
            max_len = int(points.sum().item())
        return points * max_len
    """,
    "train.py": """
    import torch
    from mesh import smooth

    @torch.compile
    def step(points):
        return smooth(points, 3, max_len=points.shape[0])
    """,
}


def side_findings(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int]]:
    return side_findings_of(tmp_path, files, "mesh.py")


def side_findings_of(tmp_path: Path, files: dict[str, str], path: str) -> list[tuple[str, int]]:
    results = check_sources(tmp_path, files, ["DL101", "DL102", "DL104", "DL105"])
    return sorted((f.code, f.span.start.line) for f in results[path].findings)


def test_statements_on_a_side_no_compiled_call_takes_are_not_compiled(tmp_path: Path) -> None:
    """physicsnemo: ``if convergence > 0:`` with the default 0.0 from the only compiled
    caller; ``if not use_cpu:`` … ``else``; ``if max_len is None:`` when every compiled caller
    passes it (TransformerEngine's ``max_seqlen_q``)."""
    assert side_findings(tmp_path, SIDE_REGIONS) == []


def test_a_compiled_call_that_takes_the_side_keeps_it_compiled(tmp_path: Path) -> None:
    files = dict(SIDE_REGIONS)
    files["train.py"] += """
    @torch.compile
    def careful(points):
        return smooth(points, 3, convergence=0.1, use_cpu=True)
    """
    assert side_findings(tmp_path, files) == [
        ("DL101", 8),
        ("DL102", 15),
        ("DL104", 13),
        ("DL105", 5),
    ]


def test_unknown_bindings_decide_no_statement(tmp_path: Path) -> None:
    """The helper compiled itself (its parameters come from its compiled callers), or called
    with ``**options``: nothing is decided."""
    files = dict(SIDE_REGIONS)
    files["train.py"] += "\n    smooth_compiled = torch.compile(smooth)\n"
    assert len(side_findings(tmp_path, files)) == 4
    files = dict(SIDE_REGIONS)
    files["train.py"] = files["train.py"].replace(
        "def step(points):\n        return smooth(points, 3, max_len=points.shape[0])",
        "def step(points, **options):\n        return smooth(points, 3, **options)",
    )
    assert len(side_findings(tmp_path, files)) == 4


def test_statements_after_a_taken_early_return_are_not_compiled(tmp_path: Path) -> None:
    """physicsnemo: the only compiled caller passes ``assume_convex=True``, and the helper
    returns under ``if assume_convex:`` before the host check."""
    files = {
        "mesh.py": """
        import torch

        def triangulate(points, assume_convex=False):
            if assume_convex:
                return points * 2
            if bool((points < 0).any()):
                print("non-convex")
            return points
        """,
        "train.py": """
        import torch
        from mesh import triangulate

        @torch.compile
        def fan(points):
            return triangulate(points, assume_convex=True)
        """,
    }
    assert side_findings(tmp_path, files) == []
    files["train.py"] = files["train.py"].replace("assume_convex=True", "assume_convex=False")
    assert side_findings(tmp_path, files) == [("DL102", 7), ("DL104", 8)]


def test_a_lambda_handed_to_a_compile_wrapper_is_a_root_with_its_arguments(tmp_path: Path) -> None:
    """TransformerEngine's tests: ``_maybe_compile(lambda inp, p: unpermute(inp, p,
    map_type="index"), flag)``. The lambda is compiled, so what it calls is, with the
    arguments it passes (here they select the ``index`` side)."""
    files = {
        "perm.py": """
        import warnings
        import torch

        def unpermute(inp, probs=None, map_type="mask", old_probs=None):
            if old_probs is not None:
                warnings.warn("old_probs is deprecated")
            if map_type == "index":
                if probs is not None:
                    print("index map with probs")
            return inp
        """,
        "test_perm.py": """
        import torch
        from perm import unpermute

        def maybe_compile(fn, use_compile):
            if use_compile:
                return torch.compile(fn, fullgraph=True)
            return fn

        def test_index(use_compile=True):
            run = maybe_compile(lambda inp, p: unpermute(inp, p, map_type="index"), use_compile)
            return run

        direct = torch.compile(lambda x: unpermute(x) + 1)
        """,
    }
    results = check_sources(tmp_path, files, ["DL104"])
    assert [(f.code, f.span.start.line) for f in results["perm.py"].findings] == [("DL104", 10)]
    assert {"test_index.<locals>.<lambda0>", "<lambda1>", "unpermute"} <= region_names(
        tmp_path, files
    )


def test_a_class_valued_config_field_builds_one_of_the_classes_it_is_given(
    tmp_path: Path,
) -> None:
    """``self.mlp = config.mlp_class(config)``: the classes the field gets as a dataclass
    default or a keyword argument anywhere are the candidates; a field also given something
    that is not a class decides nothing."""
    files = {
        "model.py": """
        import torch
        from torch import nn

        class MLP(nn.Module):
            def forward(self, x):
                return x

        class SwiGLU(nn.Module):
            def forward(self, x):
                return x

        class Block(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.mlp = config.mlp_class(config)
                self.norm = config.norm_class(4)

            def forward(self, x):
                return self.norm(self.mlp(x))
        """,
        "config.py": """
        from dataclasses import dataclass
        from model import MLP, SwiGLU, helper_factory

        @dataclass
        class Config:
            mlp_class: type = MLP
            norm_class: type = MLP

        LARGE = Config(mlp_class=SwiGLU, norm_class=helper_factory)
        """,
        "train.py": """
        import torch
        from model import Block

        def main(cfg):
            return torch.compile(Block(cfg).cuda())
        """,
    }
    files["model.py"] += """
        def helper_factory(n):
            return n
    """
    found = region_names(tmp_path, files)
    assert {"Block.forward", "MLP.forward", "SwiGLU.forward"} <= found
    assert "helper_factory" not in found


def test_a_junction_of_parameter_tests_is_decided_part_by_part(tmp_path: Path) -> None:
    """physicsnemo's ``scatter_tensor``: ``if global_shape is None or dtype is None:`` (the
    metadata broadcast) when every compiled caller passes both; an ``and`` with one part
    ruled out is ruled out."""
    files = {
        "ops.py": """
        import torch

        def scatter(t, global_shape=None, dtype=None, verbose=False, level=0):
            if global_shape is None or dtype is None:
                print("broadcasting metadata")
            if verbose and level > 1:
                print("verbose")
            if verbose or level > 1:
                print("either")
            return t
        """,
        "train.py": """
        import torch
        from ops import scatter

        @torch.compile
        def step(t):
            return scatter(t, t.shape, t.dtype, level=2)
        """,
    }
    assert side_findings_of(tmp_path, files, "ops.py") == [("DL104", 10)]
    files["train.py"] = files["train.py"].replace("t.shape, t.dtype, level=2", "t.shape")
    assert side_findings_of(tmp_path, files, "ops.py") == [("DL104", 6)]


CONTAINERS = """
import torch
from torch import nn
from blocks import Block, Head, Expert, Unused

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(2)])
        self.heads = nn.ModuleDict({"a": Head()})
        self.experts = nn.ModuleList([Expert() for _ in range(2)])
        self.unused = nn.ModuleDict({"u": Unused()})

    def forward(self, x):
        x = self.blocks(x)
        for name, head in self.heads.items():
            x = head(x)
        names = list(self.unused.keys())
        return torch.stack([expert(x) for expert in self.experts])

net = torch.compile(Net())
"""
BLOCKS = """
from torch import nn

class Block(nn.Module):
    def forward(self, x): return x

class Head(nn.Module):
    def forward(self, x): return x

class Expert(nn.Module):
    def forward(self, x): return x

class Unused(nn.Module):
    def forward(self, x): return x
"""


def test_children_of_module_containers_are_compiled_where_the_forward_runs_them(
    tmp_path: Path,
) -> None:
    """An ``nn.Sequential`` called, an ``nn.ModuleDict``'s ``items()``/``values()`` iterated,
    an ``nn.ModuleList`` iterated in a comprehension: each child's forward is inlined (the DL101
    proof shows a break in each). A container whose children are never called is not."""
    found = region_names(tmp_path, {"net.py": CONTAINERS, "blocks.py": BLOCKS})
    assert found == {"Net.forward", "Block.forward", "Head.forward", "Expert.forward"}


def test_a_comprehension_variable_shadows_an_outer_name(tmp_path: Path) -> None:
    source = """
    import torch
    from blocks import Block, Head

    def step(x, blocks):
        head = Head()
        return [head(x) for head in blocks]

    def other(x):
        head = Head()
        return head(x)

    compiled = torch.compile(step)
    """
    assert region_names(tmp_path, {"m.py": source, "blocks.py": BLOCKS}) == {"step"}


def test_a_function_compiled_into_its_own_name_is_the_root(tmp_path: Path) -> None:
    """``update = torch.compile(update)`` after ``def update``: the def binds the name too
    (torchrl's scripts compile their update step so, under a configuration flag)."""
    source = """
    import torch

    def main(cfg):
        def update(td):
            return td.sum()

        if cfg.compile:
            update = torch.compile(update, mode="default")
        return update

    def step(x):
        return x

    step = torch.compile(step)
    """
    assert roots(tmp_path, {"m.py": source}) == {
        "main.<locals>.update": ("call", False, "default", None),
        "step": ("call", False, None, None),
    }


def test_a_parameter_compiled_is_what_its_callers_pass(tmp_path: Path) -> None:
    """``def check_compile(model): torch.compile(model, fullgraph=True)`` called with
    ``Net()`` (or a name bound to it) compiles ``Net.forward``; a compile wrapper's own site
    (``return torch.compile(fn)``) is not a root: its call sites are."""
    source = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x): return x

    def check_compile(model, x):
        return torch.compile(model, fullgraph=True)(x)

    def maybe_compile(fn):
        return torch.compile(fn, backend="eager")

    def step(x): return x

    def test_net():
        check_compile(Net(), 1)
        net = Net()
        check_compile(net, 1)

    fast = maybe_compile(step)
    """
    facts = facts_of(tmp_path, {"m.py": source})
    found = sorted((r.target.split(":", 1)[1], r.span.start.line) for r in facts.roots)
    assert found == [("Net.forward", 9), ("step", 21)]
    assert facts.unresolved == []


def test_a_parameter_compiled_before_it_is_reassigned_is_what_callers_pass(
    tmp_path: Path,
) -> None:
    """``def setup(self, model): if inductor: model = torch.compile(model) else: model =
    other_jit(model)``: the compiled model is the caller's ``Net``, not what the other branch
    assigns later (thunder's benchmark compiled its own jit through that union)."""
    source = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x): return x

    def other_jit(fn):
        def wrapped(*a): return fn(*a)
        return wrapped

    class Bench:
        def __init__(self, backend):
            self.backend = backend
            self.model = self.setup(Net())

        def setup(self, model):
            if self.backend == "inductor":
                model = torch.compile(model)
            else:
                model = other_jit(model)
            return model
    """
    assert region_names(tmp_path, {"m.py": source}) == {"Net.forward"}


def test_helpers_called_only_by_a_short_circuit_in_eager_mode_are_not_compiled(
    tmp_path: Path,
) -> None:
    """``if not is_compiling() and not safe_capturing():`` calls its helper only in eager mode
    (torchrl's stream-capture probe, whose exception handler warns), as does ``is_compiling()
    or noisy()``; a helper in the other operand, or called plainly, is compiled."""
    source = """
    import torch
    from torch.compiler import is_compiling

    def safe_capturing(): return False
    def noisy(): return True
    def cheap(): return True
    def plain(): return True

    @torch.compile
    def step(x):
        if not is_compiling() and not safe_capturing():
            x = x + 1
        flag = is_compiling() or noisy()
        other = cheap() and not is_compiling()
        return plain()
    """
    assert region_names(tmp_path, {"m.py": source}) == {"step", "cheap", "plain"}


def test_project_functions_testing_is_compiling_are_predicates_across_modules(
    tmp_path: Path,
) -> None:
    """A function whose body returns a test of ``is_compiling()`` tells what the test tells:
    ``not is_dynamo_compiling() and x`` is false while Dynamo traces, ``is_dynamo_compiling()
    or x`` true. A ``return False`` variant of the same def (``except ImportError:``) agrees
    with either; any other body, or variants that disagree, tell nothing."""
    checks = """
    import torch
    from torch.compiler import is_dynamo_compiling

    try:
        def exporting():
            \"\"\"Non-strict export.\"\"\"
            return not is_dynamo_compiling() and torch.compiler.is_compiling()
    except ImportError:
        def exporting():
            return False

    def pt2():
        return is_dynamo_compiling() or torch.compiler.is_compiling()

    def flagged():
        return torch.cuda.is_available()

    def two_steps():
        value = is_dynamo_compiling()
        return value

    if torch.cuda.is_available():
        def disagree():
            return is_dynamo_compiling()
    else:
        def disagree():
            return not is_dynamo_compiling()
    """
    facts = facts_of(tmp_path, {"pkg/__init__.py": "", "pkg/checks.py": checks})
    sides = {
        name: facts.compiling_sides_of(f"pkg.checks.{name}")
        for name in ("exporting", "pt2", "flagged", "two_steps", "disagree", "missing")
    }
    assert sides == {
        "exporting": (False, None),
        "pt2": (None, False),
        "flagged": None,
        "two_steps": None,
        "disagree": None,
        "missing": None,
    }


def test_host_calls_under_project_predicates_follow_what_dynamo_traces(tmp_path: Path) -> None:
    """DL104 reads a predicate defined in another module: silent on the side Dynamo never
    takes (torchrec's export warning), reported on the side it always takes."""
    files = {
        "pkg/__init__.py": "",
        "pkg/checks.py": """
        from torch.compiler import is_dynamo_compiling, is_compiling

        def exporting():
            return not is_dynamo_compiling() and is_compiling()
        """,
        "pkg/model.py": """
        import logging
        import torch
        from pkg.checks import exporting

        @torch.compile
        def to_dict(x):
            if exporting():
                logging.warning("slow")
            if not exporting():
                logging.warning("traced")
            return x
        """,
    }
    results = check_sources(tmp_path, files, enabled={"DL104"})
    assert [f.span.start.line for f in results["pkg/model.py"].findings] == [11]
