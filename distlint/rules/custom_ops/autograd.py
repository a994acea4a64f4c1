"""Autograd rules (DL403, DL406, DL407): what makes backward fail, in eager and compiled code.

Facts observed on torch 2.13.0 (in-place ops on leaves and on tensors saved for backward,
autograd.Function without backward), re-observed by tests/proof/test_proof_dl4xx.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Severity
from distlint.rules.registry import Rule
from distlint.semantic.rankflow import target_names
from distlint.semantic.regions import literal_value
from distlint.syntax.walker import blocks_of, descendants, parameters

Resolver = Callable[[cst.BaseExpression], "str | None"]

AUTOGRAD_FUNCTION_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)

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


# -- shared helpers (also used by distlint.rules.custom_ops.custom_ops) ---------------------------


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
            method = expr.func.attr.value
            if method == "detach":
                if not through_data:
                    return None
                expr = expr.func.value
            elif method in VIEW_METHODS:
                expr = expr.func.value
            else:
                return expr
        else:
            return expr


def attribute_chain(expr: cst.BaseExpression) -> tuple[str, ...] | None:
    """``self.l1.weight`` -> ("self", "l1", "weight"); None for anything but names."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return tuple(reversed(parts))


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) else None


def is_true(call: cst.Call, name: str) -> bool:
    arg = keyword(call, name)
    return arg is not None and literal_value(arg.value) is True


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
        if isinstance(parent, cst.If) and child is parent.body:
            found = _present(parent.test, optional)
            if found:
                return found
    return None


def _present(test: cst.BaseExpression, names: set[str]) -> str | None:
    """``name is not None`` or a bare ``name`` (or an ``and`` operand of one) for a name."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _present(test.left, names) or _present(test.right, names)
    if isinstance(test, cst.Name) and test.value in names:
        return test.value
    if (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value in names
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.IsNot)
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    ):
        return test.left.value
    return None


def _training_test(test: cst.BaseExpression) -> bool | None:
    """True for ``self.training``, False for ``not self.training`` or a conjunction holding
    it; None otherwise."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        sides = (_training_test(test.left), _training_test(test.right))
        return False if False in sides else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _training_test(test.expression)
        return None if inner is None else not inner
    if (
        isinstance(test, cst.Attribute)
        and test.attr.value == "training"
        and isinstance(test.value, cst.Name)
        and test.value.value == "self"
    ):
        return True
    return None


def _grad_state(expr: cst.BaseExpression, resolve: Resolver) -> bool | None:
    """True: enables grad, False: disables it, None: unrelated."""
    target = expr.func if isinstance(expr, cst.Call) else expr
    name = resolve(target)
    if name in GRAD_DISABLING:
        if isinstance(expr, cst.Call) and name.endswith("inference_mode"):
            mode = positional(expr, 0) or keyword(expr, "mode")
            if mode is not None and literal_value(mode.value) is False:
                return None
        return False
    if name in GRAD_ENABLING:
        return True
    if name in SET_GRAD_ENABLED and isinstance(expr, cst.Call):
        arg = positional(expr, 0) or keyword(expr, "mode")
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


def self_attribute(expr: cst.BaseExpression) -> str | None:
    """``self.x`` -> "x"."""
    chain = attribute_chain(expr)
    if chain is not None and len(chain) == 2 and chain[0] == "self":
        return chain[1]
    return None


# -- DL403 -----------------------------------------------------------------------------------------


@dataclass
class _FunctionClass:
    is_function: bool
    methods: frozenset[str]
    prepares_backward: bool  # forward/setup_context keeps something on ``ctx``


class AutogradFunctionMissingBackward(Rule):
    code = "DL403"
    name = "autograd-function-missing-backward"
    severity = Severity.ERROR
    summary = "A torch.autograd.Function subclass defines forward but no backward or vjp."
    tags = ("correctness", "autograd", "torch.compile")
    precision = "high"

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._classes: dict[str, _FunctionClass] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = set(_class_members(node))
        prepares = _prepares_backward(node)
        is_function = False
        unknown_base = False
        for base in node.bases:
            if base.keyword is not None:
                continue
            name = self.ctx.resolve(base.value)
            if name in AUTOGRAD_FUNCTION_BASES:
                is_function = True
                continue
            local = (
                self._classes.get(base.value.value) if isinstance(base.value, cst.Name) else None
            )
            if local is not None and name is None:
                is_function = is_function or local.is_function
                methods |= local.methods
                prepares = prepares or local.prepares_backward
            elif name != "object":
                unknown_base = True  # a base we cannot see may define backward
        self._classes[node.name.value] = _FunctionClass(is_function, frozenset(methods), prepares)
        if not is_function or unknown_base or "forward" not in methods:
            return
        if methods & {"backward", "vjp", "symbolic"} or not prepares:
            # ``symbolic``: an ONNX-export function; a forward that keeps nothing on ``ctx``
            # for a backward is forward-only by design (inference kernels, logged metrics)
            return
        if self._inference_script():
            return  # an inference script (RWKV's ``*_run.py`` demos): no backward ever runs
        self.report(
            node.name,
            f"`{node.name.value}` subclasses `torch.autograd.Function` and defines `forward` "
            "but no `backward` (or `vjp`): backward through it raises `NotImplementedError: You "
            "must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD.`; under "
            "`torch.compile(fullgraph=True)` compiling the forward already fails "
            "(`Unsupported: Observed exception`, GB0088). Define a `@staticmethod backward`.",
        )

    _inference: bool | None = None

    def _inference_script(self) -> bool:
        """Whether the file runs its own code under ``torch.no_grad()``/``inference_mode()``
        at module level and never calls ``.backward(...)`` or ``torch.autograd.grad``."""
        if self._inference is None:
            module = self.ctx.module
            runs_without_grad = any(
                isinstance(stmt, cst.With)
                and any(_grad_state(i.item, self.ctx.resolve) is False for i in stmt.items)
                for stmt in _module_level(module.body)
            )
            self._inference = runs_without_grad and not any(
                isinstance(node, cst.Call)
                and (
                    (isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward")
                    or self.ctx.resolve(node.func) == "torch.autograd.grad"
                )
                for node in descendants(module)
            )
        return self._inference


def _branch_body(parents: Sequence[cst.CSTNode]) -> cst.CSTNode | None:
    """The innermost ``if``/``else``/``try`` body (below the enclosing function) the current
    node is in: a name bound there may not hold that value after the branch (OmegaFold's
    ``if layer is not last: x = relu(x)``). None outside any branch."""
    for index in range(len(parents) - 1, 0, -1):
        parent, child = parents[index - 1], parents[index]
        if isinstance(parent, cst.FunctionDef):
            return None
        if isinstance(parent, (cst.If, cst.Else, cst.Try, cst.ExceptHandler)) and (
            child is parent.body
        ):
            return child
    return None


def _module_level(body: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Module-level statements, also inside ``if __name__ == "__main__":`` blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock):
            yield from _module_level(stmt.body.body)


def _prepares_backward(node: cst.ClassDef) -> bool:
    """Whether the context is used (``ctx.save_for_backward``, ``ctx.scale = ...``) in
    ``setup_context`` or, without one, in ``forward``: the author meant it to be differentiated."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    methods = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    method = methods.get("setup_context") or methods.get("forward")
    if method is None or not method.params.params:
        return False
    ctx_name = method.params.params[0].name.value
    return any(
        isinstance(inner, cst.Attribute)
        and isinstance(inner.value, cst.Name)
        and inner.value.value == ctx_name
        for inner in descendants(method.body)
    )


def _class_members(node: cst.ClassDef) -> Iterator[str]:
    """Names a class body defines: methods and plain assignments (``backward = _bw``)."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            yield stmt.name.value
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            yield target.target.value
                elif (
                    isinstance(small, cst.AnnAssign)
                    and isinstance(small.target, cst.Name)
                    and small.value is not None
                ):
                    yield small.target.value


# -- module class facts (DL406, DL407) -------------------------------------------------------------

# torch.nn activations whose output autograd saves for backward: an in-place op on it fails at
# backward on torch 2.13.0 (tests/proof/test_proof_dl4xx.py, DL406/DL407).
SAVING_MODULES = {
    "torch.nn.Sigmoid": "sigmoid",
    "torch.nn.Tanh": "tanh",
    "torch.nn.Softmax": "softmax",
    "torch.nn.ReLU": "relu",
}
SAVING_FUNCTIONS = {
    "torch.sigmoid": "sigmoid",
    "torch.nn.functional.sigmoid": "sigmoid",
    "torch.special.expit": "sigmoid",
    "torch.tanh": "tanh",
    "torch.nn.functional.tanh": "tanh",
    "torch.exp": "exp",
    "torch.softmax": "softmax",
    "torch.nn.functional.softmax": "softmax",
    "torch.special.softmax": "softmax",
    "torch.relu": "relu",
    "torch.nn.functional.relu": "relu",
}
SAVING_METHODS = {
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "exp": "exp",
    "softmax": "softmax",
    "relu": "relu",
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
        yield from body.body  # type: ignore[misc]
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
        param = positional(call, 1) or keyword(call, "param")
        if param is not None and isinstance(param.value, cst.Name) and param.value.value == "None":
            return  # ``register_parameter("num_batches_tracked", None)``: no parameter
        if isinstance(value, str):
            facts.params.add(value)
    elif func.attr.value == "requires_grad_":
        arg = positional(call, 0) or keyword(call, "requires_grad")
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
        grad = keyword(value, "requires_grad") or positional(value, 1)
        if grad is not None and literal_value(grad.value) is False:
            facts.frozen.add((attr,))
        else:
            facts.params.add(attr)
        return
    if name in SAVING_MODULES and not is_true(value, "inplace"):
        facts.saving[attr] = SAVING_MODULES[name]
    if name in INPLACE_CAPABLE_MODULES and is_true(value, "inplace"):
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

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._classes: list[_ModuleClass] = []

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


# -- DL406 -----------------------------------------------------------------------------------------


class InplaceOnLeafParameter(_ModuleClassRule):
    code = "DL406"
    name = "inplace-on-leaf-parameter"
    severity = Severity.ERROR
    summary = "An in-place op on a parameter in forward with grad enabled fails."
    tags = ("correctness", "autograd", "torch.compile")
    precision = "high"

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._aliases: dict[str, tuple[str, ...]] = {}  # local name -> parameter chain

    def _param_chain(self, expr: cst.BaseExpression) -> tuple[str, ...] | None:
        base = strip_views(expr)
        if base is None:
            return None
        chain = attribute_chain(base)
        if chain is None:
            return None
        if len(chain) == 1:
            return self._aliases.get(chain[0])
        return chain if chain[0] == "self" else None

    def _check(self, node: cst.CSTNode, receiver: cst.BaseExpression, op: str) -> None:
        facts = self.current
        if facts is None or not self.in_training_forward():
            return
        chain = self._param_chain(receiver)
        if chain is None or not _is_parameter(chain, facts):
            return
        spelled = self.ctx.module.code_for_node(receiver)
        self.report(
            node,
            f"In-place `{op}` on parameter `{spelled}` in `forward` with grad enabled: "
            "eager raises `RuntimeError: a leaf Variable that requires grad is being used "
            "in an in-place operation.`, and `torch.compile` fails with a hard error "
            "(`TorchRuntimeError`, GB4315). Wrap the update in `with torch.no_grad():` "
            "(or move it out of `forward`), or compute a new tensor out of place.",
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "forward":
            self._aliases = {}

    def visit_Call(self, node: cst.Call) -> None:
        if not self.maybe_forward():
            return  # every check below needs forward
        func = node.func
        name = self.ctx.resolve(func)
        if name is None and isinstance(func, cst.Attribute) and inplace_method(func.attr.value):
            self._check(node, func.value, func.attr.value)
            return
        if name is None or name.startswith(INIT_PREFIX):
            return  # torch.nn.init.* runs under no_grad itself
        last = name.rsplit(".", 1)[-1]
        if name.startswith("torch.") and inplace_method(last):
            first = positional(node, 0)
            if first is not None:
                self._check(node, first.value, name.replace("torch.nn.functional.", "F."))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self.maybe_forward():
            return
        spelled = self.ctx.module.code_for_node(node.operator).strip()
        self._check(node, node.target, spelled)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.maybe_forward():
            return
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(target.target, target.target, "[...] =")
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            if not self.in_forward():
                return
            local = node.targets[0].target.value
            chain = self._param_chain(node.value)
            if chain is not None:
                self._aliases[local] = chain
            else:
                self._aliases.pop(local, None)

    def visit_For(self, node: cst.For) -> None:
        if not self.maybe_forward() or not self.in_forward():
            return
        it = node.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
            return
        method = it.func.attr.value
        owner = attribute_chain(it.func.value)
        if owner is None or owner[0] != "self":
            return
        target = node.target
        if method == "parameters" and isinstance(target, cst.Name):
            self._aliases[target.value] = (*owner, "parameters()")
        elif method == "named_parameters" and isinstance(target, cst.Tuple):
            elements = target.elements
            if len(elements) == 2 and isinstance(elements[1].value, cst.Name):
                self._aliases[elements[1].value.value] = (*owner, "named_parameters()")


def _is_parameter(chain: tuple[str, ...], facts: _ModuleClass) -> bool:
    if chain[0] != "self":
        return False
    if chain[-1] in ("parameters()", "named_parameters()"):
        return True
    if chain[1:] in facts.frozen or chain[1:2] in facts.frozen:
        return False
    if len(chain) == 2:
        return chain[1] in facts.params
    return chain[-1] in ("weight", "bias") and chain[1] in facts.layers


# -- DL407 -----------------------------------------------------------------------------------------


class InplaceOnSavedOutput(_ModuleClassRule):
    code = "DL407"
    name = "inplace-on-saved-output"
    severity = Severity.ERROR
    summary = "An in-place op on the output of sigmoid/tanh/exp/softmax/relu breaks backward."
    tags = ("correctness", "autograd", "torch.compile")
    precision = "high"

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        # local name -> (op whose saved output it holds, the branch body that bound it or None)
        self._saved: dict[str, tuple[str, cst.CSTNode | None]] = {}
        self._detached: set[str] = set()  # local names holding ``x.detach()``: no history
        # forward's own inputs, not yet rebound: whether they require grad is not known (a
        # test model's input does not; the activation then saves nothing)
        self._inputs: set[str] = set()
        self._sequential_words = "Sequential" in ctx.source  # torch.nn.Sequential, any alias

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "forward":
            self._saved = {}
            self._detached = set()
            self._inputs = {p.name.value for p in parameters(node.params)}

    def _bound_here(self, bound_in: cst.CSTNode | None) -> bool:
        """Whether a binding made in branch body ``bound_in`` holds at the current node:
        made outside any branch, or in a branch the current node is also in."""
        return bound_in is None or any(parent is bound_in for parent in self.ctx.parents)

    def _unknown_input(self, expr: cst.BaseExpression | None) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self._inputs

    def _saving_op(self, expr: cst.BaseExpression) -> str | None:
        """The op whose saved output ``expr`` is (or is a view of), if any."""
        base = strip_views(expr)
        if isinstance(base, cst.Name):
            op, bound_in = self._saved.get(base.value, (None, None))
            return op if op is not None and self._bound_here(bound_in) else None
        if not isinstance(base, cst.Call):
            return None
        func = base.func
        if is_true(base, "inplace"):
            return None
        first = positional(base, 0)
        if first is not None and self._unknown_input(first.value):
            return None  # relu(x) of forward's own input x: saved only if x requires grad
        attr = self_attribute(func)
        facts = self.current
        if attr is not None and facts is not None and attr in facts.saving:
            return facts.saving[attr]
        name = self.ctx.resolve(func)
        if name is not None:
            op = SAVING_FUNCTIONS.get(name)
            return None if op is None or (first and self._is_detached(first.value)) else op
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in SAVING_METHODS
            and attribute_chain(func.value) != ("self",)
            and not self._is_detached(func.value)
            and not self._unknown_input(func.value)
        ):
            return SAVING_METHODS[func.attr.value]  # a tensor method: h.sigmoid()
        return None

    def _is_detached(self, expr: cst.BaseExpression) -> bool:
        """``x.detach()`` or a name bound to one: autograd records nothing for ops on it."""
        if isinstance(expr, cst.Name):
            return expr.value in self._detached
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "detach"
        )

    def _check(self, node: cst.CSTNode, receiver: cst.BaseExpression, how: str) -> None:
        if not self.in_training_forward() or eval_only(self.ctx.parents):
            return
        op = self._saving_op(receiver)
        if op is None:
            return
        spelled = self.ctx.module.code_for_node(receiver)
        optional = optional_input(self.ctx.parents)
        where = (
            f" This runs only when `{optional}` is passed: if only inference passes it, no "
            "backward runs through it."
            if optional
            else ""
        )
        self.report(
            node,
            f"{how} on `{spelled}`, the output of `{op}`, which autograd saves for backward: "
            "`backward()` raises `RuntimeError: one of the variables needed for gradient "
            "computation has been modified by an inplace operation` (under `torch.compile`, "
            f"already at the first compiled call). Use the out-of-place form.{where}",
            severity=Severity.WARNING if optional else None,
        )

    def visit_Call(self, node: cst.Call) -> None:
        forward = self.maybe_forward()
        if not forward and not self._sequential_words:
            return  # outside forward only nn.Sequential(...) is checked
        func = node.func
        name = self.ctx.resolve(func)
        if not forward:
            if name == "torch.nn.Sequential":
                self._check_sequential(node)
            return
        if name is None and isinstance(func, cst.Attribute) and inplace_method(func.attr.value):
            self._check(node, func.value, f"In-place `{func.attr.value}`")
            return
        if name == "torch.nn.Sequential":
            self._check_sequential(node)
            return
        facts = self.current
        attr = self_attribute(func)
        first = positional(node, 0)
        if first is None:
            return
        if attr is not None and facts is not None and attr in facts.inplace:
            self._check(node, first.value, f"`self.{attr}` (`{facts.inplace[attr]}(inplace=True)`)")
            return
        if name is None or not name.startswith("torch.") or name.startswith(INIT_PREFIX):
            return
        short = name.replace("torch.nn.functional.", "F.")
        if inplace_method(name.rsplit(".", 1)[-1]):
            self._check(node, first.value, f"In-place `{short}`")
        elif name.startswith("torch.nn.functional.") and is_true(node, "inplace"):
            self._check(node, first.value, f"`{short}(..., inplace=True)`")

    def _check_sequential(self, node: cst.Call) -> None:
        """``nn.Sequential(..., nn.Sigmoid(), nn.ReLU(inplace=True), ...)``."""
        previous: str | None = None
        for arg in node.args:
            if arg.keyword is not None or arg.star:
                return
            value = arg.value
            name = self.ctx.resolve(value.func) if isinstance(value, cst.Call) else None
            if (
                previous is not None
                and isinstance(value, cst.Call)
                and name in INPLACE_CAPABLE_MODULES
                and is_true(value, "inplace")
            ):
                module = name.rsplit(".", 1)[1]
                self.report(
                    value,
                    f"`{module}(inplace=True)` right after a module that returns the output of "
                    f"`{previous}`, which autograd saves for backward: `backward()` raises "
                    "`RuntimeError: one of the variables needed for gradient computation has "
                    "been modified by an inplace operation` (under `torch.compile`, already at "
                    f"the first compiled call). Use `{module}()` without `inplace=True`.",
                )
            previous = None
            if isinstance(value, cst.Call) and name in SAVING_MODULES:
                previous = None if is_true(value, "inplace") else SAVING_MODULES[name]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self.maybe_forward():
            return
        spelled = self.ctx.module.code_for_node(node.operator).strip()
        self._check(node, node.target, f"In-place `{spelled}`")

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.maybe_forward():
            return
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(target.target, target.target, "Item assignment")

    def leave_Assign(self, node: cst.Assign) -> None:
        if not self.maybe_forward() or not self.in_forward():
            return
        op = self._saving_op(node.value)
        bound_in = _branch_body(self.ctx.parents)
        for target in node.targets:
            for name in target_names(target.target):
                self._inputs.discard(name)  # rebound: no longer forward's input
            if isinstance(target.target, (cst.Tuple, cst.List)):
                for name in target_names(target.target):  # `w, idx = torch.topk(w, k)`
                    self._saved.pop(name, None)
            elif isinstance(target.target, cst.Name):
                if self._is_detached(node.value):
                    self._detached.add(target.target.value)
                else:
                    self._detached.discard(target.target.value)
                if op is not None:
                    self._saved[target.target.value] = (op, bound_in)
                else:
                    self._saved.pop(target.target.value, None)
