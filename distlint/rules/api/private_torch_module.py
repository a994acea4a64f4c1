"""DL505: imports of private torch modules.

PyTorch's public API is the modules whose dotted path has no ``_``-prefixed part
(https://github.com/pytorch/pytorch/wiki/Public-API-definition-and-documentation); everything
else may change or disappear in any release without a deprecation period. The facts come from
``distlint/knowledge/data/private_torch_modules.json``, generated from the installed torch by
``scripts/gen_deprecations.py``: which private module paths torch has (to tell ``from
torch.utils import _pytree``, a module, from ``from torch.nn.modules.utils import _pair``, a
name) and which of their names a public module exports as the very same object.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import libcst as cst

from distlint.findings import Severity
from distlint.rules.api._deprecations import deprecated_apis, deprecated_at
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.syntax.guards import is_feature_guarded
from distlint.syntax.imports import dotted_name

# Private paths that torch documents for users, or tells users to use, or that are test and
# debugging helpers; never reported (each with the reason in docs/rules/DL505.md).
_DOCUMENTED_EXACT = frozenset(
    {
        "torch._dynamo",  # mark_dynamic, reset, config: documented in the torch.compiler docs
        "torch._dynamo.config",
        "torch._inductor",  # reached for torch._inductor.config
        "torch._inductor.config",
        "torch._functorch.config",
    }
)
_DOCUMENTED_TREES = (
    "torch._C",  # the C extension's bindings: too many well-known uses to judge statically
    "torch._logging",  # torch._logging.set_logs has a page in the torch docs
    "torch.distributed._symmetric_memory",  # documented (alpha) in the torch docs
    # the only home of the traceable functional collectives; torch's own deprecation
    # warnings (and distlint's DL202) send users there
    "torch.distributed._functional_collectives",
    "torch.testing._internal",  # test helpers (FakeStore, common_utils)
    "torch._dynamo.testing",  # CompileCounter and other test helpers
    "torch._dynamo.test_case",  # TestCase classes for tests of compiled code
    "torch._inductor.test_case",
    "torch._dynamo.utils",  # counters: the graph-break counts tests and debugging read
)


@dataclass(frozen=True)
class PrivateModules:
    modules: frozenset[str]  # module paths whose last part is their first private part
    public_homes: dict[str, dict[str, str]]  # private module -> {name: public module}
    torch_version: str


@functools.cache
def private_modules() -> PrivateModules:
    """The DL505 table (``distlint/knowledge/data/private_torch_modules.json``)."""
    text = (
        resources.files("distlint.knowledge.data")
        .joinpath("private_torch_modules.json")
        .read_text(encoding="utf-8")
    )
    data = json.loads(text)
    return PrivateModules(
        modules=frozenset(data["modules"]),
        public_homes=data["public_homes"],
        torch_version=data["torch_version"],
    )


def first_private(module: str) -> str | None:
    """``torch.a._b`` for ``torch.a._b.c``: the path up to its first private part, if any."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: i + 1])
    return None


def _documented(module: str) -> bool:
    if module in _DOCUMENTED_EXACT:
        return True
    return any(_within(module, tree) for tree in _DOCUMENTED_TREES)


def _within(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or one of its submodules."""
    return module == package or module.startswith(package + ".")


def _is_type_checking(test: cst.BaseExpression) -> bool:
    name = dotted_name(test)
    return name in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _catches_anything(handler: cst.ExceptHandler) -> bool:
    """A bare ``except:`` or ``except Exception`` / ``BaseException``."""
    return handler.type is None or dotted_name(handler.type) in ("Exception", "BaseException")


@functools.lru_cache(maxsize=16)
def _module_paths(
    lowest: str | None, highest: str | None
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """(module paths DL504 reports for a torch range, (private path, release of its public
    home) for the others), the same for every file of the range: built once per range.

    DL504 says more about a deprecated path; one deprecated after the project's lowest torch
    is still a private module here. A private path whose public home is newer than the
    project's lowest torch (torch.distributed._tensor: torch.distributed.tensor from 2.5)
    is reported with that release."""
    deprecated = tuple(api.name for api in deprecated_at(lowest, highest) if api.kind == "module")
    home_since = tuple(
        (api.name, api.since)
        for api in deprecated_apis()
        if api.kind == "module" and api.category is None and api.name not in deprecated
    )
    return deprecated, home_since


class PrivateTorchModule(Rule):
    code = "DL505"
    name = "private-torch-module"
    severity = Severity.NOTE
    summary = (
        "An import of a private torch module (a `_`-prefixed part in its path): it may change "
        "or disappear in any release without a deprecation warning."
    )
    tags = ("maintainability", "api")
    precision = "high"

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        own = ctx.module_name or ""
        # torch's own code (or a vendored copy of it) may use its private modules
        self.active = "torch" in ctx.source and not _within(own, "torch")
        self._table = private_modules()
        self._deprecated, self._home_since = _module_paths(*ctx.settings.torch_range)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = dotted_name(alias.name)
            if module is not None and self._reportable(module):
                self._report(alias.name, module, ())

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module)
        if module is None or not _within(module, "torch"):
            return
        names = () if isinstance(node.names, cst.ImportStar) else node.names
        imported = tuple(n for n in (dotted_name(a.name) for a in names) if n is not None)
        if any(self._deprecated_path(f"{module}.{name}") for name in imported):
            return  # from torch.distributed._composable import fsdp: DL504's
        if self._reportable(module):
            self._report(node.module, module, imported)
            return
        if isinstance(node.names, cst.ImportStar) or first_private(module) is not None:
            return  # a documented private package (from torch._dynamo import config)
        for alias in node.names:  # from torch.utils import _pytree
            name = dotted_name(alias.name)
            if name is not None and name.startswith("_") and not name.startswith("__"):
                full = f"{module}.{name}"
                if full in self._table.modules and self._reportable(full):
                    self._report(alias.name, full, ())

    def _reportable(self, module: str) -> bool:
        if not module.startswith("torch."):
            return False
        head = first_private(module)
        if head is None or head not in self._table.modules or _documented(module):
            return False
        if self._deprecated_path(module):
            return False  # DL504 says more: deprecated, or the same objects at a public path
        return not self._excused(self.ctx.parents)

    def _home_since_for(self, module: str) -> str | None:
        for name, since in self._home_since:
            if _within(module, name):
                return since
        return None

    def _deprecated_path(self, module: str) -> bool:
        return any(_within(module, d) for d in self._deprecated)

    @staticmethod
    def _excused(ancestors: Sequence[cst.CSTNode]) -> bool:
        """Under a version/feature guard, imported for type annotations only, or tried with a
        fallback for any failure (``try: from torch.optim import _functional`` /
        ``except:``)."""
        if is_feature_guarded(ancestors):
            return True
        for node in ancestors:
            if type(node) is cst.If and _is_type_checking(node.test):
                return True
            if type(node) is cst.Try and any(_catches_anything(h) for h in node.handlers):
                return True
        return False

    def _report(self, node: cst.CSTNode, module: str, names: tuple[str, ...]) -> None:
        message = (
            f"`{module}` is a private torch module: it may change or disappear in any torch "
            "release without a deprecation warning."
        )
        homes = self._table.public_homes.get(module, {})
        public = {name: homes[name] for name in names if name in homes}
        if public and len(public) == len(names) and len(set(public.values())) == 1:
            home = next(iter(public.values()))
            listed = ", ".join(f"`{n}`" for n in names)
            same = "the same objects" if len(names) > 1 else "the same object"
            since = self._home_since_for(module)
            if since is None:
                message += f" Import {listed} from the public `{home}` ({same})."
            else:  # not on the project's lowest torch: it is why DL504 left this path here
                message += (
                    f" From torch {since} on, the public `{home}` has {listed} ({same}): "
                    f"switch the import once the project's lowest torch is {since}."
                )
        elif public:
            listed = ", ".join(f"`{home}.{name}`" for name, home in sorted(public.items()))
            message += f" Public homes of the same objects: {listed}."
        self.report(node, message)
