"""Custom operators (DL401, DL402, DL404, DL405, DL408): definitions, kernels, fakes, autograd.

Facts observed on torch 2.13.0, re-observed by tests/proof/test_proof_dl4xx.py. DL401, DL402,
DL404 and DL408 need facts from several files (an op defined in ``ops.py``, its fake registered
in ``fakes.py``, called from ``model.py``; C++ sources), so they record plain data in the first
pass and link it in ``check_project``. DL405 looks at one op body at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import libcst as cst

from distlint.findings import Location, Span
from distlint.rules._paths import is_test_path
from distlint.rules.base import ProjectRule
from distlint.rules.context import RuleContext
from distlint.rules.custom_ops._autograd import (
    eval_only,
    grad_disabled,
    is_forward,
    optional_input,
    positional,
)
from distlint.semantic.regions import literal_value
from distlint.syntax.imports import dotted_name
from distlint.syntax.shapes import is_none
from distlint.syntax.walker import descendants, keyword_arg, mentions_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from distlint.knowledge.native import NativeEntry
    from distlint.rules.project import Project
    from distlint.syntax.spans import NodeSpan


CUSTOM_OP = frozenset({"torch.library.custom_op", "torch._library.custom_ops.custom_op"})


REGISTER_FAKE = frozenset(
    {"torch.library.register_fake", "torch.library.impl_abstract", "torch.library.fake"}
)


REGISTER_AUTOGRAD = frozenset({"torch.library.register_autograd"})


REGISTER_KERNEL = frozenset({"torch.library.register_kernel"})


LIBRARY = frozenset({"torch.library.Library"})


DEFINE = frozenset({"torch.library.define"})


IMPL = frozenset({"torch.library.impl"})


OP_METHODS = {"register_fake": "fake", "register_autograd": "autograd", "register_kernel": "kernel"}


# Dispatch keys whose kernel serves fake tensors (Meta, or every backend) / autograd.
FAKE_KEYS = frozenset(
    {
        "Meta",
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
        "CompositeImplicitAutograd",
    }
)


AUTOGRAD_KEYS = frozenset(
    {
        "Autograd",
        "AutogradCPU",
        "AutogradCUDA",
        "AutogradXPU",
        "AutogradMPS",
        "AutogradPrivateUse1",
        "AutogradOther",
        "CompositeImplicitAutograd",
    }
)


CATCH_ALL = "CompositeImplicitAutograd"


_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta", "xpu": "XPU", "mps": "MPS"}


# Packages whose functions are never project custom ops (keeps "use" records few).
_NOT_PROJECT = frozenset(
    {
        "torch",
        "numpy",
        "builtins",
        "os",
        "sys",
        "math",
        "typing",
        "collections",
        "functools",
        "itertools",
        "re",
        "json",
        "logging",
        "dataclasses",
        "pathlib",
        "time",
        "random",
        "copy",
        "warnings",
        "contextlib",
        "abc",
        "enum",
        "argparse",
        "subprocess",
        "datetime",
        "einops",
        "transformers",
        "triton",
    }
)


@dataclass
class OpRecord:
    """One fact about a custom operator, kept by the first pass (picklable)."""

    kind: str  # custom_op | define | fake | autograd | kernel | use
    qualname: str | None  # "ns::name" (no overload)
    py_ref: str | None  # dotted name of the Python object ("pkg.ops.my_op")
    span: NodeSpan | None = None
    key: str | None = None  # dispatch key of a kernel
    shown: str = ""  # how the op is spelled at this place
    function_id: str | None = None  # where a use is
    training: bool = False  # a use in a module's forward with grad enabled
    root: NodeSpan | None = None  # lexical compile root of a use (without project facts)
    fullgraph: bool = False
    returns_none: bool = False  # a custom_op annotated ``-> None``
    mutates: bool = False  # a custom_op declaring mutated arguments
    inplace_or_out: bool = False  # tagged ``torch.Tag.inplace`` / ``torch.Tag.out``
    no_outputs: bool = False  # a define whose schema returns ()
    tensor_free: bool = False


def split_qualname(text: str) -> tuple[str, str] | None:
    """ "ns::name.overload" -> ("ns", "name")."""
    ns, sep, rest = text.partition("::")
    if not sep or not ns or not rest:
        return None
    return ns.strip(), rest.split(".", 1)[0].split("(", 1)[0].strip()


def schema_name(schema: str) -> str | None:
    """ "my_op.out(Tensor x) -> Tensor" -> "my_op" (also with an "ns::" prefix)."""
    head = schema.split("(", 1)[0].strip()
    if "::" in head:
        head = head.split("::", 1)[1]
    head = head.split(".", 1)[0]
    return head or None


def declared_mutations(expr: cst.BaseExpression) -> tuple[str, ...] | str | None:
    """``mutates_args``: a tuple of names, "unknown", or None when it is not a literal."""
    value = literal_value(expr)
    if isinstance(value, str):
        return value if value == "unknown" else (value,)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        names = [literal_value(e.value) for e in expr.elements]
        strings = [n for n in names if isinstance(n, str)]
        if len(strings) == len(names):
            return tuple(strings)
    if (
        isinstance(expr, cst.Call)
        and not expr.args
        and isinstance(expr.func, cst.Name)
        and expr.func.value in ("tuple", "list", "set", "frozenset")
    ):
        return ()
    return None


def normalize_key(key: str) -> str:
    return _DEVICE_KEYS.get(key, key)


_OP_FACT_CODES = frozenset({"DL401", "DL402", "DL404", "DL408"})


# custom_op tags for which torch 2.13 generates the fake of an op that declares mutated
# arguments (tests/proof/test_proof_dl4xx.py compiles such ops with fullgraph=True).
_GENERATED_FAKE_TAGS = frozenset({"torch.Tag.inplace", "torch.Tag.out"})


class _OpFacts(ProjectRule):
    """Records custom-op definitions, registrations and uses (shared by project rules).

    DL401, DL402, DL404 and DL408 need the same facts: the first of them that is enabled
    collects them once per file and records each fact under every enabled code; the others'
    handlers return at once.
    """

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._libs: dict[str, tuple[str, str]] = {}  # spelled variable -> (namespace, key)
        self._local_ops: set[str] = set()  # Python names of custom ops defined in this file
        codes = sorted(_OP_FACT_CODES & ctx.settings.enabled) or [self.code]
        self._codes = codes if self.code in codes else [self.code]
        self._collects = self._codes[0] == self.code
        self.active = self._collects  # the others' handlers are not called at all
        # torch.library.Library, any alias (looked for only by the rule that collects)
        self._library_words = self._collects and "Library" in ctx.source
        # see _registers_fake_for_its_argument
        self._module_functions: dict[str, list[cst.FunctionDef]] | None = None
        self._fake_helpers: dict[str, bool] = {}

    # -- helpers -----------------------------------------------------------------------------

    def _py_ref(self, expr: cst.BaseExpression) -> str | None:
        resolved = self.ctx.resolve(expr)
        if resolved is not None:
            return resolved
        dotted = dotted_name(expr)
        if dotted is None or dotted.split(".", 1)[0] in ("self", "cls"):
            return None
        return f"{self.ctx.module_key}.{dotted}"

    def _add(self, kind: str, node: cst.CSTNode, **data: Any) -> None:
        # lazy: measured only if a finding points at it (most uses never do); ``data`` holds
        # OpRecord's other fields by name, each typed by OpRecord (the constructor rejects a
        # name that is not one)
        record = OpRecord(kind=kind, span=self.ctx.locate(node, lazy=True), **data)
        records = self.ctx.records
        for code in self._codes:
            records.append((code, record))

    def _op_arg(self, arg: cst.Arg | None) -> tuple[str | None, str | None]:
        """(qualname, py_ref) of an op given as "ns::op", an OpOverload or a CustomOpDef."""
        if arg is None:
            return None, None
        value = literal_value(arg.value)
        if isinstance(value, str):
            parts = split_qualname(value)
            return (f"{parts[0]}::{parts[1]}" if parts else None), None
        name = self.ctx.resolve(arg.value)
        if name is not None and name.startswith("torch.ops."):
            return _ops_qualname(name), None
        return None, self._py_ref(arg.value)

    # -- definitions and registrations ---------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        if not (self._collects and self._library_words):
            return
        value = node.value
        if type(value) is not cst.Call or self.ctx.resolve(value.func) not in LIBRARY:
            return
        ns_arg = positional(value, 0) or keyword_arg(value, "ns")
        ns = literal_value(ns_arg.value) if ns_arg is not None else None
        key_arg = positional(value, 2) or keyword_arg(value, "dispatch_key")
        key = literal_value(key_arg.value) if key_arg is not None else ""
        if not isinstance(ns, str):
            return
        for target in node.targets:
            spelled = dotted_name(target.target)
            if spelled is not None:
                self._libs[spelled] = (ns, key if isinstance(key, str) else "")

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not self._collects:
            return
        expr = node.decorator
        if isinstance(expr, cst.Attribute) and expr.attr.value in OP_METHODS:
            self._add(
                OP_METHODS[expr.attr.value],
                expr,
                qualname=None,
                py_ref=self._py_ref(expr.value),
            )

    def visit_Call(self, node: cst.Call) -> None:
        if not self._collects:
            return
        func = node.func
        name = self.ctx.resolve(func)
        if name in CUSTOM_OP:
            self._custom_op(node)
        elif name in REGISTER_FAKE or name in REGISTER_AUTOGRAD or name in REGISTER_KERNEL:
            qualname, py_ref = self._op_arg(positional(node, 0) or keyword_arg(node, "op"))
            kind = "fake" if name in REGISTER_FAKE else "autograd"
            if name in REGISTER_KERNEL:
                kind = "kernel"
            self._add(kind, node, qualname=qualname, py_ref=py_ref, key="device")
        elif name in DEFINE:
            qualname, _ = self._op_arg(positional(node, 0) or keyword_arg(node, "qualname"))
            schema = positional(node, 1) or keyword_arg(node, "schema")
            text = literal_value(schema.value) if schema is not None else None
            if qualname is not None:
                self._add_define(node, qualname, text if isinstance(text, str) else "")
        elif name in IMPL:
            self._torch_library_impl(node)
        elif name is not None and name.startswith("torch.ops."):
            qualname = _ops_qualname(name)
            if qualname is not None:
                self._use(node, qualname=qualname, py_ref=None, shown=f"torch.ops.{qualname}")
        elif isinstance(func, cst.Attribute):
            self._method_call(node, func, name)
        elif isinstance(func, cst.Name) and self._registers_fake_for_its_argument(func.value):
            # ``@register_custom_op("ns::op")`` where the helper registers a fake for its
            # argument (torchao's ops.py)
            qualname, _ = self._op_arg(positional(node, 0))
            if qualname is not None:
                self._add("fake", node, qualname=qualname, py_ref=None, key="device")
        elif isinstance(func, cst.Name) and self.ctx.function is not None:
            self._maybe_use(node, func, name)

    def _registers_fake_for_its_argument(self, name: str) -> bool:
        """Whether ``name`` is a module-level function of this file that registers a fake for
        the op named by its first parameter:
        ``def reg(name): def deco(f): return register_fake(f"{name}")(f)``.

        Each function's body is looked at once, when a call of its name is first seen (most
        files call few of their own functions by a bare name, and define no such helper)."""
        known = self._fake_helpers.get(name)
        if known is None:
            if self._module_functions is None:
                self._module_functions = defaultdict(list)
                for stmt in self.ctx.module.body if _may_register_fakes(self.ctx) else ():
                    if isinstance(stmt, cst.FunctionDef) and stmt.params.params:
                        self._module_functions[stmt.name.value].append(stmt)
            defs = self._module_functions.get(name)
            known = self._fake_helpers[name] = defs is not None and any(
                self._registers_fake(stmt) for stmt in defs
            )
        return known

    def _registers_fake(self, func: cst.FunctionDef) -> bool:
        """Whether ``func``'s body registers a fake named by (a string built from) its first
        parameter."""
        param = func.params.params[0].name.value
        table = self.ctx.table_for(func, self.ctx.imports)  # its own imports count
        return any(
            isinstance(inner, cst.Call)
            and self.ctx.resolve_in(table, inner.func) in REGISTER_FAKE
            and inner.args
            and any(
                isinstance(n, cst.Name) and n.value == param
                for n in descendants(inner.args[0].value)
            )
            for inner in descendants(func.body)
        )

    def _maybe_use(self, node: cst.Call, func: cst.BaseExpression, name: str | None) -> None:
        if name is None:
            if not self._local_ops:
                return  # no spelling is one of them
            spelled = dotted_name(func)
            if spelled is None or spelled.split(".", 1)[0] not in self._local_ops:
                return
        elif name.split(".", 1)[0] in _NOT_PROJECT:
            return
        self._use(node, qualname=None, py_ref=self._py_ref(func), shown=dotted_name(func) or "")

    def _method_call(self, node: cst.Call, func: cst.Attribute, name: str | None) -> None:
        method = func.attr.value
        receiver = dotted_name(func.value)
        if receiver is not None and receiver in self._libs:
            self._library_method(node, method, self._libs[receiver])
            return
        if method in OP_METHODS:
            if self._is_decorator(node):
                pass  # @op.register_kernel("cpu") etc.: the call itself is the record
            self._add(
                OP_METHODS[method],
                node,
                qualname=None,
                py_ref=self._py_ref(func.value),
                key="device",
            )
            return
        if self.ctx.function is not None and name is not None:
            self._maybe_use(node, func, name)

    def _is_decorator(self, node: cst.CSTNode) -> bool:
        parents = self.ctx.parents
        return bool(parents) and isinstance(parents[-1], cst.Decorator)

    def _library_method(self, node: cst.Call, method: str, lib: tuple[str, str]) -> None:
        first = positional(node, 0)
        if first is not None and isinstance(first.value, cst.Name):
            # ``for name in _META_OPS: lib.impl(name, meta_kernel(name), "Meta")``
            name = first.value.value
            texts = self._loop_strings(name)
            if not texts and method != "define":
                texts = self._derived_loop_strings(name)
            for text in texts:
                self._library_method_for(node, method, lib, text)
            return
        literal = literal_value(first.value) if first is not None else None
        if isinstance(literal, str):
            self._library_method_for(node, method, lib, literal)

    def _loop_strings(self, name: str) -> tuple[str, ...]:
        """The strings a ``for name in <literal tuple or module constant>`` loop binds."""
        for parent in reversed(self.ctx.parents):
            if not (isinstance(parent, cst.For) and isinstance(parent.target, cst.Name)):
                continue
            if parent.target.value != name:
                continue
            iterable: cst.BaseExpression | None = parent.iter
            if isinstance(iterable, cst.Name):
                iterable = _module_constant(self.ctx.module, iterable.value)
            if not isinstance(iterable, (cst.Tuple, cst.List)):
                return ()
            values = [literal_value(element.value) for element in iterable.elements]
            strings = [v for v in values if isinstance(v, str)]
            return tuple(strings) if len(strings) == len(values) else ()
        return ()

    def _derived_loop_strings(self, name: str) -> tuple[str, ...]:
        """The strings of the loop whose body computes ``name`` from its target, taken as
        naming the ops those strings name: torch's own ``for op_def in ops_defs:
        op_name = op_def[: op_def.index("(")]; lib.define(op_def);
        lib.impl(op_name, kernel, "CompositeImplicitAutograd")``.

        The expression is not evaluated: a kernel so registered is credited to each op the
        loop's strings name (``schema_name``), which is what slicing a schema at ``(`` gives.
        Another derivation (``"prefix_" + op``) credits a kernel to an op it may not serve:
        the custom-op rules then say less (a missing kernel is not reported), never more --
        the credited op is one the loop's strings name, so no kernel is made to stand for an
        op nobody defined. Only a plain ``name = <expression>`` statement in the loop's own
        body, above the call's statement, that reads the loop's target counts."""
        parents = self.ctx.parents
        for index in range(len(parents) - 1, -1, -1):
            loop = parents[index]
            if not (isinstance(loop, cst.For) and isinstance(loop.target, cst.Name)):
                continue
            body = loop.body
            if index + 2 >= len(parents) or parents[index + 1] is not body:
                return ()  # in the loop's header or ``else``, or a one-line body
            here = parents[index + 2]  # the loop body's statement holding the call
            target = loop.target.value
            derived = False  # what the last assignment to ``name`` above ``here`` reads
            for stmt in body.body:
                if stmt is here:
                    return self._loop_strings(target) if derived else ()
                reads = _assigned_reading(stmt, name, target)
                if reads is not None:
                    derived = reads
            return ()
        return ()

    def _library_method_for(
        self, node: cst.Call, method: str, lib: tuple[str, str], text: str
    ) -> None:
        ns, lib_key = lib
        op = schema_name(text)
        if op is None:
            return
        qualname = f"{ns}::{op}"
        if method == "define":
            self._add_define(node, qualname, text)
        elif method == "impl":
            key_arg = positional(node, 2) or keyword_arg(node, "dispatch_key")
            key = literal_value(key_arg.value) if key_arg is not None else ""
            key = key if isinstance(key, str) and key else (lib_key or CATCH_ALL)
            self._add("kernel", node, qualname=qualname, py_ref=None, key=normalize_key(key))
        elif method == "_register_fake":
            self._add("fake", node, qualname=qualname, py_ref=None)

    def _add_define(self, node: cst.Call, qualname: str, schema: str) -> None:
        returns = schema.rsplit("->", 1)[1].strip() if "->" in schema else ""
        self._add(
            "define",
            node,
            qualname=qualname,
            py_ref=None,
            shown=qualname,
            no_outputs=returns == "()",
            tensor_free="Tensor" not in schema,
        )

    def _torch_library_impl(self, node: cst.Call) -> None:
        first = positional(node, 0)
        if first is None:
            return
        value = literal_value(first.value)
        if isinstance(value, str):
            qualname, _ = self._op_arg(first)
            types_arg = positional(node, 1) or keyword_arg(node, "types")
        else:
            lib = dotted_name(first.value)
            name_arg = positional(node, 1)
            op_name = literal_value(name_arg.value) if name_arg is not None else None
            if lib not in self._libs or not isinstance(op_name, str):
                return
            qualname = f"{self._libs[lib][0]}::{schema_name(op_name)}"
            types_arg = positional(node, 2) or keyword_arg(node, "dispatch_key")
        types_expr = types_arg.value if types_arg is not None else None
        if isinstance(types_expr, (cst.List, cst.Tuple)):  # ["cpu", "cuda"]
            keys = [literal_value(element.value) for element in types_expr.elements]
        else:
            types = literal_value(types_expr) if types_expr is not None else None
            keys = [types] if isinstance(types, str) else []
        for key in keys:
            if isinstance(key, str) and qualname is not None:
                self._add("kernel", node, qualname=qualname, py_ref=None, key=normalize_key(key))

    def _custom_op(self, node: cst.Call) -> None:
        first = positional(node, 0) or keyword_arg(node, "name")
        text = literal_value(first.value) if first is not None else None
        parts = split_qualname(text) if isinstance(text, str) else None
        if parts is None:
            return
        qualname = f"{parts[0]}::{parts[1]}"
        mutates_arg = keyword_arg(node, "mutates_args")
        declared = declared_mutations(mutates_arg.value) if mutates_arg is not None else None
        mutates = bool(declared)
        tags = keyword_arg(node, "tags")
        inplace_or_out = tags is not None and any(
            self.ctx.resolve(item) in _GENERATED_FAKE_TAGS
            for item in descendants(tags.value)
            if isinstance(item, cst.BaseExpression)  # only names resolve
        )
        parents = self.ctx.parents
        py_name: str | None = None
        returns_none = False
        if self._is_decorator(node) and len(parents) >= 2:
            func = parents[-2]
            if isinstance(func, cst.FunctionDef):
                py_name = func.name.value
                returns = func.returns
                returns_none = returns is not None and is_none(returns.annotation)
        else:
            fn = positional(node, 1)
            holder = parents[-1] if parents else None
            if isinstance(holder, cst.Call) and holder.func is node:
                fn = positional(holder, 0)
                holder = parents[-2] if len(parents) >= 2 else None
            if isinstance(holder, cst.Assign) and isinstance(holder.targets[0].target, cst.Name):
                py_name = holder.targets[0].target.value
            elif fn is not None and isinstance(fn.value, cst.Name):
                py_name = fn.value.value
        if py_name is not None:
            self._local_ops.add(py_name)
        self._add(
            "custom_op",
            node,
            qualname=qualname,
            py_ref=f"{self.ctx.module_key}.{py_name}" if py_name else None,
            shown=py_name or qualname,
            returns_none=returns_none,
            mutates=mutates,
            inplace_or_out=inplace_or_out,
        )

    # -- uses ----------------------------------------------------------------------------------

    def _use(self, node: cst.Call, qualname: str | None, py_ref: str | None, shown: str) -> None:
        ctx = self.ctx
        # a training use: in a module's forward, with grad on, not on an eval-only side nor
        # only when an optional input is passed (TransformerEngine's KV-cache conversions)
        training = (
            is_forward(ctx.function, ctx.parents)
            and not grad_disabled(ctx.parents, ctx.resolve)
            and not eval_only(ctx.parents)
            and optional_input(ctx.parents) is None
        )
        root = ctx.compile_root
        self._add(
            "use",
            node,
            qualname=qualname,
            py_ref=py_ref,
            shown=shown,
            function_id=ctx.function_id,
            training=training,
            root=ctx.locate(root.node, lazy=True) if root is not None else None,
            fullgraph=bool(root is not None and root.options.fullgraph),
        )


def _may_register_fakes(ctx: RuleContext) -> bool:
    """Whether a call in the file may resolve to one of :data:`REGISTER_FAKE`. The text of a
    resolved name comes from the file's words (imports, aliases, attributes) and, for a
    relative import, its module name; its last part is the callee's attribute or the last
    part of a binding's value, so the file spells ``fake``, ``register_fake`` or
    ``impl_abstract``; every such name is under ``torch.library``, so the file or its module
    name spells ``library`` (canonical names rename only torch.distributed, _dynamo and
    nn.parallel homes)."""
    source = ctx.source
    return ("fake" in source or "impl_abstract" in source) and (
        "library" in source or "library" in (ctx.module_name or "")
    )


def _ops_qualname(name: str) -> str | None:
    """ "torch.ops.ns.op.default" -> "ns::op"."""
    parts = name.split(".")
    if len(parts) < 4:
        return None
    return f"{parts[2]}::{parts[3]}"


@dataclass
class _OpIndex:
    """Every file's records of one rule, linked: which op has what, where it is used."""

    ops: list[tuple[str, OpRecord]] = field(default_factory=list)  # custom_op and define
    fake: set[str] = field(default_factory=set)  # qualnames and py_refs
    autograd: set[str] = field(default_factory=set)
    kernels: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    uses: list[tuple[str, OpRecord]] = field(default_factory=list)
    # ("q", qualname) / ("r", py_ref) -> positions in ``uses``; built on the first uses_of
    _uses_by_key: dict[tuple[str, str | None], list[int]] | None = None  # no None is stored

    @classmethod
    def build(cls, records: Iterable[tuple[str, object]]) -> _OpIndex:
        index = cls()
        for path, record in records:
            if not isinstance(record, OpRecord):
                continue
            keys = {k for k in (record.qualname, record.py_ref) if k}
            if record.kind in ("custom_op", "define"):
                index.ops.append((path, record))
            elif record.kind == "fake":
                index.fake |= keys
            elif record.kind == "autograd":
                index.autograd |= keys
            elif record.kind == "kernel":
                for key in keys:
                    index.kernels[key].add(record.key or "")
            elif record.kind == "use":
                index.uses.append((path, record))
        return index

    def measure(
        self,
        project: Project,
        ops: Iterable[OpRecord],
        shown: Callable[[Project, OpRecord], bool],
    ) -> None:
        """Measure where ``ops`` (the ones a rule may report) and the uses of them it shows
        (``shown``) are, in one go: one position pass per file (one per record took quadratic
        time on a file defining hundreds of ops; measuring every use of the project, most never
        reported, costs a pass over each file that calls an op).

        Only what the rule shows: measuring the other uses (and their compile roots, read only
        without project facts, when nothing is measured here) parsed files again in the parent
        that no finding points into (torch: 4 of 7). A span measured later, alone, is the
        same span (:func:`_measured`)."""
        if project.facts is None:
            return
        wanted = list(ops)
        uses = [use for op in wanted for _, use in self.uses_of(op) if shown(project, use)]
        project.facts.resolve([*(r.span for r in wanted), *(r.span for r in uses)])

    @staticmethod
    def names(op: OpRecord) -> set[str]:
        """The keys registrations may use for ``op``: its qualname and its Python name."""
        return {k for k in (op.qualname, op.py_ref) if k}

    def has_fake(self, op: OpRecord, native: dict[str, set[str]] | None = None) -> bool:
        keys = self.names(op)
        if keys & self.fake:
            return True
        if op.kind == "custom_op":
            return False  # a CustomOpDef only takes register_fake (a Meta kernel is not used)
        return any(self.kernels.get(k, set()) & FAKE_KEYS for k in keys) or bool(
            native and op.qualname and native.get(op.qualname, set()) & FAKE_KEYS
        )

    def has_autograd(self, op: OpRecord, native: dict[str, set[str]] | None = None) -> bool:
        keys = self.names(op)
        if keys & self.autograd:
            return True
        return any(self.kernels.get(k, set()) & AUTOGRAD_KEYS for k in keys) or bool(
            native and op.qualname and native.get(op.qualname, set()) & AUTOGRAD_KEYS
        )

    def uses_of(self, op: OpRecord) -> Iterator[tuple[str, OpRecord]]:
        """The uses of ``op`` (same qualname or same Python reference), in record order."""
        if self._uses_by_key is None:  # one index for all ops (a scan per op was quadratic)
            self._uses_by_key = defaultdict(list)
            for position, (_path, use) in enumerate(self.uses):
                for key in {("q", use.qualname), ("r", use.py_ref)}:
                    if key[1] is not None:
                        self._uses_by_key[key].append(position)
        positions = {
            *self._uses_by_key.get(("q", op.qualname), ()),
            *self._uses_by_key.get(("r", op.py_ref), ()),
        }
        for position in sorted(positions):
            yield self.uses[position]


def _candidate_ops(
    project: Project,
    code: str,
    missing: Callable[[_OpIndex, OpRecord], bool],
    shown: Callable[[Project, OpRecord], bool] = lambda project, use: False,
) -> tuple[_OpIndex, list[tuple[str, OpRecord, Span]]]:
    """The linked records of rule ``code``, and the (path, op, span) of each op a project rule
    may report: the ops ``missing`` picks, less test fixture ops, measured in one go with the
    uses of them the rule shows (``shown``; an op whose place is not known is left out)."""
    index = _OpIndex.build(project.records(code))
    candidates = [
        (path, op)
        for path, op in index.ops
        if missing(index, op) and not _test_fixture_op(project, index, path, op)
    ]
    index.measure(project, (op for _, op in candidates), shown)
    return index, [
        (path, op, span) for path, op in candidates if (span := _span(project, op)) is not None
    ]


def scan_native_sources(project: Project) -> list[tuple[str, str, list[NativeEntry]]]:
    """The project's C++/CUDA sources: (path, text, the registrations ``scan_native`` finds
    in the text), scanned once for the rules that read them (DL404, DL408)."""
    from distlint.knowledge.native import scan_native

    found = project.derived.get("native_scanned")
    if found is None:
        found = [(path, text, scan_native(text)) for path, text in project.native_sources]
        project.derived["native_scanned"] = found
    return cast("list[tuple[str, str, list[NativeEntry]]]", found)


def native_kernels(scanned: Iterable[tuple[str, str, list[NativeEntry]]]) -> dict[str, set[str]]:
    """qualname -> dispatch keys of the kernels registered in ``scanned`` (the sources
    :func:`scan_native_sources` read)."""
    kernels: dict[str, set[str]] = defaultdict(set)
    for _, _, entries in scanned:
        for entry in entries:
            if entry.kernel_key is not None:
                kernels[f"{entry.namespace}::{entry.name}"].add(entry.kernel_key)
    return kernels


def _test_fixture_op(project: Project, index: _OpIndex, path: str, op: OpRecord) -> bool:
    """An op a test defines and never compiles: tests define ops to exercise them eagerly or to
    export them, where the missing registration costs nothing (ao's quantize tests, torch_xla's
    StableHLO export tests). Ops outside tests stay library API that users may compile."""
    if not is_test_path(path):
        return False
    return not any(_region_of(project, use)[0] for _, use in index.uses_of(op))


def _region_of(project: Project, use: OpRecord) -> tuple[bool, bool, tuple[Location, ...]]:
    """(in a compiled region, under fullgraph, related locations) of a use."""
    if project.facts is not None and use.function_id is not None:
        region = project.facts.region_of(use.function_id)
        if region is None:
            return False, False, ()
        return True, region.fullgraph, region.related
    root = _measured(project, use.root)
    if use.root is not None and root is not None:
        return True, use.fullgraph, (Location(use.root.path, root, "compiled here"),)
    return False, False, ()


def _span(project: Project, record: OpRecord) -> Span | None:
    """Where a record is, measured now if it was located lazily (most are never reported)."""
    return _measured(project, record.span)


def _measured(project: Project, located: NodeSpan | None) -> Span | None:
    if located is None:
        return None
    if located.span is None and project.facts is not None:
        project.facts.resolve([located])
    return located.span


def _where(project: Project, path: str, record: OpRecord) -> str:
    span = _span(project, record)
    return f"{path}:{span.start.line}" if span is not None else path


def _assigned_reading(stmt: cst.CSTNode, name: str, source: str) -> bool | None:
    """How ``stmt`` binds ``name``: True for ``name = <expression reading source>``, False
    for a binding the analysis does not follow, None when it does not bind it (it may read
    it). Only simple statements are read closely: a compound statement that mentions
    ``name`` at all counts as binding it."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False if mentions_name(stmt, name) else None
    found: bool | None = None
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
            if any(mentions_name(t, name) for t in targets):
                found = (
                    len(targets) == 1
                    and type(targets[0]) is cst.Name
                    and mentions_name(small.value, source)
                )
            elif _walrus_binds(small.value, name):
                found = False
        elif isinstance(small, cst.Expr):
            if _walrus_binds(small.value, name):
                found = False
        elif mentions_name(small, name):  # augmented/annotated assignment, del, import, global...
            found = False
    return found


def _walrus_binds(node: cst.CSTNode, name: str) -> bool:
    return any(
        type(n) is cst.NamedExpr and mentions_name(n.target, name) for n in descendants(node)
    )


def _module_constant(module: cst.Module, name: str) -> cst.BaseExpression | None:
    """The value of a module-level ``NAME = <literal>`` assignment (the last one)."""
    found = None
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and small.targets[0].target.value == name
                ):
                    found = small.value
    return found
