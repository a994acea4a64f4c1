"""DL123: a change of a tensor's ``requires_grad`` inside a compiled region.

Observed on torch 2.13.0 (tests/proof/test_proof_dl123.py, fixtures/DL123), each a graph break
and, under ``fullgraph=True``, a compile error; inside a loop the whole frame is skipped
(GB7000):

* ``t.requires_grad = ...`` (or ``setattr(t, "requires_grad", ...)``) on any tensor, even when
  the value does not change: ``setattr() on Tensor.requires_grad`` (GB0206);
* a ``torch`` factory called with ``requires_grad=True`` (``torch.tensor(0.0,
  requires_grad=True)``, ``torch.zeros``, ``randn_like``... and ``x.new_tensor``), even under
  ``torch.no_grad()``: ``Attempted to use tensor creation function with requires_grad=True``
  (GB0225). ``x.new_zeros(..., requires_grad=True)`` and the other ``new_*`` are traced;
* ``y.requires_grad_()`` on a tensor the compiled function made (a factory call or a
  ``.detach()``) when ``y`` or a value computed from it is returned: ``returning intermediate
  with requires_grad_()`` (GB7324) under fullgraph, a break at the call (GB8985) otherwise.
  ``requires_grad_()`` on inputs and parameters (GB0125) depends on the flag's value at run
  time and is not reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Severity
from distlint.rules._fixed_point import grow_until_stable
from distlint.rules.base import in_region
from distlint.rules.compile._analysis import (
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    self_attribute_values,
    torch_call_returns_tensor,
)
from distlint.rules.compile._region import _RegionRule
from distlint.rules.context import RuleContext
from distlint.semantic.regions_model import Region
from distlint.syntax.imports import dotted_name, self_attribute
from distlint.syntax.shapes import (
    assignment_targets,
    bound_names,
    is_name,
    is_true,
    keyword_is_true,
)
from distlint.syntax.walker import descendants, keyword_arg, nodes_with_parents, scope_nodes

# The torch functions that take ``requires_grad`` (torch 2.13's ``_VariableFunctions``): called
# with ``requires_grad=True`` in a compiled region, each is GB0225.
FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "arange",
        "asarray",
        "bartlett_window",
        "blackman_window",
        "empty",
        "empty_like",
        "empty_permuted",
        "empty_quantized",
        "empty_strided",
        "eye",
        "from_file",
        "frombuffer",
        "full",
        "full_like",
        "hamming_window",
        "hann_window",
        "kaiser_window",
        "linspace",
        "logspace",
        "normal",
        "ones",
        "ones_like",
        "rand",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "randperm",
        "range",
        "scalar_tensor",
        "sparse_bsc_tensor",
        "sparse_bsr_tensor",
        "sparse_compressed_tensor",
        "sparse_coo_tensor",
        "sparse_csc_tensor",
        "sparse_csr_tensor",
        "tensor",
        "tril_indices",
        "triu_indices",
        "zeros",
        "zeros_like",
    )
)
# The one Tensor-method factory that is GB0225 too (``new_zeros``/``new_ones``/``new_full``/
# ``new_empty`` with requires_grad=True are traced).
METHOD_FACTORY = "new_tensor"
# Iterators whose elements are a module's parameters (or buffers): a loop variable over one is
# a tensor.
PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})
PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Values that are not tensors, whatever they hold.
NON_TENSOR_VALUES = (
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
    cst.GeneratorExp,
    cst.Comparison,
    cst.Lambda,
)
# Calls whose result does not carry a tensor's autograd state into what is returned.
_UNTRACKED_BUILTINS = frozenset(
    {"len", "isinstance", "int", "float", "bool", "str", "repr", "id", "type", "print"}
)
# Container methods that put their argument into the receiver (``outputs.append(y)``).
_CONTAINER_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add"})

GB0206 = "`Unsupported: setattr() on Tensor.requires_grad`, GB0206"
GB0225 = "`Unsupported: Attempted to use tensor creation function with requires_grad=True`, GB0225"
GB7324 = "`Unsupported: returning intermediate with requires_grad_()`, GB7324"
GB8985 = "GB8985, `requires_grad_() intermediate leaked as output`"
LOOP_SKIP = (
    "inside this loop, the break makes torch 2.13 skip the whole function (GB7000, `graph "
    "break in loop`) and run it eagerly: nothing of it is compiled"
)


class RequiresGradChangeInCompiledRegion(_RegionRule):
    code = "DL123"
    name = "requires-grad-change-in-compiled-region"
    severity = Severity.WARNING
    summary = (
        "Changing requires_grad inside a compiled region (`t.requires_grad = ...`, a torch "
        "factory with requires_grad=True, requires_grad_() on a returned intermediate) "
        "graph-breaks (fullgraph=True: compile error)."
    )
    tags = ("performance", "torch.compile")
    precision = "high"
    graph_breaks = ("GB0206", "GB0225", "GB7324", "GB8985")

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self.active = "requires_grad" in ctx.source

    # -- GB0206: t.requires_grad = ... -------------------------------------------------------

    @in_region
    def visit_Assign(self, node: cst.Assign, region: Region) -> None:
        for target in node.targets:
            attribute = target.target
            if (
                isinstance(attribute, cst.Attribute)
                and attribute.attr.value == "requires_grad"
                and self._is_tensor(attribute.value)
            ):
                self._report_setattr(attribute, attribute.value, node.value, region)

    def _report_setattr(
        self,
        node: cst.CSTNode,
        receiver: cst.BaseExpression,
        value: cst.BaseExpression,
        region: Region,
    ) -> None:
        spelled = self.spell(receiver)
        what = f"Setting `{spelled}.requires_grad` inside a compiled region"
        if is_name(value, "False") and not self._parameter_like(receiver):
            instead = (
                f"A tensor that must not carry gradients can be detached instead (`{spelled} = "
                f"{spelled}.detach()`, traced), or set the flag before the compiled call."
            )
        else:
            instead = (
                "Set it outside the compiled function: freeze or unfreeze parameters before "
                "compiling (or between compiled calls), and create tensors that need "
                "gradients before the call."
            )
        self._report(node, region, what, GB0206, instead)

    # -- GB0225 and GB7324/GB8985: calls -------------------------------------------------------

    @in_region
    def visit_Call(self, node: cst.Call, region: Region) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            if func.value == "setattr" and self.is_builtin(func, "setattr"):
                self._check_setattr_call(node, region)
            elif keyword_is_true(node, "requires_grad"):
                self._check_factory(node, region)
        elif isinstance(func, cst.Attribute):
            if func.attr.value == "requires_grad_":
                self._check_requires_grad_(node, func, region)
            elif keyword_is_true(node, "requires_grad"):
                self._check_factory(node, region)

    def _check_setattr_call(self, node: cst.Call, region: Region) -> None:
        """``setattr(t, "requires_grad", v)``: the same break as the assignment."""
        args = node.args
        if len(args) != 3 or any(a.keyword is not None or a.star for a in args):
            return
        attr = args[1].value
        if not (isinstance(attr, cst.SimpleString) and attr.evaluated_value == "requires_grad"):
            return
        if self._is_tensor(args[0].value):
            self._report_setattr(node, args[0].value, args[2].value, region)

    def _check_factory(self, node: cst.Call, region: Region) -> None:
        func = node.func
        name = self.ctx.resolve(func)
        if name in FACTORIES:
            spelled = self.spell(func)
            instead = (
                "Create it without `requires_grad` (a constant such as a zero loss needs "
                "none), build it from a tensor at hand with `x.new_zeros(..., "
                "requires_grad=True)` / `x.new_ones(...)` / `x.new_full(...)` (traced), or "
                "create it outside the compiled function and pass it in."
            )
        elif name is None and isinstance(func, cst.Attribute) and func.attr.value == METHOD_FACTORY:
            spelled = self.spell(func)
            instead = (
                f"Use `{self.spell(func.value)}.new_zeros(...)` / `new_full(...)` with "
                f"`requires_grad=True` (traced), or create it outside the compiled function."
            )
        else:
            return
        what = f"`{spelled}(..., requires_grad=True)` inside a compiled region"
        self._report(node, region, what, GB0225, instead)

    def _check_requires_grad_(self, node: cst.Call, func: cst.Attribute, region: Region) -> None:
        """``y.requires_grad_()`` / ``(True)`` on a tensor made here that reaches what the
        compiled function returns (GB7324 / GB8985)."""
        if not region.direct or not _turns_on(node):
            return  # only a root's own return is the graph's output
        function = self.ctx.function
        if function is None or not self._made_here(func.value, set()):
            return
        if not _reaches_return(function, node, self.ctx.parents, func.value):
            return
        spelled = self.spell(node)
        what = (
            f"`{spelled}` on a tensor made in the compiled function, which (or a value "
            "computed from it) the function returns,"
        )
        instead = (
            "Create the tensor outside the compiled function (with `requires_grad=True`) and "
            "pass it in, build it with `x.new_zeros(..., requires_grad=True)` (traced), or "
            "return `.detach()`ed values if only the values are needed."
        )
        torch_says = GB7324 if region.fullgraph else f"{GB8985}; under fullgraph=True, {GB7324}"
        effect = (
            "Dynamo restarts the frame, the graph ends at the call and the rest runs in a new one"
        )
        self._report(node, region, what, torch_says, instead, effect)

    # -- receivers -----------------------------------------------------------------------------

    def _is_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor per the tensor guess, a parameter-like access (see _parameter_like), or a
        plain local or argument name (see _plain_name)."""
        return (
            self.guess().is_tensor(expr)
            or self._parameter_like(expr)
            or (isinstance(expr, cst.Name) and self._plain_name(expr.value))
        )

    def _plain_name(self, name: str) -> bool:
        """An argument (not ``self``/``cls``, not ``*args``, not annotated as something other
        than a tensor) or a local assigned only values that may be tensors (also through ``+=``
        and tuple unpacking): what real code sets ``requires_grad`` on this way is a tensor (a
        loss target, ``position_bias``, ``hidden_states``). A name also bound by a loop,
        ``with``, import or ``def`` is left out, and so is one assigned a literal, a container
        or a constructed object (``nn.Linear(...)``, ``Config()``)."""
        function = self.ctx.function
        if name in ("self", "cls") or function is None:
            return False
        guess = self.guess()
        param = guess.params.get(name)
        values = guess.assigned.get(name) or []
        if param is None and not values:
            return False  # a global, a builtin or a free variable
        if param is not None and (param.star or not _tensor_annotation(param.annotation)):
            return False
        if name in self._loops(function).others:
            return False
        return not any(v is not None and self._not_a_tensor(v) for v in values)

    def _not_a_tensor(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, NON_TENSOR_VALUES) or is_name(value, "None"):
            return True
        if isinstance(value, cst.Call):
            func = value.func
            last = func.attr.value if isinstance(func, cst.Attribute) else dotted_name(func) or ""
            if last[:1].isupper():  # a class: a module or another object, unless torch's
                name = self.ctx.resolve(func) or ""
                return name not in PARAMETER_CLASSES and not (
                    name.startswith("torch.") and name.endswith("Tensor")
                )
        return False

    def _parameter_like(self, expr: cst.BaseExpression) -> bool:
        """``<chain>.weight`` / ``.bias`` (``*_weight`` / ``*_bias``), ``self.<p>`` that the
        class assigns only ``nn.Parameter(...)`` or a torch tensor, ``<param>.data``, or a loop
        variable over ``.parameters()`` / ``.named_parameters()`` / ``.buffers()``."""
        if isinstance(expr, cst.Attribute):
            attr = expr.attr.value
            if attr == "data":
                return self._parameter_like(expr.value)
            if attr in ("weight", "bias") or attr.endswith(("_weight", "_bias")):
                return _is_chain(expr.value)
            if self_attribute(expr) is not None:
                values = self_attribute_values(self.ctx.parents, attr) or []
                return bool(values) and all(
                    isinstance(v, cst.Call) and self._builds_tensor(v) for v in values
                )
            return False
        if isinstance(expr, cst.Name):
            return self._parameter_loop_variable(expr.value)
        return False

    def _builds_tensor(self, call: cst.Call) -> bool:
        name = self.ctx.resolve(call.func)
        return name in PARAMETER_CLASSES or torch_call_returns_tensor(name)

    def _parameter_loop_variable(self, name: str) -> bool:
        """Whether the enclosing function binds ``name`` only as a loop variable over
        parameters (a loop binds it to None in the guess's bindings)."""
        function = self.ctx.function
        if function is None:
            return False
        count = self._loops(function).parameters[name]
        return count > 0 and self.guess().assigned.get(name) == [None] * count

    def _loops(self, function: cst.FunctionDef) -> _Loops:
        cache: dict[int, _Loops] = self.__dict__.setdefault("_loops_cache", {})
        found = cache.get(id(function))
        if found is None:
            found = cache[id(function)] = _Loops.of(function)
        return found

    def _made_here(self, expr: cst.BaseExpression, seen: set[str]) -> bool:
        """A tensor the compiled function makes and that does not require grad: a torch
        factory call (without ``requires_grad``), ``<x>.detach()`` (then ``.clone()``),
        ``<x>.clone().detach()``, or a local name bound only to those."""
        if isinstance(expr, cst.Call):
            func = expr.func
            name = self.ctx.resolve(func)
            if name is not None:
                return name in FACTORIES and keyword_arg(expr, "requires_grad") is None
            if isinstance(func, cst.Attribute) and not expr.args:
                method = func.attr.value
                if method == "detach":
                    return True
                if method == "clone":
                    return self._made_here(func.value, seen)
            return False
        if isinstance(expr, cst.Name):
            guess = self.guess()
            if expr.value in seen or expr.value in guess.params:
                return False
            values = guess.assigned.get(expr.value) or []
            seen.add(expr.value)
            return bool(values) and all(v is not None and self._made_here(v, seen) for v in values)
        return False

    # -- reporting -----------------------------------------------------------------------------

    def _report(
        self,
        node: cst.CSTNode,
        region: Region,
        what: str,
        torch_says: str,
        instead: str,
        effect: str = "the graph ends here and resumes after it",
    ) -> None:
        """Report at ``node``: under fullgraph=True an error where it certainly runs (else a
        warning for some paths); otherwise a break, ``effect`` saying what happens to the
        graph (in a loop: the whole function is skipped)."""
        if _in_loop(self.ctx.parents, node):
            effect = LOOP_SKIP
        self.report_break(
            node,
            region,
            fullgraph=f"{what} fails under fullgraph=True on torch 2.13 ({torch_says})",
            breaks=f"{what} graph-breaks on torch 2.13 ({torch_says}): {effect}",
            certain_only=True,
            then=f". {instead}",
        )


# -- helpers ---------------------------------------------------------------------------------------


def _tensor_annotation(annotation: cst.Annotation | None) -> bool:
    """No annotation, or one that names ``Tensor`` / ``Parameter`` (``Optional[Tensor]``)."""
    if annotation is None:
        return True
    return any(
        (isinstance(node, cst.Name) and node.value in ("Tensor", "Parameter"))
        or (isinstance(node, cst.SimpleString) and "Tensor" in node.value)
        for node in descendants(annotation)
    )


def _is_chain(expr: cst.BaseExpression) -> bool:
    """``a`` / ``a.b.c`` / ``a.b[0].c``: a path of names, attributes and subscripts."""
    while True:
        if isinstance(expr, cst.Name):
            return True
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
        else:
            return False


def _turns_on(call: cst.Call) -> bool:
    """``requires_grad_()`` / ``requires_grad_(True)`` / ``requires_grad_(requires_grad=True)``."""
    if not call.args:
        return True
    return len(call.args) == 1 and not call.args[0].star and is_true(call.args[0].value)


def _in_loop(parents: Sequence[cst.CSTNode], node: cst.CSTNode) -> bool:
    """Whether ``node`` is in the body of a ``for`` / ``while`` of its own function."""
    chain = [*parents, node]
    for index in range(len(chain) - 1, 0, -1):
        parent, child = chain[index - 1], chain[index]
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(parent, (cst.For, cst.While)) and child is parent.body:
            return True
    return False


@dataclass
class _Loops:
    """What a function's own scope binds by loops and the like: the variables of loops over
    parameters (``for p in m.parameters()``, ``for n, p in m.named_parameters()``, also through
    ``list(...)`` / ``chain(...)``), with how many such loops bind each, and the names bound
    to anything by other loops, ``with``, imports and ``def``/``class``."""

    parameters: Counter[str] = field(default_factory=Counter)
    others: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, function: cst.FunctionDef) -> _Loops:
        found = cls()
        for node in scope_nodes(function.body):
            if isinstance(node, cst.For) and _iterates_parameters(node.iter):
                target = node.target
                if isinstance(target, cst.Tuple) and len(target.elements) == 2:
                    found.parameters.update(bound_names(target.elements[1].value))
                    found.others.update(bound_names(target.elements[0].value))
                else:
                    found.parameters.update(bound_names(target))
            elif isinstance(node, (cst.For, cst.CompFor)):
                found.others.update(bound_names(node.target))
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                found.others.update(bound_names(node.asname.name))
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                found.others.add(node.name.value)
            elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(
                node.names, cst.ImportStar
            ):
                for alias in node.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    found.others.add((dotted_name(bound) or "").split(".")[0])  # import a.b: a
        return found


def _iterates_parameters(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in PARAMETER_ITERATORS:
        return True
    values = [a.value for a in expr.args if a.keyword is None and not a.star]
    return bool(values) and len(values) == len(expr.args) and all(map(_iterates_parameters, values))


# -- does a requires_grad_() tensor reach the return? ----------------------------------------------


def _reaches_return(
    function: cst.FunctionDef,
    call: cst.Call,
    parents: Sequence[cst.CSTNode],
    receiver: cst.BaseExpression,
) -> bool:
    """Whether the tensor ``call`` (``receiver.requires_grad_()``) turns on flows into a
    ``return`` of ``function`` after it: the call is in the returned expression, or a name
    bound to it (or to a value computed from it, through assignments and container appends
    after the call) is returned. A ``.detach()``, a shape, ``.item()``... carries nothing."""
    statement_index = next(
        (
            i
            for i in range(len(parents) - 1, -1, -1)
            if isinstance(parents[i], cst.BaseSmallStatement)
        ),
        None,
    )
    if statement_index is None:
        return False
    statement = parents[statement_index]
    inside = [*parents[statement_index + 1 :], call]
    if not _carries_up(inside):
        return False
    tainted: set[str] = set()
    if isinstance(statement, cst.Return):
        return True
    if isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        targets = assignment_targets(statement)
        if inside[0] is statement.value:
            tainted.update(_bound(targets))
    elif (
        isinstance(statement, cst.Expr)
        and statement.value is call
        and isinstance(receiver, cst.Name)
    ):
        tainted.add(receiver.value)
    if not tainted:
        return False
    later = _nodes_after(function, call)
    grow_until_stable(tainted, later, _taints)
    return any(
        isinstance(node, cst.Return) and node.value is not None and _mentions(node.value, tainted)
        for node in later
    )


def _nodes_after(function: cst.FunctionDef, call: cst.Call) -> list[cst.CSTNode]:
    """The assignments, appends and returns of ``function``'s own body after ``call``."""
    found: list[cst.CSTNode] = []
    seen = False
    for node in scope_nodes(function.body):
        if node is call:
            seen = True
        elif seen and isinstance(
            node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Call)
        ):
            found.append(node)
    return found


def _taints(node: cst.CSTNode, tainted: set[str]) -> set[str]:
    """The names ``node`` binds to a value computed from a ``tainted`` name."""
    if isinstance(node, cst.Assign) and _mentions(node.value, tainted):
        return set(_bound([t.target for t in node.targets]))
    if (
        isinstance(node, (cst.AnnAssign, cst.AugAssign))
        and node.value is not None
        and _mentions(node.value, tainted)
    ):
        return set(_bound([node.target]))
    if isinstance(node, cst.Call):
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _CONTAINER_METHODS
            and isinstance(func.value, cst.Name)
            and any(_mentions(a.value, tainted) for a in node.args)
        ):
            return {func.value.value}
    return set()


def _bound(targets: Iterable[cst.BaseExpression]) -> Iterable[str]:
    """Names bound by assignment targets; ``out[k] = v`` taints the container ``out``."""
    for target in targets:
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            yield target.value.value
        else:
            yield from bound_names(target)


def _mentions(expr: cst.BaseExpression, names: set[str]) -> bool:
    """Whether ``expr`` uses one of ``names`` in a way that carries its autograd state."""
    for node, ancestors in nodes_with_parents(expr):
        if not (isinstance(node, cst.Name) and node.value in names):
            continue
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            continue  # ``x.y``: the attribute's name
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            continue
        if _carries_up([*ancestors, node]):
            return True
    return False


def _carries_up(chain: Sequence[cst.CSTNode]) -> bool:
    """Whether the value at the end of ``chain`` (a node under its ancestors, outermost
    first) flows into the outermost one as a tensor with autograd state: not through
    ``.detach()``, metadata (``.shape``, ``.size()``, ``.item()``) or ``len()``/``int()``..."""
    for index in range(len(chain) - 1, 0, -1):
        parent, child = chain[index - 1], chain[index]
        if isinstance(parent, cst.Attribute) and parent.value is child:
            attr = parent.attr.value
            if attr in NON_TENSOR_ATTRS or attr == "grad":
                return False  # metadata; a gradient does not carry the flag
            outer = chain[index - 2] if index >= 2 else None
            if (
                isinstance(outer, cst.Call)
                and outer.func is parent
                and (attr == "detach" or attr in NON_TENSOR_METHODS)
            ):
                return False
        elif isinstance(parent, cst.Arg) and index >= 2:
            outer = chain[index - 2]
            if (
                isinstance(outer, cst.Call)
                and isinstance(outer.func, cst.Name)
                and outer.func.value in _UNTRACKED_BUILTINS
            ):
                return False
        elif isinstance(parent, (cst.Comparison, cst.Lambda)):
            return False
    return True
