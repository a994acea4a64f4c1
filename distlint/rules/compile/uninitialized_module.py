"""DL116: an ``nn.Module`` subclass whose ``__init__`` never calls ``super().__init__()``.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL116): an instance made
outside a compiled function and called inside it fails with ``Uninitialized nn.Module``
(GB0119) under ``fullgraph=True`` (``InternalTorchDynamoError: AttributeError ...
'_parameters'`` once ``__init__`` sets an attribute); any eager call fails too
(``AttributeError: '<class>' object has no attribute '_backward_hooks'``).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from distlint.findings import Severity
from distlint.rules._paths import is_test_path
from distlint.rules.base import Rule
from distlint.syntax.imports import scope_statements_nested, self_attribute
from distlint.syntax.walker import descendants

_NN = "torch.nn."
MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


class UninitializedModule(Rule):
    code = "DL116"
    name = "uninitialized-module"
    severity = Severity.ERROR
    summary = (
        "An nn.Module subclass whose __init__ never calls super().__init__(): calling an "
        "instance fails (compiled: Uninitialized nn.Module, GB0119)."
    )
    tags = ("correctness", "torch.compile")
    precision = "very-high"
    graph_breaks = ("GB0119",)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if node.decorators or not node.bases or not isinstance(node.body, cst.IndentedBlock):
            return
        if any(arg.keyword is not None or arg.star for arg in node.bases):
            return  # a metaclass or **kwargs: construction may differ
        bases = [self.ctx.imports.resolve(arg.value) for arg in node.bases]
        if not all(_is_nn_class(base) for base in bases):
            return  # another base (a mixin, a project class) may initialise the module
        init = None
        methods: list[cst.FunctionDef] = []  # also those under an if/try of the class body
        for stmt, nested in scope_statements_nested(node.body.body):
            if not isinstance(stmt, cst.FunctionDef):
                continue
            methods.append(stmt)
            if nested:
                continue
            if stmt.name.value == "__call__":
                return  # its own __call__: calling an instance never reaches Module's
            if stmt.name.value in ("__init__", "__new__"):
                if stmt.name.value == "__new__" or stmt.decorators:
                    return
                init = stmt
        if init is None or _calls_an_init(methods) or _raises(init) or _copies_a_dict(init):
            return  # initialised, or an abstract __init__ that refuses to run
        assigns_module = _assigns_a_module(init, self.ctx.imports.resolve)
        inherits_forward = any(base not in MODULE for base in bases)  # nn.Linear's, ...
        defines_forward = any(method.name.value == "forward" for method in methods)
        if not (assigns_module or inherits_forward or defines_forward):
            return  # no forward: used through its own methods (diffusers' ray samplers), which work
        if is_test_path(self.ctx.path) and not _instance_called(self.ctx.module, node.name.value):
            return  # a test double handed to code that only reads its attributes (peft, torchrl)
        base = self.spell(node.bases[0].value)
        if assigns_module:
            effect = (
                "building an instance fails at once (`AttributeError: cannot assign module "
                "before Module.__init__() call`, or `parameters` for an `nn.Parameter`)"
            )
        else:
            effect = (
                "calling an instance fails in eager code (`AttributeError: ... no attribute "
                "'_backward_hooks'`), and a compiled function calling one fails on torch 2.13 "
                "(`Unsupported: Uninitialized nn.Module`, GB0119, or an internal "
                "`AttributeError` once `__init__` sets attributes)"
            )
        self.report(
            init.name,
            f"`{node.name.value}.__init__` never calls `super().__init__()`, so the "
            f"`{base}` machinery is not set up: {effect}. Call `super().__init__()` first in "
            "`__init__`.",
        )

    def spell(self, node: cst.CSTNode) -> str:
        return " ".join(self.ctx.module.code_for_node(node).split())


def _is_nn_class(name: str | None) -> bool:
    if name is None or not name.startswith(_NN):
        return False
    last = name.rpartition(".")[2]
    return last[:1].isupper()


def _assigns_a_module(
    init: cst.FunctionDef, resolve: Callable[[cst.BaseExpression], str | None]
) -> bool:
    """``self.x = nn.Linear(...)`` / ``nn.Parameter(...)`` in ``__init__``: Module's
    ``__setattr__`` refuses it before ``Module.__init__`` ran."""
    for node in descendants(init.body):
        if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call):
            continue
        if not any(
            isinstance(t.target, cst.Attribute)
            and isinstance(t.target.value, cst.Name)
            and t.target.value.value == "self"
            for t in node.targets
        ):
            continue
        if _is_nn_class(resolve(node.value.func)):
            return True
    return False


def _calls_an_init(methods: list[cst.FunctionDef]) -> bool:
    """Some method of the class calls an ``__init__`` (``super().__init__()``,
    ``nn.Module.__init__(self)``, ``super(Cls, self).__init__()``...)."""
    for method in methods:
        for node in descendants(method):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "__init__"
            ):
                return True
    return False


def _copies_a_dict(init: cst.FunctionDef) -> bool:
    """``self.__dict__.update(other.__dict__)`` or ``self.__dict__ = ...``: the state of a
    module built elsewhere (optimum-habana's wrappers of DeepSpeed layers) is taken over."""
    for node in descendants(init.body):
        target = None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            target = node.func.value
        elif isinstance(node, cst.Assign):
            target = node.targets[0].target
        if target is not None and self_attribute(target) == "__dict__":
            return True
    return False


def _raises(init: cst.FunctionDef) -> bool:
    return any(isinstance(node, cst.Raise) for node in descendants(init.body))


def _instance_called(module: cst.Module, name: str) -> bool:
    """Whether the file calls an instance of class ``name``: ``Name(...)(...)``, or a name
    assigned ``Name(...)`` anywhere that is then called (names only, any scope)."""
    made: set[str] = set()
    for node in descendants(module):
        if isinstance(node, cst.Assign) and _makes(node.value, name):
            made.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
    for node in descendants(module):
        if isinstance(node, cst.Call) and (
            _makes(node.func, name) or (isinstance(node.func, cst.Name) and node.func.value in made)
        ):
            return True
    return False


def _makes(expr: cst.BaseExpression, name: str) -> bool:
    func = expr.func if isinstance(expr, cst.Call) else None
    return isinstance(func, cst.Name) and func.value == name
