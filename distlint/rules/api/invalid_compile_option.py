"""DL502: ``torch.compile`` options that torch rejects when ``torch.compile(...)`` is called.

Facts come from the shipped torch tables (``distlint/knowledge/data/torch-tables.json``,
generated from torch by ``scripts/gen_torch_tables.py``), so checking never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.knowledge.torch_tables import TorchTable, closest, describe_versions, version_advice
from distlint.rules.api._tables import TableRule, passes_no_keyword
from distlint.rules.context import RuleContext
from distlint.semantic.regions import is_literal, literal_value
from distlint.syntax.imports import scope_statements

# Backends that packages register at import time or through the `torch_dynamo_backends`
# entry point: valid when that package is installed, which a static checker cannot know.
THIRD_PARTY_BACKENDS = {
    "tensorrt": "torch_tensorrt",
    "torch_tensorrt": "torch_tensorrt",
    "openvino": "openvino",
    "ipex": "intel_extension_for_pytorch",
    "hidet": "hidet",
    "onnxrt": "onnxruntime",
    "tpu": "torch_xla",
    "neuron": "torch_neuronx",
    "neuronx": "torch_neuronx",
    "hpu_backend": "habana_frameworks.torch",
    "aot_hpu_training_backend": "habana_frameworks.torch",
    "npu": "torch_npu",
}
_REGISTER_BACKEND = frozenset(
    {"torch._dynamo.register_backend", "torch._dynamo.backends.registry.register_backend"}
)
_PARTIAL = frozenset({"functools.partial"})


class InvalidCompileOption(TableRule):
    code = "DL502"
    name = "invalid-compile-option"
    severity = Severity.ERROR
    summary = "torch.compile is given a backend, mode or options that torch rejects."
    fix_availability = FixAvailability.SOMETIMES
    tags = ("correctness", "torch.compile", "api")
    precision = "very-high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # a registration spells ``register_backend`` (see _ends_with_register_backend)
        self._registered = (
            _registered_backends(ctx.module) if "register_backend" in ctx.source else frozenset()
        )

    def _some_only(
        self, node: cst.CSTNode, accepted: Callable[[TorchTable], bool], what: str, error: str
    ) -> bool:
        """Whether some releases of the range accept it and others do not; if so, warn once
        (naming both) and return True. ``what``: "... only in"; ``error``: what torch raises."""
        rejecting = [t.version for t in self.tables if not accepted(t)]
        if not rejecting or len(rejecting) == len(self.tables):
            return False
        accepting = [t.version for t in self.tables if accepted(t)]
        self.report(
            node,
            f"{what} only in torch {describe_versions(accepting)}: on torch "
            f"{describe_versions(rejecting)}, which the project supports, torch.compile raises "
            f"{error}. " + version_advice(accepting, rejecting),
            severity=Severity.WARNING,
        )
        return True

    def _rejected_in(self, accepted: Callable[[TorchTable], bool]) -> str:
        return describe_versions([t.version for t in self.tables if not accepted(t)])

    def visit_Call(self, node: cst.Call) -> None:
        if passes_no_keyword(node):
            return  # backend, mode and options are keywords
        kwargs = _compile_kwargs(node, self.ctx)
        if kwargs is None:
            return
        backend_arg = kwargs.get("backend")
        backend = literal_value(backend_arg.value) if backend_arg is not None else "inductor"
        if isinstance(backend, str) and backend_arg is not None:
            self._check_backend(backend_arg, backend)
        mode_arg, options_arg = kwargs.get("mode"), kwargs.get("options")
        mode_given = mode_arg is not None and literal_value(mode_arg.value) is not None
        options_given = options_arg is not None and literal_value(options_arg.value) is not None
        if mode_given and options_given and mode_arg is not None:  # mode_given: it is not None
            self.report(
                mode_arg,
                "`mode=` and `options=` cannot be combined: torch.compile raises RuntimeError "
                f"({self.table.message('mode_and_options')!r}). Drop `mode=` and put the "
                'settings it stands for into `options` (e.g. `"triton.cudagraphs": True` '
                "for reduce-overhead).",
            )
        if backend != "inductor":
            return  # only the inductor backend validates mode= and options= up front
        if mode_given and mode_arg is not None:
            self._check_mode(mode_arg.value)
        if options_given and options_arg is not None:
            self._check_options(options_arg.value)

    def _check_backend(self, arg: cst.Arg, backend: str) -> None:
        table = self.table
        if backend in self._registered or backend in THIRD_PARTY_BACKENDS:
            return
        if all(t.is_backend(backend) for t in self.tables):
            return
        if self._some_only(
            arg.value,
            lambda t: t.is_backend(backend),
            f"{backend!r} is a torch.compile backend",
            "InvalidBackend",
        ):
            return
        error = table.message("unknown_backend", name=backend)
        suggestion = closest(backend, table.listed_backends | {"eager", "aot_eager"})
        if suggestion is not None and suggestion.casefold() == backend.casefold():
            self.report(
                arg.value,
                f"Backend names are case-sensitive: torch.compile raises InvalidBackend "
                f"({error}). Use {suggestion!r}.",
                fix=Fix(f"Use backend {suggestion!r}", (), Applicability.SAFE),
                fix_nodes=((arg.value, _requote(arg.value, suggestion)),),
            )
            return
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        self.report(
            arg.value,
            f"{backend!r} is not a torch.compile backend in torch "
            f"{self._rejected_in(lambda t: t.is_backend(backend))}: "
            f"torch.compile raises InvalidBackend ({error}).{hint} Built-in backends: "
            f"{', '.join(sorted(table.listed_backends))} (plus the debug backends eager and "
            "aot_eager).",
            fix=_guess_fix(suggestion, "backend"),
            fix_nodes=((arg.value, _requote(arg.value, suggestion)),) if suggestion else (),
        )

    def _check_mode(self, value: cst.BaseExpression) -> None:
        mode = literal_value(value)
        if not isinstance(mode, str) or all(t.is_mode(mode) for t in self.tables):
            return
        if self._some_only(
            value, lambda t: t.is_mode(mode), f"{mode!r} is a torch.compile mode", "RuntimeError"
        ):
            return
        suggestion = closest(mode, self.table.modes)
        hint = f" Did you mean {suggestion!r}?" if suggestion else ""
        self.report(
            value,
            f"Unknown torch.compile mode {mode!r}: torch.compile raises RuntimeError "
            f"({self.table.message('unknown_mode', mode=mode)!r}).{hint}",
            fix=_guess_fix(suggestion, "mode"),
            fix_nodes=((value, _requote(value, suggestion)),) if suggestion else (),
        )

    def _check_options(self, value: cst.BaseExpression) -> None:
        if not isinstance(value, cst.Dict):
            return
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                key = literal_value(element.key)
                if isinstance(key, str):
                    self._check_option(element, key)

    def _check_option(self, element: cst.DictElement, key: str) -> None:
        table = self.table
        if any(t.option_type(key) is None for t in self.tables):
            if self._some_only(
                element.key,
                lambda t: t.option_type(key) is not None,
                f"{key!r} is an inductor option",
                "RuntimeError ('Unexpected optimization option ...')",
            ):
                return
            suggestion = closest(key.replace("-", "_"), table.inductor_options)
            hint = f" Did you mean {suggestion!r}?" if suggestion else ""
            self.report(
                element.key,
                f"{key!r} is not an inductor option in torch "
                f"{self._rejected_in(lambda t: t.option_type(key) is not None)}: "
                f"torch.compile raises RuntimeError ('Unexpected optimization option "
                f"{key}, ...').{hint}",
                fix=_guess_fix(suggestion, "option"),
                fix_nodes=((element.key, _requote(element.key, suggestion)),) if suggestion else (),
            )
            return
        option_value = literal_value(element.value)
        if not is_literal(option_value):
            return
        if any(t.option_type(key) == "never" for t in self.tables):
            if all(t.option_type(key) == "never" for t in self.tables):
                self.report(
                    element.value,
                    f"Option {key!r} cannot be set through options= in torch "
                    f"{describe_versions([t.version for t in self.tables])}: torch checks it "
                    "against a broken annotation and raises TypeError "
                    f"({table.message('option_type_never')!r}) for any value. Leave it out.",
                )
            return  # broken in some releases only: too subtle to judge
        if all(t.option_value_ok(key, option_value) is not False for t in self.tables):
            return
        got = type(option_value).__name__
        error = (
            f"RuntimeError ('Unexpected type of attr {key}, got {got} should be "
            f"{table.option_type(key)}')"
        )
        if self._some_only(
            element.value,
            lambda t: t.option_value_ok(key, option_value) is not False,
            f"Option {key!r} takes {got} {option_value!r}",
            error,
        ):
            return
        self.report(
            element.value,
            f"Option {key!r} expects {table.option_type(key)}, got {got} {option_value!r}: "
            f"torch.compile raises {error}.",
        )


def _compile_kwargs(node: cst.Call, ctx: RuleContext) -> dict[str, cst.Arg] | None:
    """Keyword arguments of a compiling call (torch.compile or a configured compile wrapper,
    which takes its keywords: the compile roots read them as its options), or None."""
    name = ctx.resolve(node.func)
    if ctx.compiles(name):
        return _keywords(node.args)
    if name in _PARTIAL and node.args and ctx.compiles(ctx.resolve(node.args[0].value)):
        return _keywords(node.args[1:])
    if name is None and ctx.module_compile_receiver(node) is not None:
        # `model.compile(...)` (nn.Module.compile forwards to torch.compile).
        keywords = _keywords(node.args)
        if keywords.keys() & {"backend", "mode", "options"}:
            return keywords
    return None


def _keywords(args: Sequence[cst.Arg]) -> dict[str, cst.Arg]:
    return {arg.keyword.value: arg for arg in args if arg.keyword is not None}


def _registered_backends(module: cst.Module) -> frozenset[str]:
    """Backend names this file registers at module level (inside if/try blocks too).

    ``@register_backend`` and ``register_backend(fn)`` register ``fn.__name__``;
    ``name=`` overrides it.
    """
    found: set[str] = set()
    for stmt in scope_statements(module.body):
        if isinstance(stmt, cst.FunctionDef):
            for decorator in stmt.decorators:
                expr = decorator.decorator
                target = expr.func if isinstance(expr, cst.Call) else expr
                if _ends_with_register_backend(target):
                    name = _name_keyword(expr) if isinstance(expr, cst.Call) else None
                    found.add(name or stmt.name.value)
            continue
        value = getattr(stmt, "value", None)
        if isinstance(value, cst.Call) and _ends_with_register_backend(value.func):
            name = _name_keyword(value)
            positional = [arg for arg in value.args if arg.keyword is None]
            if name is None and positional and isinstance(positional[0].value, cst.Name):
                name = positional[0].value.value
            if name:
                found.add(name)
    return frozenset(found)


def _ends_with_register_backend(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "register_backend"
    return isinstance(expr, cst.Name) and expr.value == "register_backend"


def _name_keyword(call: cst.Call) -> str | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "name":
            value = literal_value(arg.value)
            return value if isinstance(value, str) else None
    return None


def _guess_fix(suggestion: str | None, what: str) -> Fix | None:
    if suggestion is None:
        return None
    return Fix(f"Use {what} {suggestion!r}", (), Applicability.UNSAFE)


def _requote(node: cst.BaseExpression, text: str | None) -> str:
    """``text`` as a string literal in the quote style of ``node``."""
    quote = '"'
    if isinstance(node, cst.SimpleString):
        quote = node.quote
    return f"{quote}{text}{quote}"
