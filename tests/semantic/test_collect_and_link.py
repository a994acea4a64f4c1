"""Collection (one file's summary) and linking (the project's facts), without rules."""

from __future__ import annotations

from distlint.semantic.link import link
from tests.semantic.conftest import summary

STEP = """
import torch
from helpers import scale

@torch.compile(fullgraph=True)
def step(x):
    return scale(x)

def eager(x):
    return scale(x)
"""
HELPERS = """
def scale(x):
    return x * 2
"""


def test_collection_records_functions_exports_and_compile_roots() -> None:
    found = summary(STEP, "train")
    assert sorted(found.functions) == ["train:<module>", "train:eager", "train:step"]
    assert found.exports["scale"] == ("g", "helpers.scale")
    assert found.exports["step"] == ("f", "train:step")


def test_linking_follows_calls_across_modules_into_the_region() -> None:
    facts = link([summary(STEP, "train"), summary(HELPERS, "helpers")])
    assert facts.edges["train:step"] == ("helpers:scale",)
    assert facts.edges["train:eager"] == ("helpers:scale",)
    assert sorted(facts.regions) == ["helpers:scale", "train:step"]
    [root] = facts.roots
    assert (root.target, root.kind, root.fullgraph) == ("train:step", "decorator", True)


def test_linking_is_independent_of_the_order_of_summaries() -> None:
    one = link([summary(STEP, "train"), summary(HELPERS, "helpers")])
    other = link([summary(HELPERS, "helpers"), summary(STEP, "train")])
    assert one.edges == other.edges and one.regions == other.regions


def test_without_the_index_walk_calls_are_not_known() -> None:
    """Collection reads the calls the walk noted: the index is what links call sites."""
    import libcst as cst

    from distlint.file_settings import FileSettings
    from distlint.semantic.collect import Collector
    from distlint.syntax.parsed_file import ParsedFile

    text = STEP.lstrip()
    bare = ParsedFile("train.py", text, cst.parse_module(text), FileSettings(frozenset()), "train")
    facts = link([Collector(bare).collect(), summary(HELPERS, "helpers")])
    assert facts.edges["train:step"] == ()


def test_what_a_call_resolves_to_does_not_depend_on_the_rules_enabled() -> None:
    """DL401-DL404 scan module-level functions ahead of the walk for fake-registering helpers,
    resolving their calls from module scope. The per-node memo then held that answer (None:
    ``u`` is a local import of the function), and the summary lost ``u.Params()`` whenever those
    rules were on: a compiled region of TransformerEngine reached four fewer DL104 findings with
    DL402 selected than without (tests/pytorch/test_torch_compile.py)."""
    from distlint.engine.checker import FileSource, analyze_file
    from distlint.file_settings import FileSettings

    source = (
        b"import torch\n\nSIZES = list(range(2))  # a call of a name, at module level\n\n\n"
        b"def test_traceable(monkeypatch):\n"
        b"    from pkg import util as u\n\n"
        b"    def fn(x, params):\n"
        b"        return u.check(x, params)\n\n"
        b"    params = u.Params()\n"
        b"    torch.compile(fn, fullgraph=True)(torch.ones(1), params)\n"
        b"    return len(params)\n"
    )

    def calls(codes: set[str]) -> list:
        settings = FileSettings(enabled=frozenset(codes))
        result = analyze_file(FileSource(source, "test_c.py", "test_c"), settings)
        assert result.summary is not None
        return result.summary.functions["test_c:test_traceable"].calls

    alone = calls({"DL104"})
    assert ("g", "pkg.util.Params") in alone
    for code in ("DL401", "DL402", "DL403", "DL404"):
        assert calls({"DL104", code}) == alone, code


TRAINER = """
import torch
import torch.distributed as dist
from base import BaseTrainer
from plain import Plain

def predict(model, x):
    return model(x)

class Trainer(BaseTrainer):
    def validate(self, x):
        if dist.get_rank() == 0:
            self.model(x)

class Local(torch.nn.Module):
    def validate(self, x):
        self.head(x)

def main(x):
    trainer = Plain()
    predict(trainer.model, x)
    model = trainer.model
    model(x)
"""


def test_attributes_of_objects_are_recorded_for_the_linker_to_tell_whether_wrapped() -> None:
    """``self.model(x)`` in a class with a base from elsewhere, ``trainer.model`` passed to a
    helper or called through an alias: the base class that wraps may be in another file."""
    from distlint.semantic.model import MEMBER_ARGUMENT

    found = summary(TRAINER, "train")

    def members(function: str) -> list[tuple[str, object]]:
        return [
            (e.name, e.callee)
            for e in _effects(found.functions[function].effects)
            if e.kind == "member"
        ]

    assert members("train:Trainer.validate") == [("model", ("self",))]
    assert members("train:Local.validate") == []  # torch's base keeps no wrapped model
    plain = ("call", ("g", "plain.Plain"))
    main = found.functions["train:main"]
    assert members("train:main") == [("model", plain)]  # model = trainer.model; model(x)
    assert main.passed_members == {"trainer.model": (plain, "model")}
    [call] = [e for e in main.effects if e.kind == "call" and "predict" in str(e.callee)]
    assert dict(call.arguments)["#0"] == MEMBER_ARGUMENT + "trainer.model"


def test_an_attribute_passed_is_not_the_literal_its_text_spells() -> None:
    """A member argument's text (``<member>cfg.mode``) decides no literal test of the callee:
    bound as an unknown expression."""
    from distlint.semantic.bindings import bind, decided_side, forward_arguments
    from distlint.semantic.model import MEMBER_ARGUMENT, Condition, FunctionSummary

    helper = FunctionSummary("m:helper", "helper", "m.py", None, params=("mode",))
    passed = (("#0", MEMBER_ARGUMENT + "cfg.mode"),)
    assert forward_arguments(passed, {}) == passed  # the rank analysis settles it
    bound = bind(helper, forward_arguments(passed, {}, members=False))
    assert bound == {"mode": "<expr>"}
    assert decided_side(Condition(0, compare=("mode", "==", ("<member>cfg.mode",))), bound) is None


def _effects(effects):  # type: ignore[no-untyped-def]
    for effect in effects:
        yield effect
        yield from _effects(effect.body)
        yield from _effects(effect.orelse)


def test_implicit_collectives_are_asked_of_every_call_that_may_be_one() -> None:
    """The collector asks ``implicit_collective`` of a call resolved to a global only where a
    wrapped model, a forward's output or an engine is known (``collect._loud``): a pack's
    collective method on an unresolved receiver and a wrapped model's forward, backward and
    ``generate`` are still seen; ``torch.relu(x)`` beside no wrapped model is no collective."""
    found = summary(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        def step(accelerator, net, x):
            torch.relu(x)
            accelerator.wait_for_everyone()
            model = DDP(net)
            out = model(x)
            out.backward()

        def generate(net, x):
            model = FSDP(net)
            return model.generate(x)
        """
    )
    kinds = [
        (effect.kind, effect.text)
        for function in found.functions.values()
        for effect in function.effects
        if effect.kind == "implicit"
    ]
    assert kinds == [
        ("implicit", "accelerator.wait_for_everyone(...)"),
        ("implicit", "model(...)"),
        ("implicit", "out.backward(...)"),
        ("implicit", "model.generate(...)"),
    ]


def test_a_check_repeated_after_the_same_top_level_raise_is_never_taken() -> None:
    """``_raised_before``: the first top-level ``if test: raise`` of a function keeps its test
    unspelled until another could match it; the repeated checks (nested, with the operands of
    ``and`` swapped, or at the top level again) are still found, other tests are not."""
    found = summary(
        """
        import torch.distributed as dist

        def first_only(cfg):
            if cfg.x is None:
                raise ValueError("x")
            if dist.get_rank() == 0:
                if cfg.y is None:
                    raise ValueError("y")

        def repeated(cfg, a, b):
            if cfg.x is None:
                raise ValueError("x")
            if dist.get_rank() == 0:
                if cfg.x  is  None:
                    raise ValueError("again")
                if b and a:
                    raise ValueError("b and a")
            if a and b:
                raise ValueError("a and b")
            if cfg.x is None:
                raise ValueError("x again")
        """
    )

    def guards(name: str) -> list[str]:
        pending = list(found.functions[f"m:{name}"].effects)
        names = []
        while pending:
            effect = pending.pop(0)
            if effect.kind == "branch":
                names.append(effect.name)
            pending += effect.body
        return names

    assert guards("first_only") == ["", "", ""]
    assert guards("repeated") == ["", "", "", "never", "never", ""]


def test_attributes_are_read_from_every_method_that_assigns_them() -> None:
    """Only the methods that assign ``self.<attr>`` (and ``__init__``) get a scope to evaluate
    them in: an attribute set outside ``__init__`` (a parameter, a local's value) is still
    recorded, and a method assigning nothing changes nothing."""
    found = summary(
        """
        import torch

        class Trainer:
            def __init__(self):
                self.net = torch.nn.Linear(1, 1)

            def forward(self, x):
                return self.net(x)

            def setup(self, fn):
                compiled = torch.compile(self.net)
                self.compiled = compiled
                self.fn = fn
        """
    )
    attributes = found.classes["m:Trainer"].attributes
    assert attributes == {
        "net": ("call", ("g", "torch.nn.Linear")),
        "compiled": ("call", ("g", "torch.compile")),
        "fn": ("param", "m:Trainer.setup", "fn"),
    }


def test_wrapped_attributes_are_read_from_the_wrapping_assignments() -> None:
    """``_wrapped_attributes`` tracks only the ``self.<attr> = <wrapping call>`` assignments
    (the others would note nothing it keeps): a model wrapped among plain assignments, a DDP
    module with the local it wraps, a quiet DDP and an FSDP2 ``fully_shard`` are all found."""
    found = summary(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, fully_shard

        class Net(torch.nn.Module):
            pass

        class Trainer:
            def __init__(self, cfg):
                self.cfg = cfg
                self.steps = 0
                net = Net()
                self.model = DDP(net)
                self.loss = self.model(cfg)
                self.quiet = DDP(Net(), broadcast_buffers=False)
                self.sharded = FSDP(Net())

            def setup(self):
                self.head = Net()
                fully_shard(self.head)
        """
    )
    trainer = found.classes["m:Trainer"]
    assert trainer.wrapped_attributes == ("head", "model", "sharded")
    assert trainer.ddp_attributes == {"model": ("call", ("f", "m:Net"))}


def test_calls_that_run_only_in_eager_mode_are_not_traced() -> None:
    """``_tests_compiling`` asks ``eager_operands`` only of statements with an
    ``is_compiling()`` call: the eager operand is still found through an alias, under
    ``not`` and after ``or`` (and in an ``if`` test); calls elsewhere stay traced."""
    found = summary(
        """
        import torch
        from torch.compiler import is_compiling as compiling

        def helper():
            pass

        def other():
            pass

        def step(x):
            ok = not compiling() and helper()
            done = torch.compiler.is_compiling() or helper()
            if not torch._dynamo.is_compiling() and helper():
                pass
            runner = lambda: not compiling() and helper()
            return other() and helper()
        """
    )
    calls = found.functions["m:step"].calls
    assert calls.count(("f", "m:helper")) == 1  # only ``other() and helper()``
    assert ("f", "m:other") in calls
