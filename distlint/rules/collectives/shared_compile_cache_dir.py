"""DL207 shared-compile-cache-dir: see its docs page, docs/rules/DL207.md."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.rules.base import FixArgs, Rule
from distlint.rules.context import RuleContext
from distlint.syntax.walker import descendants, evaluated

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


# Calls that set environment variables: one, ``(name, value)``, or several, ``update``.
_SET_ONE = frozenset({"os.environ.setdefault", "os.putenv"})
_UPDATE = "os.environ.update"

# Their last parts. A name resolves to ``<binding>.<rest of the chain>`` (canonical_name only
# rewrites a private module prefix), so an attribute chain resolving to a setter ends with
# its last part, and a bare name resolving to one is bound by an import or an alias that
# spells that part somewhere in the file.
_SETTER_PARTS = frozenset(name.rsplit(".", 1)[-1] for name in (*_SET_ONE, _UPDATE))


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

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._constants: dict[str, cst.BaseExpression] = {}
        # see _SETTER_PARTS: whether a bare name may be bound to a setter
        self._setter_words = any(part in ctx.source for part in _SETTER_PARTS)

    def visit_Module(self, node: cst.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        target = small.targets[0].target
                        if isinstance(target, cst.Name):
                            self._constants[target.value] = small.value

    @cached_property
    def _multi_process(self) -> str | None:
        """:meth:`_starts_processes` of the file, computed once when a compile-cache variable
        is set (rare): it walks the whole module, and reads only the module's import table
        and source, so when it runs does not change what it finds."""
        return self._starts_processes(self.ctx.module)

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
        func = node.func
        if type(func) is cst.Attribute:
            if func.attr.value not in _SETTER_PARTS:
                return  # cannot resolve to a setter (see _SETTER_PARTS)
        elif type(func) is not cst.Name or not self._setter_words:
            return  # only names and attribute chains resolve
        name = self.ctx.resolve(func)
        if name in _SET_ONE and len(node.args) >= 2:
            how = "defaulted" if name.endswith("setdefault") else "set"
            self._check(_string(node.args[0].value), node.args[1].value, how)
        elif name == _UPDATE:
            for arg in node.args:
                if arg.keyword is not None:
                    self._check(arg.keyword.value, arg.value, "set")
                elif isinstance(arg.value, cst.Dict):
                    for element in arg.value.elements:
                        if isinstance(element, cst.DictElement):
                            self._check(_string(element.key), element.value, "set")

    def _check(self, variable: str | None, value: cst.BaseExpression, how: str) -> None:
        if variable not in CACHE_VARIABLES:
            return
        multi_process = self._multi_process
        if multi_process is None or not self._fixed(value, depth=0):
            return
        self.report(
            value,
            f"`{variable}` is {how} to one fixed path in a file that runs several processes "
            f"({multi_process}): every rank and every host writes the same compile "
            "cache (a hygiene note for shared or network filesystems, not an observed "
            f"failure). Add the rank or host, e.g. `f\"/tmp/cache-{{os.environ['LOCAL_RANK']}}\"`.",
            **self._per_host_fix(value),
        )

    def _per_host_fix(self, value: cst.BaseExpression) -> FixArgs:
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
