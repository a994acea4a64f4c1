"""Autograd rules (DL403, DL406, DL407): what makes backward fail, in eager and compiled code.

Facts observed on torch 2.13.0 (in-place ops on leaves and on tensors saved for backward,
autograd.Function without backward), re-observed by tests/proof/test_proof_dl4xx.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import literal_value
from distlint.syntax.imports import dotted_name, self_attribute
from distlint.syntax.shapes import is_none, keyword_is_true
from distlint.syntax.walker import blocks_of, keyword_arg, parameters

Resolver = Callable[[cst.BaseExpression], "str | None"]


# Methods ending in "_" that do not write tensor data (autograd does not see them as in-place).
NOT_INPLACE = frozenset(
    {"requires_grad_", "share_memory_", "detach_", "retain_grad_", "record_stream_"}
)


# Methods and attributes that return a view of their receiver: an in-place op on the view
# writes into the receiver (and autograd sees it as an in-place op on the receiver).
VIEW_METHODS = frozenset(
    {
        "view",
        "view_as",
        "narrow",
        "select",
        "t",
        "transpose",
        "permute",
        "unsqueeze",
        "squeeze",
        "expand",
        "expand_as",
        "diagonal",
        "as_strided",
        "unflatten",
        "unbind",
        "split",
        "chunk",
        "movedim",
        "swapaxes",
        "real",
        "imag",
    }
)


VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag"})


GRAD_DISABLING = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
    }
)


GRAD_ENABLING = frozenset({"torch.enable_grad", "torch.autograd.grad_mode.enable_grad"})


SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})


def inplace_method(name: str) -> bool:
    """Whether a method name is an in-place tensor op (``mul_``, ``copy_``, not ``__iadd__``)."""
    return (
        name.endswith("_")
        and not name.endswith("__")
        and not name.startswith("_")
        and name not in NOT_INPLACE
    )


def strip_views(expr: cst.BaseExpression, through_data: bool = False) -> cst.BaseExpression | None:
    """The tensor an expression is a view of (``x[0]``, ``x.view(-1)``, ``x.T`` -> ``x``).

    Returns None when the chain goes through ``.data`` / ``.detach()`` (autograd does not see
    writes through those), unless ``through_data`` (a plain write still mutates the storage).
    """
    while True:
        if isinstance(expr, cst.Subscript) or (
            isinstance(expr, cst.Attribute) and expr.attr.value in VIEW_ATTRIBUTES
        ):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            if not through_data:
                return None
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            func = expr.func
            method = func.attr.value
            if method == "detach":
                if not through_data:
                    return None
                expr = func.value
            elif method in VIEW_METHODS:
                expr = func.value
            else:
                return expr
        else:
            return expr


def attribute_chain(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    """``self.l1.weight`` -> ("self", "l1", "weight"); None for anything but names."""
    dotted = dotted_name(expr)
    return None if dotted is None else tuple(dotted.split("."))


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) else None


def grad_disabled(parents: list[cst.CSTNode], resolve: Resolver) -> bool:
    """Whether the innermost grad-mode context around the current node disables grad.

    Looks at ``with torch.no_grad():`` / ``inference_mode()`` / ``set_grad_enabled(False)`` /
    ``enable_grad()`` blocks and at the decorators of enclosing functions.
    """
    for parent in reversed(parents):
        items: list[cst.BaseExpression] = []
        if isinstance(parent, cst.With):
            items = [item.item for item in parent.items]
        elif isinstance(parent, cst.FunctionDef):
            items = [d.decorator for d in parent.decorators]
        for item in items:
            state = _grad_state(item, resolve)
            if state is not None:
                return not state
    return False


def eval_only(parents: list[cst.CSTNode]) -> bool:
    """Whether the current node runs only in eval mode: under ``if not self.training:`` (also
    as an ``and`` operand), or on the ``else`` side of ``if self.training:``. No backward runs
    through an eval-mode forward in practice (yolov7's and LoFTR's inference decoding)."""
    for index in range(len(parents) - 1, 0, -1):
        parent, child = parents[index - 1], parents[index]
        if isinstance(parent, cst.FunctionDef):
            return False
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test:
            training = _training_test(parent.test)
            if training is not None and (child is parent.body) != training:
                return True
    return False


def optional_input(parents: Sequence[cst.CSTNode]) -> str | None:
    """The parameter of the enclosing function (default ``None``/``False``) whose presence the
    current node depends on: ``if key_val is not None:`` / ``if use_cache:``, also as an ``and``
    operand. Such optional paths are often taken only by inference callers (LMOps' structured
    prompting passes cached keys only when generating under no_grad)."""
    function = next((p for p in reversed(parents) if isinstance(p, cst.FunctionDef)), None)
    if function is None:
        return None
    optional = {
        p.name.value
        for p in parameters(function.params)
        if p.default is not None and literal_value(p.default) in (None, False)
    }
    if not optional:
        return None
    for index in range(len(parents) - 1, 0, -1):
        parent, child = parents[index - 1], parents[index]
        if parent is function:
            return None
        if isinstance(parent, cst.If):
            if child is parent.body:
                found = _present(parent.test, optional)
            else:  # ``if inference_params is None: ... else: <here>``
                found = _absent(parent.test, optional) if child is parent.orelse else None
            if found:
                return found
    return None


def _absent(test: cst.BaseExpression, names: set[str]) -> str | None:
    """``name is None`` or ``not name`` for a name: its ``else`` runs only when it is passed."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        return inner.value if isinstance(inner, cst.Name) and inner.value in names else None
    return _compared_to_none(test, names, cst.Is)


def _present(test: cst.BaseExpression, names: set[str]) -> str | None:
    """``name is not None`` or a bare ``name`` (or an ``and`` operand of one) for a name."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _present(test.left, names) or _present(test.right, names)
    if isinstance(test, cst.Name) and test.value in names:
        return test.value
    return _compared_to_none(test, names, cst.IsNot)


def _compared_to_none(
    test: cst.BaseExpression, names: set[str], operator: type[cst.BaseCompOp]
) -> str | None:
    """``name is None`` (``operator``: ``cst.Is``) or ``name is not None`` (``cst.IsNot``) for
    a name in ``names``: that name."""
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value in names
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, operator)
        and is_none(test.comparisons[0].comparator)
    ):
        return test.left.value
    return None


def _training_test(test: cst.BaseExpression) -> bool | None:
    """True for ``self.training`` (also ``self.training is True``/``== True``), False for
    ``not self.training`` (``self.training is False``/``== False``, ``is not True``/``!=
    True``) or a conjunction holding it; None otherwise."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        sides = (_training_test(test.left), _training_test(test.right))
        return False if False in sides else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _training_test(test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        value = literal_value(target.comparator)
        if self_attribute(test.left) != "training" or not isinstance(value, bool):
            return None
        if isinstance(target.operator, (cst.Is, cst.Equal)):
            return value
        if isinstance(target.operator, (cst.IsNot, cst.NotEqual)):
            return not value
        return None
    return True if self_attribute(test) == "training" else None


def _grad_state(expr: cst.BaseExpression, resolve: Resolver) -> bool | None:
    """True: enables grad, False: disables it, None: unrelated."""
    target = expr.func if isinstance(expr, cst.Call) else expr
    name = resolve(target)
    if name in GRAD_DISABLING:
        if isinstance(expr, cst.Call) and name.endswith("inference_mode"):
            mode = positional(expr, 0) or keyword_arg(expr, "mode")
            if mode is not None and literal_value(mode.value) is False:
                return None
        return False
    if name in GRAD_ENABLING:
        return True
    if name in SET_GRAD_ENABLED and isinstance(expr, cst.Call):
        arg = positional(expr, 0) or keyword_arg(expr, "mode")
        if arg is not None:
            value = literal_value(arg.value)
            if isinstance(value, bool):
                return value
    return None


def is_forward(ctx_function: cst.FunctionDef | None, parents: list[cst.CSTNode]) -> bool:
    """Whether the innermost function is a module's ``forward``: a method so named, directly in
    a class that is not an ``autograd.Function`` (whose forward autograd does not record)."""
    if ctx_function is None or ctx_function.name.value != "forward":
        return False
    for index in range(len(parents) - 1, -1, -1):
        if parents[index] is ctx_function:
            owner = parents[index - 2] if index >= 2 else None
            return isinstance(owner, cst.ClassDef) and not _names_a_function_base(owner)
    return False


def _names_a_function_base(node: cst.ClassDef) -> bool:
    """``class F(torch.autograd.Function)``, ``(Function)``, ``(autograd.Function)``."""
    for base in node.bases:
        value = base.value
        last = value.attr.value if isinstance(value, cst.Attribute) else None
        if isinstance(value, cst.Name):
            last = value.value
        if last in ("Function", "InplaceFunction", "NestedIOFunction"):
            return True
    return False


# torch.nn activations whose output autograd saves for backward: an in-place op on it fails at
# backward on torch 2.13.0 (tests/proof/test_proof_dl4xx.py, DL406/DL407).
SAVING_MODULES = {
    "torch.nn.Sigmoid": "sigmoid",
    "torch.nn.Tanh": "tanh",
    "torch.nn.Softmax": "softmax",
    "torch.nn.ReLU": "relu",
}


# torch.nn modules that write their input in place when built with inplace=True.
INPLACE_CAPABLE_MODULES = frozenset(
    {
        "torch.nn.ReLU",
        "torch.nn.ReLU6",
        "torch.nn.LeakyReLU",
        "torch.nn.ELU",
        "torch.nn.SELU",
        "torch.nn.CELU",
        "torch.nn.SiLU",
        "torch.nn.Mish",
        "torch.nn.Hardswish",
        "torch.nn.Hardsigmoid",
        "torch.nn.Hardtanh",
        "torch.nn.RReLU",
        "torch.nn.Threshold",
        "torch.nn.Dropout",
        "torch.nn.Dropout1d",
        "torch.nn.Dropout2d",
        "torch.nn.Dropout3d",
        "torch.nn.AlphaDropout",
    }
)


PARAMETER_CONSTRUCTORS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


INIT_PREFIX = "torch.nn.init."


@dataclass
class _ModuleClass:
    """What a class's methods assign to ``self`` (from a scan of its statements)."""

    params: set[str] = field(default_factory=set)
    frozen: set[tuple[str, ...]] = field(default_factory=set)  # ("w",), ("norm", "weight")
    layers: set[str] = field(default_factory=set)
    saving: dict[str, str] = field(default_factory=dict)  # attr -> op the module saves
    inplace: dict[str, str] = field(default_factory=dict)  # attr -> spelled constructor


def _statements(body: cst.BaseSuite) -> Iterator[cst.BaseSmallStatement]:
    """Small statements of a block and of its nested blocks (not of nested defs/classes)."""
    if not isinstance(body, cst.IndentedBlock):
        assert isinstance(body, cst.SimpleStatementSuite)  # the other kind of BaseSuite
        yield from body.body
        return
    for stmt in body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(stmt, cst.BaseCompoundStatement):
            for block in blocks_of(stmt):  # ``match`` has cases, no body
                yield from _statements(block)


def scan_module_class(node: cst.ClassDef, resolve: Resolver) -> _ModuleClass:
    """Parameters, frozen parameters and submodules a class assigns to ``self``."""
    facts = _ModuleClass()
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for method in body:
        if not isinstance(method, cst.FunctionDef):
            continue
        for small in _statements(method.body):
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    _collect_assignment(facts, target.target, small.value, resolve)
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                _collect_assignment(facts, small.target, small.value, resolve)
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                _collect_call(facts, small.value)
    return facts


def _collect_call(facts: _ModuleClass, call: cst.Call) -> None:
    func = call.func
    if not isinstance(func, cst.Attribute):
        return
    if func.attr.value == "register_parameter" and attribute_chain(func.value) == ("self",):
        name_arg = positional(call, 0)
        value = literal_value(name_arg.value) if name_arg is not None else None
        param = positional(call, 1) or keyword_arg(call, "param")
        if param is not None and is_none(param.value):
            return  # ``register_parameter("num_batches_tracked", None)``: no parameter
        if isinstance(value, str):
            facts.params.add(value)
    elif func.attr.value == "requires_grad_":
        arg = positional(call, 0) or keyword_arg(call, "requires_grad")
        chain = attribute_chain(func.value)
        if chain and chain[0] == "self" and arg is not None and literal_value(arg.value) is False:
            facts.frozen.add(chain[1:])


def _collect_assignment(
    facts: _ModuleClass, target: cst.BaseExpression, value: cst.BaseExpression, resolve: Resolver
) -> None:
    chain = attribute_chain(target)
    if chain is not None and chain[0] == "self" and chain[-1] == "requires_grad":
        if literal_value(value) is False:
            facts.frozen.add(chain[1:-1])
        return
    attr = self_attribute(target)
    if attr is None or not isinstance(value, cst.Call):
        return
    name = resolve(value.func)
    if name in PARAMETER_CONSTRUCTORS:
        grad = keyword_arg(value, "requires_grad") or positional(value, 1)
        if grad is not None and literal_value(grad.value) is False:
            facts.frozen.add((attr,))
        else:
            facts.params.add(attr)
        return
    if name in SAVING_MODULES and not keyword_is_true(value, "inplace"):
        facts.saving[attr] = SAVING_MODULES[name]
    if name in INPLACE_CAPABLE_MODULES and keyword_is_true(value, "inplace"):
        facts.inplace[attr] = name.rsplit(".", 1)[1]
    if name is not None:
        if name.startswith("torch.nn.") and name.rsplit(".", 1)[1][:1].isupper():
            facts.layers.add(attr)
    elif isinstance(value.func, (cst.Name, cst.Attribute)):
        last = value.func.value if isinstance(value.func, cst.Name) else value.func.attr.value
        if last[:1].isupper():
            facts.layers.add(attr)  # a project module class, most likely


def _defines_forward(node: cst.ClassDef) -> bool:
    body = node.body
    if type(body) is not cst.IndentedBlock:
        return False
    return any(type(stmt) is cst.FunctionDef and stmt.name.value == "forward" for stmt in body.body)


class _ModuleClassRule(Rule):
    """Knows the enclosing class's parameters and submodules while walking its methods."""

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._classes: list[_ModuleClass] = []
        # Every check runs in a function named ``forward`` (maybe_forward), which the file
        # spells (LibCST keeps a name as written): without the word, no handler is called.
        self.active = "forward" in ctx.source

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        # The facts are read only inside a `forward` defined directly in the class, or when
        # the class itself sits in a function named `forward`: scan only those classes.
        function = self.ctx.function
        if _defines_forward(node) or (function is not None and function.name.value == "forward"):
            self._classes.append(scan_module_class(node, self.ctx.resolve))
        else:
            self._classes.append(_ModuleClass())

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        if self._classes:
            self._classes.pop()

    @property
    def current(self) -> _ModuleClass | None:
        return self._classes[-1] if self._classes else None

    def in_forward(self) -> bool:
        return self.current is not None and is_forward(self.ctx.function, self.ctx.parents)

    def maybe_forward(self) -> bool:
        """A cheap necessary condition of :meth:`in_forward` (checked before any other work)."""
        if not self._classes:
            return False
        function = self.ctx.function
        return function is not None and function.name.value == "forward"

    def in_training_forward(self) -> bool:
        return self.in_forward() and not grad_disabled(self.ctx.parents, self.ctx.resolve)
