"""DL303: DDP with ``bucket_cap_mb`` below 1 under ``torch.compile``.

Observed on torch 2.13.0 with 2 gloo ranks (tests/proof/test_proof_ddp.py, fixtures/DL303):
DDPOptimizer splits the graph at bucket boundaries and fails with ``AssertionError: First
bucket should be smaller/equal to other buckets to get comms warmed up ASAP``. File-scope: the
DDP call and the compile call are looked up in the same file.
"""

from __future__ import annotations

import libcst as cst

from distlint.findings import Severity
from distlint.rules._ddp import first_arg
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.collectives import DDP_CLASS
from distlint.semantic.regions import is_literal, literal_value
from distlint.syntax.walker import keyword_arg

OPTIMIZE_DDP = "torch._dynamo.config.optimize_ddp"
CONFIG_PATCH = frozenset({"torch._dynamo.config.patch"})


class DdpSmallBucketCompile(Rule):
    code = "DL303"
    name = "ddp-small-bucket-compile"
    severity = Severity.ERROR
    summary = (
        "DDP with bucket_cap_mb below 1 under torch.compile fails with an AssertionError in "
        "DDPOptimizer."
    )
    tags = ("correctness", "torch.compile", "ddp")
    precision = "high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # A finding needs a literal `bucket_cap_mb=` keyword: other files are skipped at once
        # (no handler of this rule is called for them).
        self.active = "bucket_cap_mb" in ctx.source

    def visit_Module(self, node: cst.Module) -> None:
        self._small: list[tuple[cst.Call, cst.Arg, set[str]]] = []
        self._compiled_names: set[str] = set()
        self._compiled_calls: set[int] = set()  # id() of DDP calls passed to torch.compile
        self._disabled = False

    def visit_Call(self, node: cst.Call) -> None:
        resolved = self.ctx.resolve(node.func)
        if resolved == DDP_CLASS:
            arg = keyword_arg(node, "bucket_cap_mb")
            if arg is None:
                return
            value = literal_value(arg.value)
            if (
                not is_literal(value)
                or isinstance(value, bool)
                or not isinstance(value, (int, float))
            ):
                return
            if not 0 < value < 1:
                return
            names = set()
            module = first_arg(node)
            if isinstance(module, cst.Name):
                names.add(module.value)
            elif isinstance(module, cst.Call) and self.ctx.compiles(self.ctx.resolve(module.func)):
                self._compiled_calls.add(id(node))
            target = self._assigned_to(node)
            if target is not None:
                names.add(target)
            self._small.append((node, arg, names))
        elif self.ctx.compiles(resolved):
            compiled = first_arg(node, "model")
            if isinstance(compiled, cst.Name):
                self._compiled_names.add(compiled.value)
            elif isinstance(compiled, cst.Call):
                self._compiled_calls.add(id(compiled))
            target = self._assigned_to(node)
            if target is not None:  # compiled = torch.compile(net); DDP(compiled, ...)
                self._compiled_names.add(target)
        elif resolved in CONFIG_PATCH:
            arg = keyword_arg(node, "optimize_ddp")
            if arg is not None and literal_value(arg.value) is False:
                self._disabled = True
        elif isinstance(receiver := self.ctx.module_compile_receiver(node), cst.Name):
            self._compiled_names.add(receiver.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if (
                self.ctx.resolve(target.target) == OPTIMIZE_DDP
                and literal_value(node.value) is False
            ):
                self._disabled = True

    def _assigned_to(self, call: cst.Call) -> str | None:
        parents = self.ctx.parents
        for parent in reversed(parents):
            if isinstance(parent, cst.Assign):
                if parent.value is call and len(parent.targets) == 1:
                    target = parent.targets[0].target
                    return target.value if isinstance(target, cst.Name) else None
                return None
            if isinstance(parent, cst.BaseStatement):
                return None
        return None

    def leave_Module(self, original_node: cst.Module) -> None:
        if self._disabled:
            return
        for call, arg, names in self._small:
            if id(call) not in self._compiled_calls and not names & self._compiled_names:
                continue
            self.report(
                arg,
                f"`{self.ctx.module.code_for_node(arg).strip().rstrip(',')}` with "
                "`torch.compile`: DDPOptimizer splits the graph at bucket boundaries and fails "
                "with `AssertionError: First bucket should be smaller/equal to other buckets "
                "to get comms warmed up ASAP` when the bucket is below 1 MiB. Keep "
                "`bucket_cap_mb` at 1 or more, or set "
                "`torch._dynamo.config.optimize_ddp = False`.",
            )
