"""DL121: ``m.compile()`` on an instance of a ``torch.nn`` class compiles nothing.

Observed on torch 2.13.0 (tests/proof/test_proof_dl1xx.py, fixtures/DL121): ``Module.compile()``
installs ``torch.compile(self._call_impl)``; for a class whose ``forward`` lives in torch.nn
(``nn.Linear``, ``nn.Sequential``, ``nn.TransformerEncoderLayer``) both frames are in files
Dynamo skips, so no graph is ever compiled and the module runs eagerly, silently
(pytorch/pytorch#150915). ``torch.compile(m)`` compiles it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import libcst as cst

from distlint.findings import Severity
from distlint.knowledge.module_factories import the_module, torch_nn_layer
from distlint.rules.base import Rule
from distlint.rules.compile._analysis import TensorGuess, builtin_in
from distlint.rules.context import RuleContext
from distlint.syntax.imports import scope_statements, scope_statements_nested, self_attribute
from distlint.syntax.walker import descendants, suite_body


class CompileMethodOnTorchNnModule(Rule):
    code = "DL121"
    name = "compile-method-on-torch-nn-module"
    severity = Severity.WARNING
    summary = (
        "`m.compile()` on an instance of a torch.nn class (nn.Linear, nn.Sequential, "
        "nn.TransformerEncoderLayer, ...) compiles nothing on torch 2.13: the module runs "
        "eagerly."
    )
    tags = ("performance", "torch.compile")
    precision = "very-high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self.active = "compile" in ctx.source and "nn" in ctx.source
        self._bindings: dict[int, TensorGuess] = {}  # id(function or None) -> its bindings
        self._assigned: dict[int, frozenset[str] | _Every] = {}  # likewise: _assigned_names

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "compile":
            return
        if any(arg.keyword is None or arg.star for arg in node.args):
            return  # ``Module.compile`` takes keywords only: another ``compile``
        built = self._torch_nn_class(func.value)
        if built is None:
            return
        spelled = self.ctx.spellings.spell(func.value, 60)
        self.report(
            node,
            f"`{spelled}.compile()` compiles nothing: `{spelled}` is a torch.nn `{built}`, and "
            "on torch 2.13 Dynamo skips the frames of a forward defined in torch.nn (no graph, "
            "pytorch/pytorch#150915), so the module runs eagerly. Use `m = torch.compile(m)` "
            "and call what it returns, or compile the module or function that calls it.",
        )

    def _torch_nn_class(self, receiver: cst.BaseExpression) -> str | None:
        """The torch.nn class ``receiver`` is certainly an instance of, or None."""
        receiver = the_module(receiver)
        if isinstance(receiver, cst.Call):
            return self._built_by(receiver)
        if isinstance(receiver, cst.Name):
            function = self.ctx.function
            if receiver.value not in self._assigned_names(function):
                return None  # never ``name = ...``: the guess has no value for it (None)
            bindings = self._bindings.get(id(function))
            if bindings is None:
                module = self.ctx.module if function is None else None
                bindings = TensorGuess(
                    self.ctx.imports.resolve,
                    partial(builtin_in, self.ctx.scope_table()),
                    function,
                    module=module,
                )
                self._bindings[id(function)] = bindings
            if receiver.value in bindings.params:
                return None
            return self._only_value(bindings.assigned.get(receiver.value))
        attribute = self_attribute(receiver)
        if attribute is not None and self.ctx.function is not None:
            cls = next((p for p in reversed(self.ctx.parents) if isinstance(p, cst.ClassDef)), None)
            if cls is not None:
                return self._only_value(_self_assigned(cls, attribute))
        return None

    def _assigned_names(self, function: cst.FunctionDef | None) -> frozenset[str] | _Every:
        """Names an ``=`` or annotated assignment statement of the scope binds to a plain
        name: a cheap gate before the scope's :class:`TensorGuess` (``torch`` in
        ``@torch.compile(...)``, a keyword-only ``X.compile`` call, builds one per function).
        The guess gives a name a value that can build a torch.nn class only through such a
        statement (or a ``:=``, seen only in a function's expressions: then every name
        passes); a loop, ``with``, augmented, unpacked or ``def`` binding is not a call, and
        an unbound name or parameter gives None: a name outside the set gives None either
        way."""
        found = self._assigned.get(id(function))
        if found is None:
            if function is not None and ":=" in self.ctx.source:
                found = EVERY
            else:
                body = self.ctx.module.body if function is None else suite_body(function.body)
                found = frozenset(
                    name
                    for stmt in scope_statements(body)
                    if isinstance(stmt, (cst.Assign, cst.AnnAssign))
                    for name in _target_names(stmt)
                )
            self._assigned[id(function)] = found
        return found

    def _only_value(self, values: list[cst.BaseExpression | None] | None) -> str | None:
        """The torch.nn class every one of ``values`` builds (None when one does not)."""
        if not values:
            return None
        built = {self._built_by(the_module(v) if v is not None else None) for v in values}
        return built.pop() if len(built) == 1 and None not in built else None

    def _built_by(self, value: cst.BaseExpression | None) -> str | None:
        if not isinstance(value, cst.Call):
            return None
        dotted = self.ctx.imports.resolve(value.func)
        return dotted.rsplit(".", 1)[-1] if dotted is not None and torch_nn_layer(dotted) else None


class _Every:
    """The set of every name (``in`` is always true)."""

    def __contains__(self, name: object) -> bool:
        return True


EVERY = _Every()


def _target_names(stmt: cst.Assign | cst.AnnAssign) -> Iterator[str]:
    targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
    for target in targets:
        if isinstance(target, cst.Name):
            yield target.value


def _self_assigned(cls: cst.ClassDef, attribute: str) -> list[cst.BaseExpression | None]:
    """Every value the class's methods assign to ``self.<attribute>`` (None for a binding
    that is not a plain assignment: augmented, unpacked, ``setattr``-like)."""
    values: list[cst.BaseExpression | None] = []
    for stmt, _ in scope_statements_nested(cls.body.body):
        if not isinstance(stmt, cst.FunctionDef):
            continue
        for node in descendants(stmt.body):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    if self_attribute(target.target) == attribute:
                        values.append(node.value)
                    elif any(
                        isinstance(n, cst.Attribute) and self_attribute(n) == attribute
                        for n in descendants(target.target)
                    ):
                        values.append(None)
            elif (
                isinstance(node, (cst.AnnAssign, cst.AugAssign))
                and self_attribute(node.target) == attribute
            ):
                values.append(node.value if isinstance(node, cst.AnnAssign) else None)
    return values
