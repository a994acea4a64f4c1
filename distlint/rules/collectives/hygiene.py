"""Hygiene rules (off by default): patterns that are fragile, not failures observed on torch.

DL206 float-flag-equality: exact ``==``/``!=`` on a float that came through a collective.
DL207 shared-compile-cache-dir: one fixed compile cache directory for every process.
Neither is backed by an observed failure (on torch 2.13.0, Python float flags compared with
``==`` compiled and gave correct results: float equality has no compile-specific effect); both
are notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.rules.registry import Rule
from distlint.syntax.imports import dotted_name
from distlint.syntax.walker import descendants, evaluated, scope_nodes

_C10D = "torch.distributed."
_FUNCOL = "torch.distributed._functional_collectives."
# c10d calls whose first argument receives values from other ranks (tensor or list).
RECEIVING_COLLECTIVES = frozenset(
    _C10D + name
    for name in (
        "broadcast",
        "all_reduce",
        "reduce",
        "recv",
        "irecv",
        "scatter",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_single",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "reduce_scatter_single",
        "all_to_all",
        "all_to_all_single",
        "broadcast_object_list",
        "all_gather_object",
        "scatter_object_list",
    )
)
_INT_DTYPES = frozenset(
    "torch." + name
    for name in (
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "short",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    )
)
_INT_CASTS = frozenset({"long", "int", "short", "bool", "byte", "char"})
_TO_PYTHON = frozenset({"item", "tolist"})


@dataclass
class _Received:
    """Per scope: names that hold values received through a collective."""

    collective: dict[str, str] = field(default_factory=dict)  # name -> collective's spelling
    integer: set[str] = field(default_factory=set)  # names known to hold integer tensors


class FloatFlagEquality(Rule):
    code = "DL206"
    name = "float-flag-equality"
    severity = Severity.NOTE
    summary = (
        "Exact ==/!= between a float received through a collective and a float literal "
        "(hygiene: use an integer flag or a threshold)."
    )
    default_enabled = False
    fix_availability = FixAvailability.SOMETIMES
    tags = ("hygiene", "distributed")
    precision = "medium"

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._scopes: dict[int, _Received] = {}

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            right = target.comparator
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                for value, literal in ((left, right), (right, left)):
                    if not _is_float_literal(literal):
                        continue
                    via = self._received_via(value)
                    if via is not None:
                        self._report(node, value, literal, via)
                        return
            left = right

    def _report(
        self,
        node: cst.Comparison,
        value: cst.BaseExpression,
        literal: cst.BaseExpression,
        via: str,
    ) -> None:
        code = self.ctx.module.code_for_node
        fix_nodes: tuple[tuple[cst.CSTNode, str], ...] = ()
        fix = None
        if len(node.comparisons) == 1:
            equal = isinstance(node.comparisons[0].operator, cst.Equal)
            fix_nodes = ((node, _tolerance_comparison(node, value, literal, equal)),)
            fix = Fix(
                f"Compare within {FLOAT_TOLERANCE} instead of exactly",
                (),
                Applicability.UNSAFE,
            )
        self.report(
            node,
            f"Exact `==`/`!=` between `{code(value)}` (a float received through `{via}`) "
            f"and `{code(literal)}`: it holds only while the sender sets exactly that value "
            "and nothing averages or rescales it (a hygiene note, not an observed failure). "
            "Use an integer tensor for flags, or a threshold such as `> 0.5`.",
            fix=fix,
            fix_nodes=fix_nodes,
        )

    def _received_via(self, expr: cst.BaseExpression) -> str | None:
        scope = self._scope()
        base = _received_base(expr)
        if base is None or base in scope.integer:
            return None
        return scope.collective.get(base)

    def _scope(self) -> _Received:
        func = self.ctx.function
        key = id(func) if func is not None else 0
        if key not in self._scopes:
            body = func.body if func is not None else self.ctx.module
            self._scopes[key] = self._scan(body)
        return self._scopes[key]

    def _scan(self, body: cst.CSTNode) -> _Received:
        found = _Received()
        assignments: list[tuple[str, cst.BaseExpression]] = []
        for node in scope_nodes(body):
            if isinstance(node, cst.Call):
                name = self.ctx.resolve(node.func)
                if name in RECEIVING_COLLECTIVES and node.args and node.args[0].keyword is None:
                    target = dotted_name(node.args[0].value)
                    if target is not None:
                        found.collective.setdefault(
                            target, self.ctx.module.code_for_node(node.func)
                        )
            elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                targets = (
                    [t.target for t in node.targets]
                    if isinstance(node, cst.Assign)
                    else [node.target]
                )
                for target in targets:
                    key = dotted_name(target)
                    if key is not None:
                        assignments.append((key, node.value))
        for key, value in assignments:
            if self._is_integer_tensor(value):
                found.integer.add(key)
            if isinstance(value, cst.Call) and (self.ctx.resolve(value.func) or "").startswith(
                _FUNCOL
            ):
                found.collective.setdefault(key, self.ctx.module.code_for_node(value.func))
        # one level of derived values: `flag = stop.item()`, `lr = holder[0]`
        for key, value in assignments:
            base = _received_base(value)
            if base is not None and base in found.collective and key not in found.collective:
                found.collective[key] = found.collective[base]
                if base in found.integer:
                    found.integer.add(key)
        return found

    def _is_integer_tensor(self, value: cst.BaseExpression) -> bool:
        if not isinstance(value, cst.Call):
            return False
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _INT_CASTS and not value.args:
            return True
        for arg in value.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return self.ctx.resolve(arg.value) in _INT_DTYPES
        if self.ctx.resolve(func) == "torch.tensor" and value.args:
            return _all_int_literals(value.args[0].value)
        return False


FLOAT_TOLERANCE = "1e-6"


def _tolerance_comparison(
    node: cst.Comparison, value: cst.BaseExpression, literal: cst.BaseExpression, equal: bool
) -> str:
    """``abs(value - literal) < 1e-6`` (``>=`` for ``!=``).

    It holds whenever the exact comparison held (the difference is then 0), and also for a
    value that rounding moved by less than the tolerance. Works on Python floats and tensors
    alike (``abs`` of a tensor is a tensor).
    """
    difference = cst.Call(
        cst.Name("abs"),
        [
            cst.Arg(
                cst.BinaryOperation(
                    value.with_changes(lpar=(), rpar=()),
                    cst.Subtract(),
                    literal.with_changes(lpar=(), rpar=()),
                )
            )
        ],
    )
    operator = cst.LessThan() if equal else cst.GreaterThanEqual()
    replacement = node.with_changes(  # the node's range leaves its parentheses out
        lpar=(),
        rpar=(),
        left=difference,
        comparisons=[cst.ComparisonTarget(operator, cst.Float(FLOAT_TOLERANCE))],
    )
    return cst.Module([]).code_for_node(replacement)


def _received_base(expr: cst.BaseExpression) -> str | None:
    """``stop`` for ``stop``, ``stop[0]``, ``stop.item()``, ``float(stop)``, ``holder[0]``."""
    while True:
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _TO_PYTHON and not expr.args:
                expr = func.value
                continue
            if isinstance(func, cst.Name) and func.value == "float" and len(expr.args) == 1:
                expr = expr.args[0].value
                continue
            return None
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        return dotted_name(expr)


def _is_float_literal(expr: cst.BaseExpression) -> bool:
    """A non-zero float literal: a sum, mean or scaling of 0/1 flags is exactly ``0.0`` only
    when every flag is 0, so ``== 0.0`` is the robust "nobody raised it" test (HF generation's
    ``synced_gpus`` loop, divisor guards), not the fragile one."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, cst.Float) and evaluated(expr) != 0.0


def _all_int_literals(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(_all_int_literals(e.value) for e in expr.elements)
    return False


# -- DL207 -----------------------------------------------------------------------------------------

CACHE_VARIABLES = frozenset({"TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"})
# Calls that mean this file runs as (or starts) several processes.
MULTI_PROCESS_CALLS = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.start_processes",
        "torch.distributed.elastic.multiprocessing.start_processes",
        "torch.distributed.launcher.api.elastic_launch",
        "torch.distributed.launcher.elastic_launch",
        "torch.distributed.run.main",
        "torch.distributed.run.run",
    }
)
_LAUNCHER_ENV = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"})
_PATH_CALLS = frozenset(
    {
        "os.path.join",
        "os.path.expanduser",
        "os.path.abspath",
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
    }
)


class SharedCompileCacheDir(Rule):
    code = "DL207"
    name = "shared-compile-cache-dir"
    severity = Severity.NOTE
    summary = (
        "TRITON_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR set to one fixed path in code that starts "
        "several processes (hygiene: concurrent writers)."
    )
    default_enabled = False
    fix_availability = FixAvailability.SOMETIMES
    tags = ("hygiene", "torch.compile", "distributed")
    precision = "medium"

    def __init__(self, ctx) -> None:  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._multi_process: str | None = None
        self._constants: dict[str, cst.BaseExpression] = {}

    def visit_Module(self, node: cst.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        target = small.targets[0].target
                        if isinstance(target, cst.Name):
                            self._constants[target.value] = small.value
        self._multi_process = self._starts_processes(node)

    def _starts_processes(self, module: cst.Module) -> str | None:
        """What in the file shows that it runs as several processes, spelled for messages."""
        resolve = self.ctx.imports.resolve
        for node in descendants(module):
            if isinstance(node, cst.Call):
                name = resolve(node.func)
                if name in MULTI_PROCESS_CALLS:
                    return f"`{self.ctx.module.code_for_node(node.func)}`"
                if (
                    name in ("os.environ.get", "os.getenv")
                    and node.args
                    and _string(node.args[0].value) in _LAUNCHER_ENV
                ):
                    return f"the launcher variable {_string(node.args[0].value)}"
            elif (
                isinstance(node, cst.Subscript)
                and resolve(node.value) == "os.environ"
                and _subscript_key(node) in _LAUNCHER_ENV
            ):
                return f"the launcher variable {_subscript_key(node)}"
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and self.ctx.resolve(sub.value) == "os.environ":
                self._check(_subscript_key(sub), node.value, "set")

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.resolve(node.func)
        if name in ("os.environ.setdefault", "os.putenv") and len(node.args) >= 2:
            how = "defaulted" if name.endswith("setdefault") else "set"
            self._check(_string(node.args[0].value), node.args[1].value, how)
        elif name == "os.environ.update":
            for arg in node.args:
                if arg.keyword is not None:
                    self._check(arg.keyword.value, arg.value, "set")
                elif isinstance(arg.value, cst.Dict):
                    for element in arg.value.elements:
                        if isinstance(element, cst.DictElement):
                            self._check(_string(element.key), element.value, "set")

    def _check(self, variable: str | None, value: cst.BaseExpression, how: str) -> None:
        if variable not in CACHE_VARIABLES or self._multi_process is None:
            return
        if not self._fixed(value, depth=0):
            return
        self.report(
            value,
            f"`{variable}` is {how} to one fixed path in a file that runs several processes "
            f"({self._multi_process}): every rank and every host writes the same compile "
            "cache (a hygiene note for shared or network filesystems, not an observed "
            f"failure). Add the rank or host, e.g. `f\"/tmp/cache-{{os.environ['LOCAL_RANK']}}\"`.",
            **self._per_host_fix(value),  # type: ignore[arg-type]
        )

    def _per_host_fix(self, value: cst.BaseExpression) -> dict[str, object]:
        """Unsafe fix: one subdirectory per host, ``os.path.join(<path>, socket.gethostname())``
        (adding ``import os`` / ``import socket`` before the file's first import if needed).

        Unsafe: the cache moves (a cold cache once), and code that reads the variable back
        sees the new path. None when ``os`` or ``socket`` name something else in the file, or
        the file has no module-level import to put the new ones beside.
        """
        table = self.ctx.imports
        missing = []
        for module in ("os", "socket"):
            bound = table.resolve_name(module)
            if bound is None and not _binds(self.ctx.module, module):
                missing.append(module)
            elif bound != module:
                return {}
        host = "socket.gethostname()"
        code = self.ctx.module.code_for_node
        if (
            isinstance(value, cst.Call)
            and self.ctx.resolve(value.func) == "os.path.join"
            and not value.lpar
            and value.args
            and all(arg.keyword is None and not arg.star for arg in value.args)
        ):
            last = value.args[-1]
            joined = value.with_changes(
                args=[
                    *value.args[:-1],
                    last.with_changes(comma=cst.MaybeSentinel.DEFAULT),
                    cst.Arg(cst.parse_expression(host)),
                ]
            )
            replacement = code(joined)
        else:
            bare = value.with_changes(lpar=(), rpar=())
            replacement = f"os.path.join({code(bare)}, {host})"
        fix_nodes: list[tuple[cst.CSTNode, str]] = [(value, replacement)]
        if missing:
            anchor = _first_import(self.ctx.module)
            if anchor is None:
                return {}
            imports = "".join(f"import {module}\n" for module in missing)
            fix_nodes.insert(0, (anchor, imports + code(anchor)))
        return {
            "fix": Fix("Use one cache directory per host", (), Applicability.UNSAFE),
            "fix_nodes": tuple(fix_nodes),
        }

    def _fixed(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Whether ``expr`` is one path for every process (literals, constants, joins)."""
        if depth > 8:
            return False
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            return True
        if isinstance(expr, cst.FormattedString):
            return all(
                isinstance(part, cst.FormattedStringText)
                or (
                    isinstance(part, cst.FormattedStringExpression)
                    and self._fixed(part.expression, depth + 1)
                )
                for part in expr.parts
            )
        if isinstance(expr, cst.Name) and expr.value in self._constants:
            return self._fixed(self._constants[expr.value], depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.Add, cst.Divide)
        ):
            return self._fixed(expr.left, depth + 1) and self._fixed(expr.right, depth + 1)
        if isinstance(expr, cst.Call):
            name = self.ctx.resolve(expr.func)
            if name in _PATH_CALLS or name == "str" or (name is None and _is_builtin_str(expr)):
                return bool(expr.args) and all(
                    arg.keyword is None and not arg.star and self._fixed(arg.value, depth + 1)
                    for arg in expr.args
                )
        return False


def _binds(module: cst.Module, name: str) -> bool:
    """Whether any statement of the module (at any depth) binds or imports ``name``."""
    return any(type(node) is cst.Name and node.value == name for node in descendants(module))


def _first_import(module: cst.Module) -> cst.BaseSmallStatement | None:
    """The module's first top-level import that is not ``from __future__``."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                return small
            if isinstance(small, cst.ImportFrom) and not (
                isinstance(small.module, cst.Name) and small.module.value == "__future__"
            ):
                return small
    return None


def _is_builtin_str(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "str"


def _string(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = evaluated(expr)
        return value if isinstance(value, str) else None
    return None


def _subscript_key(node: cst.Subscript) -> str | None:
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    return _string(index.value) if isinstance(index, cst.Index) else None
