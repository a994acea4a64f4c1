"""DL504: uses of torch APIs that torch itself marks deprecated, and private paths of public
torch modules, judged against the project's lowest torch.

Facts come from data shipped with distlint, never from an imported torch:
``distlint/knowledge/data/deprecated_torch.json`` (the entries, :mod:`._deprecations`) and
``distlint/knowledge/data/torch-tables.json`` (which names each release has).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from types import MappingProxyType

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.knowledge.torch_tables import TorchTable, available_versions, tables_between
from distlint.rules.api._deprecations import DeprecatedApi, deprecated_at
from distlint.rules.api._version_guards import (
    Block,
    EarlyExitGuards,
    after_early_exit_guard,
    guarded_here,
)
from distlint.rules.base import FixArgs, Rule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import literal_value
from distlint.syntax.guards import ByAncestor
from distlint.syntax.imports import ImportTable, canonical_name, dotted_name, scope_statements
from distlint.syntax.shapes import assignment_targets
from distlint.syntax.walker import children, descendants

_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
_TYPE_ASSERTS = frozenset({"assertIsInstance", "assertNotIsInstance"})
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _quoted(message: str) -> str:
    """Torch's warning text, first line, for a finding's message."""
    first = message.strip().splitlines()[0].strip()
    return first if len(first) <= 240 else first[:237] + "..."


# Deprecated functions whose replacement is a drop-in on the table's torch: the deprecated
# function's whole job is ``return <replacement>(<its own parameters>)`` and both take the same
# parameters (names, kinds, defaults). Their DL504 findings get a safe fix. A torch test
# (tests/proof/test_proof_dl5xx.py) derives this set from the installed torch and checks it.
DROP_IN: dict[str, str] = {
    "functorch.functionalize": "torch.func.functionalize",
    "functorch.grad": "torch.func.grad",
    "functorch.grad_and_value": "torch.func.grad_and_value",
    "functorch.hessian": "torch.func.hessian",
    "functorch.jacfwd": "torch.func.jacfwd",
    "functorch.jacrev": "torch.func.jacrev",
    "functorch.jvp": "torch.func.jvp",
    "functorch.vjp": "torch.func.vjp",
    "functorch.vmap": "torch.vmap",
    "torch.cuda.max_memory_cached": "torch.cuda.max_memory_reserved",
    "torch.cuda.memory_cached": "torch.cuda.memory_reserved",
    "torch.cuda.reset_max_memory_allocated": "torch.cuda.reset_peak_memory_stats",
    "torch.cuda.reset_max_memory_cached": "torch.cuda.reset_peak_memory_stats",
    "torch.distributed._all_gather_base": "torch.distributed.all_gather_single",
    "torch.distributed._functional_collectives.all_gather_into_tensor_coalesced": (
        "torch.distributed._functional_collectives.all_gather_single_coalesced"
    ),
    "torch.distributed._functional_collectives.all_gather_tensor": (
        "torch.distributed._functional_collectives.all_gather_single"
    ),
    "torch.distributed._functional_collectives.all_gather_tensor_autograd": (
        "torch.distributed._functional_collectives.all_gather_single_autograd"
    ),
    "torch.distributed._functional_collectives.reduce_scatter_tensor": (
        "torch.distributed._functional_collectives.reduce_scatter_single"
    ),
    "torch.distributed._functional_collectives.reduce_scatter_tensor_autograd": (
        "torch.distributed._functional_collectives.reduce_scatter_single_autograd"
    ),
    "torch.distributed._functional_collectives.reduce_scatter_tensor_coalesced": (
        "torch.distributed._functional_collectives.reduce_scatter_single_coalesced"
    ),
    "torch.distributed._reduce_scatter_base": "torch.distributed.reduce_scatter_single",
    "torch.distributed.all_gather_into_tensor": "torch.distributed.all_gather_single",
    "torch.distributed.reduce_scatter_tensor": "torch.distributed.reduce_scatter_single",
    "torch.nn.utils.clip_grad_norm": "torch.nn.utils.clip_grad_norm_",
    "torch.utils._pytree._is_leaf": "torch.utils._pytree.tree_is_leaf",
    "torch.utils.data.graph_settings.apply_shuffle_seed": (
        "torch.utils.data.graph_settings.apply_random_seed"
    ),
}


class DeprecatedTorchApi(Rule):
    code = "DL504"
    name = "deprecated-torch-api"
    severity = Severity.WARNING
    summary = (
        "A torch API that torch itself marks deprecated (it emits a FutureWarning or "
        "DeprecationWarning), or a private path of a public one."
    )
    tags = ("maintainability", "api", "deprecation")
    precision = "very-high"
    fix_availability = FixAvailability.SOMETIMES

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        # Judged against the lowest torch the project supports (configured, or inferred from
        # its requirements): a deprecation newer than that is one it cannot act on yet, and a
        # replacement that release lacks is not one it can use.
        catalog = _catalog(*ctx.settings.torch_range)  # built once per torch range
        self._floor = catalog.floor
        self._names = catalog.names
        self._modules = catalog.modules
        self._name_parts = catalog.name_parts
        self._module_parts = catalog.module_parts
        self._attr_parts = self._name_parts | self._module_parts
        self._binding_words = catalog.binding_words
        self._checked: set[int] = set()  # ids of Attribute nodes already checked
        self._early_exits = EarlyExitGuards()
        # _excused of the walk's ancestors (it reads each alone or with its parent)
        self._excused_here = ByAncestor(
            lambda ancestors: self._excused(ancestors, self._early_exits)
        )
        self._several: frozenset[str] | None = None  # see _rebound

    @staticmethod
    def _excused(
        ancestors: Sequence[cst.CSTNode],
        early_exits: Callable[[Block], frozenset[int]] = after_early_exit_guard,
    ) -> bool:
        """Under a version/feature guard (also after one that returns early), or where the
        code silences warnings on purpose."""
        if guarded_here(ancestors, early_exits):
            return True
        return any(type(node) is cst.With and _silences_warnings(node) for node in ancestors)

    # imports of a deprecated module (or of names from it)
    # The guards only excuse (the same for every name of a node): they are asked once
    # something would be reported, not of every import and attribute.

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            api = self._module_of(dotted_name(alias.name))
            if api is not None:
                if self._excused_here(self.ctx.parents):
                    return
                self._report_module(alias.name, api, dotted_name(alias.name) or "")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module)
        api = self._module_of(module)
        if api is not None:
            if not self._excused_here(self.ctx.parents):
                self._report_module(node.module, api, module or "", node)
            return
        if module is None or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            full = f"{module}.{name}"
            api = self._module_of(full)
            if api is not None:
                if self._excused_here(self.ctx.parents):
                    return
                self._report_module(alias.name, api, full)

    def _module_of(self, name: str | None) -> DeprecatedApi | None:
        if name is None:
            return None
        for api in self._modules:
            if name == api.name or name.startswith(api.name + "."):
                return api
        return None

    def _report_module(
        self,
        node: cst.CSTNode,
        api: DeprecatedApi,
        spelled: str,
        statement: cst.ImportFrom | None = None,
    ) -> None:
        if api.category is None:  # a private path whose public home holds the same objects
            public = self._public_spelling(api, spelled)
            self.report(
                node,
                f"`{spelled}` is a private torch path: since torch {self._since(api)}, the "
                f"public `{public}` has the same API. Import it from `{api.replacement}`.",
                **self._import_fix(statement, api, spelled),
            )
            return
        self.report(node, self._deprecated_message(spelled, api))

    def _public_spelling(self, api: DeprecatedApi, spelled: str) -> str:
        """``spelled`` moved under the public module when the project's lowest torch exports
        its next part there (``_tensor.DTensor`` -> ``tensor.DTensor``), else the public module
        alone: ``_tensor.api`` holds ``tensor._api``, and no ``tensor.api`` exists."""
        public = api.replacement or ""
        rest = spelled[len(api.name) :].lstrip(".")
        if rest and rest.split(".", 1)[0] in self._floor.module_exports.get(public, ()):
            return f"{public}.{rest}"
        return public

    def _import_fix(
        self, statement: cst.ImportFrom | None, api: DeprecatedApi, spelled: str
    ) -> FixArgs:
        """A safe fix for ``from <private module> import a, b``: import them from the public
        module instead. A drop-in: the names are the very same objects (checked by the
        generator), and the project's lowest torch exports each one from the public module.
        Submodules, star imports and other spellings get none."""
        public = api.replacement
        if statement is None or statement.module is None or spelled != api.name or public is None:
            return {}
        if isinstance(statement.names, cst.ImportStar):
            return {}
        exports = self._floor.module_exports.get(public, ())
        names = [dotted_name(alias.name) for alias in statement.names]
        if not names or not all(name in exports for name in names):
            return {}
        return {
            "fix": Fix(f"Import from `{public}`", (), Applicability.SAFE),
            "fix_nodes": ((statement.module, public),),
        }

    @staticmethod
    def _since(api: DeprecatedApi) -> str:
        """ "2.9", or "2.4 and earlier" when the oldest shipped table already has it."""
        oldest = available_versions()[0]
        return f"{api.since} or earlier" if api.since == oldest else api.since

    def _usable(self, name: str | None) -> bool:
        """Whether the project's lowest torch has ``name`` (a replacement to suggest). Names
        the torch tables do not track (prose, other packages) count as usable."""
        if name is None:
            return False
        if not _DOTTED.fullmatch(name) or not name.startswith(("torch.", "functorch.")):
            return True
        return self._floor.has(name)

    def _deprecated_message(self, spelled: str, api: DeprecatedApi) -> str:
        said = (
            f"`{spelled}` is deprecated since torch {self._since(api)} ({api.when} emits a "
            f"`{api.category}`"
        )
        if api.replacement is None:
            return f'{said}: "{_quoted(api.message or "")}").'
        if not self._usable(api.replacement):
            return (
                f"{said}). torch names `{api.replacement}` instead, which the project's lowest "
                f"torch, {self._floor.version}, does not have: keep this call until the "
                "project's lowest torch has it."
            )
        return f"{said}). Use `{api.replacement}` instead."

    # references to deprecated functions and attributes
    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr not in self._attr_parts:
            return  # neither the end of a deprecated name nor a part of a deprecated module
        parents = self.ctx.parents
        if attr in self._name_parts:
            self._check_attribute(node, parents[-1] if parents else None, parents)
        if attr in self._module_parts:
            # the chain through a deprecated module is reported at its outermost attribute
            outer, index = node, len(parents) - 1
            while index >= 0:
                ancestor = parents[index]
                if type(ancestor) is not cst.Attribute or ancestor.value is not outer:
                    break
                outer, index = ancestor, index - 1
            self._check_attribute(
                outer, parents[index] if index >= 0 else None, parents[: index + 1]
            )

    def _check_attribute(
        self,
        node: cst.Attribute,
        parent: cst.CSTNode | None,
        ancestors: list[cst.CSTNode],
    ) -> None:
        if id(node) in self._checked:
            return
        self._checked.add(id(node))
        if isinstance(parent, (cst.ImportAlias, cst.ImportFrom, cst.Import)):
            return
        if _stored_to(node, parent):
            return  # `dist.all_gather_into_tensor = wrapper`: a monkeypatch calls nothing
        resolved = self.ctx.resolve(node)
        if resolved is None:
            return
        api = self._names.get(resolved)
        if api is not None:
            if self._excused_here(self.ctx.parents):
                return
            if self._fallback_after_replacement(api, self.ctx.parents):
                return
            if api.kind != "class" or not _passive(node, ancestors):
                self._report_name(node, api)
            return
        # an attribute chain spelled through a deprecated module: torch.distributed._tensor.X
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # report the outermost chain only
        value = node.value
        while isinstance(value, cst.Attribute):
            inner = self.ctx.resolve(value)
            api = self._module_of(inner)
            if api is not None and self._module_of(self.ctx.resolve(_head(value))) is None:
                if not self._excused_here(self.ctx.parents):
                    self._report_module(node, api, resolved)
                return
            value = value.value

    def _fallback_after_replacement(
        self, api: DeprecatedApi, ancestors: Sequence[cst.CSTNode]
    ) -> bool:
        """Whether the use is in an ``except`` handler of a ``try`` whose body already uses the
        replacement (tutel: ``try: with torch.amp.autocast("cuda"): ...`` / ``except: with
        torch.cuda.amp.autocast(): ...``): the old API runs only on a torch without the new
        one, whatever the handler catches."""
        found = _DOTTED.match(api.replacement or "")
        if found is None:
            return False
        replacement = found.group(0)
        for outer, inner in pairwise(ancestors):
            if type(outer) is not cst.Try or type(inner) is not cst.ExceptHandler:
                continue
            for node in descendants(outer.body):
                if type(node) is cst.Attribute and self.ctx.resolve(node) == replacement:
                    return True
        return False

    def visit_Module(self, node: cst.Module) -> None:
        """Bare names bound to a deprecated function (``from ... import _all_gather_base``).

        Only names that some scope of the file binds to a deprecated name can resolve to one,
        and such a binding spells the name's last part: without it the file is skipped
        (no walk); with it, one walk checks each name in its scope.
        """
        if not _may_bind(self.ctx.source, self._name_parts, self._binding_words):
            return
        module = self.ctx.imports
        candidates = {
            name
            for name, in_body in _bound_names(node, self._name_parts).items()
            # bound only by module-level statements: every scope reads the module's binding
            # (or shadows it), so the module table says whether the name can be a deprecated
            # one anywhere in the file
            if in_body or canonical_name(module.resolve_name(name) or "") in self._names
        }
        if candidates:
            self._check_names(node, candidates)

    def _check_names(self, module: cst.Module, candidates: set[str]) -> None:
        # (node, parent, scope); a def's own scope covers all of its children, as in the
        # engine's walk (RuleContext.enter_function runs before they are visited).
        top = _Scope(None, None, self.ctx)
        # passive: under an annotation or in a type test (isinstance, assertIsInstance's
        # class), where a class is only looked at (nothing is created, nothing warns)
        pending: list[tuple[cst.CSTNode, cst.CSTNode | None, _Scope, bool, bool]] = [
            (module, None, top, False, False)
        ]
        while pending:
            node, parent, scope, guarded, passive = pending.pop()
            kind = type(node)
            if type(node) is cst.Name:
                if node.value in candidates and not guarded:
                    self._check_name(node, parent, scope.table(), passive)
                continue
            if type(node) is cst.FunctionDef:
                scope = _Scope(scope, node, self.ctx)
            elif kind in (cst.If, cst.IfExp, cst.Try, cst.With):
                guarded = guarded or self._excused((node,))
            elif kind is cst.Annotation:
                passive = True
            elif type(node) is cst.Call and not passive:
                pending.extend(
                    (child, node, scope, guarded, _looked_at(node, child))
                    for child in children(node)
                )
                continue
            elif (type(node) is cst.IndentedBlock or type(node) is cst.Module) and not guarded:
                fallback = self._early_exits(node)
                if fallback:
                    pending.extend(
                        (child, node, scope, id(child) in fallback, passive)
                        for child in children(node)
                    )
                    continue
            pending.extend((child, node, scope, guarded, passive) for child in children(node))

    def _check_name(
        self,
        node: cst.Name,
        parent: cst.CSTNode | None,
        table: ImportTable,
        passive: bool = False,
    ) -> None:
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        # a name being bound is not a use: ``import ... as X`` (an AsName) creates nothing and
        # does not warn; X's uses are checked where they run
        if isinstance(
            parent, (cst.ImportAlias, cst.AsName, cst.Param, cst.FunctionDef, cst.ClassDef)
        ):
            return
        if isinstance(parent, cst.AssignTarget) or (
            isinstance(parent, cst.Arg) and parent.keyword is node
        ):
            return
        resolved = table.resolve(node)
        if resolved is None:
            return
        api = self._names.get(resolved)
        if api is not None and not (passive and api.kind == "class"):
            self._report_name(node, api)

    def _report_name(self, node: cst.Name | cst.Attribute, api: DeprecatedApi) -> None:
        head = _head(node)
        if type(head) is cst.Name and head.value in self._rebound():
            return  # `vmap` from torch in try, from functorch in except: which one runs varies
        self.report(
            node,
            self._deprecated_message(self.ctx.module.code_for_node(node), api),
            **self._rename_fix(node, api),
        )

    def _rename_fix(self, node: cst.CSTNode, api: DeprecatedApi) -> FixArgs:
        """A safe fix to the replacement when it is a drop-in (:data:`DROP_IN`).

        Spelled the way the code spells the module when the replacement lives beside the
        deprecated name (``dist._all_gather_base`` -> ``dist.all_gather_single``), else by its
        full path when ``torch`` is imported as itself. A bare imported name gets no fix: its
        import would have to change too.
        """
        replacement = DROP_IN.get(api.name)
        if replacement is None or type(node) is not cst.Attribute or not self._usable(replacement):
            return {}
        resolved = self.ctx.resolve(node)
        if resolved is None:
            return {}
        parent, _, last = replacement.rpartition(".")
        fix = Fix(f"Use `{replacement}`", (), Applicability.SAFE)
        if resolved.rpartition(".")[0] == parent:
            return {"fix": fix, "fix_nodes": ((node.attr, last),)}
        root = replacement.split(".", 1)[0]
        if self.ctx.imports.resolve_name(root) != root or root in self._rebound():
            return {}
        return {"fix": fix, "fix_nodes": ((node, replacement),)}

    def _rebound(self) -> frozenset[str]:
        """Names the file binds to different things (imports or aliases) on different paths.

        ``try: from torch import vmap`` / ``except ImportError: from functorch import vmap``,
        ``if cuda: from flagai import mpu`` / ``else: import torch.nn.utils as mpu``: the
        name's resolved binding is only one of them. Computed once, when a finding is made.
        """
        if self._several is None:
            targets: dict[str, set[str]] = {}
            for node in descendants(self.ctx.module):
                for name, target in _bindings(node):
                    targets.setdefault(name, set()).add(target)
            self._several = frozenset(n for n, found in targets.items() if len(found) > 1)
        return self._several


@dataclass(frozen=True)
class _Catalog:
    """The entries a torch range can act on, indexed for the rule (the same for every file
    of the range: built once, never changed)."""

    floor: TorchTable  # the lowest torch of the range
    names: Mapping[str, DeprecatedApi]  # deprecated names (and aliases) -> entry
    modules: tuple[DeprecatedApi, ...]  # deprecated modules, the longest path first
    # Cheap gates. A chain resolving to a deprecated name ends with its last part; one
    # spelled through a deprecated module holds that module's last part as an attribute.
    name_parts: frozenset[str]
    module_parts: frozenset[str]
    binding_words: re.Pattern[str] | None


@lru_cache(maxsize=16)
def _catalog(lowest: str | None, highest: str | None) -> _Catalog:
    names: dict[str, DeprecatedApi] = {}
    modules: list[DeprecatedApi] = []
    for api in deprecated_at(lowest, highest):
        if api.kind == "module":
            modules.append(api)
        else:
            for name in (api.name, *api.aliases):
                names[name] = api
    # the longest module path first: torch.distributed._shard.checkpoint before _shard
    modules.sort(key=lambda api: -len(api.name))
    name_parts = frozenset(name.rsplit(".", 1)[-1] for name in names)
    alternatives = "|".join(re.escape(p) for p in sorted(name_parts, key=len)[::-1])
    # An occurrence that can end the value of a binding (an import or `x = a.part`): not
    # a def/class name, and not followed by a call, attribute, subscript, annotation or
    # operator (then the bound value would not end with it).
    binding_words = (
        re.compile(
            rf"(?<!\w)(?<!def )(?<!class )(?:{alternatives})(?!\w)"
            r"(?![ \t]*(?:[(.\[:]|==|!=|(?:in|is|and|or|if|else|for|not)\b))"
        )
        if alternatives
        else None
    )
    return _Catalog(
        floor=tables_between(lowest, highest)[0],
        names=MappingProxyType(names),
        modules=tuple(modules),
        name_parts=name_parts,
        module_parts=frozenset(api.name.rsplit(".", 1)[-1] for api in modules),
        binding_words=binding_words,
    )


def _may_bind(source: str, parts: frozenset[str], binding_words: re.Pattern[str] | None) -> bool:
    """Whether ``binding_words`` matches somewhere in ``source``: tried only where one of
    ``parts`` (its alternatives) occurs, found by ``str.find`` (a search tries every position
    of the text, lookbehinds first: twice as slow on torch/distributed)."""
    if binding_words is None:
        return False
    for part in parts:
        start = source.find(part)
        while start >= 0:
            if binding_words.match(source, start):  # its lookbehinds see the text before
                return True
            start = source.find(part, start + 1)
    return False


class _Scope:
    """A function scope whose import table is built only when a name in it is looked up."""

    __slots__ = ("_built", "ctx", "func", "parent")

    def __init__(
        self, parent: _Scope | None, func: cst.FunctionDef | None, ctx: RuleContext
    ) -> None:
        self.parent = parent
        self.func = func
        self.ctx = ctx
        self._built: ImportTable | None = None

    def table(self) -> ImportTable:
        if self._built is None:
            if self.parent is None or self.func is None:
                self._built = self.ctx.imports
            else:
                ctx = self.ctx
                outer = self.parent.table()
                self._built = outer.for_function(self.func, ctx.module_name, ctx.is_package)
        return self._built


def _bound_names(module: cst.Module, parts: frozenset[str]) -> dict[str, bool]:
    """Names that some scope of ``module`` may bind to a name ending in one of ``parts``, each
    with whether a def or class body binds it (else only module-level statements do).

    A superset of what :class:`ImportTable` binds: imports of such a name (``as`` or not) and
    aliases ``x = a.b.part`` or ``x = y`` of one, in every scope (module, defs, class bodies).
    An alias binds a name only when its head does (an import, or an alias of such a head, in
    some scope; a parameter, a local or a builtin binds none): ``g = param.grad`` is left out.
    """
    found: dict[str, bool] = {}
    aliases: list[tuple[str, str, bool]] = []
    imported: set[str] = set()  # every name an import binds, in any scope
    bodies: list[tuple[cst.BaseSuite | cst.Module, bool]] = [(module, False)]
    while bodies:
        suite, in_body = bodies.pop()
        statements: Sequence[cst.CSTNode] = (
            suite.body if type(suite) is not cst.SimpleStatementSuite else [suite]
        )
        for stmt in scope_statements(statements):
            if type(stmt) is cst.FunctionDef or type(stmt) is cst.ClassDef:
                bodies.append((stmt.body, True))
            elif type(stmt) is cst.Import:
                for alias in stmt.names:
                    full = dotted_name(alias.name)
                    if full is not None:
                        bound = alias.asname.name if alias.asname is not None else None
                        imported.add(
                            bound.value if type(bound) is cst.Name else full.split(".", 1)[0]
                        )
                    if (
                        full is not None
                        and alias.asname is not None
                        and full.rsplit(".", 1)[-1] in parts
                        and type(alias.asname.name) is cst.Name
                    ):
                        _bind(found, alias.asname.name.value, in_body)
            elif type(stmt) is cst.ImportFrom:
                if isinstance(stmt.names, cst.ImportStar):
                    continue
                for alias in stmt.names:
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if type(local) is cst.Name:
                        imported.add(local.value)
                    name = dotted_name(alias.name)
                    if name is None or name.rsplit(".", 1)[-1] not in parts:
                        continue
                    if type(local) is cst.Name:
                        _bind(found, local.value, in_body)
            elif type(stmt) is cst.Assign or type(stmt) is cst.AnnAssign:
                value = stmt.value
                dotted = dotted_name(value) if value is not None else None
                if dotted is None:
                    continue
                # exactly an Assign or an AnnAssign here: isinstance tells them apart
                targets = assignment_targets(stmt)
                for target in targets:
                    if type(target) is cst.Name:
                        aliases.append((target.value, dotted, in_body))
    heads = imported  # names an import or an alias may bind to something
    changed = True
    while changed:
        changed = False
        for name, dotted, _ in aliases:
            if name not in heads and dotted.split(".", 1)[0] in heads:
                heads.add(name)
                changed = True
    aliases = [alias for alias in aliases if alias[1].split(".", 1)[0] in heads]
    changed = True
    while changed:
        changed = False
        for name, dotted, in_body in aliases:
            if (dotted.rsplit(".", 1)[-1] in parts or dotted in found) and _bind(
                found, name, in_body
            ):
                changed = True
    return found


def _bind(found: dict[str, bool], name: str, in_body: bool) -> bool:
    """Note that ``name`` may be bound (in a def or class body when ``in_body``); whether
    that is news."""
    known = found.get(name)
    if known is None or (in_body and not known):
        found[name] = in_body
        return True
    return False


def _bindings(node: cst.CSTNode) -> Iterator[tuple[str, str]]:
    """(local name, what it is bound to) for an import or a simple alias statement."""
    if type(node) is cst.Import:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                yield alias.asname.name.value, full
            else:
                yield full.split(".", 1)[0], full.split(".", 1)[0]
    elif type(node) is cst.ImportFrom and not isinstance(node.names, cst.ImportStar):
        module = "." * len(node.relative)
        if node.module is not None:
            module += dotted_name(node.module) or ""
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name if alias.asname is not None else alias.name
            if type(local) is cst.Name:
                yield local.value, f"{module}.{name}"
    elif type(node) is cst.Assign:
        value = dotted_name(node.value)
        if value is not None:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    yield target.target.value, value


def _silences_warnings(node: cst.With) -> bool:
    """``with warnings.catch_warnings():`` whose body starts by ignoring warnings."""
    if not any(
        isinstance(item.item, cst.Call)
        and (dotted_name(item.item.func) or "").endswith("catch_warnings")
        for item in node.items
    ):
        return False
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body[:3]:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue  # a compound statement's body is a block, not small statements
        for small in stmt.body:
            call = small.value if isinstance(small, cst.Expr) else None
            if (
                isinstance(call, cst.Call)
                and (dotted_name(call.func) or "").endswith(("simplefilter", "filterwarnings"))
                and call.args
                and literal_value(call.args[0].value) == "ignore"
            ):
                return True
    return False


def _looked_at(call: cst.Call, child: cst.CSTNode) -> bool:
    """Whether ``child`` of ``call`` is only looked at by a type test: an argument of
    isinstance/issubclass, or the class argument of unittest's ``assertIsInstance(obj, cls)``
    (mmengine's tests check the scaler a wrapper built; its object argument may create one)."""
    func = call.func
    if type(func) is cst.Name and func.value in _TYPE_TESTS:
        return child is not func
    if type(func) is cst.Attribute and func.attr.value in _TYPE_ASSERTS:
        return len(call.args) > 1 and child is call.args[1]
    return False


def _passive(node: cst.CSTNode, ancestors: list[cst.CSTNode]) -> bool:
    """Whether ``node`` is only looked at: under an annotation, or tested with isinstance."""
    child = node
    for ancestor in reversed(ancestors):
        kind = type(ancestor)
        if kind is cst.Annotation:
            return True
        if type(ancestor) is cst.Call and _looked_at(ancestor, child):
            return True
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement)):
            return False
        child = ancestor
    return False


def _stored_to(node: cst.Attribute, parent: cst.CSTNode | None) -> bool:
    """Whether ``node`` is only assigned to (``a.b = ...``, ``a.b: T = ...``): the attribute
    is replaced, never called or read (``a.b += ...`` reads it first)."""
    if type(parent) is cst.AssignTarget or type(parent) is cst.AnnAssign:
        return parent.target is node
    return False


def _head(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr
