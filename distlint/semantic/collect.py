"""Phase 1: summarise one parsed file (definitions, calls, compile sites, collective effects).

One pass over the statements of every function, class and the module body; expressions are
only searched for calls. Spans are requested (``ctx.locate``) just for what a finding or a
related location may point at: compile sites, collectives, and the conditions, calls and
exits of branches that may depend on the rank.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from distlint.knowledge.captures import (
    GRAPH_CONTEXTS,
    GRAPHED_CALLABLES,
    graphed_items,
    statement_method,
)
from distlint.knowledge.module_factories import RETURNS_THE_MODULE, the_module
from distlint.semantic.bindings import LITERAL_TYPES, STARRED
from distlint.semantic.collectives import (
    DDP,
    FULLY_SHARD,
    WRAPPERS,
    collective_kind,
    implicit_collective,
    is_wrapping_call,
    zero_stage,
)
from distlint.semantic.compile_sites import CompileSite, compiles, literal_options
from distlint.semantic.model import (
    DDP_ARGUMENT,
    MEMBER_ARGUMENT,
    MODULE_CODE,
    WRAPPED_ARGUMENT,
    ClassSummary,
    Condition,
    Effect,
    FunctionSummary,
    ModuleSummary,
)
from distlint.semantic.packs import knowledge, method_on_receiver
from distlint.semantic.rankflow import (
    MAYBE,
    RANK,
    UNKNOWN,
    Kind,
    asks_distributed,
    is_static,
    reads_distributed_state,
    single_process_test,
    switched_off,
)
from distlint.semantic.regions import (
    compile_assigned,
    compiling_sides,
    eager_operands,
    exits_when_compiling,
    is_compiling_test,
    is_literal,
    literal_value,
    merge_sides,
    predicate_sides,
    reads_any,
)
from distlint.semantic.sharded import (
    may_hold_sharded_test,
    sharded_polarity,
    sharded_predicates,
)
from distlint.semantic.sharing import share_equal_parts
from distlint.semantic.taint import FileTaint, ScopeScan, file_taint
from distlint.semantic.values import Options, Value
from distlint.syntax.imports import ImportTable, dotted_name, self_attribute
from distlint.syntax.shapes import assignment_targets, bound_names, is_none
from distlint.syntax.walker import (
    blocks_of,
    children,
    descendants,
    mentions_name,
    parameters,
    suite_body,
)

if TYPE_CHECKING:
    from distlint.syntax.parsed_file import ParsedFile
    from distlint.syntax.spans import NodeSpan

# Externals that never compile, collect or matter for the call graph: not worth a span.
_INERT_PREFIXES = (
    "builtins.",
    "functools.wraps",
    "functools.cache",
    "functools.lru_cache",
    "functools.cached_property",
    "abc.",
    "typing.",
    "typing_extensions.",
    "dataclasses.",
    "contextlib.",
    "pytest.",
    "unittest.",
    "enum.",
)
_PARTIAL = frozenset({"functools.partial"})
_CONTAINERS = frozenset(
    {
        "torch.nn.ModuleList",
        "torch.nn.Sequential",
        "torch.nn.modules.container.ModuleList",
        "torch.nn.modules.container.Sequential",
    }
)
_MODULE_DICTS = frozenset({"torch.nn.ModuleDict", "torch.nn.modules.container.ModuleDict"})
_BUILTIN_CONTAINERS = frozenset({"list", "tuple"})
_TRANSPARENT = WRAPPERS | FULLY_SHARD
_UNKNOWN: Value = ("?",)
_COMPILE_NAME_HINTS = ("compile", "fuser", "jit")
_NOT_A_COMPILE = frozenset({"re.compile", "regex.compile"})
# Node classes tested by exact type (none has subclasses; ``isinstance`` against LibCST's ABCs
# is slow, and these are asked of every call's arguments and every value evaluated)
_REFERENCES = frozenset({cst.Name, cst.Attribute})
_PASSABLE = frozenset({cst.Name, cst.Attribute, cst.Call})
_LEAVES = frozenset({cst.Name, cst.SimpleString, cst.Integer, cst.Float})


def _is_inert(value: Value | None) -> bool:
    return value is None or (value[0] == "g" and value[1].startswith(_INERT_PREFIXES))


def _escapes(body: Sequence[cst.CSTNode], name: str, site: cst.Call) -> bool:
    """Whether the local ``name`` may reach other code in a function body other than through
    ``site`` (the compile call): passed to a call, stored, returned, written as an attribute
    (``model.flag = True``), or handed a callable (``model.apply(fn)``). Reading its
    attributes, calling methods on it and calling it do not let other code change it. A
    function without a body (module-level code) counts as escaping."""
    if not body:
        return True
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]] = [
        (stmt, None, None) for stmt in body
    ]
    while stack:
        node, parent, grand = stack.pop()
        if type(node) is cst.Name and node.value == name:
            if type(parent) is cst.AssignTarget:
                continue  # the binding itself (its value was checked to be the construction)
            if type(parent) is cst.Call and parent.func is node:
                continue  # a forward call
            if type(parent) is cst.Arg and grand is site:
                continue
            if type(parent) is cst.Attribute and parent.value is node:
                if isinstance(grand, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
                    return True  # ``model.flag = ...``
                if type(grand) is cst.Call and parent.attr.value in _HANDS_OUT_SELF:
                    return True
                continue
            return True
        stack.extend((child, node, parent) for child in children(node))
    return False


# nn.Module methods that run code given to them on the module itself
_HANDS_OUT_SELF = frozenset({"apply", "__setattr__", "register_forward_pre_hook"})


class _Scope:
    """One function (or the module): its summary, names, and lazily evaluated locals."""

    def __init__(
        self,
        summary: FunctionSummary,
        node: cst.FunctionDef | None,
        table: ImportTable,
        parent: _Scope | None,
        class_id: str | None,
    ) -> None:
        self.summary = summary
        self.node = node
        self.table = table
        self.parent = parent
        self.class_id = class_id
        self.assigned: dict[str, list[tuple[str, cst.CSTNode]]] = {}
        self.defs: dict[str, str] = {}  # nested def/class name -> id
        self.values: dict[str, Value | None] = {}
        self.params: set[str] = set()
        # locals that hold one keyword of ``**kwargs`` (see _keyword_locals): tested and
        # passed on as if they were parameters of that name
        self.keyword_locals: frozenset[str] = frozenset()
        self.self_name: str | None = None
        self.wrapped: set[str] = set()  # names holding DDP/FSDP/fully_shard-wrapped models
        self.outputs: set[str] = set()  # names computed from a wrapped model's forward
        self.ddp: set[str] = set()  # wrapped by DDP: other attributes are not forwarded
        self.quiet: set[str] = set()  # DDP without buffer broadcast: forward issues nothing
        # DDP-wrapped names -> the wrapped module's value (None: not known): DDP's forward
        # broadcasts the module's buffers, so it is a collective only if it has some
        self.ddp_models: dict[str, Value | None] = {}
        self.raised_on: set[str] = set()  # tests of top-level ``if test: raise`` (every rank)
        # the first of those while no other test could match it: its text not generated yet
        self.raised_first: cst.BaseExpression | None = None
        self.compiled_locals: frozenset[str] | None = None  # see regions.compile_assigned
        self.engines: set[str] = set()  # DeepSpeed engines
        # names holding what a project function returned: label -> (callee, element or -1)
        self.made_by: dict[str, tuple[Value, int]] = {}
        self.walked: set[int] = set()  # ids of the assigned values walked so far


class Collector:
    """Builds the :class:`ModuleSummary` of one file (see the module docstring)."""

    def __init__(self, ctx: ParsedFile) -> None:
        self.ctx = ctx
        self.key = ctx.module_key
        self.summary = ModuleSummary(ctx.module_key, ctx.path)
        self.taint: FileTaint = file_taint(ctx)
        self.wrappers = frozenset(ctx.settings.compile_wrappers)
        self.collective_wrappers = frozenset(ctx.settings.collective_wrappers)
        self._rank_depth = 0  # > 0 inside a branch whose condition may depend on the rank
        self._class_wrapping: dict[str, _Scope] = {}  # class id -> its wrapped self attributes
        # module-level functions that test whether a model is sharded (see ``_sharded_test``)
        self._sharded_predicates: frozenset[str] | None = None
        self._may_be_sharded = may_hold_sharded_test(ctx.source)  # else no test is sharded
        self._capture: object | None = None  # (lazy) span where the capture being walked starts
        self._eager = 0  # > 0 on the eager side of ``is_compiling()``: calls there are not traced
        self._mentions_compiling = "compiling" in ctx.source  # cheap gate for _eager_calls

    # -- entry ---------------------------------------------------------------------------------

    def collect(self) -> ModuleSummary:
        module = self.ctx.module
        summary = FunctionSummary(f"{self.key}:{MODULE_CODE}", MODULE_CODE, self.ctx.path, None)
        scope = _Scope(summary, None, self.ctx.imports, None, None)
        self.summary.functions[summary.id] = summary
        self._declare(scope, self.taint.scan(module), "")
        self._prescan(scope, self.taint.scan(module))
        summary.effects = self._block(scope, module.body, "")
        for name, entries in scope.assigned.items():
            value = self._name_value(scope, name)
            if value is not None and entries:
                self.summary.exports[name] = value
        for name, def_id in scope.defs.items():
            if self.ctx.imports.resolve_name(name) is None:  # else an import's fallback def
                self.summary.exports[name] = ("f", def_id)
        for name in _imported_names(module.body):
            resolved = self.ctx.imports.resolve_name(name)
            if resolved is not None:
                self.summary.exports.setdefault(name, ("g", resolved))
        self.summary.dynamo_flags = self.ctx.memo(file_dynamo_config)
        self.summary.open_namespace = _open_namespace(module, self.ctx.source)
        share_equal_parts(self.summary)  # kept by the parent until linking: see sharing.py
        return self.summary

    # -- definitions -------------------------------------------------------------------------

    def _declare(self, scope: _Scope, scan: ScopeScan, prefix: str) -> None:
        """Register the defs and classes a scope binds, so calls before them resolve."""
        defs: list[cst.FunctionDef | cst.ClassDef] = [*scan.functions, *scan.classes]
        for node in defs:
            scope.defs[node.name.value] = f"{self.key}:{prefix}{node.name.value}"

    def _function(
        self, node: cst.FunctionDef, parent: _Scope, prefix: str, class_id: str | None
    ) -> None:
        qualname = f"{prefix}{node.name.value}"
        fid = f"{self.key}:{qualname}"
        params = tuple(p.name.value for p in parameters(node.params))
        defaults = tuple(
            (p.name.value, literal_value(p.default))
            for p in parameters(node.params)
            if p.default is not None and is_literal(literal_value(p.default))
        )
        keywords = _keyword_locals(node)
        defaults += tuple((name, value) for name, value in keywords.items() if name not in params)
        summary = FunctionSummary(fid, node.name.value, self.ctx.path, None, class_id, params)
        previous = self.summary.functions.get(fid)
        summary.defaults = defaults
        summary.accepts = _accepts(node.params)
        self.summary.functions[fid] = summary
        # Decorators are evaluated in the enclosing scope.
        decorators = []
        for decorator in node.decorators:
            expr = decorator.decorator
            call = expr if type(expr) is cst.Call else None
            compiler = self._value(parent, call.func if call is not None else expr)
            if call is not None and compiler is not None and compiler == ("g", "functools.partial"):
                compiler, call = self._value(parent, expr), None  # @partial(torch.compile, ...)
            if compiler is None:
                continue
            decorators.append(compiler)
            if self._may_compile(compiler):
                options = literal_options(call) if call is not None else ()
                self.summary.compile_sites.append(
                    (
                        parent.summary.id,
                        CompileSite(
                            ("f", fid),
                            compiler,
                            options,
                            self._locate_site(decorator, compiler),
                            "decorator",
                        ),
                    )
                )
        summary.decorators = tuple(decorators)
        table = self.ctx.table_for(node, parent.table)
        summary.compiling_sides = predicate_sides(node, table.resolve)
        if previous is not None:  # ``try``/``except`` variants of one def
            summary.compiling_sides = merge_sides(previous.compiling_sides, summary.compiling_sides)
        scope = _Scope(summary, node, table, parent, class_id)
        scope.params = set(params)
        scope.keyword_locals = frozenset(name for name in keywords if name not in params)
        if class_id is not None and params and not is_static(node):
            scope.self_name = params[0]
            if params[0] == "self" and class_id in self._class_wrapping:
                # ``self.model = FSDP(net)`` in one method, ``self.model(x)`` in another
                inherited = self._class_wrapping[class_id]
                scope.wrapped |= inherited.wrapped
                scope.ddp |= inherited.ddp
                scope.quiet |= inherited.quiet
                scope.ddp_models.update(inherited.ddp_models)
        body = suite_body(node.body)
        self._declare(scope, self.taint.scan(node), f"{qualname}.<locals>.")
        self._prescan(scope, self.taint.scan(node))
        saved, saved_capture = self._rank_depth, self._capture
        rank_only = self._rank_only(node, parent)
        self._rank_depth = 0 if rank_only is None else 1
        self._capture = None  # a def under capture only defines the function
        saved_eager, self._eager = self._eager, 0
        summary.effects = self._block(scope, body, f"{qualname}.<locals>.")
        if rank_only is not None and summary.effects:
            summary.effects = (self._rank_only_branch(rank_only, summary.effects),)
        self._rank_depth, self._capture = saved, saved_capture
        self._eager = saved_eager
        summary.returns_rank = self.taint.return_kind(node).level == RANK
        summary.returns_wrapped, summary.returns_ddp = self._returns_wrapped(scope, node)
        summary.ddp_models = scope.ddp_models
        for value in self.taint.scan(node).returns:
            summary.returns.append(self._value(scope, value) or ("?",))
            if type(value) is cst.Call and value.args:
                compiler = self._value(scope, value.func)
                first = value.args[0].value
                if (
                    compiler is not None
                    and self._certainly_compile(compiler)
                    and type(first) is cst.Name
                    and first.value in scope.params
                ):
                    summary.compiles_param = True
                    summary.compile_options = literal_options(value)

    def _rank_only(self, node: cst.FunctionDef, parent: _Scope) -> cst.Decorator | None:
        """A decorator that runs the function on one rank only (``@rank_zero_only``,
        ``@accelerator.on_main_process``: the framework packs), if any."""
        pack = knowledge()
        for decorator in node.decorators:
            expr = decorator.decorator
            if method_on_receiver(expr, pack.rank_only_methods) is not None:
                return decorator
            if self.ctx.resolve_in(parent.table, expr) in pack.rank_only_decorators:
                return decorator
        return None

    def _rank_only_branch(self, decorator: cst.Decorator, body: tuple[Effect, ...]) -> Effect:
        """The function's body as the one side of a branch on the rank (the other side, on
        the other ranks, does nothing)."""
        text = "@" + self.ctx.spellings.code(decorator.decorator)
        span = self.ctx.locate(decorator, lazy=True)
        why = f"`{text}`, which runs the function on one rank only,"
        cond = Condition(RANK, text=text, span=span, why=why, why_span=span)
        return Effect("branch", cond=cond, body=body)

    def _class(self, node: cst.ClassDef, parent: _Scope, prefix: str) -> None:
        qualname = f"{prefix}{node.name.value}"
        cid = f"{self.key}:{qualname}"
        bases = tuple(v for arg in node.bases if (v := self._value(parent, arg.value)) is not None)
        summary = ClassSummary(cid, node.name.value, self.ctx.path, None, bases)
        self.summary.classes[cid] = summary
        for stmt in suite_body(node.body):
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.AnnAssign and small.value is not None:
                        self._note_field(parent, small.target, small.value)
                    elif type(small) is cst.Assign and len(small.targets) == 1:
                        self._note_field(parent, small.targets[0].target, small.value)
        wrapping = self._wrapped_attributes(node, parent, cid, qualname)
        self._class_wrapping[cid] = wrapping
        summary.wrapped_attributes = tuple(
            sorted(label[5:] for label in wrapping.wrapped - wrapping.quiet)
        )
        summary.ddp_attributes = {
            label[5:]: value for label, value in sorted(wrapping.ddp_models.items())
        }
        for stmt in suite_body(node.body):
            for inner in _unwrap(stmt):
                if type(inner) is cst.FunctionDef:
                    summary.methods[inner.name.value] = f"{cid}.{inner.name.value}"
                    self._function(inner, parent, f"{qualname}.", cid)
                elif type(inner) is cst.ClassDef:
                    self._class(inner, parent, f"{qualname}.")
        # self.<attr> = value in any method (first assignment wins; __init__ first)
        methods = [
            n for s in suite_body(node.body) for n in _unwrap(s) if type(n) is cst.FunctionDef
        ]
        methods.sort(key=lambda f: f.name.value != "__init__")
        for method in methods:
            assignments = self.taint.scan(method).assignments
            if method.name.value != "__init__" and not any(
                self_attribute(target) is not None for target, _, _ in assignments
            ):
                continue  # no ``self.<attr> = ...`` to evaluate: its scope would serve nothing
            scope = self._method_scope(method, parent, cid, qualname)
            if method.name.value == "__init__":
                summary.submodules, summary.registers_buffer = self._always_built(scope, method)
                summary.init_values = self._init_values(scope, method)
            for target, value, _ in assignments:
                attr = self_attribute(target)
                if attr is None or not isinstance(value, cst.BaseExpression):
                    continue
                if attr not in summary.attributes:
                    evaluated = self._value(scope, value)
                    if evaluated is None and _is_parameter(scope, value):
                        assert type(value) is cst.Name
                        evaluated = ("param", scope.summary.id, value.value)  # self.fn = fn
                    if evaluated is not None:
                        summary.attributes[attr] = evaluated
        summary.rank_attributes = self.taint.rank_attributes(node.name.value)

    def _construction(
        self, scope: _Scope, expr: cst.BaseExpression, site: cst.Call
    ) -> tuple[Options | None, bool]:
        """What the constructor call of a compiled module passed: ``Net(flag=False)`` in
        ``torch.compile(Net(flag=False))``, or bound once to a local (``model =
        Net().to(device)``), through methods returning the module (None otherwise); and
        whether the instance stays private to this function until ``site`` compiles it (no
        other code could have changed its attributes)."""
        node: cst.BaseExpression = expr
        private = True
        if type(node) is cst.Name:
            entries = scope.assigned.get(node.value, [])
            if len(entries) != 1 or entries[0][0] != "value":
                return None, False
            value = entries[0][1]
            if not isinstance(value, cst.BaseExpression):
                return None, False
            private = not _escapes(
                suite_body(scope.node.body) if scope.node else (), node.value, site
            )
            node = value
        node = the_module(node)
        if type(node) is not cst.Call:
            return None, False
        return _call_arguments(node, scope.params), private

    def _note_attribute_writes(self, scope: _Scope, target: cst.BaseExpression) -> None:
        """Count ``x.name = ...`` (also in tuple targets) for link._constructed_attributes."""
        if type(target) is cst.Attribute:
            self._count_write(scope, target.value, target.attr.value)
        elif type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._note_attribute_writes(scope, element.value)
        elif type(target) is cst.StarredElement:
            self._note_attribute_writes(scope, target.value)

    def _count_write(self, scope: _Scope, receiver: cst.BaseExpression, name: str) -> None:
        """A write on ``self`` in a method counts for its class ("<class id>.<name>"), any
        other for every object ("<name>")."""
        on_self = (
            type(receiver) is cst.Name
            and receiver.value == scope.self_name
            and scope.class_id is not None
        )
        key = f"{scope.class_id}.{name}" if on_self else name
        writes = self.summary.attribute_writes
        writes[key] = writes.get(key, 0) + 1

    def _note_dynamic_writes(self, scope: _Scope, call: cst.Call) -> None:
        """``setattr(x, "name", v)`` counts as a write of ``name``; ``setattr(x, key, v)``,
        ``x.__dict__.update(...)`` and ``vars(x).update(...)`` write names not known: on
        ``self`` they make that class's attributes unknown, elsewhere every attribute."""
        func = call.func
        receiver: cst.BaseExpression | None = None
        name: str | None = None
        if type(func) is cst.Name and func.value == "setattr" and len(call.args) >= 2:
            receiver = call.args[0].value
            literal = literal_value(call.args[1].value)
            name = literal if isinstance(literal, str) else None
        elif type(func) is cst.Attribute and func.attr.value in ("update", "__setitem__"):
            holder = func.value
            if type(holder) is cst.Attribute and holder.attr.value == "__dict__":
                receiver = holder.value
            elif (
                type(holder) is cst.Call
                and type(holder.func) is cst.Name
                and holder.func.value == "vars"
                and holder.args
            ):
                receiver = holder.args[0].value
            else:
                return
        else:
            return
        writes = self.summary.attribute_writes
        if name is not None:
            self._count_write(scope, receiver, name)
        elif (
            type(receiver) is cst.Name
            and receiver.value == scope.self_name
            and scope.class_id in self.summary.classes
        ):
            self.summary.classes[scope.class_id].dynamic_attributes = True
        else:
            writes["*"] = writes.get("*", 0) + 1

    def _note_field(
        self, scope: _Scope, target: cst.BaseExpression, value: cst.BaseExpression
    ) -> None:
        """Remember a reference (not a literal or a call) given to a class-valued field (one
        named ``*class``/``*cls``, as ``_call_value`` reads them)."""
        if type(target) is not cst.Name or not isinstance(value, (cst.Name, cst.Attribute)):
            return
        if not target.value.lower().endswith(("class", "cls")):
            return
        evaluated = self._value(scope, value)
        if evaluated is not None and evaluated[0] in ("f", "g"):
            found = self.summary.fields.setdefault(target.value, [])
            if evaluated not in found:
                found.append(evaluated)

    def _init_values(self, scope: _Scope, init: cst.FunctionDef) -> dict[str, tuple[str, object]]:
        """``self.name = <parameter>`` or ``self.name = <literal>`` at the top level of
        ``__init__``, for names assigned exactly once in it."""
        counts: dict[str, int] = {}
        for target, _, _ in self.taint.scan(init).assignments:
            attr = self_attribute(target)
            if attr is not None:
                counts[attr] = counts.get(attr, 0) + 1
        found: dict[str, tuple[str, object]] = {}
        for stmt in suite_body(init.body):
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                if not isinstance(small, (cst.Assign, cst.AnnAssign)) or small.value is None:
                    continue
                targets = assignment_targets(small)
                if len(targets) != 1:
                    continue
                attr = self_attribute(targets[0])
                if attr is None or counts.get(attr) != 1:
                    continue
                value = small.value
                if type(value) is cst.Name and value.value in scope.params:
                    found[attr] = ("param", value.value)
                else:
                    literal = literal_value(value)
                    if is_literal(literal) and (
                        literal is None or isinstance(literal, LITERAL_TYPES)
                    ):
                        found[attr] = ("literal", literal)
        return found

    def _always_built(self, scope: _Scope, init: cst.FunctionDef) -> tuple[tuple[Value, ...], bool]:
        """The modules ``__init__`` assigns to ``self`` (or adds) on every run, and whether
        it always registers a buffer: statements at its top level (or in a ``with``), never
        under a branch, a loop or a ``try`` (nanoGPT registers its mask only without flash
        attention). A BatchNorm with ``track_running_stats`` not literally True is left out."""
        modules: list[Value] = []
        registers = False
        pending = list(suite_body(init.body))
        while pending:
            stmt = pending.pop(0)
            if type(stmt) is cst.With:
                pending[:0] = suite_body(stmt.body)
                continue
            if type(stmt) is not cst.SimpleStatementLine:
                continue
            for small in stmt.body:
                built: cst.BaseExpression | None = None
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                    targets = assignment_targets(small)
                    if any(self_attribute(t) is not None for t in targets):
                        built = small.value
                elif type(small) is cst.Expr and type(small.value) is cst.Call:
                    call = small.value
                    method = call.func.attr.value if type(call.func) is cst.Attribute else ""
                    on_self = type(call.func) is cst.Attribute and (
                        type(call.func.value) is cst.Name
                        and call.func.value.value == scope.self_name
                    )
                    if on_self and method == "register_buffer":
                        registers = True
                    elif on_self and method == "add_module" and len(call.args) >= 2:
                        built = call.args[1].value
                if type(built) is cst.Call and not _untracked_statistics(built):
                    value = self._value(scope, built)
                    if value is not None and value[0] in ("call", "seq"):
                        modules.append(value)
        return tuple(modules), registers

    def _wrapped_attributes(
        self, node: cst.ClassDef, parent: _Scope, cid: str, qualname: str
    ) -> _Scope:
        """A scope holding the ``self.<attr>`` labels that some method of the class assigns a
        distributed-wrapped model to (its ``wrapped``/``ddp``/``quiet`` sets)."""
        attributes = FunctionSummary(f"{cid}.<attributes>", "", self.ctx.path, None)
        found = _Scope(attributes, None, parent.table, parent, cid)
        for method in (n for s in suite_body(node.body) for n in _unwrap(s)):
            if type(method) is not cst.FunctionDef or not any(
                self_attribute(target) is not None
                for target, _, _ in self.taint.scan(method).assignments
            ):
                continue
            locals_scope: _Scope | None = None  # the method's names, for what a DDP wraps
            for inner in descendants(method.body):
                if type(inner) is cst.Assign and any(
                    self_attribute(t.target) is not None for t in inner.targets
                ):
                    if is_wrapping_call(inner.value, found.table.resolve) is None:
                        # not a wrapping: tracked, it would only note forward outputs and
                        # makers, which no one reads of this scope (wrapped models only)
                        continue
                    if locals_scope is None:
                        locals_scope = self._method_scope(method, parent, cid, qualname)
                    self._track_wrapping(found, inner, inner.value, locals_scope)
                elif (
                    type(inner) is cst.Call
                    and inner.args
                    and is_wrapping_call(inner, found.table.resolve) == "fully_shard"
                ):
                    label = _target_label(inner.args[0].value)  # fully_shard(self.model)
                    if label is not None:
                        found.wrapped.add(label)
        for labels in (found.wrapped, found.ddp, found.quiet):
            labels.intersection_update({x for x in labels if x.startswith("self.")})
        found.ddp_models = {k: v for k, v in found.ddp_models.items() if k.startswith("self.")}
        return found

    def _method_scope(
        self, node: cst.FunctionDef, parent: _Scope, cid: str, qualname: str
    ) -> _Scope:
        """A light scope to evaluate ``self.x = ...`` values of a method (locals resolve)."""
        fid = f"{cid}.{node.name.value}"
        # before the class's methods are collected (``_wrapped_attributes``): a stand-in
        summary = self.summary.functions.get(fid) or FunctionSummary(fid, "", self.ctx.path, None)
        table = self.ctx.table_for(node, parent.table)
        scope = _Scope(summary, node, table, parent, cid)
        params = [p.name.value for p in parameters(node.params)]
        scope.params = set(params)
        scope.self_name = params[0] if params else None
        self._declare(scope, self.taint.scan(node), f"{qualname}.{node.name.value}.<locals>.")
        self._prescan(scope, self.taint.scan(node))
        return scope

    # -- statements --------------------------------------------------------------------------

    def _prescan(self, scope: _Scope, scan: ScopeScan) -> None:
        """Record every local assignment (values are evaluated lazily, on first use)."""
        for target, value, is_loop in scan.assignments:
            kind = "iter" if is_loop else "value"
            for position, name in enumerate(bound_names(target)):
                if name in scan.declared_global:
                    continue  # ``global f; f = torch.compile(f)``: f is the module's
                entry_kind = kind
                if type(target) is cst.Tuple or type(target) is cst.List:
                    entry_kind = f"{kind}:{position}"
                scope.assigned.setdefault(name, []).append((entry_kind, value))

    def _block(self, scope: _Scope, body: Sequence[cst.CSTNode], prefix: str) -> tuple[Effect, ...]:
        effects: list[Effect] = []
        saved, saved_eager = self._capture, self._eager
        for stmt in body:
            method = statement_method(stmt)
            if method == "capture_begin":
                self._capture = self.ctx.locate(stmt, lazy=True)
            elif method == "capture_end":
                self._capture = saved
            self._statement(scope, stmt, prefix, effects)
            if type(stmt) is cst.If and exits_when_compiling(stmt, scope.table.resolve):
                self._eager += 1  # after ``if is_compiling(): return``: eager only
        self._capture, self._eager = saved, saved_eager
        return tuple(effects)

    def _statement(
        self, scope: _Scope, stmt: cst.CSTNode, prefix: str, effects: list[Effect]
    ) -> None:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                self._small(scope, small, effects)
        elif type(stmt) is cst.FunctionDef:
            self._function(stmt, scope, prefix, None)
            if scope.node is not None:  # a closure: a library may call it later (a callback)
                fid = f"{self.key}:{prefix}{stmt.name.value}"
                effects.append(Effect("def", callee=("f", fid)))
        elif type(stmt) is cst.ClassDef:
            self._class(stmt, scope, prefix)
        elif type(stmt) is cst.If:
            self._if(scope, stmt, prefix, effects)
        elif isinstance(stmt, (cst.For, cst.While)):
            self._calls(scope, stmt, effects)
            body = self._block(scope, suite_body(stmt.body), prefix)
            if body:
                loop = "for" if type(stmt) is cst.For else "while"
                effects.append(Effect("loop", name=loop, body=body))
            if stmt.orelse is not None:
                effects.extend(self._block(scope, suite_body(stmt.orelse.body), prefix))
        elif type(stmt) is cst.With:
            self._calls(scope, stmt, effects)
            saved = self._capture
            for item in stmt.items:
                if (
                    type(item.item) is cst.Call
                    and self.ctx.resolve_in(scope.table, item.item.func) in GRAPH_CONTEXTS
                ):
                    self._capture = self.ctx.locate(item, lazy=True)
                if (
                    item.asname is not None
                    and type(item.asname.name) is cst.Name
                    and (
                        _mentions_call_of(item.item, scope.wrapped)
                        or _mentions_name(item.item, scope.outputs)
                    )
                ):
                    # ``with amp.scale_loss(loss, opt) as scaled: scaled.backward()``
                    scope.outputs.add(item.asname.name.value)
            effects.extend(self._block(scope, suite_body(stmt.body), prefix))
            self._capture = saved
        elif isinstance(stmt, cst.Try | cst.TryStar):
            effects.extend(self._block(scope, suite_body(stmt.body), prefix))
            for handler in stmt.handlers:
                self._block(scope, suite_body(handler.body), prefix)  # calls only, not effects
            if stmt.orelse is not None:
                effects.extend(self._block(scope, suite_body(stmt.orelse.body), prefix))
            if stmt.finalbody is not None:
                effects.extend(self._block(scope, suite_body(stmt.finalbody.body), prefix))
        elif type(stmt) is cst.Match:
            self._calls(scope, stmt, effects)
            for case in stmt.cases:
                self._block(scope, suite_body(case.body), prefix)
        elif type(stmt) is cst.SimpleStatementSuite:
            for small in stmt.body:
                self._small(scope, small, effects)

    def _small(self, scope: _Scope, small: cst.BaseSmallStatement, effects: list[Effect]) -> None:
        self._calls(scope, small, effects)
        kind = type(small)  # exact types: isinstance on LibCST's ABCs is slow
        if kind is cst.Return or kind is cst.Raise:
            if type(small) is cst.Return:
                scope.summary.return_callees.extend(self._callees(scope, small))
            name = "return" if kind is cst.Return else "raise"
            effects.append(Effect("exit", self._maybe_locate(small), name))
            return
        if kind is cst.Break or kind is cst.Continue:
            name = "break" if kind is cst.Break else "continue"
            effects.append(Effect("exit", self._maybe_locate(small), name))
            return
        if (
            type(small) is cst.Assign
            or type(small) is cst.AnnAssign
            or type(small) is cst.AugAssign
        ):
            targets = assignment_targets(small)
            for target in targets:
                self._note_attribute_writes(scope, target)
            value = small.value
            if value is not None:
                self._track_wrapping(scope, small, value)
                scope.walked.add(id(value))  # after its own calls (``m = torch.compile(m)``)
            return
        if type(small) is cst.Expr:
            value = small.value
            if (
                type(value) is cst.Call
                and value.args
                and is_wrapping_call(value, scope.table.resolve) == "fully_shard"
            ):
                label = _target_label(value.args[0].value)  # fully_shard(model) wraps in place
                if label is not None:
                    scope.wrapped.add(label)

    def _if(self, scope: _Scope, node: cst.If, prefix: str, effects: list[Effect]) -> None:
        self._calls(scope, node, effects)
        condition = self._condition(scope, node)
        if (
            condition is not None
            and (condition.param or condition.compare or condition.parts)
            and scope.node is not None
        ):
            located = self.ctx.locate(node, lazy=True)
            scope.summary.param_tests = (*scope.summary.param_tests, (located, condition))
        maybe_rank = condition is not None and (
            condition.level >= MAYBE
            or condition.callees
            or condition.self_attrs
            or condition.deferred
        )
        if maybe_rank:
            self._rank_depth += 1
        holds, fails = compiling_sides(node.test, scope.table.resolve)
        # a test of a local set differently under compile: neither side is claimed traced
        undecided = holds is None and reads_any(node.test, self._compiled_locals(scope))
        self._eager += undecided
        self._eager += holds is False  # ``if not is_compiling():`` body: eager only
        body = self._block(scope, suite_body(node.body), prefix)
        self._eager -= holds is False
        self._eager += fails is False  # ``if is_compiling(): ... else:`` eager only
        orelse: tuple[Effect, ...] = ()
        if type(node.orelse) is cst.If:
            elif_effects: list[Effect] = []
            self._if(scope, node.orelse, prefix, elif_effects)
            orelse = tuple(elif_effects)
        elif node.orelse is not None:
            orelse = self._block(scope, suite_body(node.orelse.body), prefix)
        self._eager -= fails is False
        self._eager -= undecided
        if maybe_rank:
            self._rank_depth -= 1
        if body or orelse:
            if condition is not None and maybe_rank:
                condition = replace(
                    condition,
                    text=self.ctx.spellings.code(node.test),
                    span=self.ctx.locate(node, lazy=True, part="test"),
                )
            uniform = condition is None or condition.level < MAYBE
            guard = "guard" if uniform and self._distributed_guard(scope, node.test) else ""
            if (
                switched_off(node.test)
                or single_process_test(node.test)
                or _not_distributed(node.test)
                or self._negates_a_function(scope, node.test)
                or self._raised_before(scope, node)
            ):
                guard = "never"  # ``if False and ...``, or a check every rank already made
            elif not guard:
                guard = self._sharded_test(scope, node.test)
            effects.append(Effect("branch", name=guard, cond=condition, body=body, orelse=orelse))

    def _compiled_locals(self, scope: _Scope) -> frozenset[str]:
        if scope.compiled_locals is None:
            scope.compiled_locals = (
                compile_assigned(scope.node, scope.table.resolve)
                if scope.node is not None and self._mentions_compiling  # not a scan per scope
                else frozenset()
            )
        return scope.compiled_locals

    def _negates_a_function(self, scope: _Scope, test: cst.BaseExpression) -> bool:
        """``... and not evaluate`` where ``evaluate`` is a function of the module, not a local
        flag: a function is always true, so the test is always false (a real bug we met:
        both halves of a first-process barrier pair were dead code)."""
        sides = [test]
        if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
            sides = [test.left, test.right]
        for side in sides:
            if (
                type(side) is cst.UnaryOperation
                and type(side.operator) is cst.Not
                and type(side.expression) is cst.Name
            ):
                value = self._name_value(scope, side.expression.value)
                if value is not None and value[0] == "f":
                    return True
        return False

    def _raised_before(self, scope: _Scope, node: cst.If) -> bool:
        """``if cfg.x is None: raise`` again inside a rank branch, after the function already
        checked the same test on every rank and raised: the repeated check never raises."""
        body = suite_body(node.body)
        if node.orelse is not None or not body or not _raises(body[-1]):
            return False
        top = scope.node is not None and any(stmt is node for stmt in scope.node.body.body)
        if not scope.raised_on and scope.raised_first is None:
            if top:  # nothing to compare with: no need of the text yet
                scope.raised_first = node.test
            return False
        if scope.raised_first is not None:
            scope.raised_on.add(self._test_key(scope.raised_first))
            scope.raised_first = None
        text = self._test_key(node.test)
        if text in scope.raised_on:
            return True
        if top:
            scope.raised_on.add(text)
        return False

    def _test_key(self, test: cst.BaseExpression) -> str:
        """A test's text with the operands of ``and``/``or`` sorted (``a and b`` == ``b and a``)."""
        if type(test) is cst.BooleanOperation:
            operator = type(test.operator).__name__
            parts: list[str] = []
            pending: list[cst.BaseExpression] = [test]
            while pending:
                item = pending.pop()
                if type(item) is cst.BooleanOperation and type(item.operator).__name__ == operator:
                    pending.extend((item.left, item.right))
                else:
                    parts.append(self._test_key(item))
            return f" {operator} ".join(sorted(parts))
        return " ".join(self.ctx.spellings.code(test).split())

    def _sharded_test(self, scope: _Scope, test: cst.BaseExpression) -> str:
        """ "sharded" for a test that holds only if a model is sharded, "unsharded" for one
        that fails only then (see :mod:`.sharded`), else ""."""
        if not self._may_be_sharded:
            return ""
        if self._sharded_predicates is None:
            self._sharded_predicates = sharded_predicates(
                self._returning_functions(), scope.table.resolve
            )

        def assigned(name: str) -> list[cst.CSTNode] | None:
            entries = scope.assigned.get(name)
            if not entries or any(kind != "value" for kind, _ in entries):
                return None
            return [node for _, node in entries]

        polarity = sharded_polarity(test, scope.table.resolve, self._sharded_predicates, assigned)
        return "" if polarity is None else ("sharded" if polarity else "unsharded")

    def _returning_functions(self) -> list[tuple[str, Sequence[cst.BaseExpression]]]:
        """The module-level functions that return a value on every ``return``, with those
        values (from the scans the summary makes anyway)."""
        found: list[tuple[str, Sequence[cst.BaseExpression]]] = []
        for stmt in self.ctx.module.body:
            if type(stmt) is cst.FunctionDef:
                scan = self.taint.scan(stmt)
                if scan.returns and not scan.bare_return:
                    found.append((stmt.name.value, scan.returns))
        return found

    def _distributed_guard(self, scope: _Scope, test: cst.BaseExpression) -> bool:
        """``distributed_guard``, except for a flag this function computes from something else:
        ``is_distributed = any(is_sharded(m) for m in models)`` says how a checkpoint is
        written (every rank agrees, but it may be false in a distributed job), not that the
        job is distributed."""
        if not asks_distributed(self.ctx, test):
            return False
        inner = test.expression if type(test) is cst.UnaryOperation else test
        if type(inner) is not cst.Name or inner.value not in scope.assigned:
            return True
        return any(
            isinstance(value, cst.BaseExpression) and reads_distributed_state(value)
            for _, value in scope.assigned[inner.value]
        )

    def _condition(self, scope: _Scope, node: cst.If) -> Condition | None:
        test = node.test
        negated = False
        inner = test
        if type(inner) is cst.UnaryOperation and type(inner.operator) is cst.Not:
            negated = True
            inner = inner.expression
        # ``self.flag`` tests as pseudo-parameters "self.flag": decided for a compiled
        # module whose construction is seen (see link._constructed_attributes)
        # (``self`` only: ``cls.flag`` in a classmethod is the class attribute)
        self_name = "self" if scope.class_id is not None and scope.self_name == "self" else None
        tested = _passable_names(scope)
        param = _tested_name(inner, tested, self_name)
        compare = _parameter_comparison(inner, tested, self_name)
        junction, parts = _parameter_junction(inner, tested, self_name)
        kind: Kind | None = self.taint.test_kind(test) if self.taint.active else None
        level = kind.level if kind is not None else UNKNOWN  # no rank word: nothing known
        varies_when: tuple[tuple[str, bool], ...] = ()
        if level >= MAYBE:
            varies_when = self._varies_when(scope, test)
        deferred = tuple(sorted(kind.deferred)) if kind is not None else ()
        self_attrs: tuple[str, ...] = ()
        names: tuple[str, ...] = ()
        if self.taint.active:
            read_names, read_attrs = _names_read(test, scope.self_name)
            if scope.self_name == "self" and scope.class_id is not None:
                # only attributes this file does not set: a base class elsewhere may
                owner = scope.class_id.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
                known = self.taint.class_attributes(owner)
                self_attrs = tuple(a for a in read_attrs if a not in known)
            # what the condition reads (to pair up complementary rank branches)
            names = tuple(sorted({*read_names, *(f"self.{a}" for a in read_attrs)}))
        direct = {id(call) for call in _operand_calls(test)}
        callees = tuple(
            v
            for call in self.ctx.statement_calls.get(id(node), ())
            if id(call) in direct
            and (v := self._value(scope, call.func)) is not None
            and not _is_inert(v)
            and v[0] in ("f", "self_method", "g", "attr")
        )
        if not (level >= MAYBE or callees or self_attrs or param or deferred or compare or parts):
            return None
        why = kind.why if kind is not None and level >= MAYBE else None
        return Condition(
            level,
            callees,
            self_attrs,
            param,
            negated,
            names=names,
            why=self.taint.describe(why) if why is not None else "",
            why_span=(
                self.ctx.locate(why.node, lazy=True)
                if why is not None and why.node is not None
                else None
            ),
            deferred=deferred,
            compare=compare,
            junction=junction,
            parts=parts,
            varies_when=varies_when,
        )

    def _varies_when(self, scope: _Scope, test: cst.BaseExpression) -> tuple[tuple[str, bool], ...]:
        """What the flags of a rank test must be for it to differ between ranks at all.

        ``if not distributed or rank == 0:`` is true on every rank when ``distributed`` is
        false: only with ``distributed`` true can the ranks take different sides. An operand
        of an ``or`` that is the same on every rank must be false, one of an ``and`` true;
        a nested junction is followed when it is the only operand that may hold the rank.
        Only flags that keep their value through the function: parameters that are never
        assigned, and their attributes (``info.broadcast_from_rank0``), not ``self``'s."""
        facts: list[tuple[str, bool]] = []
        node = test
        while True:
            while type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
                node = node.expression
            if type(node) is not cst.BooleanOperation:
                break
            conjunction = type(node.operator) is cst.And
            operands = _junction_operands(node, conjunction)
            varying: list[cst.BaseExpression] = []
            for operand in operands:
                negated, flag = _negations(operand)
                if type(flag) is cst.BooleanOperation or (
                    self.taint.test_kind(flag).level >= MAYBE
                ):
                    varying.append(flag)  # (a nested junction: its operands are recorded)
                    continue
                key = self._flag_key(scope, flag)
                if key is not None:  # the same on every rank: it must not decide the junction
                    facts.append((key, conjunction != negated))
            if len(varying) != 1:
                break
            node = varying[0]
        return tuple(facts)

    def _flag_key(self, scope: _Scope, node: cst.BaseExpression) -> str | None:
        """The key of a parameter flag the function never reassigns, or of its attribute."""
        if not isinstance(node, (cst.Name, cst.Attribute)):
            return None
        dotted = dotted_name(node)
        if dotted is None:
            return None
        root = dotted.split(".", 1)[0]
        if root not in scope.params or root in scope.assigned or root in ("self", "cls"):
            return None
        if root == scope.self_name and scope.class_id is not None:
            return None
        if "." in dotted and scope.node is not None and _writes_attribute(scope.node, dotted):
            return None  # ``info.strict = False`` somewhere in the function
        return dotted

    # -- expressions ---------------------------------------------------------------------------

    def _calls(self, scope: _Scope, statement: cst.CSTNode, effects: list[Effect]) -> None:
        """Record the calls of a statement (of a compound statement: of its header only).

        The first pass's walk gathered them (``RuleContext.note_call``), outer before inner,
        in source order: no second traversal of the expressions.
        """
        calls = self.ctx.statement_calls.get(id(statement), ())
        eager = (
            self._eager_calls(scope, statement)
            if calls and self._mentions_compiling and self._tests_compiling(scope, calls)
            else ()
        )
        for call in calls:
            if id(call) in eager:  # ``not is_compiling() and helper()``: never traced
                self._eager += 1
                self._call(scope, call, effects)
                self._eager -= 1
            else:
                self._call(scope, call, effects)

    def _tests_compiling(self, scope: _Scope, calls: Sequence[cst.Call]) -> bool:
        """Whether one of a statement's calls is an ``is_compiling()`` test. Without one, no
        operand of the statement runs only in eager mode: ``eager_operands`` needs such a
        call left of an ``and``/``or``, reached through ``not``s and junctions only, so one
        inside a lambda (whose calls are not the statement's) only has operands there too."""
        resolve = partial(self.ctx.resolve_in, scope.table)  # memoised: ``_call`` asks next
        return any(not call.args and is_compiling_test(call, resolve) for call in calls)

    def _eager_calls(self, scope: _Scope, statement: cst.CSTNode) -> set[int]:
        """Calls of a statement (of a compound one: of its test) in an operand that runs only
        in eager mode (:func:`regions.eager_operands`)."""
        if type(statement) is cst.If or type(statement) is cst.While:
            header: cst.CSTNode = statement.test
        elif isinstance(statement, cst.BaseSmallStatement):
            header = statement
        else:
            return set()
        return {
            id(node)
            for operand in eager_operands(header, scope.table.resolve)
            for node in descendants(operand)
            if type(node) is cst.Call
        }

    def _call(self, scope: _Scope, call: cst.Call, effects: list[Effect]) -> None:
        func = call.func
        self._note_dynamic_writes(scope, call)
        for arg in call.args:
            if arg.keyword is not None and type(arg.value) in _REFERENCES:
                self._note_field(scope, arg.keyword, arg.value)
        if self._rank_depth:
            self._callbacks(scope, call, effects)
        resolved = self.ctx.resolve_in(scope.table, func)
        # explicit collectives
        kind = collective_kind(resolved, self.collective_wrappers)
        if kind is not None:
            group, group_param = _group_of(call, scope)
            effects.append(
                Effect(
                    "collective",
                    self.ctx.locate(call, lazy=True),
                    kind,
                    self._text(call),
                    group=group,
                    group_param=group_param,
                    arguments=(("async_op", _keyword_literal(call, "async_op")),),
                )
            )
            return
        implicit = (
            implicit_collective(
                func, resolved, _loud(scope), scope.outputs, scope.engines, scope.ddp
            )
            if resolved is None or scope.wrapped or scope.outputs or scope.engines
            else None  # see _loud
        )
        if implicit is not None:
            label = _target_label(func)
            ddp_label = label if label is not None and label in scope.ddp_models else None
            effects.append(
                Effect(
                    "implicit",
                    self.ctx.locate(call, lazy=True),
                    implicit,
                    self._text(call),
                    # a DDP forward: a collective only if the module has buffers (decided
                    # when linked: the module's class may be in another file)
                    callee=scope.ddp_models[ddp_label] if ddp_label is not None else None,
                    arguments=(("ddp", True),) if ddp_label is not None else (),
                )
            )
            return
        member = self._member_of(scope, func)
        if member is not None:
            effects.append(
                Effect(
                    "member",
                    self.ctx.locate(call, lazy=True),
                    member[1],
                    self._text(call),
                    callee=member[0],
                )
            )
        made = _made_by(func, scope)
        if made is not None:
            made_callee, position = made
            effects.append(
                Effect(
                    "made",
                    self.ctx.locate(call, lazy=True),
                    _label_of(func) or "",
                    self._text(call),
                    callee=made_callee,
                    arguments=(("element", position),),
                )
            )
        if resolved is not None and resolved in _NOT_A_COMPILE:
            return
        if resolved in GRAPHED_CALLABLES:
            span = self.ctx.locate(call, lazy=True)
            for item in graphed_items(call):
                value = self._callable_value(scope, item)
                if value is not None:
                    self.summary.capture_sites.append((scope.summary.id, value, span))
            return
        callee = self._comprehension_value(scope, call) if type(func) is cst.Name else None
        if callee is None:
            callee = self._value(scope, func)
        elif callee == _UNKNOWN:
            callee = None  # bound by the comprehension to what the analysis cannot follow
        if self._capture is not None:
            captured = callee if callee is not None else self._callable_value(scope, func)
            if captured is not None and not _is_inert(captured) and not _external(captured):
                self.summary.capture_sites.append((scope.summary.id, captured, self._capture))
        # compile sites: torch.compile(x, ...), x.compile(...), wrapper(x)
        if callee is not None and call.args and self._may_compile_call(callee, func):
            first = call.args[0].value
            target = (
                self._lambda_value(scope, first)
                if type(first) is cst.Lambda
                else self._compiled_value(scope, first)
            )
            if target is None and self._certainly_compile(callee):
                target = ()  # compiled, but what is not known (explain-regions says so)
            if target is not None:
                self.summary.compile_sites.append(
                    (
                        scope.summary.id,
                        CompileSite(
                            target,
                            callee,
                            literal_options(call),
                            self._locate_site(call, callee),
                            "call",
                            *self._construction(scope, first, call),
                        ),
                    )
                )
        elif (
            type(func) is cst.Attribute
            and func.attr.value == "compile"
            and resolved is None
            and not call.args
        ) or (
            type(func) is cst.Attribute
            and func.attr.value == "compile"
            and resolved is None
            and all(arg.keyword is not None for arg in call.args)
        ):
            target = self._value(scope, func.value)
            if target is not None:
                self.summary.compile_sites.append(
                    (
                        scope.summary.id,
                        CompileSite(
                            target,
                            ("g", "torch.compile"),
                            literal_options(call),
                            self.ctx.locate(call, lazy=True),
                            "method",
                            *self._construction(scope, func.value, call),
                        ),
                    )
                )
        if callee is None:
            scope.summary.calls.append(_UNKNOWN)  # recorded, never guessed
            passes = self._passed_functions(scope, call)
            if passes:  # ``queue.on_request(answer)``: a callback handed to unknown code
                scope.summary.passes.append((_UNKNOWN, passes))
            if (
                type(func) is cst.Name
                and func.value in scope.params
                and not _unwrapped_here(scope, func.value)
            ):
                # ``def evaluate(model, ...): model(x)``: a forward of whatever the caller
                # passed; a wrapped model's issues collectives (decided at the call site)
                effects.append(
                    Effect(
                        "forward",
                        self.ctx.locate(call, lazy=True),
                        func.value,
                        self._text(call),
                    )
                )
            return
        if _is_inert(callee):
            return
        if not self._eager:  # Dynamo never traces a call on the eager side of is_compiling()
            scope.summary.calls.append(callee)
        passes = () if _external(callee) else self._passed_functions(scope, call)
        if passes:
            scope.summary.passes.append((callee, passes))
        if callee[0] == "g" and callee[1].startswith(("torch.", "numpy.", "os.", "math.")):
            return
        effects.append(
            Effect(
                "call",
                self._maybe_locate(call),
                text=self._text(call) if self._rank_depth else "",
                callee=callee,
                arguments=_call_arguments(
                    call,
                    _passable_names(scope),
                    _loud(scope),
                    scope.ddp_models,
                    self._passed_members(scope, call),
                ),
            )
        )

    def _callbacks(self, scope: _Scope, call: cst.Call, effects: list[Effect]) -> None:
        """Project functions passed as arguments (``server.bind(fn=self.infer)``): a library
        may call them later, where the analysis cannot follow (recorded as ``def``)."""
        for arg in call.args:
            value = arg.value
            if type(value) not in _REFERENCES:
                continue
            target = self._value(scope, value)
            if target is not None and (
                target[0] == "f" or (target[0] == "attr" and target[1] == ("self",))
            ):
                effects.append(Effect("def", callee=target))

    def _may_compile(self, compiler: Value) -> bool:
        """Whether a decorator may compile (decided for sure when files are linked)."""
        if compiler[0] == "g":
            name = compiler[1]
            return not name.startswith(_INERT_PREFIXES) and (
                name.startswith("torch.compile")
                or name in self.wrappers
                or not name.startswith("torch.")
            )
        return compiler[0] in ("f", "partial", "attr", "call")

    def _certainly_compile(self, compiler: Value) -> bool:
        return compiler[0] == "g" and compiles(compiler[1], self.wrappers)

    def _may_compile_call(self, callee: Value, func: cst.BaseExpression) -> bool:
        if self._certainly_compile(callee):
            return True
        if callee[0] == "partial":
            return True
        name = dotted_name(func) or ""
        last = name.rsplit(".", 1)[-1].lower()
        if callee[0] == "g" and callee[1].startswith("torch."):
            return False
        return any(hint in last for hint in _COMPILE_NAME_HINTS) and last != "compile"

    def _text(self, call: cst.Call) -> str:
        """How a call is written, for messages (exact text only where findings may point)."""
        if self._rank_depth:
            return self.ctx.spellings.spell(call)
        return f"{dotted_name(call.func) or 'call'}(...)"

    def _maybe_locate(self, node: cst.CSTNode) -> NodeSpan | None:
        return self.ctx.locate(node, lazy=True) if self._rank_depth else None

    def _locate_site(self, node: cst.CSTNode, compiler: Value) -> NodeSpan:
        """Sites that certainly compile are measured now; the others only if they do."""
        return self.ctx.locate(node, lazy=not self._certainly_compile(compiler))

    def _callees(self, scope: _Scope, statement: cst.CSTNode) -> list[Value]:
        found = []
        for call in self.ctx.statement_calls.get(id(statement), ()):
            value = self._value(scope, call.func)
            if value is not None and not _is_inert(value):
                found.append(value)
        return found

    # -- wrapped models ------------------------------------------------------------------------

    def _track_wrapping(
        self,
        scope: _Scope,
        stmt: cst.Assign | cst.AnnAssign | cst.AugAssign,
        value: cst.BaseExpression,
        modules_scope: _Scope | None = None,
    ) -> None:
        """Record the names a statement binds to wrapped models, engines and forward outputs;
        ``modules_scope`` evaluates what a DDP wraps (for ``self.model = DDP(net)`` collected
        class-wide: the method's own locals)."""
        targets = assignment_targets(stmt)
        wrapping = is_wrapping_call(value, scope.table.resolve)
        # ``outputs = model(x)``, and what is computed from those (``loss = outputs[0]``):
        # a backward through them all-reduces the gradients
        from_wrapped = _mentions_call_of(value, scope.wrapped) or _mentions_name(
            value, scope.outputs
        )
        self._track_made(scope, targets, value if wrapping is None else None)
        for target in targets:
            if wrapping == "deepspeed" and isinstance(target, (cst.Tuple, cst.List)):
                engine = _target_label(target.elements[0].value) if target.elements else None
                if engine is not None:
                    scope.engines.add(engine)
                    assert type(value) is cst.Call
                    if zero_stage(value, lambda name: _assigned(scope, name)) == 3:
                        scope.wrapped.add(engine)  # ZeRO-3: its forward all-gathers
                continue
            if wrapping == "library":
                # ``accelerator.prepare(model, opt, loader)``, ``fabric.setup(model, opt)``:
                # every element marked; only a model is ever called. Like DDP, no forwarding of
                # other attributes is presumed (``model.generate`` is not counted).
                for element in _target_labels(target):
                    scope.wrapped.add(element)
                    scope.ddp.add(element)
                continue
            label = _target_label(target)
            if label is None:
                continue
            if wrapping in ("wrapper", "fully_shard"):
                scope.wrapped.add(label)
                scope.ddp_models.pop(label, None)
                if type(value) is cst.Call and scope.table.resolve(value.func) in DDP:
                    scope.ddp.add(label)
                    if _quiet_ddp(value):
                        scope.quiet.add(label)  # set (or computed): no proven forward sync
                    else:
                        module = self._wrapped_module(modules_scope or scope, value)
                        scope.ddp_models[label] = module
            elif from_wrapped:
                scope.outputs.add(label)
        if type(value) is cst.Call and wrapping == "fully_shard" and value.args:
            label = _target_label(value.args[0].value)
            if label is not None:
                scope.wrapped.add(label)

    def _track_made(
        self, scope: _Scope, targets: Sequence[cst.BaseExpression], value: cst.BaseExpression | None
    ) -> None:
        """``model = build(cfg)`` / ``model, opt = setup(...)``: remember which project function
        made each name (the linker knows whether it returns a wrapped model); any other
        assignment forgets it."""
        callee = None
        if type(value) is cst.Call:
            callee = self._value(scope, value.func)
            if callee is not None and (not _names_code(callee) or callee[0] == "param"):
                callee = None
        for target in targets:
            elements = (
                list(enumerate(e.value for e in target.elements))
                if type(target) is cst.Tuple or type(target) is cst.List
                else [(-1, target)]
            )
            for position, element in elements:
                label = _target_label(element)
                if label is None:
                    continue
                if callee is None:
                    scope.made_by.pop(label, None)
                else:
                    scope.made_by[label] = (callee, position)

    def _returns_wrapped(
        self, scope: _Scope, node: cst.FunctionDef
    ) -> tuple[tuple[int, ...], tuple[tuple[int, Value | None], ...]]:
        """Which of the function's return values are DDP/FSDP-wrapped models, and of those
        the DDP ones with the module they wrap (see ``FunctionSummary.returns_wrapped``);
        DDP with ``broadcast_buffers`` off is left out."""
        found: set[int] = set()
        ddp: dict[int, Value | None] = {}
        loud = _loud(scope)
        for value in self.taint.scan(node).returns:
            items = (
                list(enumerate(e.value for e in value.elements))
                if type(value) is cst.Tuple or type(value) is cst.List
                else [(-1, value)]
            )
            for position, item in items:
                wrapping = is_wrapping_call(item, scope.table.resolve)
                if wrapping in ("wrapper", "fully_shard") and not _quiet_ddp(item):
                    found.add(position)
                    assert type(item) is cst.Call
                    if scope.table.resolve(item.func) in DDP:
                        ddp[position] = self._wrapped_module(scope, item)
                elif type(item) is cst.Name and item.value in loud:
                    found.add(position)
                    if item.value in scope.ddp_models:
                        ddp[position] = scope.ddp_models[item.value]
        return tuple(sorted(found)), tuple(sorted(ddp.items(), key=lambda pair: pair[0]))

    def _wrapped_module(self, scope: _Scope, call: cst.Call) -> Value | None:
        """What ``DDP(module, ...)`` wraps, as a value (None: not known)."""
        module = next((a.value for a in call.args if a.keyword is None), None)
        if module is None:
            module = next(
                (a.value for a in call.args if a.keyword and a.keyword.value == "module"), None
            )
        return self._value(scope, module) if module is not None else None

    # -- functions passed around ---------------------------------------------------------------

    def _callable_value(self, scope: _Scope, expr: cst.BaseExpression) -> Value | None:
        """What calling ``expr`` runs, as a value; a bare parameter is the callers' argument."""
        if _is_parameter(scope, expr):
            assert type(expr) is cst.Name
            return ("param", scope.summary.id, expr.value)
        return self._value(scope, expr)

    def _passed_functions(
        self, scope: _Scope, call: cst.Call
    ) -> tuple[tuple[int | str, Value], ...]:
        """Arguments that name a function or a method (``Runner(step)``, ``run(self.step)``),
        by position or keyword: a callee storing or calling its parameter runs them; and
        objects the project builds (``check_compile(Net())``, ``model = Net(); run(model)``):
        a callee compiling its parameter compiles their forward."""
        found: list[tuple[int | str, Value]] = []
        for position, arg in enumerate(call.args):
            if arg.star or type(arg.value) not in _PASSABLE:
                continue
            value = self._callable_value(scope, arg.value)
            if value is None:
                continue
            if not (_names_code(value) or (value[0] == "call" and _names_code(value[1]))):
                continue
            found.append((arg.keyword.value if arg.keyword else position, value))
        return tuple(found)

    # -- values --------------------------------------------------------------------------------

    def _value(self, scope: _Scope, expr: cst.BaseExpression, depth: int = 0) -> Value | None:
        if depth > 12:
            return None
        if type(expr) is cst.Name:  # exact types: isinstance on LibCST's ABCs is slow
            return self._name_value(scope, expr.value, depth)
        if type(expr) is cst.Attribute:
            resolved = self.ctx.resolve_in(scope.table, expr)
            if resolved is not None:
                return ("g", resolved)
            base = self._value(scope, expr.value, depth + 1)
            return ("attr", base, expr.attr.value) if base is not None else None
        if type(expr) is cst.Call:
            return self._call_value(scope, expr, depth)
        if type(expr) is cst.List or type(expr) is cst.Tuple or type(expr) is cst.Set:
            items = [self._value(scope, e.value, depth + 1) for e in expr.elements]
            return ("seq", tuple(v for v in items if v is not None))
        if (
            type(expr) is cst.ListComp
            or type(expr) is cst.GeneratorExp
            or type(expr) is cst.SetComp
        ):
            item = self._value(scope, expr.elt, depth + 1)
            return ("seq", (item,) if item is not None else ())
        if type(expr) is cst.Subscript:
            base = self._value(scope, expr.value, depth + 1)
            return ("elem", base) if base is not None else None
        return None

    def _member_of(self, scope: _Scope, expr: cst.BaseExpression) -> tuple[Value, str] | None:
        """``trainer.model`` (called or passed), also as ``model`` after ``model =
        trainer.model``: the object and the attribute, when the object is one this code made
        (a call's result, here or at module level) or ``self``. Its class may keep a wrapped
        model in that attribute, decided when linked: the class, or the base class that wraps
        (``BaseTrainer.__init__``: ``self.model = FSDP(net)``), may be in another file."""
        if type(expr) is cst.Name:
            value = self._name_value(scope, expr.value)
            if value is None or value[0] != "attr" or _unwrapped_here(scope, expr.value):
                return None
            base = value[1]
            return (base, value[2]) if base == ("self",) or base[0] == "call" else None
        if not (type(expr) is cst.Attribute and type(expr.value) is cst.Name):
            return None
        if expr.value.value == scope.self_name:
            # ``self.model(x)``: the wrapping this file shows is tracked as it is collected;
            # what a base class from elsewhere wraps is the linker's to tell
            return (("self",), expr.attr.value) if self._bases_elsewhere(scope) else None
        value = self._name_value(scope, expr.value.value)
        return (value, expr.attr.value) if value is not None and value[0] == "call" else None

    def _compiled_value(self, scope: _Scope, expr: cst.BaseExpression) -> Value | None:
        """What a compile call compiles: a parameter not yet reassigned where it is compiled
        is what the callers pass (``def setup(self, model): if inductor: model =
        torch.compile(model) elif ...: model = other_jit(model)``: not what a later branch
        assigns); anything else as its value (:meth:`_callable_value`)."""
        if (
            type(expr) is cst.Name
            and scope.node is not None
            and expr.value in scope.params
            and expr.value != scope.self_name
            and not any(id(v) in scope.walked for _, v in scope.assigned.get(expr.value, ()))
        ):
            return ("param", scope.summary.id, expr.value)
        return self._callable_value(scope, expr)

    def _comprehension_value(self, scope: _Scope, call: cst.Call) -> Value | None:
        """``[block(x) for block in self.blocks]``: what a called name that an enclosing
        comprehension's ``for`` binds holds, an element of what that ``for`` iterates
        (``_UNKNOWN`` when that is not known: the name shadows any outer one); None when no
        comprehension binds it."""
        assert type(call.func) is cst.Name
        name = call.func.value
        for comprehension in self.ctx.comprehensions.get(id(call), ()):
            for_in: cst.CompFor | None = comprehension.for_in  # type: ignore[attr-defined]
            while for_in is not None:
                names = bound_names(for_in.target)
                if name in names:
                    iterated = self._value(scope, for_in.iter)
                    if iterated is None:
                        return _UNKNOWN
                    if isinstance(for_in.target, (cst.Tuple, cst.List)):
                        return ("item", ("elem", iterated), names.index(name))
                    return ("elem", iterated)
                for_in = for_in.inner_for_in
        return None

    def _bases_elsewhere(self, scope: _Scope) -> bool:
        """Whether the class of a method has a base class other than torch's and builtins'
        (one that may wrap a model in ``self``): in this file or another."""
        summary = self.summary.classes.get(scope.class_id or "")
        return summary is not None and any(
            not (base[0] == "g" and base[1].split(".", 1)[0] in ("torch", "builtins"))
            for base in summary.bases
        )

    def _passed_members(self, scope: _Scope, call: cst.Call) -> frozenset[str]:
        """The arguments that are an attribute of an object (``evaluate(trainer.model, x)``,
        also ``evaluate(model, x)`` after ``model = self.model``), each recorded in the
        summary under its text with the object and attribute (see ``_member_of``)."""
        labels: list[str] = []
        for arg in call.args:
            if arg.star:
                break
            member = self._member_of(scope, arg.value)
            if member is None:
                continue
            label = dotted_name(arg.value) or ""
            scope.summary.passed_members[label] = member
            labels.append(label)
        return frozenset(labels)

    def _lambda_value(self, scope: _Scope, node: cst.Lambda) -> Value:
        """A lambda handed to ``torch.compile`` or a compile wrapper (``_maybe_compile(lambda
        inp, probs: unpermute(inp, probs, map_type="index"), ...)``): a function of its own,
        whose calls (with the arguments they pass) make its compiled region."""
        number = sum(1 for fid in self.summary.functions if "<lambda" in fid)
        fid = (
            f"{scope.summary.id}.<locals>.<lambda{number}>"
            if scope.node is not None
            else f"{self.key}:<lambda{number}>"
        )
        params = tuple(p.name.value for p in parameters(node.params))
        summary = FunctionSummary(fid, "<lambda>", self.ctx.path, None, None, params)
        summary.defaults = tuple(
            (p.name.value, literal_value(p.default))
            for p in parameters(node.params)
            if p.default is not None and is_literal(literal_value(p.default))
        )
        self.summary.functions[fid] = summary
        inner = _Scope(summary, scope.node, scope.table, scope, scope.class_id)
        inner.params = set(params)
        effects: list[Effect] = []
        saved, self._rank_depth = self._rank_depth, 0
        for call in _calls_in(node.body):
            self._call(inner, call, effects)
        self._rank_depth = saved
        summary.effects = tuple(effects)
        return ("f", fid)

    def _call_value(self, scope: _Scope, call: cst.Call, depth: int) -> Value | None:
        func = call.func
        if type(func) is cst.Name and func.value == "super" and scope.class_id is not None:
            return ("super", scope.class_id)
        if (
            type(func) is cst.Attribute
            and func.attr.value in RETURNS_THE_MODULE
            and self.ctx.resolve_in(scope.table, func) is None
        ):
            # ``GPT(cfg).to(device).train()``: nn.Module's own methods return the module
            receiver = self._value(scope, func.value, depth + 1)
            if receiver is not None and receiver[0] in ("call", "self", "attr", "elem"):
                return receiver
        callee = self._value(scope, func, depth + 1)
        if (
            callee is None
            and type(func) is cst.Attribute
            and func.attr.value.lower().endswith(("class", "cls"))
        ):
            # ``config.mlp_class(config)``: one of the classes that field is given anywhere
            return ("call", ("field", func.attr.value))
        if callee is None:
            if type(func) is cst.Name and func.value in _BUILTIN_CONTAINERS and call.args:
                inner = self._value(scope, call.args[0].value, depth + 1)
                return inner if inner is not None and inner[0] == "seq" else None
            return None
        if callee[0] == "elem" and callee[1][0] == "g" and callee[1][1].endswith(_NAMESPACE):
            # ``resnet.__dict__[args.arch](zero_init_residual=True)``: a member of that module
            shape = (
                sum(1 for arg in call.args if arg.keyword is None and not arg.star),
                tuple(sorted(arg.keyword.value for arg in call.args if arg.keyword is not None)),
                any(arg.star for arg in call.args),
            )
            return ("call", ("members", callee[1][1][: -len(_NAMESPACE)], shape))
        if callee[0] == "g" and callee[1] in _TRANSPARENT and call.args:
            # DDP(model) / FSDP(model) / fully_shard(model) run the model's own forward
            return self._value(scope, call.args[0].value, depth + 1)
        if callee[0] == "g" and callee[1] in _PARTIAL and call.args:
            wrapped = self._value(scope, call.args[0].value, depth + 1)
            return ("partial", wrapped, literal_options(call)) if wrapped is not None else None
        if callee[0] == "g" and callee[1] in _MODULE_DICTS:
            # ``nn.ModuleDict({"a": A(), ...})`` / ``{k: Head() for k in keys}``: its values
            values = _dict_values(call.args[0].value) if call.args else []
            found = (self._value(scope, v, depth + 1) for v in values)
            return ("seq", tuple(v for v in found if v is not None))
        if callee[0] == "g" and callee[1] in _CONTAINERS:
            items: list[Value] = []
            for arg in call.args:
                value = self._value(scope, arg.value, depth + 1)
                if value is None:
                    continue
                items.extend(value[1] if value[0] == "seq" else (value,))
            return ("seq", tuple(items))
        return ("call", callee)

    def _name_value(self, scope: _Scope, name: str, depth: int = 0) -> Value | None:
        current: _Scope | None = scope
        while current is not None:
            if name in current.values:
                return current.values[name]
            if name in current.defs and name not in current.assigned:
                # at module level, a def that is only the ``except ImportError`` fallback of
                # an import stands for the import (the table keeps it)
                resolved = current.table.resolve_name(name) if current.node is None else None
                return ("g", resolved) if resolved is not None else ("f", current.defs[name])
            if name in current.assigned:
                current.values[name] = None  # guards against self-referencing assignments
                value = self._evaluate_assigned(current, name, depth)
                current.values[name] = value
                return value
            if current.node is not None and name in current.params:
                if name == current.self_name:
                    return ("self",)
                return None
            if current.node is None:  # the module scope: imports
                resolved = current.table.resolve_name(name)
                return ("g", resolved) if resolved is not None else None
            current = current.parent
        return None

    def _evaluate_assigned(self, scope: _Scope, name: str, depth: int) -> Value | None:
        # a def binds its name too: ``update = torch.compile(update)`` after ``def update``
        values: list[Value] = [("f", scope.defs[name])] if name in scope.defs else []
        for kind, node in scope.assigned[name]:
            if not isinstance(node, cst.BaseExpression):
                continue
            base, _, position = kind.partition(":")
            value = self._value(scope, node, depth + 1)
            if value is None:
                continue
            if base == "iter":
                value = ("elem", value)
            if position:
                value = ("item", value, int(position))
            values.append(value)
        resolved = scope.table.resolve_name(name)
        if resolved is not None and not values:
            return ("g", resolved)
        if not values:
            return None
        unique = tuple(dict.fromkeys(values))
        return unique[0] if len(unique) == 1 else ("union", unique)


# -- helpers ---------------------------------------------------------------------------------


def _unwrapped_here(scope: _Scope, name: str) -> bool:
    """``model = model.module`` (or ``getattr(model, "module", model)``, ``unwrap(model)``)
    somewhere in the function: the wrapper's forward may not be what ``model(x)`` runs
    (NeuralSpeech's ``test()``: ``if hasattr(model, "module"): model = model.module``)."""
    for _, value in scope.assigned.get(name, ()):
        if type(value) is cst.Attribute and value.attr.value in ("module", "_orig_mod"):
            return True
        if type(value) is cst.Call:
            callee = dotted_name(value.func) or ""
            if "unwrap" in callee.lower():
                return True
            if (
                callee == "getattr"
                and len(value.args) >= 2
                and literal_value(value.args[1].value) in ("module", "_orig_mod")
            ):
                return True
    return False


def _passable_names(scope: _Scope) -> set[str]:
    """The parameters and keyword locals of ``scope`` (read only; no new set when, as
    nearly always, there is no keyword local)."""
    return scope.params | scope.keyword_locals if scope.keyword_locals else scope.params


def _loud(scope: _Scope) -> set[str]:
    """The wrapped models of ``scope`` whose forward may issue collectives (read only; no new
    set when none is quiet).

    With none of them, no forward output and no engine, a call whose target resolves to a
    global is no implicit collective: ``implicit_collective`` then only asks, of a target
    that does not resolve, the packs' collective methods and balanced contexts
    (``accelerator.wait_for_everyone()``); ``_call`` does not ask it of the others."""
    return scope.wrapped - scope.quiet if scope.quiet else scope.wrapped


def _label_of(func: cst.BaseExpression) -> str | None:
    """``model`` or ``self.model`` as called (``model(x)``)."""
    if type(func) is cst.Name:
        return func.value
    return _target_label(func) if type(func) is cst.Attribute else None


def _made_by(func: cst.BaseExpression, scope: _Scope) -> tuple[Value, int] | None:
    """The project function (and element) that made the called name, if it is one."""
    label = _label_of(func)
    if label is None:
        return None
    current: _Scope | None = scope
    while current is not None:
        if label in current.made_by:
            return current.made_by[label]
        if label in current.assigned or label in current.params:
            return None
        current = current.parent
    return None


# Calls that say a process group is up: false on no rank of a running distributed job.
_GROUP_STATE_CALLS = frozenset({"is_available", "is_initialized", "is_dist_avail_and_initialized"})


def _not_distributed(test: cst.BaseExpression) -> bool:
    """``not dist.is_initialized()`` / ``not dist.is_available()``: never true on a rank of a
    distributed job (YOLOX's ``wait_for_the_master`` returns under it before its barrier)."""
    if not (type(test) is cst.UnaryOperation and type(test.operator) is cst.Not):
        return False
    call = test.expression
    if type(call) is not cst.Call or call.args:
        return False
    func = call.func
    name = func.attr.value if type(func) is cst.Attribute else getattr(func, "value", "")
    return name in _GROUP_STATE_CALLS


def _switched_off(call: cst.Call, keyword: str) -> bool:
    """Whether ``keyword`` is passed with a value that is not literally True (False, or
    computed: then it is not known to be on)."""
    return any(
        arg.keyword is not None
        and arg.keyword.value == keyword
        and literal_value(arg.value) is not True
        for arg in call.args
    )


def _untracked_statistics(call: cst.Call) -> bool:
    """``nn.BatchNorm2d(c, track_running_stats=False)`` (or computed): it owns no buffers."""
    return _switched_off(call, "track_running_stats")


def _quiet_ddp(call: cst.BaseExpression) -> bool:
    """``DDP(m, broadcast_buffers=<not True>)``: its forward syncs nothing we can prove."""
    return type(call) is cst.Call and _switched_off(call, "broadcast_buffers")


def _is_parameter(scope: _Scope, expr: cst.BaseExpression) -> bool:
    """A bare parameter of the function (not ``self``)."""
    return (
        type(expr) is cst.Name
        and scope.node is not None
        and expr.value in scope.params
        and expr.value != scope.self_name
        and expr.value not in scope.assigned
    )


_EXTERNAL_PREFIXES = ("torch.", "numpy.", "os.", "math.", "builtins.", "typing.", "functools.")


def _external(value: Value) -> bool:
    """A global of a well-known library (never project code)."""
    return value[0] == "g" and value[1].startswith(_EXTERNAL_PREFIXES)


def _names_code(value: Value) -> bool:
    """A value that may be a function or method of the project: one of this file, a global
    outside the well-known libraries, a method of ``self``, or a caller's argument."""
    kind = value[0]
    if kind in ("f", "param"):
        return True
    if kind == "g":
        return not _external(value)
    return kind == "attr" and value[1] == ("self",)


def _calls_in(expr: cst.CSTNode) -> Iterator[cst.Call]:
    """Calls in ``expr``, outer before inner, skipping lambda bodies."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Lambda:
            continue
        if type(node) is cst.Call:
            yield node
        if type(node) in _LEAVES:
            continue
        kids = children(node)
        kids.reverse()
        stack.extend(kids)


def _target_label(target: cst.BaseExpression) -> str | None:
    """``model`` or ``self.model``: the names wrapped models are tracked under."""
    if type(target) is cst.Name:
        return target.value
    attr = self_attribute(target)
    return f"self.{attr}" if attr is not None else None


def _target_labels(target: cst.BaseExpression) -> list[str]:
    """The labels of a target and of the elements of a tuple/list target."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [x for e in target.elements if (x := _target_label(e.value)) is not None]
    label = _target_label(target)
    return [label] if label is not None else []


def _assigned(scope: _Scope, name: str) -> list[cst.CSTNode]:
    """What a name of ``scope`` (or an enclosing one) is assigned, as written."""
    current: _Scope | None = scope
    while current is not None:
        if name in current.assigned:
            return [node for _, node in current.assigned[name]]
        current = current.parent
    return []


def _mentions_call_of(expr: cst.BaseExpression, labels: set[str]) -> bool:
    if not labels:
        return False
    for call in _calls_in(expr):
        label = _target_label(call.func)
        if label in labels:
            return True
    return False


def _mentions_name(expr: cst.BaseExpression, names: set[str]) -> bool:
    if not names:
        return False
    return any(
        type(node) is cst.Name and node.value in names for node in (expr, *descendants(expr))
    )


_GROUP_KEYWORDS = frozenset({"group", "process_group", "pg"})


def _group_of(call: cst.Call, scope: _Scope) -> tuple[bool, str]:
    """Whether a collective runs on an explicit sub-group (presumed uniform within it), or on
    the group a parameter of the function holds (``group=None`` there is the world).

    The group is the ``group=`` keyword, or a positional argument whose name says it is a
    group (``dist.broadcast(t, src, get_data_parallel_group())``, ``dist.barrier(self.pp_group)``).
    """
    for arg in call.args:
        value = arg.value
        if arg.keyword is not None:
            if arg.keyword.value not in _GROUP_KEYWORDS:
                continue
        elif not _names_a_group(value):
            continue
        if is_none(value):
            return False, ""
        text = dotted_name(value) or ""
        if text.endswith("WORLD"):
            return False, ""
        if type(value) is cst.Name and value.value in scope.params:
            return False, value.value
        return True, ""
    return False, ""


def _names_a_group(value: cst.BaseExpression) -> bool:
    node = value.func if type(value) is cst.Call else value
    text = (dotted_name(node) or "").lower()
    last = text.rsplit(".", 1)[-1]
    return "group" in last or last == "pg" or last.endswith("_pg") or last.endswith("WORLD".lower())


def _names_read(
    test: cst.BaseExpression, self_name: str | None
) -> tuple[set[str], tuple[str, ...]]:
    """Plain names and ``self.<attr>`` attributes a test reads (lambdas skipped)."""
    names: set[str] = set()
    attrs: set[str] = set()
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        kind = type(node)
        if type(node) is cst.Name:
            names.add(node.value)
            continue
        if kind is cst.Lambda or kind is cst.SimpleString or kind is cst.Integer:
            continue
        if (
            type(node) is cst.Attribute
            and type(node.value) is cst.Name
            and node.value.value == self_name
        ):
            attrs.add(node.attr.value)
            continue
        stack.extend(children(node))
    names.discard("None")
    names.discard("True")
    names.discard("False")
    return names, tuple(sorted(attrs))


_COMPARISON_OPERATORS: dict[type, str] = {
    cst.Equal: "==",
    cst.NotEqual: "!=",
    cst.In: "in",
    cst.NotIn: "not in",
    cst.LessThan: "<",
    cst.LessThanEqual: "<=",
    cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=",
    cst.Is: "is",
    cst.IsNot: "is not",
}


def _operand_calls(test: cst.BaseExpression) -> list[cst.Call]:
    """Calls that are the test's operands (``f()``, ``not f()``, ``f() == 0``, ``f() and g()``),
    not inside subscripts or arguments: a project predicate there decides the test."""
    found: list[cst.Call] = []
    stack: list[cst.BaseExpression] = [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call:
            found.append(node)
        elif type(node) is cst.UnaryOperation:
            stack.append(node.expression)
        elif type(node) is cst.BooleanOperation:
            stack.extend((node.left, node.right))
        elif type(node) is cst.Comparison:
            stack.append(node.left)
            stack.extend(target.comparator for target in node.comparisons)
    return found


def _writes_attribute(function: cst.CSTNode, dotted: str) -> bool:
    """Whether ``function`` assigns ``dotted`` or an attribute it is read through
    (``info.strict = ...``, ``info.options = ...`` for ``info.options.strict``; also
    augmented, in a tuple target, or in a nested function)."""
    for node in descendants(function):
        if type(node) is cst.Assign:
            targets: list[cst.BaseExpression] = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        else:
            continue
        while targets:
            target = targets.pop()
            if isinstance(target, (cst.Tuple, cst.List)):
                targets.extend(e.value for e in target.elements)
            elif type(target) is cst.StarredElement:
                targets.append(target.value)
            elif type(target) is cst.Attribute:
                written = dotted_name(target)
                if written is not None and (dotted + ".").startswith(written + "."):
                    return True  # the attribute, or an object it is read through
    return False


def _junction_operands(node: cst.BooleanOperation, conjunction: bool) -> list[cst.BaseExpression]:
    """The operands of a chain of one kind of junction (``a or b or c``), in order."""
    operands: list[cst.BaseExpression] = []
    pending: list[cst.BaseExpression] = [node]
    while pending:
        item = pending.pop()
        if type(item) is cst.BooleanOperation and isinstance(item.operator, cst.And) == (
            conjunction
        ):
            pending.extend((item.right, item.left))
        else:
            operands.append(item)
    return operands


def _negations(node: cst.BaseExpression) -> tuple[bool, cst.BaseExpression]:
    """Whether ``node`` is negated (an odd number of ``not``), and what is negated."""
    negated = False
    while type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
        negated = not negated
        node = node.expression
    return negated, node


def _tested_name(node: cst.BaseExpression, params: set[str], self_name: str | None) -> str | None:
    """A parameter, or ``self.<name>`` as "self.<name>" (in a method), else None."""
    if type(node) is cst.Name:
        return node.value if node.value in params else None
    if (
        self_name is not None
        and type(node) is cst.Attribute
        and type(node.value) is cst.Name
        and node.value.value == self_name
    ):
        return f"self.{node.attr.value}"
    # ``info.strict``: an attribute of a parameter, as "info.strict" (no call site binds it;
    # a rank test's ``varies_when`` may)
    dotted = dotted_name(node) if type(node) is cst.Attribute else None
    if dotted is not None:
        root = dotted.split(".", 1)[0]
        if root in params and root not in (self_name, "self", "cls"):
            return dotted
    return None


def _parameter_comparison(
    test: cst.BaseExpression, params: set[str], self_name: str | None = None
) -> tuple[str, str, tuple[object, ...]] | None:
    """``rank not in (-1, 0)`` on a parameter: (param, operator, literals), decidable at a call
    site that passes a literal (``create_dataloader(..., rank=-1)``)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    tested = _tested_name(test.left, params, self_name)
    if tested is None:
        return None
    target = test.comparisons[0]
    operator = _COMPARISON_OPERATORS.get(type(target.operator))
    if operator is None:
        return None
    comparator = target.comparator
    if isinstance(comparator, (cst.Tuple, cst.List, cst.Set)):
        values = tuple(literal_value(e.value) for e in comparator.elements)
    else:
        values = (literal_value(comparator),)
    if not all(v is None or isinstance(v, LITERAL_TYPES) for v in values):
        return None
    if any(not is_literal(v) for v in values):
        return None
    return tested, operator, values


def _parameter_junction(
    test: cst.BaseExpression, params: set[str], self_name: str | None = None
) -> tuple[str, tuple[tuple[str, str, tuple[object, ...]], ...]]:
    """``a is None or b is None`` / ``use_cpu and n > 0``: one kind of junction with at least
    one parameter test (a bare parameter or a comparison with literals), else ("", ()).
    Other operands are parts on the name "" (never known): one false parameter test still
    decides an ``and``, one true one an ``or``."""
    if type(test) is not cst.BooleanOperation:
        return "", ()
    junction = "and" if type(test.operator) is cst.And else "or"
    parts: list[tuple[str, str, tuple[object, ...]]] = []
    pending: list[cst.BaseExpression] = [test]
    while pending:
        node = pending.pop()
        if type(node) is cst.BooleanOperation:
            if ("and" if type(node.operator) is cst.And else "or") != junction:
                return "", ()
            pending.extend((node.right, node.left))
        elif (tested := _tested_name(node, params, self_name)) is not None:
            parts.append((tested, "truthy", ()))
        else:
            compare = _parameter_comparison(node, params, self_name)
            parts.append(compare if compare is not None else ("", "unknown", ()))
    if all(part[0] == "" for part in parts):
        return "", ()
    return junction, tuple(parts)


def _keyword_literal(call: cst.Call, keyword: str) -> object:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            value = literal_value(arg.value)
            return value if is_literal(value) else "<expr>"
    return None


def _keyword_locals(func: cst.FunctionDef) -> dict[str, object]:
    """Locals that hold one keyword argument of the function's ``**kwargs``, by the literal
    default they take when the call does not pass it: ``flag = kwargs.pop("flag", False)``
    (or ``kwargs.get("flag", False)``; ``.get("flag")`` defaults to None), a statement of the
    function's own top-level body with the keyword's own name, the only binding of that name
    in the function, and no earlier statement but such pops reading ``kwargs``. Such a local
    holds what the call passed as ``flag=...``: a call site that passes a literal decides its
    tests (torchrl's ``reset(td, select_reset_only=True)``)."""
    star = func.params.star_kwarg
    if type(star) is not cst.Param:
        return {}
    kwargs = star.name.value
    found: dict[str, object] = {}
    seen_kwargs = False
    for stmt in suite_body(func.body):
        candidate = _keyword_pop(stmt, kwargs)
        if candidate is None:
            seen_kwargs = seen_kwargs or mentions_name(stmt, kwargs)
        elif not seen_kwargs:
            found.setdefault(candidate[0], candidate[1])
    if not found:
        return {}
    counts: dict[str, int] = {}
    stack: list[cst.CSTNode] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, _TARGET_BINDINGS):
            for name in bound_names(node.target):
                counts[name] = counts.get(name, 0) + 1
        elif type(node) is cst.AsName:
            for name in bound_names(node.name):
                counts[name] = counts.get(name, 0) + 1
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                counts[item.name.value] = counts.get(item.name.value, 0) + 2
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not func:
            counts[node.name.value] = counts.get(node.name.value, 0) + 1
            continue
        if type(node) is cst.Lambda:
            continue
        stack.extend(children(node))
    return {name: value for name, value in found.items() if counts.get(name) == 1}


_TARGET_BINDINGS = (
    cst.AssignTarget,
    cst.AnnAssign,
    cst.AugAssign,
    cst.NamedExpr,
    cst.For,
    cst.CompFor,
)


def _keyword_pop(stmt: cst.CSTNode, kwargs: str) -> tuple[str, object] | None:
    """(name, default) of ``name = <kwargs>.pop("name", <literal>)`` / ``.get(...)``."""
    if type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if type(assign) is not cst.Assign or len(assign.targets) != 1:
        return None
    target, call = assign.targets[0].target, assign.value
    if not (
        type(target) is cst.Name
        and type(call) is cst.Call
        and type(call.func) is cst.Attribute
        and type(call.func.value) is cst.Name
        and call.func.value.value == kwargs
        and call.func.attr.value in ("pop", "get")
        and 1 <= len(call.args) <= 2
        and all(arg.keyword is None and not arg.star for arg in call.args)
        and literal_value(call.args[0].value) == target.value
    ):
        return None
    if len(call.args) == 1:
        if call.func.attr.value == "pop":
            return None  # raises when not passed: no default to assume
        return target.value, None
    default = literal_value(call.args[1].value)
    if not is_literal(default) or not (default is None or isinstance(default, LITERAL_TYPES)):
        return None
    return target.value, default


def _dict_values(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a dict display or comprehension holds, as written."""
    if type(node) is cst.Dict:
        return [e.value for e in node.elements if type(e) is cst.DictElement]
    if type(node) is cst.DictComp:
        return [node.value]
    return []


def _call_arguments(
    call: cst.Call,
    params: set[str],
    wrapped: Collection[str] = (),
    ddp_models: Collection[str] = (),
    members: Collection[str] = (),
) -> Options:
    """What a call passes, by keyword or as ``#<position>``: literal booleans, None, integers
    and strings as they are, a parameter of the caller as ``("param", name)`` (its value at
    the caller's call site, if known), a distributed-wrapped model as ``WRAPPED_ARGUMENT``
    (a DDP one as ``DDP_ARGUMENT`` + its name, see ``FunctionSummary.ddp_models``), an
    object's attribute that may be one as ``MEMBER_ARGUMENT`` + its text (see
    ``FunctionSummary.passed_members``),
    anything else as ``"<expr>"`` (passed, value unknown)."""
    found: list[tuple[str, object]] = []
    for position, arg in enumerate(call.args):
        if arg.star:
            found.append((STARRED, "<expr>"))  # anything may be passed from here on
            break
        key = arg.keyword.value if arg.keyword is not None else f"#{position}"
        if type(arg.value) is cst.Name and arg.value.value in params:
            found.append((key, ("param", arg.value.value)))
            continue
        label = _target_label(arg.value) if wrapped else None
        if label is None and wrapped and isinstance(arg.value, (cst.List, cst.Tuple)):
            label = _wrapped_element(arg.value, wrapped, ddp_models)  # ``models=[model]``
        if label is not None and label in wrapped:
            found.append((key, DDP_ARGUMENT + label if label in ddp_models else WRAPPED_ARGUMENT))
            continue
        member = dotted_name(arg.value) if members else None
        if member is not None and member in members:
            found.append((key, MEMBER_ARGUMENT + member))
            continue
        value = literal_value(arg.value)
        if not is_literal(value) or not (value is None or isinstance(value, LITERAL_TYPES)):
            value = "<expr>"
        elif isinstance(value, str) and len(value) > 40:
            value = "<expr>"  # long strings decide nothing here; keep summaries small
        found.append((key, value))
    return tuple(found)


def _wrapped_element(
    value: cst.List | cst.Tuple, wrapped: Collection[str], ddp_models: Collection[str]
) -> str | None:
    """The label of a wrapped model in a list or tuple of models, one not wrapped by DDP
    first (a list holding an FSDP model may be sharded), else None."""
    labels = [_target_label(e.value) for e in value.elements]
    held = [label for label in labels if label is not None and label in wrapped]
    return min(held, key=lambda label: label in ddp_models, default=None)


def _unwrap(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Defs and classes directly in a class body, also inside if/try blocks."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        yield stmt
    elif isinstance(stmt, (cst.If, cst.Try)):
        for child in children(stmt):
            if isinstance(child, (cst.IndentedBlock, cst.Else, cst.ExceptHandler, cst.Finally)):
                block = child if isinstance(child, cst.IndentedBlock) else child.body
                for inner in suite_body(block):
                    yield from _unwrap(inner)
            elif type(child) is cst.If:
                yield from _unwrap(child)


_NAMESPACE = ".__dict__"


def _accepts(
    params: cst.Parameters,
) -> tuple[tuple[str, ...], int, bool, tuple[str, ...], tuple[str, ...], bool]:
    """What calls a signature accepts (see ``FunctionSummary.accepts``)."""
    positional = [*params.posonly_params, *params.params]
    return (
        tuple(p.name.value for p in positional),
        sum(1 for p in positional if p.default is None),
        type(params.star_arg) is cst.Param,
        tuple(p.name.value for p in params.kwonly_params),
        tuple(p.name.value for p in params.kwonly_params if p.default is None),
        type(params.star_kwarg) is cst.Param,
    )


def _open_namespace(module: cst.Module, source: str) -> bool:
    """Whether a module-level name may hold a callable other than the module's own defs and
    classes (see ``ModuleSummary.open_namespace``). Plain ``import`` binds modules, which are
    not callable, and a literal is not callable either; anything else is not known."""
    from distlint.syntax.imports import scope_statements

    for stmt in scope_statements(module.body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef, cst.Import, cst.Expr, cst.Pass)):
            continue
        if type(stmt) is cst.ImportFrom:
            if stmt.module is not None and dotted_name(stmt.module) == "__future__":
                continue
            return True
        if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            if stmt.value is None or is_literal(literal_value(stmt.value)):
                continue
            return True
        if not isinstance(stmt, (cst.Assert, cst.Raise, cst.Del)):
            return True
    pending: list[cst.CSTNode] = list(module.body)
    while pending:  # a module-level ``for``/``with``/``match`` binds names too
        node = pending.pop()
        if isinstance(node, (cst.For, cst.With, cst.Match)):
            return True
        if isinstance(node, cst.BaseCompoundStatement) and not isinstance(
            node, (cst.FunctionDef, cst.ClassDef)
        ):
            pending.extend(child for block in blocks_of(node) for child in suite_body(block))
    # ``global x`` in a function, ``globals()[name] = ...``, a module-level ``:=`` (read from
    # the text: a mention in a comment only makes the answer more cautious)
    return _BINDS_GLOBALS.search(source) is not None


_BINDS_GLOBALS = re.compile(r"\bglobals?\b|:=")


def _imported_names(body: Sequence[cst.CSTNode]) -> Iterator[str]:
    from distlint.syntax.imports import scope_statements

    for stmt in scope_statements(body):
        if type(stmt) is cst.ImportFrom and not isinstance(stmt.names, cst.ImportStar):
            for alias in stmt.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if type(local) is cst.Name:
                    yield local.value
        elif type(stmt) is cst.Import:
            for alias in stmt.names:
                if alias.asname is not None and type(alias.asname.name) is cst.Name:
                    yield alias.asname.name.value
                else:
                    head = dotted_name(alias.name)
                    if head:
                        yield head.split(".", 1)[0]


DYNAMO_CONFIG = "torch._dynamo.config."


def file_dynamo_config(ctx: ParsedFile) -> dict[str, object]:
    """The module-level :func:`dynamo_config` of ``ctx``'s file (memoised with ``ctx.memo``)."""
    return dynamo_config(ctx.module.body, ctx.imports.resolve)


def dynamo_config(
    body: Sequence[cst.CSTNode], resolve: Callable[[cst.BaseExpression], str | None]
) -> dict[str, object]:
    """Module-level ``torch._dynamo.config.X = value`` settings, by ``X`` (last one wins).

    A value that is not a literal is kept as ``"<expr>"``: the setting is then unknown.
    """
    from distlint.syntax.imports import scope_statements

    found: dict[str, object] = {}
    for stmt in scope_statements(body):
        if type(stmt) is not cst.Assign:
            continue
        value = literal_value(stmt.value)
        for target in stmt.targets:
            name = resolve(target.target)
            if name is not None and name.startswith(DYNAMO_CONFIG):
                found[name[len(DYNAMO_CONFIG) :]] = value if is_literal(value) else "<expr>"
    return found


__all__ = ["Collector", "dynamo_config"]


def _raises(stmt: cst.CSTNode) -> bool:
    return type(stmt) is cst.SimpleStatementLine and any(
        type(small) is cst.Raise for small in stmt.body
    )
