"""Compile sites: the places that compile code, and the options they compile with.

A site is a ``@torch.compile`` decorator (or one of the configured ``compile-wrappers``), a
``torch.compile(x, ...)`` call (or a project function wrapping it) or an ``x.compile(...)``
call. The analysis meets each site at three stages, and each stage has its form here:

* :class:`CompileSite` is what one file says about a site: the per-file summary's record
  (:class:`~distlint.semantic.model.ModuleSummary`), plain and picklable. What it compiles and
  the compiler are symbolic values (:mod:`.values`) that only linking can evaluate, and it
  keeps its literal keywords as written: the compiler may add its own first
  (``partial(torch.compile, mode=...)``, a wrapper's ``torch.compile(fn, ...)``).
* :class:`RootInfo` is a site once linked: one function it compiles, where, with which
  options; :meth:`CompileSite.root` derives it. Regions are made of these.
* :class:`TreeSite` is a site as rules see it while they walk its file: the tree's node and
  the compiled expression. Rules run during the walk the summary is built from, so the
  summary does not exist yet, and they judge a site in the tree (what a name holds at that
  statement); a tree does not pickle, so this form never leaves the file's check.
  :meth:`TreeSite.root` is the linked form of a decorator when there are no project facts.

A call's literal keywords are read once (:func:`literal_options`) and coerced to the options
rules act on once (:meth:`CompileOptions.of`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import libcst as cst

from distlint.findings import Span
from distlint.semantic.regions import Resolver, is_literal, literal_value
from distlint.semantic.values import Options, Value
from distlint.syntax.spans import NOWHERE, NodeSpan

COMPILE_FUNCTIONS = frozenset({"torch.compile"})
UNKNOWN = "<expr>"  # how a summary keeps a keyword value that is not a literal


def compiles(name: str, wrappers: Collection[str]) -> bool:
    """Whether the callable named ``name`` certainly compiles what it is given:
    ``torch.compile`` or one of the configured ``compile-wrappers``."""
    return name in COMPILE_FUNCTIONS or name in wrappers


@dataclass(frozen=True)
class CompileOptions:
    """The options of a compile site that change what rules report."""

    fullgraph: bool = False
    dynamic: bool | None = None
    mode: str | None = None
    backend: str | None = None
    cudagraphs: bool = False  # options={"triton.cudagraphs": True}

    @classmethod
    def of(cls, keywords: Options) -> CompileOptions:
        """The options that keyword values give (``torch.compile(fullgraph=..., dynamic=...,
        mode=..., backend=..., options=...)``; a keyword given twice: the later value). A
        value not of the option's type (not a literal, or ``UNKNOWN``) leaves the option
        unknown."""
        given = dict(keywords)
        dynamic = given.get("dynamic")
        mode = given.get("mode")
        backend = given.get("backend")
        extra = given.get("options")
        return cls(
            given.get("fullgraph") is True,
            dynamic if isinstance(dynamic, bool) else None,
            mode if isinstance(mode, str) and mode != UNKNOWN else None,
            backend if isinstance(backend, str) and backend != UNKNOWN else None,
            isinstance(extra, tuple) and ("triton.cudagraphs", True) in extra,
        )

    @property
    def text(self) -> str:
        """The options that change what rules report, e.g. ``fullgraph=True, mode=...``."""
        parts = ["fullgraph=True"] if self.fullgraph else []
        if self.mode:
            parts.append(f"mode={self.mode!r}")
        if self.dynamic is not None:
            parts.append(f"dynamic={self.dynamic}")
        if self.backend:
            parts.append(f"backend={self.backend!r}")
        return ", ".join(parts)


def literal_options(call: cst.Call) -> Options:
    """A call's keyword arguments, sorted: literal values as they are, an ``options={...}``
    dict as its sorted items, anything else as ``UNKNOWN``."""
    found: list[tuple[str, object]] = []
    for arg in call.args:
        if arg.keyword is None or arg.star:
            continue
        value = literal_value(arg.value)
        if is_literal(value):
            found.append((arg.keyword.value, value))
        elif arg.keyword.value == "options" and isinstance(arg.value, cst.Dict):
            found.append(("options", _dict_literal(arg.value)))
        else:
            found.append((arg.keyword.value, UNKNOWN))
    return tuple(sorted(found, key=lambda item: item[0]))


def _dict_literal(node: cst.Dict) -> tuple[tuple[str, object], ...]:
    items = []
    for element in node.elements:
        if isinstance(element, cst.DictElement):
            key = literal_value(element.key)
            value = literal_value(element.value)
            if isinstance(key, str):
                items.append((key, value if is_literal(value) else UNKNOWN))
    return tuple(sorted(items, key=lambda item: item[0]))


@dataclass(frozen=True)
class RootInfo:
    """A linked compile site: one function it compiles, where, and with which options."""

    path: str
    span: Span
    target: str  # the function id the root compiles, e.g. "pkg.model.Net.forward"
    kind: str  # decorator | call | module | method | block
    options: CompileOptions = field(default_factory=CompileOptions)
    # what is known of the compiled instance's ``self.<name>`` attributes, as call arguments
    # ("self.<name>", value) after a starred marker (the function's own parameters stay
    # unknown); see semantic.link._constructed_attributes. Not part of the root's identity.
    binding: Options | None = field(default=None, compare=False)

    @property
    def fullgraph(self) -> bool:
        return self.options.fullgraph

    @property
    def dynamic(self) -> bool | None:
        return self.options.dynamic

    @property
    def mode(self) -> str | None:
        return self.options.mode

    @property
    def backend(self) -> str | None:
        return self.options.backend

    @property
    def options_text(self) -> str:
        """The options that change what rules report, e.g. ``fullgraph=True, mode=...``."""
        return self.options.text

    @property
    def label(self) -> str:
        """Related-location label; the text reporter renders "compiled (...) at path:line"."""
        options = self.options_text
        return f"compiled ({options})" if options else "compiled"


@dataclass(frozen=True)
class CompileSite:
    """A place in one file that compiles something, as the file's summary keeps it."""

    target: Value  # what is compiled (for a decorator: the decorated function)
    compiler: Value  # the callable that compiles (torch.compile, a wrapper, a partial)
    keywords: Options  # the site's literal keyword arguments (``literal_options``)
    span: NodeSpan  # measured when a finding points at it
    kind: str  # decorator | call | method
    # what the constructor call of a compiled module passed (``torch.compile(Net(flag=False))``,
    # also through a local and ``.to(...)``-style chains); None: not a visible construction
    construction: Options | None = None
    private: bool = False  # the instance reaches no other code before it is compiled

    def root(
        self, path: str, function: str, reached: str, given: Options, binding: Options | None
    ) -> RootInfo:
        """The site linked to one ``function`` it compiles, in the file at ``path`` (its span
        measured by then). ``reached``: what linking found compiled, a function ("call") or
        a module's forward ("module"); ``given``: the options the compiler itself passes,
        before the site's own; ``binding``: what is known of a compiled instance."""
        kind = reached
        if self.target and self.target[0] == "elem":
            kind = "block"  # `for blk in model.layers: blk.compile()`
        if self.kind == "decorator":
            kind = "decorator"
        elif self.kind == "method" and kind == "module":
            kind = "method"
        bound = binding if kind in ("module", "method") else None
        span = self.span.span or NOWHERE
        return RootInfo(path, span, function, kind, CompileOptions.of(given + self.keywords), bound)


@dataclass(frozen=True)
class TreeSite:
    """A compile site in the tree of the file being walked (see the module docstring)."""

    node: cst.CSTNode  # the decorator or call that compiles
    compiler: str  # the compiling callable's resolved name, e.g. "torch.compile"
    options: CompileOptions = field(default_factory=CompileOptions)
    kind: str = "decorator"  # decorator | call | method
    target: cst.BaseExpression | None = None  # what a call compiles (a decorator: None)

    def root(self, path: str, span: Span, function: str) -> RootInfo:
        """The site linked to the ``function`` it compiles, at ``span`` of ``path``."""
        return RootInfo(path, span, function, self.kind, self.options)


def tree_site(
    node: cst.CSTNode,
    compiler: str,
    call: cst.Call | None,
    kind: str = "decorator",
    target: cst.BaseExpression | None = None,
) -> TreeSite:
    """The site at ``node`` that ``call`` (a decorator's call, or the compiling call itself;
    None for a bare decorator) compiles with, its options read from the call's keywords."""
    keywords = literal_options(call) if call is not None else ()
    return TreeSite(node, compiler, CompileOptions.of(keywords), kind, target)


def decorator_site(
    func: cst.FunctionDef, resolve: Resolver, wrappers: Collection[str] = ()
) -> TreeSite | None:
    """The site if ``func`` is decorated with torch.compile or a configured wrapper."""
    for decorator in func.decorators:
        expr = decorator.decorator
        call = expr if isinstance(expr, cst.Call) else None
        target = call.func if call is not None else expr
        name = resolve(target)
        if name is not None and compiles(name, wrappers):
            return tree_site(decorator, name, call)
    return None
