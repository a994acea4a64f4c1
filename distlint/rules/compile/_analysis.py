"""Shared static guesses for the DL1xx rules (graph breaks inside compiled regions).

Nothing here is a rule. It answers two questions from the source of one file, without
importing torch (the file's module-level dynamo config is ``RuleContext.dynamo_config``):

* whether an expression is probably a tensor (:class:`TensorGuess`): calls of ``torch.*``
  functions, tensor methods, comparisons involving those, names assigned only from such
  values, parameters annotated ``torch.Tensor``. Shapes, dtypes, devices, ``len()``,
  ``isinstance``, ``is None``, literals and ``self.training`` are never tensors;
* where a tensor is converted to a Python value, branched on, or handed to the host
  (the break detectors used by DL101, DL102, DL104 and DL105).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.semantic.regions import Resolver
from distlint.syntax.imports import ImportTable, dotted_name, scope_statements, self_attribute
from distlint.syntax.walker import (
    descendants,
    evaluated,
    nodes_with_parents,
    parameters,
    suite_body,
)

# ``_RegionRule.is_builtin``: whether ``func`` is the (unshadowed) builtin ``name``
IsBuiltin = Callable[[cst.BaseExpression, str], bool]


def builtin_in(table: ImportTable, func: cst.BaseExpression, name: str) -> bool:
    """``func`` is the builtin ``name`` in the scope of ``table``: not shadowed by an import,
    an assignment or a parameter there or in an enclosing scope (``zip = my_zip``)."""
    return type(func) is cst.Name and func.value == name and not table.is_bound(name)


# -- tensor guess --------------------------------------------------------------------------------

# Attributes of a tensor that are Python values (metadata), never tensors.

NON_TENSOR_ATTRS = frozenset(
    {
        "shape",
        "ndim",
        "dtype",
        "device",
        "layout",
        "is_cuda",
        "is_sparse",
        "is_leaf",
        "is_quantized",
        "is_meta",
        "requires_grad",
        "training",
        "names",
        "grad_fn",
        "itemsize",
        "nbytes",
    }
)
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "grad", "data", "real", "imag"})

# Tensor methods that return Python values (or nothing useful as a tensor).
NON_TENSOR_METHODS = frozenset(
    {
        "size",
        "dim",
        "ndimension",
        "numel",
        "nelement",
        "element_size",
        "stride",
        "storage_offset",
        "item",
        "tolist",
        "numpy",
        "data_ptr",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "is_pinned",
        "is_shared",
        "get_device",
        "dim_order",
        "type",
        "keys",
        "values",
        "items",
        "equal",
        "allclose",
        "get",
        "register_hook",
        "register_forward_hook",
        "register_forward_pre_hook",
        "parameters",
        "named_parameters",
        "modules",
        "children",
        "state_dict",
        "backward",
        "untyped_storage",
    }
)

# Methods that only tensors (or numpy arrays, traced the same way) have: a call of one is a
# tensor whatever the receiver's type is known to be. Python builtins have none of these.
STRONG_TENSOR_METHODS = frozenset(
    {
        "any",
        "all",
        "sum",
        "mean",
        "norm",
        "prod",
        "std",
        "var",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "max",
        "min",
        "abs",
        "sqrt",
        "exp",
        "log",
        "sigmoid",
        "tanh",
        "relu",
        "softmax",
        "isnan",
        "isinf",
        "isfinite",
        "count_nonzero",
        "nonzero",
        "eq",
        "ne",
        "gt",
        "ge",
        "lt",
        "le",
        "logical_and",
        "logical_or",
        "logical_not",
        "matmul",
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "bool",
        "detach",
        "clone",
        "square",
        "pow",
        "clamp",
        "sign",
        "floor",
        "ceil",
        "round",
    }
)

# Integer-valued results (for ``.tolist()``: int tensors convert under fullgraph=True).
INTEGER_METHODS = frozenset(
    {"long", "int", "short", "byte", "char", "argmax", "argmin", "count_nonzero", "nonzero"}
)
INTEGER_DTYPES = frozenset(
    {
        "torch.long",
        "torch.int",
        "torch.int64",
        "torch.int32",
        "torch.int16",
        "torch.int8",
        "torch.uint8",
        "torch.short",
    }
)

# Floating-point results (``.tolist()`` of these fails under fullgraph=True: GB0109).
FLOAT_METHODS = frozenset(
    {"float", "half", "double", "bfloat16", "softmax", "log_softmax", "sigmoid", "mean", "std"}
)
# Methods whose result has the dtype of their receiver.
_DTYPE_KEEPING = frozenset({"flatten", "view", "reshape", "detach", "clone", "cpu", "contiguous"})
FLOAT_FUNCTIONS = frozenset(
    {"rand", "randn", "rand_like", "randn_like", "softmax", "log_softmax", "sigmoid", "linspace"}
)
FLOAT_DTYPES = frozenset(
    {
        "torch.float",
        "torch.float32",
        "torch.float64",
        "torch.float16",
        "torch.bfloat16",
        "torch.half",
        "torch.double",
    }
)

_TENSOR_MODULES = frozenset(
    {"torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft"}
)
_NON_TENSOR_TORCH = frozenset(
    {
        "numel",
        "compile",
        "manual_seed",
        "seed",
        "initial_seed",
        "save",
        "load",
        "cond",
        "typename",
        "no_grad",
        "enable_grad",
        "inference_mode",
        "autocast",
        "device",
        "dtype",
        "finfo",
        "iinfo",
        "broadcast_shapes",
        "equal",  # Python bools from tensor data (DL115, GB0033)
        "allclose",
    }
)
_NON_TENSOR_PREFIXES = ("is_", "get_", "set_", "use_", "are_", "_")


def torch_call_returns_tensor(name: str | None) -> bool:
    """Whether the torch function ``name`` (canonical dotted name) returns a tensor."""
    if name is None:
        return False
    module, _, func = name.rpartition(".")
    if module not in _TENSOR_MODULES or not func or not func[0].islower():
        return False
    return func not in _NON_TENSOR_TORCH and not func.startswith(_NON_TENSOR_PREFIXES)


def _is_tensor_annotation(annotation: cst.BaseExpression, resolve: Resolver) -> bool:
    if isinstance(annotation, cst.SimpleString):
        value = evaluated(annotation)
        return isinstance(value, str) and value in ("torch.Tensor", "Tensor")
    name = resolve(annotation)
    if name in ("torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
        return True
    return dotted_name(annotation) in ("torch.Tensor", "Tensor") and name is None


def function_nodes(func: cst.FunctionDef) -> Iterator[tuple[cst.CSTNode, Sequence[cst.CSTNode]]]:
    """Every node of ``func``'s own body (not nested scopes) with its ancestors in the body."""
    for stmt in suite_body(func.body):
        yield from nodes_with_parents(stmt)


def _row_of(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """``iterable[0]``: what a loop over ``iterable`` binds, a tensor where ``iterable`` is one
    (a synthetic node, read only by the guess)."""
    return cst.Subscript(value=iterable, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])


# What a scope binds its names to (``TensorGuess.assigned``) and its parameters: read only
# once built, so the guesses of one scope by several rules share them.
Bindings = tuple[dict[str, list[cst.BaseExpression | None]], dict[str, cst.Param]]


class TensorGuess:
    """Is this expression probably a tensor? A static guess, biased towards "no"."""

    def __init__(
        self,
        resolve: Resolver,
        is_builtin: IsBuiltin,
        func: cst.FunctionDef | None,
        module_guess: TensorGuess | None = None,
        module: cst.Module | None = None,
        bindings: Bindings | None = None,
    ) -> None:
        """``is_builtin``: whether a name is the builtin in ``func``'s scope (the one check the
        region rules use, ``_RegionRule.is_builtin``). ``bindings``: those another guess of the
        same scope, with the same ``resolve`` and ``is_builtin``, found (:attr:`bindings`)."""
        self.resolve = resolve
        self.is_builtin = is_builtin
        self.func = func
        self.module_guess = module_guess
        self.assigned: dict[str, list[cst.BaseExpression | None]] = {}
        self.params: dict[str, cst.Param] = {}
        self._busy: dict[str, bool] = {}
        self._memo: dict[str, bool] = {}
        self._uses: dict[str, str] | None = None  # name -> control | range (see name_uses)
        if bindings is not None:
            self.assigned, self.params = bindings
        elif func is not None:
            for param in parameters(func.params):
                self.params[param.name.value] = param
            for node, _ in function_nodes(func):
                self._note_binding(node)
        elif module is not None:
            for stmt in scope_statements(module.body):
                self._note_binding(stmt)

    @property
    def bindings(self) -> Bindings:
        return self.assigned, self.params

    def _note_binding(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind(target.target, node.value)
        elif isinstance(node, cst.AnnAssign):
            value = node.value
            if _is_tensor_annotation(node.annotation.annotation, self.resolve):
                value = cst.parse_expression("torch.empty(0)") if value is None else value
            self._bind(node.target, value)
        elif isinstance(node, cst.AugAssign):
            self._bind(node.target, None)
        elif isinstance(node, cst.NamedExpr):
            self._bind(node.target, node.value)
        elif isinstance(node, (cst.For, cst.CompFor)):
            self._bind_iteration(node.target, node.iter)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self._bind(node.asname.name, None)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not self.func:
            self.assigned.setdefault(node.name.value, []).append(None)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self.assigned.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None)

    def _bind_iteration(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """The target of ``for target in iterable``: a name over a tensor is one of its rows (a
        tensor where ``iterable`` is guessed one, torch 2.13: fixtures/DL102/bad_rows.py), as
        is the second name of ``enumerate(t)`` and each name of ``zip(t, u)`` over a tensor.
        Anything else (a list, ``range``, a starred or nested target) binds an unknown value."""
        if isinstance(target, cst.Name) and isinstance(
            iterable, (cst.Name, cst.Attribute, cst.Subscript)
        ):
            self._bind(target, _row_of(iterable))
            return
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(iterable, cst.Call):
            elements = [e.value for e in target.elements]
            args = [a.value for a in iterable.args if a.keyword is None]
            starred = any(isinstance(e, cst.StarredElement) for e in target.elements) or any(
                a.star for a in iterable.args
            )
            enumerated = len(elements) == 2 and len(args) == 1
            if not starred and enumerated and self.is_builtin(iterable.func, "enumerate"):
                self._bind(elements[0], None)
                self._bind_iteration(elements[1], args[0])
                return
            if not starred and len(args) == len(elements) and self.is_builtin(iterable.func, "zip"):
                for element, arg in zip(elements, args, strict=True):
                    self._bind_iteration(element, arg)
                return
        self._bind(target, None)

    # -- the guess -----------------------------------------------------------------------

    def name_is_tensor(self, name: str) -> bool:
        """A name is a tensor if every binding is (``x = x + 1`` keeps a tensor a tensor), and
        something other than its own rebinding says so (a tensor annotation or value)."""
        if name in self._memo:
            return self._memo[name]
        if name in self._busy:
            return self._busy[name]
        top = not self._busy
        values = self.assigned.get(name)
        try:
            if values is not None:
                # Evidence first (a self-reference counts as "no"), then consistency (a
                # self-reference counts as "yes").
                self._busy[name] = False
                if name in self.params:
                    evidence = self._param_is_tensor(self.params[name])
                else:
                    evidence = any(v is not None and self.is_tensor(v) for v in values)
                self._busy[name] = True
                result = evidence and all(v is not None and self.is_tensor(v) for v in values)
            elif name in self.params:
                result = self._param_is_tensor(self.params[name])
            elif self.module_guess is not None:
                result = self.module_guess.name_is_tensor(name)
            else:
                result = False
        finally:
            self._busy.pop(name, None)
        if top:
            self._memo[name] = result
        return result

    def name_uses(self, is_builtin: IsBuiltin) -> dict[str, str]:
        """How the function's names are used (see ``_name_uses``), one pass per function
        (one per conversion was quadratic in a long compiled function)."""
        if self._uses is None:
            self._uses = _name_uses(self.func, is_builtin) if self.func is not None else {}
        return self._uses

    def _param_is_tensor(self, param: cst.Param) -> bool:
        if param.annotation is None:
            return False
        return _is_tensor_annotation(param.annotation.annotation, self.resolve)

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return False
            return self.name_is_tensor(expr.value)
        if isinstance(expr, cst.Attribute):
            attr = expr.attr.value
            if attr in NON_TENSOR_ATTRS:
                return False
            return attr in TENSOR_ATTRS and self.is_tensor(expr.value)
        if isinstance(expr, cst.Call):
            return self._call_is_tensor(expr)
        if isinstance(expr, cst.Comparison):
            ops = [c.operator for c in expr.comparisons]
            if any(isinstance(op, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for op in ops):
                return False
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            return any(self.is_tensor(op) for op in operands)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_tensor(expr.left) or self.is_tensor(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return False
            return self.is_tensor(expr.expression)
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(expr.value)
        if isinstance(expr, cst.IfExp):
            return self.is_tensor(expr.body) and self.is_tensor(expr.orelse)
        if isinstance(expr, cst.NamedExpr):
            return self.is_tensor(expr.value)
        return False

    def _call_is_tensor(self, call: cst.Call) -> bool:
        func = call.func
        resolved = self.resolve(func)
        if resolved is not None:
            return torch_call_returns_tensor(resolved)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in NON_TENSOR_METHODS:
                return False
            if method in STRONG_TENSOR_METHODS:
                return True
            return self.is_tensor(func.value)
        return False

    def is_bool_mask(self, expr: cst.BaseExpression) -> bool:
        """A boolean tensor (a comparison of tensors, ``~``/``&``/``|`` of masks, ``isnan``...)."""
        if isinstance(expr, cst.Comparison):
            return self.is_tensor(expr)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.is_bool_mask(expr.expression)
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
        ):
            return self.is_bool_mask(expr.left) or self.is_bool_mask(expr.right)
        if isinstance(expr, cst.Call):
            name = self.resolve(expr.func) or ""
            last = name.rpartition(".")[2] if name else ""
            if isinstance(expr.func, cst.Attribute) and not name:
                last = expr.func.attr.value
                if last in ("bool", "isnan", "isinf", "isfinite", "logical_not", "eq", "ne"):
                    return True
                return last in ("gt", "lt", "ge", "le", "logical_and", "logical_or")
            return name.startswith("torch.") and last in (
                "isnan",
                "isinf",
                "isfinite",
                "logical_not",
                "logical_and",
                "logical_or",
                "eq",
                "ne",
                "gt",
                "lt",
                "ge",
                "le",
            )
        if isinstance(expr, cst.Name):
            values = self.assigned.get(expr.value)
            if values:
                return all(v is not None and self.is_bool_mask(v) for v in values)
            if self.module_guess is not None and expr.value not in self.params:
                return self.module_guess.is_bool_mask(expr)
        return False

    def is_float_tensor(self, expr: cst.BaseExpression) -> bool:
        """Known to hold floating-point values (``.float()``, ``dtype=torch.float32``,
        ``torch.randn``, ``softmax``), the case where ``.tolist()`` fails under fullgraph."""
        if isinstance(expr, cst.Name):
            values = self.assigned.get(expr.value)
            if not values:
                return False
            return all(v is not None and self.is_float_tensor(v) for v in values)
        if isinstance(expr, cst.Subscript):  # indexing keeps the dtype (a row of a loop too)
            return self.is_float_tensor(expr.value)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_float_tensor(expr.left) or self.is_float_tensor(expr.right)
        if not isinstance(expr, cst.Call):
            return False
        said = self._says_dtype(expr, FLOAT_DTYPES, FLOAT_METHODS)
        if said is not None:
            return said
        func = expr.func
        if (
            isinstance(func, cst.Attribute)
            and self.resolve(func) is None
            and func.attr.value in _DTYPE_KEEPING
        ):
            return self.is_float_tensor(func.value)
        name = self.resolve(func)
        return name is not None and name.rsplit(".", 1)[-1] in FLOAT_FUNCTIONS

    def is_integer_tensor(self, expr: cst.BaseExpression) -> bool:
        """Known to hold integers (``.long()``, ``.to(torch.int64)``, ``dtype=torch.long``)."""
        if isinstance(expr, cst.Name):
            values = self.assigned.get(expr.value)
            if values:
                return all(v is not None and self.is_integer_tensor(v) for v in values)
            return False
        if isinstance(expr, cst.Subscript):  # indexing keeps the dtype (a row of a loop too)
            return self.is_integer_tensor(expr.value)
        if not isinstance(expr, cst.Call):
            return False
        said = self._says_dtype(expr, INTEGER_DTYPES, INTEGER_METHODS)
        if said is not None:
            return said
        name = self.resolve(expr.func)
        return name in ("torch.arange", "torch.randint", "torch.randperm", "torch.argmax")

    def _says_dtype(
        self, call: cst.Call, dtypes: frozenset[str], methods: frozenset[str]
    ) -> bool | None:
        """Whether ``call`` makes a tensor of one of ``dtypes``, where the call says it: a
        ``dtype=`` keyword, ``.to(<dtype>)`` or a method of ``methods`` (``.long()``); None
        where it does not say."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return self.resolve(arg.value) in dtypes
        func = call.func
        if isinstance(func, cst.Attribute) and self.resolve(func) is None:
            method = func.attr.value
            if method in methods:
                return True
            if method == "to":
                return any(
                    arg.keyword is None and self.resolve(arg.value) in dtypes for arg in call.args
                )
        return None


# -- where a tensor is truth-tested ----------------------------------------------------------------


def truth_tested(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The sub-expressions that Python converts with ``bool()`` when ``expr`` is a test."""
    if isinstance(expr, cst.BooleanOperation):
        yield from truth_tested(expr.left)
        yield from truth_tested(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        yield from truth_tested(expr.expression)
    else:
        yield expr


def test_of(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The tested expression of an ``if``/``while``/ternary/comprehension ``if``."""
    if isinstance(node, (cst.If, cst.While, cst.IfExp, cst.CompIf)):
        return node.test
    return None


def tensor_branches(node: cst.CSTNode, guess: TensorGuess) -> list[cst.BaseExpression]:
    """Tensor-valued expressions that ``node`` (an if/while/ternary/comp-if) branches on."""
    test = test_of(node)
    if test is None:
        return []
    return [leaf for leaf in truth_tested(test) if guess.is_tensor(leaf)]


def in_test(node: cst.CSTNode, parents: Sequence[cst.CSTNode]) -> bool:
    """Whether ``node`` sits in the test of an if/while/ternary/comprehension-if (not assert)."""
    child = node
    for parent in reversed(parents):
        if isinstance(parent, cst.BaseStatement) and not isinstance(parent, (cst.If, cst.While)):
            return False
        if test_of(parent) is child:
            return True
        if isinstance(parent, (cst.Lambda, cst.FunctionDef)):
            return False
        child = parent
    return False


def in_range_call(node: cst.CSTNode, parents: Sequence[cst.CSTNode], is_builtin: IsBuiltin) -> bool:
    """Whether ``node`` is (inside) an argument of the builtin ``range``."""
    for parent in reversed(parents):
        if isinstance(parent, cst.BaseStatement):
            return False
        if isinstance(parent, cst.Call) and is_builtin(parent.func, "range"):
            return True
    return False


# -- tensor -> Python conversions (DL102) --------------------------------------------------------


@dataclass(frozen=True)
class Conversion:
    node: cst.Call
    kind: str  # item | tolist | int | float | bool
    use: str  # control | range | value
    integer: bool  # tolist of a known integer tensor
    floating: bool = False  # tolist of a known floating-point tensor

    @property
    def breaks_with_capture(self) -> bool:
        """Still a break (or an error) with capture_scalar_outputs=True / fullgraph=True: a
        value that drives control flow or a loop count, or the list of a tensor known to hold
        floating-point values. An integer tensor's list is captured; where the dtype is not
        known, the failure is not shown, and nothing is claimed."""
        if self.use in ("control", "range"):
            return True
        return self.kind == "tolist" and self.floating


def conversion_kind(
    call: cst.Call, resolve: Resolver, guess: Callable[[], TensorGuess], is_builtin: IsBuiltin
) -> str | None:
    """``item``, ``tolist``, ``int``, ``float`` or ``bool``: how ``call`` makes a tensor a
    Python value, if it does (``resolve``: the scope's, as the guess's; the guess is made
    only for a builtin's argument)."""
    func = call.func
    if isinstance(func, cst.Attribute) and resolve(func) is None:
        method = func.attr.value
        if method == "item" and not call.args:
            return method
        # ``.tolist()`` is also a method of arrays and of tensordict's stacks of strings
        # (torchrl's ``text.tolist()``): a receiver known to be a tensor
        if method == "tolist" and not call.args and guess().is_tensor(func.value):
            return method
        return None
    for builtin in ("int", "float", "bool"):
        if is_builtin(func, builtin):
            positional = [a for a in call.args if a.keyword is None]
            if len(call.args) == 1 and positional and guess().is_tensor(positional[0].value):
                return builtin
    return None


def classify_conversion(
    call: cst.Call,
    kind: str,
    parents: Sequence[cst.CSTNode],
    guess: TensorGuess,
    is_builtin: IsBuiltin,
) -> Conversion:
    integer = floating = False
    if kind == "tolist" and isinstance(call.func, cst.Attribute):
        integer = guess.is_integer_tensor(call.func.value)
        floating = not integer and guess.is_float_tensor(call.func.value)
    use = "value"
    if in_test(call, parents):
        use = "control"
    elif in_range_call(call, parents, is_builtin):
        use = "range"
    else:
        name = _assigned_name(call, parents)
        if name is not None and guess.func is not None:
            use = guess.name_uses(is_builtin).get(name, "value")
    return Conversion(call, kind, use, integer, floating)


_PASS_THROUGH_BUILTINS = ("int", "float", "round", "abs", "bool", "min", "max")


def _assigned_name(node: cst.CSTNode, parents: Sequence[cst.CSTNode]) -> str | None:
    """``n`` when ``node`` is (arithmetic on) the value of ``n = ...``."""
    child = node
    for parent in reversed(parents):
        if isinstance(parent, cst.Assign):
            if parent.value is child and len(parent.targets) == 1:
                target = parent.targets[0].target
                if isinstance(target, cst.Name):
                    return target.value
            return None
        if isinstance(parent, (cst.Arg, cst.BinaryOperation, cst.UnaryOperation)):
            child = parent
            continue
        if (
            isinstance(parent, cst.Call)
            and isinstance(parent.func, cst.Name)
            and parent.func.value in _PASS_THROUGH_BUILTINS
            and child in parent.args
        ):
            child = parent
            continue
        return None
    return None


def _name_uses(func: cst.FunctionDef, is_builtin: IsBuiltin) -> dict[str, str]:
    """How each name of ``func``'s body is used: "control" if some use is in a test,
    else "range" if some use is in a ``range()`` argument (other names: "value"). A test of
    what the value is rather than of its data (``isinstance(n, torch.Tensor)``, ``n is
    None``, ``n.numel()``, ``len(n)``) does not count: Dynamo decides it from the type and
    shape, without the value."""
    uses: dict[str, str] = {}
    for node, parents in function_nodes(func):
        if not isinstance(node, cst.Name) or uses.get(node.value) == "control":
            continue
        if in_test(node, parents) and not _tests_identity(node, parents, is_builtin):
            uses[node.value] = "control"
        elif in_range_call(node, parents, is_builtin):
            uses[node.value] = "range"
    return uses


# builtins that read what a value is, or its length (a list's length is its tensor's shape)
_TYPE_TESTS = ("isinstance", "issubclass", "callable", "hasattr", "type", "id", "len")
# what a tensor (or a list of its values) has regardless of its data
_SHAPE_READS = frozenset(
    {"shape", "ndim", "dtype", "device", "layout", "is_cuda", "numel", "dim", "size", "nelement"}
)


def _tests_identity(node: cst.Name, parents: Sequence[cst.CSTNode], is_builtin: IsBuiltin) -> bool:
    """Whether ``node`` is only tested for its type, identity or shape: an argument of
    ``isinstance``/``hasattr``/``len``/..., an operand of ``is``/``is not``, or the receiver
    of ``.shape``, ``.numel()``, ``.dim()``..."""
    if not parents:
        return False
    parent = parents[-1]
    if isinstance(parent, cst.Attribute):
        return parent.value is node and parent.attr.value in _SHAPE_READS
    if isinstance(parent, cst.Arg) and len(parents) >= 2:
        call = parents[-2]
        return isinstance(call, cst.Call) and any(
            is_builtin(call.func, name) for name in _TYPE_TESTS
        )
    if isinstance(parent, cst.ComparisonTarget) and len(parents) >= 2:
        parent = parents[-2]
    if isinstance(parent, cst.Comparison):
        return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons)
    return False


# -- names and attributes bound in a scope (region rules that ask what a name holds) -----------


def bound_values(statements: Iterable[cst.CSTNode], name: str) -> list[cst.BaseExpression | None]:
    """What ``statements`` (a scope's, see ``scope_statements``) bind ``name`` to: assigned
    values, and None for a ``def``, ``class`` or import of that name (not known here)."""
    values: list[cst.BaseExpression | None] = []
    for stmt in statements:
        if isinstance(stmt, cst.Assign):
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in stmt.targets):
                values.append(stmt.value)
        elif isinstance(stmt, cst.AnnAssign):
            if isinstance(stmt.target, cst.Name) and stmt.target.value == name:
                values.append(stmt.value)
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == name:
            values.append(None)
        elif isinstance(stmt, (cst.Import, cst.ImportFrom)):
            names = stmt.names if isinstance(stmt.names, (list, tuple)) else ()
            for alias in names:
                bound = alias.asname.name if alias.asname else alias.name
                if isinstance(bound, cst.Name) and bound.value == name:
                    values.append(None)
    return values


def self_attribute_values(
    parents: Sequence[cst.CSTNode], attr: str
) -> list[cst.BaseExpression | None] | None:
    """Values the innermost enclosing class assigns to ``self.<attr>`` in any method; None
    outside a class."""
    for parent in reversed(parents):
        if isinstance(parent, cst.ClassDef):
            values: list[cst.BaseExpression | None] = []
            for node in descendants(parent):
                if isinstance(node, cst.Assign):
                    for target in node.targets:
                        if self_attribute(target.target) == attr:
                            values.append(node.value)
            return values
    return None


def binds_locally(func: cst.FunctionDef, name: str) -> bool:
    """Whether ``name`` is local to ``func``: a parameter, bound in its scope (assignment,
    ``def``, ``class``, import) or by a ``with ... as name``."""
    if any(p.name.value == name for p in parameters(func.params)):
        return True
    return bool(bound_values(scope_statements(func.body.body), name)) or any(
        isinstance(node, cst.WithItem)
        and node.asname is not None
        and isinstance(node.asname.name, cst.Name)
        and node.asname.name.value == name
        for node in descendants(func.body)
    )
