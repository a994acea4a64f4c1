"""DL501, DL503, DL504: torch APIs called with names that torch does not have (or no longer wants).

Facts come from data shipped with distlint, never from an imported torch:
``distlint/knowledge/data/torch-tables.json`` (API signatures and config names, generated from
torch by ``scripts/gen_torch_tables.py``) and ``distlint/knowledge/data/deprecated_torch.json``
(DL504). DL502 (``torch.compile`` backend/mode/options) lives in
:mod:`distlint.rules.api.invalid_compile_option`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources

import libcst as cst

from distlint.findings import Applicability, Fix, FixAvailability, Severity
from distlint.knowledge.torch_tables import (
    Signature,
    TorchTable,
    available_versions,
    closest,
    describe_versions,
    tables_between,
    version_advice,
)
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import ends_in_exit, literal_value
from distlint.syntax.guards import is_feature_guarded, is_version_test, probed_keywords
from distlint.syntax.imports import ImportTable, dotted_name, scope_statements
from distlint.syntax.walker import children, descendants, parameters

_PARTIAL = frozenset({"functools.partial"})
_CONFIG_MODULES = ("torch._dynamo.config", "torch._inductor.config")
# torch.compile's keywords that nn.Module.compile(*args, **kwargs) forwards.
_MODULE_COMPILE = "torch.compile"

# Extra advice for keywords that people expect to exist: on torch 2.13.0 each raises TypeError
# (re-observed by tests/proof/test_proof_dl5xx.py, DL501).
_HINTS: dict[tuple[str, str], str] = {
    ("torch.distributed.init_process_group", "debug"): (
        "To debug collectives, set `TORCH_DISTRIBUTED_DEBUG=DETAIL` in the environment before "
        "`torch.distributed` is imported, or call "
        "`dist.set_debug_level(dist.DebugLevel.DETAIL)`."
    ),
}
_NO_SUGGESTION = frozenset({("torch.distributed.init_process_group", "debug")})


class _TableRule(Rule):
    """Shared access to the torch tables of the project's torch range (lowest..highest).

    An argument is judged against every release in the range: rejected by all, it is an
    error; rejected by some only, a warning that names them.
    """

    _tables: tuple[TorchTable, ...] | None = None

    @property
    def tables(self) -> tuple[TorchTable, ...]:
        if self._tables is None:
            self._tables = tables_between(*self.ctx.settings.torch_range)
        return self._tables

    @property
    def table(self) -> TorchTable:
        """The newest release of the range (suggestions come from it)."""
        return self.tables[-1]


# -- DL501 ----------------------------------------------------------------------------------------


class UnknownKeywordArgument(_TableRule):
    code = "DL501"
    name = "unknown-keyword-argument"
    severity = Severity.ERROR
    summary = "A torch API is called with a keyword argument it does not accept (TypeError)."
    fix_availability = FixAvailability.SOMETIMES
    tags = ("correctness", "api")
    precision = "very-high"
    reads_facts = True  # the project's own ``compile`` methods (_own_compile_methods)

    _probes: frozenset[str] | None = None

    def _probed(self) -> frozenset[str]:
        """Keywords this file probes torch's signatures for (computed once, when needed)."""
        if self._probes is None:
            self._probes = probed_keywords(self.ctx.module)
        return self._probes

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.resolve(node.func)
        args: tuple[cst.Arg, ...] | list[cst.Arg] = node.args
        callee = node.func
        if name in _PARTIAL and node.args and node.args[0].keyword is None:
            # functools.partial(api, kw=...): the keywords reach api when the partial is called
            callee = node.args[0].value
            name = self.ctx.resolve(callee)
            args = node.args[1:]
        found = self._signatures(name)
        if not found:
            self._check_module_compile(node)
            return
        head = dotted_name(callee)
        if head is not None and self.ctx.bound_several_ways(head.split(".", 1)[0]):
            return  # `DDP` from apex when installed, else from torch: its keywords may be apex's
        self._check(callee, found, args)

    def _signatures(self, name: str | None) -> list[tuple[str, Signature]]:
        """(release, signature) for each release of the range that has the API."""
        return [(t.version, sig) for t in self.tables if (sig := t.signature(name)) is not None]

    def _check(
        self,
        callee: cst.BaseExpression,
        found: list[tuple[str, Signature]],
        args: tuple[cst.Arg, ...] | list[cst.Arg],
        via_method: bool = False,
    ) -> None:
        if all(sig.var_keyword for _, sig in found) or is_feature_guarded(self.ctx.parents):
            return  # a keyword of another torch version, used on purpose under a guard
        spelled = self.ctx.module.code_for_node(callee)
        for arg in args:
            if arg.keyword is None:
                continue  # positional, *args or **kwargs (keys we cannot see)
            keyword = arg.keyword.value
            if keyword in self._probed():
                continue
            rejecting = [(v, sig) for v, sig in found if not sig.accepts_keyword(keyword)]
            if not rejecting:
                continue
            if len(rejecting) < len(found):
                accepting = [v for v, sig in found if sig.accepts_keyword(keyword)]
                self._report_some(arg.keyword, rejecting, accepting, keyword, spelled, via_method)
            else:
                self._report(arg.keyword, rejecting, keyword, spelled, via_method)

    @staticmethod
    def _what(signature: Signature, spelled: str, via_method: bool) -> str:
        if via_method or spelled == signature.name:
            return f"`{spelled}`"
        return f"`{spelled}` (`{signature.name}`)"

    def _report_some(
        self,
        node: cst.Name,
        rejecting: list[tuple[str, Signature]],
        accepting: list[str],
        keyword: str,
        spelled: str,
        via_method: bool,
    ) -> None:
        """A keyword some releases of the project's range accept and others reject."""
        signature = rejecting[-1][1]
        error = (
            f"{signature.error_name}() got some positional-only arguments passed as keyword "
            f"arguments: {keyword!r}"
            if keyword in signature.positional_only
            else signature.unexpected_keyword_message(keyword)
        )
        self.report(
            node,
            f"{self._what(signature, spelled, via_method)} takes keyword `{keyword}` only in "
            f"torch {describe_versions(accepting)}: on torch "
            f"{describe_versions([v for v, _ in rejecting])}, which the project supports, the "
            f"call raises `TypeError: {error}`. "
            + version_advice(accepting, [v for v, _ in rejecting]),
            severity=Severity.WARNING,
        )

    def _report(
        self,
        node: cst.Name,
        rejecting: list[tuple[str, Signature]],
        keyword: str,
        spelled: str,
        via_method: bool,
    ) -> None:
        signature = rejecting[-1][1]
        version = describe_versions([v for v, _ in rejecting])
        what = self._what(signature, spelled, via_method)
        if keyword in signature.positional_only:
            self.report(
                node,
                f"{what} takes `{keyword}` only by position in torch {version}: the call raises "
                f"`TypeError: {signature.error_name}() got some positional-only arguments "
                f"passed as keyword arguments: {keyword!r}`. Pass it positionally.",
            )
            return
        public = [k for k in signature.keywords if not k.startswith("_")]
        key = (signature.name, keyword)
        suggestion = None if key in _NO_SUGGESTION else closest(keyword, public)
        if suggestion is not None and not all(
            sig.accepts_keyword(suggestion) for _, sig in rejecting
        ):
            suggestion = None  # not a keyword of every release of the range
        hint = f" Did you mean `{suggestion}`?" if suggestion else ""
        extra = f" {_HINTS[key]}" if key in _HINTS else ""
        self.report(
            node,
            f"{what} has no keyword `{keyword}` in torch {version}: the call raises "
            f"`TypeError: {signature.unexpected_keyword_message(keyword)}`.{hint}{extra}",
            fix=Fix(f"Use keyword {suggestion!r}", (), Applicability.UNSAFE)
            if suggestion
            else None,
            fix_nodes=((node, suggestion),) if suggestion else (),
        )

    def _check_module_compile(self, node: cst.Call) -> None:
        """``model.compile(...)``: nn.Module.compile forwards its keywords to torch.compile."""
        func = node.func
        if self.ctx.module_compile_receiver(node) is None:
            return
        found = self._signatures(_MODULE_COMPILE)
        if not found or found[-1][1].var_keyword:
            return
        signature = found[-1][1]
        keywords = [arg.keyword.value for arg in node.args if arg.keyword is not None]
        known = set(signature.keywords) - {"model"}
        unknown = [k for k in keywords if k not in signature.keywords]
        if not unknown:
            return
        # Another object's .compile(...) (a regex, a Keras-style model) shares no keywords with
        # torch.compile; only report when the call is recognisably torch.compile's.
        public = [k for k in signature.keywords if not k.startswith("_")]
        if not (set(keywords) & known) and not all(closest(k, public) for k in unknown):
            return
        if any(set(unknown) <= params for params in self._own_compile_methods()):
            return  # a project class's own compile(..., compile_model=True) (timm's tasks)
        self._check(func, found, node.args, via_method=True)

    def _own_compile_methods(self) -> list[set[str]]:
        """Parameter names of the ``compile`` methods the project's classes define (this file's,
        and with project facts every module's)."""
        found = [
            {p.name.value for p in parameters(node.params)}
            for node in descendants(self.ctx.module)
            if type(node) is cst.FunctionDef and node.name.value == "compile"
        ]
        facts = self.ctx.facts
        if facts is not None:
            found += [
                set(summary.params)
                for summary in facts.functions.values()
                if summary.name == "compile" and summary.class_id is not None
            ]
        return found


# -- DL503 ----------------------------------------------------------------------------------------


class UnknownCompilerConfig(_TableRule):
    code = "DL503"
    name = "unknown-compiler-config"
    severity = Severity.ERROR
    summary = (
        "A torch._dynamo.config / torch._inductor.config name that does not exist is set "
        "(AttributeError)."
    )
    fix_availability = FixAvailability.SOMETIMES
    tags = ("correctness", "torch.compile", "api")
    precision = "very-high"

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_target(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "setattr":
            # setattr(torch._dynamo.config, "name", value), unless `setattr` is rebound
            if not self.ctx.imports.is_bound("setattr") and len(node.args) >= 2:
                module = self.ctx.resolve(node.args[0].value)
                attr = literal_value(node.args[1].value)
                if module in _CONFIG_MODULES and isinstance(attr, str):
                    self._check_name(node.args[1].value, module, attr, "`setattr` raises")
            return
        name = self.ctx.resolve(func)
        for module in _CONFIG_MODULES:
            if name == f"{module}.patch":
                if not is_feature_guarded(self.ctx.parents):
                    self._check_patch(node, module)
                return

    def _check_target(self, target: cst.BaseExpression) -> None:
        if not isinstance(target, cst.Attribute):
            return
        resolved = self.ctx.resolve(target)
        if resolved is None or is_feature_guarded(self.ctx.parents):
            return  # ``try: ...config.new_flag = True`` / ``except AttributeError``
        if self._rebound_locally(target):
            return
        for module in _CONFIG_MODULES:
            if resolved.startswith(module + "."):
                self._check_name(
                    target, module, resolved[len(module) + 1 :], "the assignment raises"
                )
                return

    def _rebound_locally(self, target: cst.Attribute) -> bool:
        """``from torch._dynamo import config`` in a function that also assigns ``config =
        PretrainedConfig()``: which one a line sees depends on the order (LMOps' tests)."""
        base = target.value
        while isinstance(base, cst.Attribute):
            base = base.value
        function = self.ctx.function
        if not isinstance(base, cst.Name) or function is None:
            return False
        name = base.value
        return any(
            type(node) is cst.Assign
            and any(type(t.target) is cst.Name and t.target.value == name for t in node.targets)
            for node in descendants(function.body)
        )

    def _check_patch(self, call: cst.Call, module: str) -> None:
        where = "the patch raises, when entered or when a function it decorates is called,"
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        for arg in call.args:
            if arg.keyword is not None:
                self._check_name(arg.keyword, module, arg.keyword.value, where)
        if not positional:
            return
        first = positional[0].value
        if isinstance(first, cst.Dict):
            for element in first.elements:
                if isinstance(element, cst.DictElement):
                    key = literal_value(element.key)
                    if isinstance(key, str):
                        self._check_name(element.key, module, key, where)
        else:
            key = literal_value(first)
            if isinstance(key, str):
                self._check_name(first, module, key, where)

    def _check_name(self, node: cst.CSTNode, module: str, name: str, where: str) -> None:
        missing = [t.version for t in self.tables if not _has_config(t, module, name)]
        if not missing:
            return
        full = f"{module}.{name}"
        error = f"`AttributeError: {full} does not exist`"
        if len(missing) < len(self.tables):
            present = [t.version for t in self.tables if t.version not in missing]
            self.report(
                node,
                f"`{full}` exists only in torch {describe_versions(present)}: on torch "
                f"{describe_versions(missing)}, which the project supports, {where} {error}. "
                + version_advice(present, missing),
                severity=Severity.WARNING,
            )
            return
        names = self.table.config_names(module)
        message = f"`{full}` does not exist in torch {describe_versions(missing)}: {where} {error}."
        group = name + "."
        members = sorted(n for n in names if n.startswith(group))
        if members:
            message += (
                f" `{name}` is a group of settings; set one of them, e.g. `{module}.{members[0]}`."
            )
            self.report(node, message)
            return
        # a suggestion every release of the range has
        common = frozenset.intersection(*(t.config_names(module) for t in self.tables))
        suggestion = closest(name, [n for n in common if not n.startswith("_")])
        if suggestion is not None:
            message += f" Did you mean `{suggestion}`?"
        rename = isinstance(node, (cst.Attribute, cst.Name)) and suggestion is not None
        self.report(
            node,
            message,
            fix=Fix(f"Use {suggestion!r}", (), Applicability.UNSAFE) if rename else None,
            fix_nodes=((node, _respell(node, name, suggestion)),) if rename else (),
        )


def _has_config(table: TorchTable, module: str, name: str) -> bool:
    """Whether ``module.name`` can be set on this release (a config, or an attribute of an
    object-valued one)."""
    names = table.config_names(module)
    if name in names:
        return True
    parts = name.split(".")
    return any(".".join(parts[:i]) in names for i in range(1, len(parts)))


def _respell(node: cst.CSTNode, name: str, suggestion: str | None) -> str:
    """The target with its config name replaced, keeping the spelled module (``dc.``)."""
    assert suggestion is not None
    dotted = dotted_name(node) if isinstance(node, cst.Attribute) else None
    if dotted is None:
        return suggestion  # a patch(keyword=...) name
    prefix = dotted.split(".")[: -(name.count(".") + 1)]
    return ".".join([*prefix, suggestion])


# -- DL504 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeprecatedApi:
    """One entry of the DL504 table, generated by ``scripts/gen_deprecations.py``."""

    name: str
    kind: str  # function | class | attribute | module
    replacement: str | None  # None: torch names nothing to use instead
    since: str
    category: str | None  # the warning torch emits; None for a private path that does not warn
    message: str | None  # its exact text
    when: str | None  # what emits it: "calling it", "creating one", "importing it", ...
    reference: str
    aliases: tuple[str, ...] = ()
    note: str | None = None  # for a private path that does not warn: what was checked instead

    @property
    def observed(self) -> str:
        """What torch does: ``Category: message``, or the note of a private path."""
        if self.category is not None:
            return f"{self.category}: {self.message}"
        return self.note or ""


@functools.cache
def deprecated_apis() -> tuple[DeprecatedApi, ...]:
    """The DL504 table (``distlint/knowledge/data/deprecated_torch.json``)."""
    text = (
        resources.files("distlint.knowledge.data")
        .joinpath("deprecated_torch.json")
        .read_text(encoding="utf-8")
    )
    return tuple(
        DeprecatedApi(
            name=entry["name"],
            kind=entry["kind"],
            replacement=entry["replacement"],
            since=entry["since"],
            category=entry["category"],
            message=entry["message"],
            when=entry["when"],
            reference=entry["reference"],
            aliases=tuple(entry.get("aliases", ())),
            note=entry.get("note"),
        )
        for entry in json.loads(text)["entries"]
    )


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def deprecated_at(lowest: str | None, highest: str | None = None) -> list[DeprecatedApi]:
    """The DL504 entries a project whose torch range is ``lowest``..``highest`` can act on:
    deprecated (``since``) on its lowest torch (None: the newest known up to ``highest``)."""
    wanted = _version_key(lowest or tables_between(lowest, highest)[0].version)
    return [api for api in deprecated_apis() if _version_key(api.since) <= wanted]


_TYPE_TESTS = frozenset({"isinstance", "issubclass"})
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
        lowest, highest = ctx.settings.torch_range
        self._floor = tables_between(lowest, highest)[0]
        self._names: dict[str, DeprecatedApi] = {}
        self._modules: list[DeprecatedApi] = []
        for api in deprecated_at(lowest, highest):
            if api.kind == "module":
                self._modules.append(api)
            else:
                for name in (api.name, *api.aliases):
                    self._names[name] = api
        # the longest module path first: torch.distributed._shard.checkpoint before _shard
        self._modules.sort(key=lambda api: -len(api.name))
        # Cheap gates. A chain resolving to a deprecated name ends with its last part; one
        # spelled through a deprecated module holds that module's last part as an attribute.
        self._name_parts = frozenset(name.rsplit(".", 1)[-1] for name in self._names)
        self._module_parts = frozenset(api.name.rsplit(".", 1)[-1] for api in self._modules)
        self._attr_parts = self._name_parts | self._module_parts
        self._checked: set[int] = set()  # ids of Attribute nodes already checked
        self._several: frozenset[str] | None = None  # see _rebound
        alternatives = "|".join(re.escape(p) for p in sorted(self._name_parts, key=len)[::-1])
        # An occurrence that can end the value of a binding (an import or `x = a.part`): not
        # a def/class name, and not followed by a call, attribute, subscript, annotation or
        # operator (then the bound value would not end with it).
        self._binding_words = (
            re.compile(
                rf"(?<!\w)(?<!def )(?<!class )(?:{alternatives})(?!\w)"
                r"(?![ \t]*(?:[(.\[:]|==|!=|(?:in|is|and|or|if|else|for|not)\b))"
            )
            if alternatives
            else None
        )

    @staticmethod
    def _excused(ancestors: Sequence[cst.CSTNode]) -> bool:
        """Under a version/feature guard (also after one that returns early), or where the
        code silences warnings on purpose."""
        if is_feature_guarded(ancestors):
            return True
        for i, node in enumerate(ancestors):
            kind = type(node)
            if kind is cst.With and _silences_warnings(node):  # type: ignore[arg-type]
                return True
            if (
                (kind is cst.IndentedBlock or kind is cst.Module)
                and i + 1 < len(ancestors)
                and id(ancestors[i + 1]) in _after_early_exit_guard(node)  # type: ignore[arg-type]
            ):
                return True
        return False

    # imports of a deprecated module (or of names from it)
    def visit_Import(self, node: cst.Import) -> None:
        if self._excused(self.ctx.parents):
            return
        for alias in node.names:
            api = self._module_of(dotted_name(alias.name))
            if api is not None:
                self._report_module(alias.name, api, dotted_name(alias.name) or "")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or self._excused(self.ctx.parents):
            return
        module = dotted_name(node.module)
        api = self._module_of(module)
        if api is not None:
            self._report_module(node.module, api, module or "", node)
            return
        if module is None or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            full = f"{module}.{name}"
            api = self._module_of(full)
            if api is not None:
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
            public = f"{api.replacement}{spelled[len(api.name) :]}"
            self.report(
                node,
                f"`{spelled}` is a private torch path: since torch {self._since(api)}, the "
                f"public `{public}` has the same API. Import it from `{api.replacement}`.",
                **self._import_fix(statement, api, spelled),  # type: ignore[arg-type]
            )
            return
        self.report(node, self._deprecated_message(spelled, api))

    def _import_fix(
        self, statement: cst.ImportFrom | None, api: DeprecatedApi, spelled: str
    ) -> dict[str, object]:
        """A safe fix for ``from <private module> import a, b``: import them from the public
        module instead. A drop-in: the names are the very same objects (checked by the
        generator), and the project's lowest torch exports each one from the public module.
        Submodules, star imports and other spellings get none."""
        public = api.replacement
        if statement is None or spelled != api.name or public is None:
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
            while index >= 0 and type(parents[index]) is cst.Attribute:
                if parents[index].value is not outer:  # type: ignore[attr-defined]
                    break
                outer, index = parents[index], index - 1
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
        if self._excused(self.ctx.parents):
            return
        resolved = self.ctx.resolve(node)
        if resolved is None:
            return
        api = self._names.get(resolved)
        if api is not None:
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
                self._report_module(node, api, resolved)
                return
            value = value.value

    def visit_Module(self, node: cst.Module) -> None:
        """Bare names bound to a deprecated function (``from ... import _all_gather_base``).

        Only names that some scope of the file binds to a deprecated name can resolve to one,
        and such a binding spells the name's last part: without it the file is skipped
        (no walk); with it, one walk checks each name in its scope.
        """
        source = self.ctx.source
        if not any(part in source for part in self._name_parts):
            return
        if self._binding_words is None or self._binding_words.search(source) is None:
            return
        candidates = _bound_names(node, self._name_parts)
        if candidates:
            self._check_names(node, candidates)

    def _check_names(self, module: cst.Module, candidates: set[str]) -> None:
        # (node, parent, scope); a def's own scope covers all of its children, as in the
        # engine's walk (RuleContext.enter_function runs before they are visited).
        top = _Scope(None, None, self.ctx)
        # passive: under an annotation or in an isinstance/issubclass test, where a class
        # is only looked at (nothing is created, nothing warns)
        pending: list[tuple[cst.CSTNode, cst.CSTNode | None, _Scope, bool, bool]] = [
            (module, None, top, False, False)
        ]
        while pending:
            node, parent, scope, guarded, passive = pending.pop()
            kind = type(node)
            if kind is cst.Name:
                if node.value in candidates and not guarded:  # type: ignore[attr-defined]
                    self._check_name(node, parent, scope.table(), passive)  # type: ignore[arg-type]
                continue
            if kind is cst.FunctionDef:
                scope = _Scope(scope, node, self.ctx)  # type: ignore[arg-type]
            elif kind in (cst.If, cst.IfExp, cst.Try, cst.With):
                guarded = guarded or self._excused((node,))
            elif kind is cst.Annotation or (kind is cst.Call and _is_type_test(node)):  # type: ignore[arg-type]
                passive = True
            elif (kind is cst.IndentedBlock or kind is cst.Module) and not guarded:
                fallback = _after_early_exit_guard(node)  # type: ignore[arg-type]
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
        if isinstance(parent, (cst.ImportAlias, cst.Param, cst.FunctionDef, cst.ClassDef)):
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

    def _report_name(self, node: cst.CSTNode, api: DeprecatedApi) -> None:
        head = _head(node)  # type: ignore[arg-type]
        if type(head) is cst.Name and head.value in self._rebound():
            return  # `vmap` from torch in try, from functorch in except: which one runs varies
        self.report(
            node,
            self._deprecated_message(self.ctx.module.code_for_node(node), api),
            **self._rename_fix(node, api),  # type: ignore[arg-type]
        )

    def _rename_fix(self, node: cst.CSTNode, api: DeprecatedApi) -> dict[str, object]:
        """A safe fix to the replacement when it is a drop-in (:data:`DROP_IN`).

        Spelled the way the code spells the module when the replacement lives beside the
        deprecated name (``dist._all_gather_base`` -> ``dist.all_gather_single``), else by its
        full path when ``torch`` is imported as itself. A bare imported name gets no fix: its
        import would have to change too.
        """
        replacement = DROP_IN.get(api.name)
        if replacement is None or type(node) is not cst.Attribute or not self._usable(replacement):
            return {}
        resolved = self.ctx.resolve(node)  # type: ignore[arg-type]
        if resolved is None:
            return {}
        parent, _, last = replacement.rpartition(".")
        fix = Fix(f"Use `{replacement}`", (), Applicability.SAFE)
        if resolved.rpartition(".")[0] == parent:
            return {"fix": fix, "fix_nodes": ((node.attr, last),)}  # type: ignore[attr-defined]
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


def _bound_names(module: cst.Module, parts: frozenset[str]) -> set[str]:
    """Names that some scope of ``module`` may bind to a name ending in one of ``parts``.

    A superset of what :class:`ImportTable` binds: imports of such a name (``as`` or not) and
    aliases ``x = a.b.part`` or ``x = y`` of one, in every scope (module, defs, class bodies).
    """
    found: set[str] = set()
    aliases: list[tuple[str, str]] = []
    bodies: list[cst.BaseSuite | cst.Module] = [module]
    while bodies:
        suite = bodies.pop()
        statements = suite.body if type(suite) is not cst.SimpleStatementSuite else [suite]
        for stmt in scope_statements(statements):  # type: ignore[arg-type]
            kind = type(stmt)
            if kind is cst.FunctionDef or kind is cst.ClassDef:
                bodies.append(stmt.body)  # type: ignore[attr-defined]
            elif kind is cst.Import:
                for alias in stmt.names:  # type: ignore[attr-defined]
                    full = dotted_name(alias.name)
                    if (
                        full is not None
                        and alias.asname is not None
                        and full.rsplit(".", 1)[-1] in parts
                        and type(alias.asname.name) is cst.Name
                    ):
                        found.add(alias.asname.name.value)
            elif kind is cst.ImportFrom:
                if type(stmt.names) is cst.ImportStar:  # type: ignore[attr-defined]
                    continue
                for alias in stmt.names:  # type: ignore[attr-defined]
                    name = dotted_name(alias.name)
                    if name is None or name.rsplit(".", 1)[-1] not in parts:
                        continue
                    local = alias.asname.name if alias.asname is not None else alias.name
                    if type(local) is cst.Name:
                        found.add(local.value)
            elif kind is cst.Assign or kind is cst.AnnAssign:
                value = stmt.value  # type: ignore[attr-defined]
                dotted = dotted_name(value) if value is not None else None
                if dotted is None:
                    continue
                targets = (
                    [t.target for t in stmt.targets]  # type: ignore[attr-defined]
                    if kind is cst.Assign
                    else [stmt.target]  # type: ignore[attr-defined]
                )
                for target in targets:
                    if type(target) is cst.Name:
                        aliases.append((target.value, dotted))
    changed = True
    while changed:
        changed = False
        for name, dotted in aliases:
            if name not in found and (dotted.rsplit(".", 1)[-1] in parts or dotted in found):
                found.add(name)
                changed = True
    return found


def _bindings(node: cst.CSTNode) -> Iterator[tuple[str, str]]:
    """(local name, what it is bound to) for an import or a simple alias statement."""
    kind = type(node)
    if kind is cst.Import:
        for alias in node.names:  # type: ignore[attr-defined]
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                yield alias.asname.name.value, full
            else:
                yield full.split(".", 1)[0], full.split(".", 1)[0]
    elif kind is cst.ImportFrom and type(node.names) is not cst.ImportStar:  # type: ignore[attr-defined]
        module = "." * len(node.relative) + (dotted_name(node.module) or "")  # type: ignore[attr-defined]
        for alias in node.names:  # type: ignore[attr-defined]
            name = dotted_name(alias.name) or ""
            local = alias.asname.name if alias.asname is not None else alias.name
            if type(local) is cst.Name:
                yield local.value, f"{module}.{name}"
    elif kind is cst.Assign:
        value = dotted_name(node.value)  # type: ignore[attr-defined]
        if value is not None:
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target.target) is cst.Name:
                    yield target.target.value, value


@functools.lru_cache(maxsize=64)  # asked once per block and name use below it: scanned once
def _after_early_exit_guard(block: cst.IndentedBlock | cst.Module) -> frozenset[int]:
    """Ids of the statements of ``block`` that follow ``if <version or feature test>: return``.

    ``if hasattr(funcol, "all_gather_tensor_autograd"): return funcol...`` then the legacy call:
    the statements after such a guard are the fallback for the versions without the feature.
    """
    body = block.body
    for i, stmt in enumerate(body):
        if (
            type(stmt) is cst.If
            and stmt.orelse is None
            and ends_in_exit(stmt.body)
            and is_version_test(stmt.test)
        ):
            return frozenset(id(later) for later in body[i + 1 :])
    return frozenset()


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


def _is_type_test(call: cst.Call) -> bool:
    return type(call.func) is cst.Name and call.func.value in _TYPE_TESTS


def _passive(node: cst.CSTNode, ancestors: list[cst.CSTNode]) -> bool:
    """Whether ``node`` is only looked at: under an annotation, or tested with isinstance."""
    child = node
    for ancestor in reversed(ancestors):
        kind = type(ancestor)
        if kind is cst.Annotation:
            return True
        if kind is cst.Call and ancestor.func is not child and _is_type_test(ancestor):  # type: ignore[attr-defined]
            return True
        if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement)):
            return False
        child = ancestor
    return False


def _head(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr
