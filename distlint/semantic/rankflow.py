"""The rank lattice: what each value is, rank by rank, at each point of a function.

A value is *uniform* (the same on every rank: literals, config, the world size, loop
counters, results of collectives that make values equal), *unknown* (data, external
results), a *placement* (a device built from the local rank: a tensor placed on it holds the
same value on every rank), *maybe* rank-varying (derived from a rank through an operation
the analysis cannot see through) or *rank*-varying (the rank, values computed from it by
arithmetic, comparisons and conversions, predicates such as ``is_main_process()``).

The analysis is flow-sensitive: statements are read in order, assignments replace what a
name held (``rank = 0`` after ``rank = get_rank()`` kills the rank), tuple unpacking assigns
element by element, branches join, loops run to a fixpoint. Only a test proven *rank* may
make DL201 an error; a *maybe* test is only listed (explain-ranks), the others say nothing.

Calls of project functions in other files are *deferred*: their dotted names travel with
the value, and the linker decides whether they return a rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, cast

import libcst as cst

from distlint.semantic.collectives import collective_kind
from distlint.semantic.packs import knowledge, method_on_receiver
from distlint.semantic.ranks import (
    RANK_ATTRIBUTES,
    RANK_PARAMETERS,
    UNIFORM_NAMES,
    direct_rank_source,
    is_matrix_rank,
)
from distlint.syntax.imports import ImportTable, dotted_name
from distlint.syntax.shapes import assignment_targets, bound_names, is_name, is_none
from distlint.syntax.walker import (
    children,
    descendants,
    evaluated,
    parameters,
    subclasses_of,
    suite_body,
)

if TYPE_CHECKING:
    from distlint.syntax.parsed_file import ParsedFile

UNIFORM, UNKNOWN, PLACEMENT, MAYBE, RANK = range(5)


@dataclass(frozen=True, eq=False)
class Why:
    """Where a rank value comes from: its node (for a span and the text) or a description."""

    text: str
    node: cst.CSTNode | None = None


class Kind(NamedTuple):
    level: int
    why: Why | None = None
    deferred: frozenset[str] = frozenset()  # project functions whose result may be a rank


UNIFORM_KIND = Kind(UNIFORM)
# What a collective just made equal on every rank (``dist.broadcast_object_list(box, 0)``).
RECEIVED_KIND = Kind(UNIFORM, Why("received from a collective"))
_RECEIVED_WHY = RECEIVED_KIND.why
UNKNOWN_KIND = Kind(UNKNOWN)
# A Lightning ``Trainer``/``Fabric`` built for one process (``devices=1`` on one node): its
# rank attributes (``trainer.is_global_zero``) are the same everywhere, there is no other rank.
ONE_PROCESS_KIND = Kind(UNIFORM, Why("a one-process trainer (devices=1)"))
_ONE_PROCESS_WHY = ONE_PROCESS_KIND.why
_ONE_PROCESS_RUNNERS = frozenset({"Trainer", "Fabric"})
# A sampler given the rank hands each rank its own indices (data: unknown, as any data) and
# the same number of them on every rank: it pads or drops to ``len(dataset) / num_replicas``.
# The length of it, or of a loader over it, and step counts from those do not differ.
_SHARDING_SAMPLERS = frozenset({"DistributedSampler"})
PLACEMENT_KIND = Kind(PLACEMENT)
_EMPTY: frozenset[str] = frozenset()


def join(a: Kind, b: Kind) -> Kind:
    """The least upper bound: the higher level (and its reason), deferred calls of both."""
    if a is b:
        return a
    if a.level == b.level == UNIFORM and b.why is _RECEIVED_WHY:
        a, b = b, a  # what a collective made equal, combined with constants, stays so
    first, second = (a, b) if a.level >= b.level else (b, a)
    deferred = a.deferred | b.deferred if b.deferred and a.deferred else a.deferred or b.deferred
    if deferred is first.deferred:
        return first
    return Kind(first.level, first.why if first.why is not None else second.why, deferred)


def join_all(kinds: Iterable[Kind]) -> Kind:
    result = UNIFORM_KIND
    for kind in kinds:
        result = join(result, kind)
    return result


def demote(kind: Kind) -> Kind:
    """Through an operation that may not preserve the difference: rank becomes maybe."""
    if kind.level == RANK:
        return Kind(MAYBE, kind.why, kind.deferred)
    if kind.level == PLACEMENT:
        return Kind(UNKNOWN, None, kind.deferred)
    return kind


def _maybe_from_deferred(kind: Kind) -> Kind:
    """A call with arguments: its result is at most *maybe* from them (and not deferred)."""
    if kind.level >= MAYBE:
        return Kind(MAYBE, kind.why)
    return UNKNOWN_KIND


# -- tables ------------------------------------------------------------------------------------

_LITERALS = frozenset(
    {cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis}
)
# Calls whose result carries its arguments' values through (conversions, arithmetic).
_PRESERVING = frozenset(
    {
        "builtins.int",
        "builtins.str",
        "builtins.float",
        "builtins.bool",
        "builtins.abs",
        "builtins.min",
        "builtins.max",
        "builtins.round",
        "builtins.divmod",
        "builtins.hash",
        "builtins.format",
        "torch.tensor",
        "torch.as_tensor",
        "torch.LongTensor",
        "torch.IntTensor",
        "torch.Tensor",
        "math.floor",
        "math.ceil",
        "operator.eq",
    }
)
_PRESERVING_NAMES = frozenset(
    {"int", "str", "float", "bool", "abs", "min", "max", "round", "divmod", "hash", "format"}
)
# Devices: a value placed by these is the same on every rank.
_PLACEMENT_CALLS = frozenset(
    {
        "torch.device",
        "torch.cuda.current_device",
        "torch.cuda.device",
        "torch.cuda.set_device",
        "torch.get_device_module",
        "torch.accelerator.current_device_index",
        "torch.xpu.current_device",
        "torch.npu.current_device",
    }
)
_PLACEMENT_METHODS = frozenset({"to", "cuda", "cpu", "npu", "xpu", "to_empty", "pin_memory"})
_PLACEMENT_KEYWORDS = frozenset({"device", "map_location", "device_id", "device_ids", "dtype"})
_DEVICE_PREFIXES = ("cuda", "npu", "xpu", "hpu", "mps", "mlu", "musa")
# Library methods that return a value gathered/reduced/broadcast over the ranks.
_UNIFORMING_METHODS = frozenset(
    {
        "gather",
        "gather_for_metrics",
        "gather_object",
        "reduce",
        "all_gather",
        "all_reduce",
        "broadcast",
        "broadcast_object",
        "all_gather_object",
    }
)
# Project helpers named like collectives that return the same value on every rank.
_RECEIVING_HELPERS = frozenset(
    {"all_gather", "all_gather_object", "all_reduce", "broadcast", "broadcast_object"}
)
# Their receivers (the frameworks' own, ``accelerator.gather(x)``, are in the packs: .packs).
_UNIFORMING_RECEIVERS = ("trainer", "dist", "comm")
# c10d collectives whose first argument holds the same value on every rank afterwards.
_UNIFY_FIRST_ARGUMENT = frozenset(
    {
        "all_reduce",
        "broadcast",
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
        "broadcast_object_list",
    }
)
_NEGATIVE_OK = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
_EQUALITY = (cst.Equal, cst.NotEqual)


def _int_literal(expr: cst.BaseExpression) -> int | None:
    """The value of ``3`` or ``-1``, else None."""
    negative = False
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus:
        negative, expr = True, expr.expression
    if type(expr) is cst.Integer:
        try:
            value = int(expr.value, 0)
        except ValueError:
            return None
        return -value if negative else value
    return None


def _device_string(expr: cst.BaseExpression) -> bool:
    """``f"cuda:{local_rank}"``, ``"cuda:%d" % r``, ``"cuda:" + str(r)``: a device name."""
    if type(expr) is cst.FormattedString:
        for part in expr.parts:
            if type(part) is cst.FormattedStringText:
                return part.value.lower().startswith(_DEVICE_PREFIXES)
            return False
        return False
    if type(expr) is cst.SimpleString:
        value = evaluated(expr)
        return isinstance(value, str) and value.lower().startswith(_DEVICE_PREFIXES)
    if type(expr) is cst.BinaryOperation and (
        type(expr.operator) is cst.Add or type(expr.operator) is cst.Modulo
    ):
        return _device_string(expr.left)
    if (
        type(expr) is cst.Call
        and type(expr.func) is cst.Attribute
        and expr.func.attr.value == "format"
    ):
        return _device_string(expr.func.value)
    return False


# -- the analysis ------------------------------------------------------------------------------

Env = dict[str, Kind]


class _Function:
    """What the flow knows of one local function: its node, class, and return kind (and the
    kind of each element when every ``return`` is a tuple of the same length)."""

    __slots__ = ("class_name", "elements", "node", "returns")

    def __init__(self, node: cst.FunctionDef, class_name: str | None) -> None:
        self.node = node
        self.class_name = class_name
        self.returns = UNKNOWN_KIND
        self.elements: tuple[Kind, ...] | None = None


class RankFlow:
    """The rank lattice of one file, computed once (see the module docstring).

    Results: :attr:`tests` (the kind of every ``if``/``while``/ternary test, by node id),
    :attr:`returns` (each function's return kind), :attr:`attributes` (``self.<name>`` kinds
    per class, joined over every assignment).
    """

    def __init__(self, ctx: ParsedFile, predicates: frozenset[str]) -> None:
        self.ctx = ctx
        self.predicates = predicates
        self.tests: dict[int, Kind] = {}
        self.attributes: dict[str, dict[str, Kind]] = {}  # class name -> attr -> kind
        self.functions: dict[str, list[_Function]] = {}  # simple name -> local defs
        self._by_node: dict[int, _Function] = {}
        self._class_stack: list[str] = []
        self._resolve: Callable[[cst.BaseExpression], str | None] = ctx.imports.resolve
        self._table: ImportTable = ctx.imports
        self._self_name: str | None = None
        self._params: frozenset[str] = frozenset()
        self._changed = False
        self._module_env: Env = {}
        self._assigned_names: dict[int, tuple[frozenset[str], frozenset[str]]] = {}
        self._gather(ctx.module.body, None)
        self._round = 0
        self._reads: dict[int, set[tuple[str, str]]] = {}  # function node -> facts it read
        self._defined_in: dict[int, Env] = {}  # function node -> the names it saw, last run
        self._stack: list[int] = []
        self._interesting: set[tuple[str, str]] = set()
        for self._round in range(4):
            self._changed = False
            self._module_env = self._block(ctx.module.body, {})
            self._interesting = self._carried()
            if not self._changed or not self._interesting:
                break  # a later round would read the same returns, attributes and globals

    def _carried(self) -> set[tuple[str, str]]:
        """Facts a later round must carry into the functions that read them: functions
        returning, attributes and globals holding at least a placement (or a deferred call).
        Tests are joined across rounds, so functions that read none of these are skipped."""
        found: set[tuple[str, str]] = set()
        for name, kind in self._module_env.items():
            if kind.level >= PLACEMENT or kind.deferred:
                found.add(("g", name))
        for table in self.attributes.values():
            for name, kind in table.items():
                if kind.level >= PLACEMENT or kind.deferred:
                    found.add(("a", name))
        for name, functions in self.functions.items():
            if any(f.returns.level >= PLACEMENT or f.returns.deferred for f in functions):
                found.add(("f", name))
        return found

    def _note(self, key: tuple[str, str]) -> None:
        for function in self._stack:
            reads = self._reads.get(function)
            if reads is None:
                reads = self._reads[function] = set()
            reads.add(key)

    # -- queries --------------------------------------------------------------------------------

    def test_kind(self, test: cst.BaseExpression) -> Kind:
        return self.tests.get(id(test), UNKNOWN_KIND)

    def return_kind(self, node: cst.FunctionDef) -> Kind:
        found = self._by_node.get(id(node))
        return found.returns if found is not None else UNKNOWN_KIND

    def class_attributes(self, class_name: str) -> dict[str, Kind]:
        return self.attributes.get(class_name, {})

    # -- declarations ---------------------------------------------------------------------------

    def _gather(self, body: Sequence[cst.CSTNode], class_name: str | None) -> None:
        """Index every def (nested too) by name, with its class."""
        stack: list[tuple[cst.CSTNode, str | None]] = [(node, class_name) for node in body]
        while stack:
            node, owner = stack.pop()
            kind = type(node)
            if type(node) is cst.FunctionDef:
                function = _Function(node, owner)
                self.functions.setdefault(node.name.value, []).append(function)
                self._by_node[id(node)] = function
                stack.extend((child, None) for child in suite_body(node.body))
            elif type(node) is cst.ClassDef:
                stack.extend((child, node.name.value) for child in suite_body(node.body))
            elif kind in _COMPOUND or kind in _BLOCKS:
                stack.extend((child, owner) for child in children(node))

    # -- statements -----------------------------------------------------------------------------

    def _block(self, body: Sequence[cst.CSTNode], env: Env) -> Env:
        """Run ``body`` from ``env``; returns the env at its end (marked if it always exits)."""
        for stmt in body:
            env = self._statement(stmt, env)
            if _EXITED in env:
                break
        return env

    def _statement(self, stmt: cst.CSTNode, env: Env) -> Env:
        if type(stmt) is cst.SimpleStatementLine or type(stmt) is cst.SimpleStatementSuite:
            for small in stmt.body:
                env = self._small(small, env)
                if _EXITED in env:
                    break
            return env
        if type(stmt) is cst.If:
            return self._if(stmt, env)
        if type(stmt) is cst.For:
            return self._for(stmt, env)
        if type(stmt) is cst.While:
            return self._while(stmt, env)
        if type(stmt) is cst.With:
            env = dict(env)
            for item in stmt.items:
                value = self.kind(item.item, env)
                if item.asname is not None:
                    self._assign(item.asname.name, demote(value), env)
            return self._block(suite_body(stmt.body), env)
        if type(stmt) is cst.Try or type(stmt) is cst.TryStar:
            return self._try(stmt, env)
        if type(stmt) is cst.FunctionDef:
            self._function(stmt, env)
            return env
        if type(stmt) is cst.ClassDef:
            self._class_stack.append(stmt.name.value)
            self._block(suite_body(stmt.body), dict(env))
            self._class_stack.pop()
            return env
        if type(stmt) is cst.Match:
            self.kind(stmt.subject, env)
            ends = [self._block(suite_body(case.body), dict(env)) for case in stmt.cases]
            return _join_envs([env, *ends])
        return env

    def _small(self, small: cst.BaseSmallStatement, env: Env) -> Env:
        if type(small) is cst.Assign:
            value = self.kind(small.value, env)
            env = dict(env)
            for target in small.targets:
                self._assign_target(target.target, small.value, value, env)
            return env
        if type(small) is cst.AnnAssign:
            if small.value is None:
                return env
            value = self.kind(small.value, env)
            env = dict(env)
            self._assign_target(small.target, small.value, value, env)
            return env
        if type(small) is cst.AugAssign:
            value = join(self.kind(small.value, env), self.kind(small.target, env))
            env = dict(env)
            self._assign_target(small.target, small.value, value, env)
            return env
        if type(small) is cst.Expr:
            self.kind(small.value, env)
            return self._unify(small.value, env)
        if type(small) is cst.Return:
            if small.value is not None:
                self._returned(self.kind(small.value, env), self._elements(small.value, env))
            return _exit(env)
        if type(small) in (cst.Raise, cst.Break, cst.Continue):
            return _exit(env)
        return env

    def _returned(self, kind: Kind, elements: tuple[Kind, ...] | None = None) -> None:
        function = self._current_function
        if function is None:
            return
        if not self._returns_seen:
            function.elements = elements
        elif (
            elements is None or function.elements is None or len(elements) != len(function.elements)
        ):
            function.elements = None
        else:
            function.elements = tuple(
                join(a, b) for a, b in zip(function.elements, elements, strict=True)
            )
        updated = join(function.returns, kind) if self._returns_seen else kind
        self._returns_seen = True
        function.returns = updated

    def _elements(self, value: cst.BaseExpression, env: Env) -> tuple[Kind, ...] | None:
        """The kind of each element of a returned tuple literal (``return is_ddp, rank``),
        or None (not a tuple, or one with a starred element)."""
        if type(value) is not cst.Tuple or any(
            type(e) is cst.StarredElement for e in value.elements
        ):
            return None
        return tuple(self.kind(e.value, env) for e in value.elements)

    def _unpacked_call(
        self, call: cst.BaseExpression, count: int, env: Env
    ) -> tuple[Kind, ...] | None:
        """Per element, what a call of a local function unpacks to when every ``return`` of
        the function is a tuple of ``count`` elements (``is_ddp, rank = info()``: only
        ``rank`` is the rank), or None."""
        if type(call) is not cst.Call or type(call.func) is not cst.Name:
            return None
        name = call.func.value
        local = [f for f in self.functions.get(name, ()) if f.class_name is None]
        if len(local) != 1 or name in env:
            return None
        elements = local[0].elements
        if elements is None or len(elements) != count:
            return None
        args = _maybe_from_deferred(join_all(self.kind(a.value, env) for a in call.args))
        return tuple(join(element, args) for element in elements)

    def _if(self, node: cst.If, env: Env) -> Env:
        test = self.kind(node.test, env)
        self._record(node.test, test)
        if test.level >= MAYBE:
            # the operands of ``if not distributed or rank == 0:``: which of them may hold the
            # rank, and so for which truth of the others the test can differ between ranks at
            # all (see ``Condition.varies_when``)
            for operand in junction_flags(node.test):
                self._record(operand, self.kind(operand, env))
        body = self._block(suite_body(node.body), dict(env))
        if (
            node.orelse is None
            and test.level < MAYBE
            and type(node.test) is not cst.UnaryOperation
            and asks_distributed(self.ctx, node.test)
        ):
            # ``if world_size > 1: dist.broadcast(flag, 0)``: taken on every rank of a
            # distributed job, so what it makes uniform stays uniform
            return body if _EXITED not in body else env
        orelse_node = node.orelse
        if type(orelse_node) is cst.If:
            orelse = self._if(orelse_node, env)
        elif orelse_node is not None:
            orelse = self._block(suite_body(orelse_node.body), dict(env))
        else:
            orelse = env
        joined = _join_envs([body, orelse])
        both_go_on = _EXITED not in body and _EXITED not in orelse
        if both_go_on and (test.level >= MAYBE or test.deferred):
            # ``stop = False; if rank == 0: stop = True``: what a rank branch assigns differs
            # between ranks even when each value is a constant (control dependence)
            control = Kind(test.level, test.why, test.deferred)
            joined = dict(joined)
            in_body, literal_body = self._assigned(node.body)
            in_orelse, literal_orelse = (
                self._assigned(node.orelse) if node.orelse is not None else (_NONE, _NONE)
            )
            for name in in_body | in_orelse:
                kind = joined.get(name)
                if kind is None:
                    continue
                if _received_everywhere(name, body, orelse, in_body, in_orelse):
                    # ``if rank != 0: stop = box[0]`` after broadcasting ``box = [stop]`` from
                    # rank 0: the other ranks take the value rank 0 keeps
                    joined[name] = UNIFORM_KIND
                elif name in literal_body or name in literal_orelse:
                    joined[name] = join(kind, control)  # a flag set on some ranks only
        elif test.level < MAYBE:
            # ``if cfg.sync: score = all_gather(score)[0]``: uniform in some configurations
            for name, kind in joined.items():
                if kind.level == RANK and any(
                    side.get(name) is not None and side[name].why is RECEIVED_KIND.why
                    for side in (body, orelse)
                ):
                    joined[name] = demote(kind)
        return joined

    def _assigned(self, block: cst.CSTNode) -> tuple[frozenset[str], frozenset[str]]:
        """Names a branch of an ``if`` statement binds, and those it binds to literals
        (``stop = True``, ``patience += 1``), memoised per branch."""
        found = self._assigned_names.get(id(block))
        if found is None:
            names: set[str] = set()
            literal: set[str] = set()
            stack: list[cst.CSTNode] = [block]
            while stack:
                item = stack.pop()
                known = self._assigned_names.get(id(item)) if item is not block else None
                if known is not None:  # an inner branch seen already (elif chains: linear)
                    names.update(known[0])
                    literal.update(known[1])
                    continue
                kind = type(item)
                if kind is cst.FunctionDef or kind is cst.ClassDef or kind in _LITERALS:
                    continue
                if (
                    type(item) is cst.Assign
                    or type(item) is cst.AnnAssign
                    or type(item) is cst.AugAssign
                ):
                    targets = assignment_targets(item)
                    bound = [n for t in targets for n in bound_names(t)]
                    names.update(bound)
                    if item.value is not None:
                        if _is_literal(item.value):
                            literal.update(bound)
                        stack.append(item.value)
                    continue
                if type(item) is cst.For:
                    names.update(bound_names(item.target))
                if type(item) is cst.AsName:
                    names.update(bound_names(item.name))
                if type(item) is cst.NamedExpr and type(item.target) is cst.Name:
                    names.add(item.target.value)
                stack.extend(children(item))
            found = self._assigned_names[id(block)] = (frozenset(names), frozenset(literal))
        return found

    def _for(self, node: cst.For, env: Env) -> Env:
        iterable = self.kind(node.iter, env)

        def round_(entry: Env) -> Env:
            inner = dict(entry)
            self._loop_target(node.target, node.iter, iterable, inner)
            return self._block(suite_body(node.body), inner)

        after = _loop_head(env, round_)
        if node.orelse is not None:
            after = self._block(suite_body(node.orelse.body), dict(after))
        return after

    def _while(self, node: cst.While, env: Env) -> Env:
        def round_(entry: Env) -> Env:
            self._record(node.test, self.kind(node.test, entry))
            return self._block(suite_body(node.body), dict(entry))

        entry = _loop_head(env, round_)
        if node.orelse is not None:
            entry = self._block(suite_body(node.orelse.body), dict(entry))
        return entry

    def _try(self, node: cst.Try | cst.TryStar, env: Env) -> Env:
        body = self._block(suite_body(node.body), dict(env))
        middle = _join_envs([env, _continued(body)])
        ends = [body]
        for handler in node.handlers:
            inner = dict(middle)
            if handler.name is not None:
                self._assign(handler.name.name, UNKNOWN_KIND, inner)
            ends.append(self._block(suite_body(handler.body), inner))
        if node.orelse is not None and _EXITED not in body:
            ends[0] = self._block(suite_body(node.orelse.body), dict(body))
        result = _join_envs(ends)
        if node.finalbody is not None:
            result = self._block(suite_body(node.finalbody.body), dict(_continued(result)))
        return result

    def _function(self, node: cst.FunctionDef, env: Env) -> None:
        function = self._by_node.get(id(node))
        if (
            self._round
            and self._reads.get(id(node), _NO_READS).isdisjoint(self._interesting)
            and _same_env(self._defined_in.get(id(node)), env)
        ):
            return  # reads nothing a later round changes: its tests and returns stand
        # what the names it sees where it is defined held (a global assigned from a call
        # whose return a later round learnt is found there, not read as a global)
        self._defined_in[id(node)] = dict(env)
        saved = [getattr(self, name) for name in _FUNCTION_STATE]
        self._table = self.ctx.table_for(node, self._table)
        self._resolve = self._table.resolve
        params = [p.name.value for p in parameters(node.params)]
        in_class = bool(self._class_stack) and function is not None and function.class_name
        self._self_name = params[0] if in_class and params and not is_static(node) else None
        self._params = frozenset(params)
        self._current_function = function
        self._returns_seen = False
        inner: Env = dict(env)
        for name in params:
            inner[name] = self._parameter_kind(name)
        before = function.returns if function is not None else None
        before_elements = function.elements if function is not None else None
        self._stack.append(id(node))
        self._block(suite_body(node.body), inner)
        self._stack.pop()
        if function is not None and not self._returns_seen:
            function.returns = UNIFORM_KIND  # returns None on every rank
        if function is not None and (
            not _same(before, function.returns)
            or not _same_elements(before_elements, function.elements)
        ):
            self._changed = True
        for name, value in zip(_FUNCTION_STATE, saved, strict=True):
            setattr(self, name, value)

    _current_function: _Function | None = None
    _returns_seen = False

    def _parameter_kind(self, name: str) -> Kind:
        if name in RANK_PARAMETERS:
            return Kind(RANK, Why(f"parameter `{name}`"))
        return UNKNOWN_KIND

    # -- assignments ------------------------------------------------------------------------------

    def _assign_target(
        self, target: cst.BaseExpression, value_node: cst.BaseExpression, value: Kind, env: Env
    ) -> None:
        if type(target) is cst.Tuple or type(target) is cst.List:
            elements = [e.value for e in target.elements]
            if (type(value_node) is cst.Tuple or type(value_node) is cst.List) and len(
                value_node.elements
            ) == len(elements):
                for element, item in zip(elements, value_node.elements, strict=True):
                    self._assign_target(element, item.value, self.kind(item.value, env), env)
                return
            unpacked = None
            if not any(type(e) is cst.StarredElement for e in target.elements):
                unpacked = self._unpacked_call(value_node, len(elements), env)
            if unpacked is not None:
                for element, kind in zip(elements, unpacked, strict=True):
                    self._assign(element, _unpacked(element, kind) if kind.deferred else kind, env)
                return
            for element in elements:
                self._assign(element, _unpacked(element, value), env)
            return
        self._assign(target, value, env)

    def _assign(self, target: cst.BaseExpression, value: Kind, env: Env) -> None:
        if type(target) is cst.Name:
            env[target.value] = value
        elif type(target) is cst.StarredElement:
            self._assign(target.value, value, env)
        elif type(target) is cst.Attribute:
            base = target.value
            if (
                type(base) is cst.Name
                and base.value == self._self_name
                and self._class_stack
                and self._current_function is not None
            ):
                table = self.attributes.setdefault(self._current_function.class_name or "", {})
                old = table.get(target.attr.value)
                new = value if old is None else join(old, value)
                if old is None or not _same(old, new):
                    table[target.attr.value] = new
                    self._changed = True
        elif type(target) is cst.Subscript:
            base = target.value
            if type(base) is cst.Name and base.value in env:
                # d[k] = v: a weak update, the container may now hold a rank value
                env[base.value] = join(env[base.value], demote(value))
        elif type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._assign(element.value, _unpacked(element.value, value), env)

    def _loop_target(
        self,
        target: cst.BaseExpression,
        iterable_node: cst.BaseExpression,
        iterable: Kind,
        env: Env,
    ) -> None:
        """``for i, batch in enumerate(loader)``: the index is uniform (every rank runs the same
        steps: a DistributedSampler pads), the elements are at most *maybe* rank-valued."""
        if type(iterable_node) is cst.Call:
            name = self._resolve(iterable_node.func) or dotted_name(iterable_node.func) or ""
            last = name.rsplit(".", 1)[-1]
            args = iterable_node.args
            if last == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) and args:
                elements = [e.value for e in target.elements]
                if len(elements) == 2:
                    self._assign(elements[0], UNIFORM_KIND, env)
                    inner = self.kind(args[0].value, env)
                    self._loop_target(elements[1], args[0].value, inner, env)
                    return
            if last == "range":
                # range(rank, n, world_size) yields rank-valued indexes; range(n) does not
                self._assign(target, join_all(self.kind(a.value, env) for a in args), env)
                return
            if last == "zip" and isinstance(target, (cst.Tuple, cst.List)):
                elements = [e.value for e in target.elements]
                if len(elements) == len(args):
                    for element, arg in zip(elements, args, strict=True):
                        self._loop_target(element, arg.value, self.kind(arg.value, env), env)
                    return
        element_kind = demote(iterable) if iterable.level != UNIFORM else UNIFORM_KIND
        if isinstance(target, (cst.Tuple, cst.List)):
            for item in target.elements:
                self._assign(item.value, element_kind, env)
        else:
            self._assign(target, element_kind, env)

    def _unify(self, expr: cst.BaseExpression, env: Env) -> Env:
        """``dist.all_reduce(t)``, ``dist.broadcast(t, 0)``: ``t`` is the same everywhere now."""
        if type(expr) is not cst.Call or not expr.args:
            return env
        resolved = self._resolve(expr.func)
        op = collective_kind(resolved)
        if op is None or op.rsplit(".", 1)[-1] not in _UNIFY_FIRST_ARGUMENT:
            return env
        first = expr.args[0].value
        if type(first) is cst.Name and first.value in env:
            env = dict(env)
            env[first.value] = RECEIVED_KIND
        elif type(first) is cst.List and first.elements:
            env = dict(env)
            for element in first.elements:
                if type(element.value) is cst.Name:
                    env[element.value.value] = RECEIVED_KIND
        return env

    def _record(self, test: cst.BaseExpression, kind: Kind) -> None:
        old = self.tests.get(id(test))
        self.tests[id(test)] = kind if old is None else join(old, kind)

    # -- expressions ------------------------------------------------------------------------------

    def kind(self, expr: cst.BaseExpression, env: Env) -> Kind:
        """The kind of ``expr`` in ``env``."""
        t = type(expr)
        if type(expr) is cst.Name:
            return self._name(expr.value, env)
        if t in _LITERALS:
            return UNIFORM_KIND
        if type(expr) is cst.Attribute:
            return self._attribute(expr, env)
        if type(expr) is cst.Call:
            return self._call(expr, env)
        if type(expr) is cst.Comparison:
            return self._comparison(expr, env)
        if type(expr) is cst.Subscript:
            resolved = self._resolve(expr.value)
            if direct_rank_source(expr, resolved, self.predicates):
                return self._source(expr)
            return self._subscript(expr, env)
        if (t is cst.FormattedString or t is cst.BinaryOperation) and _device_string(expr):
            return PLACEMENT_KIND
        if type(expr) is cst.Lambda:
            return UNIFORM_KIND
        if type(expr) is cst.BooleanOperation and (
            _single_stage_test(expr) or _constant_false(expr)
        ):
            return UNIFORM_KIND
        if type(expr) is cst.IfExp:
            self._record(expr.test, self.kind(expr.test, env))
        if type(expr) is cst.NamedExpr:
            value = self.kind(expr.value, env)
            if type(expr.target) is cst.Name:
                env[expr.target.value] = value
            return value
        if t in _COMPREHENSIONS:
            return demote(join_all(self.kind(c, env) for c in _expressions(expr)))
        return join_all(self.kind(c, env) for c in _expressions(expr))

    def _subscript(self, expr: cst.Subscript, env: Env) -> Kind:
        """``data[rank]``: an element picked by the rank may differ, or may be one of equals
        (every rank's checkpoint entry has the same fields): maybe. ``info()[1]``: one element
        of a tuple, perhaps not the rank one: maybe at most, and no deferred call."""
        container = self.kind(expr.value, env)
        index = UNIFORM_KIND
        for element in expr.slice:
            for child in children(element.slice):
                if type(child) in _EXPRESSION_TYPES:
                    index = join(index, self.kind(cast(cst.BaseExpression, child), env))
        if container.why is RECEIVED_KIND.why:
            return RECEIVED_KIND  # an element of what a collective just made equal
        if index.level >= MAYBE:
            return join(demote(index), Kind(min(container.level, MAYBE), container.why))
        if container.deferred or container.level >= MAYBE:
            only = expr.slice[0].slice if len(expr.slice) == 1 else None
            key = only.value if type(only) is cst.Index else None
            if type(key) is cst.SimpleString:
                text = key.value.strip("'\"")
                if text in RANK_ATTRIBUTES or text in RANK_PARAMETERS:
                    return container if container.level == RANK else self._source(expr)
            return Kind(min(container.level, MAYBE), container.why)
        return container

    def _source(self, expr: cst.BaseExpression) -> Kind:
        return Kind(RANK, Why("", expr))  # the text is made only for a message (describe)

    def describe(self, why: Why) -> str:
        """How a rank source is written, for messages."""
        if why.text or why.node is None:
            return why.text
        return self.ctx.spellings.spell(why.node)

    def _name(self, name: str, env: Env) -> Kind:
        found = env.get(name)
        if found is not None:
            return found
        if name in _CONSTANT_NAMES:
            return UNIFORM_KIND
        if name in self.predicates:
            return Kind(RANK, Why(name))
        if name in UNIFORM_NAMES:
            return UNIFORM_KIND
        if self._stack:
            self._note(("g", name))
        found = self._module_env.get(name)
        if found is not None:
            return found
        return UNKNOWN_KIND

    def _attribute(self, expr: cst.Attribute, env: Env) -> Kind:
        resolved = self._resolve(expr)
        attr = expr.attr.value
        if (resolved is not None and resolved in self.predicates) or attr in self.predicates:
            return self._source(expr)  # a configured predicate, dotted or bare (any receiver)
        base = expr.value
        if type(base) is cst.Name and base.value == self._self_name and self._self_name:
            owner = self._current_function.class_name if self._current_function else None
            self._note(("a", attr))
            self._note(("f", attr))
            known = self.attributes.get(owner or "", {}).get(attr)
            if known is not None:
                return known
            prop = self._method_return(attr, owner)
            if prop is not None and prop.level != UNKNOWN:
                return prop
            if attr in RANK_ATTRIBUTES:
                return self._source(expr)
            return UNKNOWN_KIND
        if attr in RANK_ATTRIBUTES:
            if type(base) is cst.Name and self._name(base.value, env).why is _ONE_PROCESS_WHY:
                return UNIFORM_KIND  # ``Trainer(devices=1)``: the only rank
            return UNIFORM_KIND if is_matrix_rank(expr) else self._source(expr)
        if resolved is not None:
            return UNIFORM_KIND  # a module constant (torch.float32, os.sep)
        inner = self.kind(base, env)
        if inner.level == PLACEMENT:
            return PLACEMENT_KIND
        if inner.level == MAYBE:
            return UNKNOWN_KIND  # a field of an object built with a rank among its inputs
        return inner

    def _method_return(self, name: str, owner: str | None) -> Kind | None:
        for function in self.functions.get(name, ()):
            if function.class_name == owner:
                return function.returns
        return None

    def _call(self, call: cst.Call, env: Env) -> Kind:
        func = call.func
        resolved = self._resolve(func)
        if direct_rank_source(call, resolved, self.predicates):
            for arg in call.args:  # evaluate arguments for walrus and nested tests
                self.kind(arg.value, env)
            return self._source(call)
        last = func.attr.value if type(func) is cst.Attribute else None
        if type(func) is cst.Name:
            last = func.value
        if last in UNIFORM_NAMES:
            return UNIFORM_KIND
        if last in _SHARDING_SAMPLERS:
            for arg in call.args:  # evaluate arguments for walrus and nested tests
                self.kind(arg.value, env)
            return UNKNOWN_KIND
        if last in _ONE_PROCESS_RUNNERS and _one_process_run(call):
            return ONE_PROCESS_KIND
        if collective_kind(resolved) is not None or (
            last in _RECEIVING_HELPERS and resolved is not None
        ):
            # funcol results, c10d's return values, a project's ``comm.all_gather(x)``
            return RECEIVED_KIND
        arguments = [
            self.kind(arg.value, env)
            for arg in call.args
            if arg.keyword is None or arg.keyword.value not in _PLACEMENT_KEYWORDS
        ]
        args = join_all(arguments)
        if resolved in _PLACEMENT_CALLS or (resolved is None and _device_string(call)):
            return PLACEMENT_KIND if args.level >= PLACEMENT else UNIFORM_KIND
        if type(func) is cst.Attribute:
            receiver_node = func.value
            if last in _PLACEMENT_METHODS:
                return self.kind(receiver_node, env)  # model.to(device): the model's kind
            if (last in _UNIFORMING_METHODS and _receiver_word(receiver_node)) or (
                resolved is None and method_on_receiver(func, knowledge().uniform_methods)
            ):
                return RECEIVED_KIND  # ``dist.all_reduce(t)``, ``accelerator.gather(x)``
            if resolved is None:
                if type(receiver_node) is cst.Name and receiver_node.value == self._self_name:
                    owner = self._current_function.class_name if self._current_function else None
                    self._note(("f", last or ""))
                    returned = self._method_return(last or "", owner)
                    if returned is not None:
                        return join(returned, _maybe_from_deferred(args))
                    return _maybe_from_deferred(args)
                receiver = self.kind(receiver_node, env)
                if receiver.why is _RECEIVED_WHY and not args.deferred and args.level < MAYBE:
                    return RECEIVED_KIND  # ``box.item()`` of what a collective made equal
                if receiver.level >= MAYBE:
                    return join(receiver, _maybe_from_deferred(args))  # rank.item(), str(r).zfill
                return _maybe_from_deferred(args)
        if resolved in _PRESERVING or (
            type(func) is cst.Name and func.value in _PRESERVING_NAMES and resolved is None
        ):
            return args
        if type(func) is cst.Name:
            local = self.functions.get(func.value)
            if local and func.value not in env:
                self._note(("f", func.value))
                returned = join_all(f.returns for f in local if f.class_name is None)
                if returned.why is _RECEIVED_WHY and not returned.deferred:
                    return returned  # an all-reduced answer, whatever each rank passed in
                return join(returned, _maybe_from_deferred(args))
        if resolved is not None and not resolved.startswith(_EXTERNAL_PREFIXES):
            deferred = frozenset({resolved})
            base = _maybe_from_deferred(args)
            return Kind(base.level, base.why, deferred)
        return _maybe_from_deferred(args)

    def _comparison(self, expr: cst.Comparison, env: Env) -> Kind:
        left = self.kind(expr.left, env)
        kinds = [left]
        for target in expr.comparisons:
            kinds.append(self.kind(target.comparator, env))
        result = join_all(kinds)
        if result.level < MAYBE or len(expr.comparisons) != 1:
            return result
        target = expr.comparisons[0]
        operator = target.operator
        comparator = target.comparator
        if (type(operator) is cst.Is or type(operator) is cst.IsNot) and is_none(comparator):
            return UNIFORM_KIND  # `rank is None`: set on every rank or on none
        number = _int_literal(comparator)
        if number is None:
            return result
        if number < 0 and isinstance(operator, (*_NEGATIVE_OK, *_EQUALITY)):
            return UNIFORM_KIND  # `local_rank != -1`: "is distributed", the same everywhere
        if number == 0 and isinstance(operator, (cst.GreaterThanEqual, cst.LessThan)):
            return UNIFORM_KIND  # `rank >= 0`: true on every rank
        return result


_EXTERNAL_PREFIXES = (
    "torch.",
    "builtins.",
    "os.",
    "sys.",
    "math.",
    "numpy.",
    "json.",
    "re.",
    "time.",
    "logging.",
    "warnings.",
    "typing.",
    "collections.",
    "functools.",
    "itertools.",
    "pathlib.",
    "random.",
    "transformers.",
    "accelerate.",
    "deepspeed.",
    "lightning.",
    "pytorch_lightning.",
)
_CONSTANT_NAMES = frozenset({"True", "False", "None"})
_EXITED = "\0exited"
# What walking a function sets on the flow and restores after it (see ``_function``).
_FUNCTION_STATE = (
    "_resolve",
    "_table",
    "_self_name",
    "_params",
    "_current_function",
    "_returns_seen",
)
_NO_READS: frozenset[tuple[str, str]] = frozenset()
_COMPOUND = frozenset({cst.If, cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.Match})
_BLOCKS = frozenset(
    {
        cst.IndentedBlock,
        cst.Else,
        cst.ExceptHandler,
        cst.ExceptStarHandler,
        cst.Finally,
        cst.MatchCase,
    }
)
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})
# exact types for what ``isinstance`` against LibCST's ABCs answers slowly
_EXPRESSION_TYPES = subclasses_of(cst.BaseExpression)
_BLOCK_TYPES = subclasses_of(cst.BaseSuite, cst.BaseStatement)


GUARD_WORDS = (
    "world",
    "distributed",
    "is_initialized",
    "is_available",
    "ddp",
    "fsdp",
    "gpu",
    "parallel",
    "num_processes",
    "nprocs",
    "num_nodes",
)


def distributed_guard(test: cst.BaseExpression) -> bool:
    """Whether a test reads as "running distributed" (``world_size > 1``,
    ``dist.is_initialized()``, ``local_rank != -1``): true on every rank of a distributed job,
    so never the branch that is skipped there. In ``a and b`` both sides must read so (``if
    is_distributed and isinstance(t, torch.Tensor)`` may still be false)."""
    if type(test) is cst.BooleanOperation:
        sides = (distributed_guard(test.left), distributed_guard(test.right))
        return all(sides) if type(test.operator) is cst.And else any(sides)
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        kind = type(node)
        if type(node) is cst.Call and _type_test(node):
            continue  # ``isinstance(m, FSDPModule)`` asks about an object, not about the job
        if type(node) is cst.Name or type(node) is cst.Attribute:
            word = (node.value if isinstance(node, cst.Name) else node.attr.value).lower()
            if any(w in word for w in GUARD_WORDS):
                return True
            if kind is cst.Name:
                continue
        elif (
            type(node) is cst.UnaryOperation
            and type(node.operator) is cst.Minus
            and type(node.expression) is cst.Integer
            and node.expression.value == "1"
        ):
            return True
        elif kind is cst.SimpleString or kind is cst.Integer or kind is cst.Lambda:
            continue
        stack.extend(children(node))
    return False


class _GuardAnswers(dict[int, bool]):
    """One file's ``distributed_guard`` answers by test node id: the flow asks again in each
    round and loop pass, and the summary asks once more."""

    def __init__(self, ctx: ParsedFile) -> None:
        super().__init__()


def asks_distributed(ctx: ParsedFile, test: cst.BaseExpression) -> bool:
    """``distributed_guard(test)``, computed once per test of the file."""
    answers = ctx.memo(_GuardAnswers)
    found = answers.get(id(test))
    if found is None:
        found = answers[id(test)] = distributed_guard(test)
    return found


def _type_test(call: cst.Call) -> bool:
    """``isinstance(x, T)``/``issubclass(x, T)``: whether an object (a model passed in) is of a
    distributed wrapper's type is the same on every rank, but may be false in a distributed
    job, so it does not read as "running distributed"."""
    func = call.func
    return type(func) is cst.Name and func.value in ("isinstance", "issubclass")


# What says a job runs distributed when a value is computed from it: the world size, the
# process group's state, the process count (a call like ``is_distributed_model(m)`` asks
# about a model instead, so the loose words count only for flags that are not called).
_STATE_WORDS = ("world", "is_initialized", "is_available", "num_processes", "nprocs", "num_nodes")


def reads_distributed_state(value: cst.BaseExpression) -> bool:
    """Whether a value assigned to a guard flag reads the distributed state
    (``dist.is_initialized() and dist.get_world_size() > 1``, ``args.distributed``)."""
    called: set[int] = set()
    typed: set[int] = set()  # the names inside ``isinstance(m, FSDPModule)`` (see _type_test)
    for node in descendants(value):
        if id(node) in typed:
            typed.update(id(child) for child in children(node))
            continue
        if type(node) is cst.Call:
            called.add(id(node.func))
            if _type_test(node):
                typed.update(id(child) for child in children(node))
                continue
        if type(node) is cst.Name or type(node) is cst.Attribute:
            word = (node.value if isinstance(node, cst.Name) else node.attr.value).lower()
            if any(w in word for w in _STATE_WORDS):
                return True
            if id(node) not in called and any(w in word for w in GUARD_WORDS):
                return True
    return False


_ONE_PROCESS_NAMES = ("world_size", "n_gpus", "num_gpus", "ngpus", "n_procs", "nprocs")


def _one_process_run(call: cst.Call) -> bool:
    """``Trainer(devices=1, ...)`` / ``Fabric(devices=1)`` (``num_nodes`` absent or 1)."""
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    devices = keywords.get("devices")
    nodes = keywords.get("num_nodes")
    return devices is not None and _is_one(devices) and (nodes is None or _is_one(nodes))


def _is_one(node: cst.BaseExpression) -> bool:
    value = evaluated(node) if isinstance(node, (cst.Integer, cst.SimpleString)) else None
    return value in (1, "1") and not isinstance(value, bool)


def single_process_test(test: cst.BaseExpression) -> bool:
    """``local_rank == -1`` (``rank < 0``): the convention for "not launched distributed", false
    on every rank of a distributed job, so its body runs in single-process runs only; likewise
    ``world_size == 1`` (``n_gpus == 1``). So does ``<such a test> and <anything>``: the
    conjunction is false wherever the test is."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return single_process_test(test.left) or single_process_test(test.right)
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    number = _int_literal(target.comparator)
    operator = target.operator
    left = test.left
    name = left.attr.value if type(left) is cst.Attribute else getattr(left, "value", "")
    if not isinstance(name, str):
        return False
    if number == 1 and type(operator) is cst.Equal:
        # ``world_size == 1`` / ``n_gpus == 1``: one process, nobody to wait (waveglow)
        return name.lower().endswith(_ONE_PROCESS_NAMES)
    if number is None or not (
        (number == -1 and type(operator) is cst.Equal)
        or (number == 0 and type(operator) is cst.LessThan)
    ):
        return False
    return name.lower().endswith("rank")


def _constant_false(expr: cst.BooleanOperation) -> bool:
    """``False and ...``: a branch switched off in the source."""
    return type(expr.operator) is cst.And and any(
        is_name(side, "False") for side in (expr.left, expr.right)
    )


def switched_off(test: cst.BaseExpression) -> bool:
    """Whether an ``if`` test is ``False`` or ``False and ...`` (its body never runs)."""
    if type(test) is cst.Name:
        return test.value == "False"
    return type(test) is cst.BooleanOperation and _constant_false(test)


def _single_stage_test(expr: cst.BooleanOperation) -> bool:
    """``is_first_stage() and is_last_stage()``: true on every rank exactly when there is one
    pipeline stage, so the same everywhere."""
    if type(expr.operator) is not cst.And:
        return False
    names = []
    for side in (expr.left, expr.right):
        if type(side) is not cst.Call:
            return False
        names.append((dotted_name(side.func) or "").rsplit(".", 1)[-1])
    return (
        len(names) == 2
        and any("first_stage" in n for n in names)
        and any("last_stage" in n for n in names)
    )


def _receiver_word(node: cst.BaseExpression) -> bool:
    """Whether a method's receiver is a distributed helper (``accelerator``, ``self.fabric``)."""
    name = dotted_name(node) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return last.endswith(_UNIFORMING_RECEIVERS)


def _unpacked(target: cst.BaseExpression, value: Kind) -> Kind:
    """One element of an unpacked value: by its name when the value is a rank tuple
    (``world_size, rank = get_world_size_and_rank()``)."""
    if value.level < MAYBE and not value.deferred:
        return value
    name = target.value if type(target) is cst.Name else ""
    if type(target) is cst.Attribute:
        name = target.attr.value
    lowered = name.lower()
    if name in UNIFORM_NAMES or "world" in lowered or lowered.endswith(("size", "count", "num")):
        return UNIFORM_KIND
    if name in RANK_PARAMETERS or name in RANK_ATTRIBUTES or lowered.endswith("rank"):
        return value
    if value.level < MAYBE:
        return Kind(value.level)  # another element of what a project function returns
    return demote(value)


_NONE: frozenset[str] = frozenset()


def _is_literal(expr: cst.BaseExpression) -> bool:
    if type(expr) in _LITERALS:
        return True
    if type(expr) is cst.Name:
        return expr.value in _CONSTANT_NAMES
    return (
        type(expr) is cst.UnaryOperation
        and type(expr.operator) is cst.Minus
        and type(expr.expression) in _LITERALS
    )


def _received_everywhere(
    name: str, body: Env, orelse: Env, in_body: frozenset[str], in_orelse: frozenset[str]
) -> bool:
    """Whether, after a rank branch, every rank holds ``name`` as a collective made it: each
    side that binds it ends with a received value, or one side receives what the other side
    (the broadcast's source) keeps."""
    received = [
        side.get(name) is not None and side[name].why is RECEIVED_KIND.why
        for side in (body, orelse)
    ]
    bound = [name in in_body, name in in_orelse]
    if received[0] and received[1]:
        return True
    return (received[0] and not bound[1]) or (received[1] and not bound[0])


def _exit(env: Env) -> Env:
    env = dict(env)
    env[_EXITED] = UNIFORM_KIND
    return env


def _continued(env: Env) -> Env:
    if _EXITED not in env:
        return env
    env = dict(env)
    del env[_EXITED]
    return env


def _same(a: Kind | None, b: Kind | None) -> bool:
    """Equal for the analysis: the same level and deferred calls (reasons may differ)."""
    if a is None or b is None:
        return a is b
    return a.level == b.level and a.deferred == b.deferred


def _same_env(a: Env | None, b: Env) -> bool:
    """The same names, each :func:`_same` (None: the function has not run)."""
    if a is None or len(a) != len(b):
        return False
    return all(_same(a.get(name), kind) for name, kind in b.items())


def _same_elements(a: tuple[Kind, ...] | None, b: tuple[Kind, ...] | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _loop_head(env: Env, round_: Callable[[Env], Env]) -> Env:
    """The env at a loop's head from ``env`` on: ``round_(entry)`` runs the loop once from
    ``entry`` and gives the env at the body's end, joined back into the head until it settles
    (the lattice is shallow: two rounds reach the fixpoint)."""
    entry = env
    for _ in range(2):
        joined = _join_envs([entry, _continued(round_(entry))])
        settled = _settled(entry, joined)
        entry = joined
        if settled:
            break
    return entry


def _settled(before: Env, after: Env) -> bool:
    """Whether another pass over a loop body would start from the same levels."""
    for name, kind in after.items():
        old = before.get(name)
        if old is None:
            if kind.level >= PLACEMENT or kind.deferred:
                return False
        elif old.level != kind.level or old.deferred != kind.deferred:
            return False
    return True


def _join_envs(envs: Sequence[Env]) -> Env:
    """Join the envs of the paths that go on (an always-exiting path adds nothing)."""
    going = [e for e in envs if _EXITED not in e]
    if not going:
        return envs[0] if envs else {}
    if len(going) == 1:
        return going[0]
    if len(going) == 2:
        return _join_two(going[0], going[1])
    first = going[0]
    result: Env = {}
    names = set(first)
    for env in going[1:]:
        names |= env.keys()
    for name in names:
        kinds = [env.get(name) for env in going]
        present = [k for k in kinds if k is not None]
        merged = join_all(present)
        if len(present) < len(kinds) and merged.level == UNIFORM:
            merged = UNKNOWN_KIND
        result[name] = merged
    return result


def _join_two(first: Env, second: Env) -> Env:
    """``_join_envs`` of two envs that go on (an ``if`` and its ``else``, a loop's head and
    its body's end: nearly every join), without the lists built per name: each name's kind is
    ``join_all`` of what the two hold, a name bound on one path only at least unknown."""
    result: Env = {}
    for name, kind in first.items():
        other = second.get(name)
        merged = join(UNIFORM_KIND, kind)
        if other is not None:
            merged = join(merged, other)
        elif merged.level == UNIFORM:
            merged = UNKNOWN_KIND
        result[name] = merged
    for name, other in second.items():
        if name not in first:
            merged = join(UNIFORM_KIND, other)
            result[name] = UNKNOWN_KIND if merged.level == UNIFORM else merged
    return result


def _expressions(node: cst.CSTNode) -> Iterable[cst.BaseExpression]:
    """The expressions directly below ``node`` (through non-expression wrappers)."""
    stack = list(children(node))
    while stack:
        child = stack.pop()
        if type(child) in _EXPRESSION_TYPES:
            yield cast(cst.BaseExpression, child)
        elif type(child) not in _BLOCK_TYPES:
            stack.extend(children(child))


def is_static(node: cst.FunctionDef) -> bool:
    return any(
        type(d.decorator) is cst.Name and d.decorator.value == "staticmethod"
        for d in node.decorators
    )


def junction_flags(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands, under any ``not``, of the ``and``/``or`` junctions of ``test`` (its flags
    ``distributed``, ``info.strict``, and its rank tests)."""
    found: list[cst.BaseExpression] = []
    pending = [_without_not(test)]
    if type(pending[0]) is not cst.BooleanOperation:
        return found
    while pending:
        node = _without_not(pending.pop())
        if type(node) is cst.BooleanOperation:
            pending.extend((node.right, node.left))
        else:
            found.append(node)
    return found


def _without_not(node: cst.BaseExpression) -> cst.BaseExpression:
    while type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
        node = node.expression
    return node
