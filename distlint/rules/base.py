"""The base class of every rule; subclassing it is a rule's one registration.

A rule is a class with its metadata as class attributes and ``visit_<Node>`` /
``leave_<Node>`` methods named after LibCST node types. Subclassing :class:`Rule` registers it:
there is no list to edit. Every module under :mod:`distlint.rules` (family folders too) is
imported by :func:`distlint.rules.registry.all_rules`, so adding a file there is all it takes.

A rule's ``scope`` says what it needs to know:

* ``"file"``: the file alone. Its visitors run in the first pass over every file. One that
  also reads the project facts when they are there (``self.ctx.facts``, rank taint) sets
  ``reads_facts = True``: on the files that get a second pass it runs again there, with the
  facts, and that result replaces its first one; every other file rule runs once.
* ``"region"``: the project's compiled regions. Its visitors run once the summaries of all
  files are linked, on the files that hold a compiled function, and ``self.ctx.region`` says
  which roots compile the current function (every root form, across modules).
* ``"project"``: facts from several files. Its visitors run in the first pass and keep plain
  data with ``self.record(...)`` (spans through ``self.ctx.locate(node)``); after linking,
  the classmethod ``check_project(project)`` turns every file's records into findings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache, wraps
from typing import TYPE_CHECKING, ClassVar, TypedDict, TypeVar

from distlint.findings import FixAvailability, Severity

if TYPE_CHECKING:
    import libcst as cst

    from distlint.findings import Finding, Fix, Location
    from distlint.rules.context import RuleContext
    from distlint.rules.project import Project
    from distlint.semantic.regions_model import Region

CODE_PATTERN = re.compile(r"[A-Z]{2,5}\d{3}")
GRAPH_BREAK_PATTERN = re.compile(r"GB\d{4}")
BUILTIN_PREFIX = "DL"  # distlint's own codes; a plugin chooses a prefix of its own
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

_REGISTRY: dict[str, type[Rule]] = {}


class FixArgs(TypedDict, total=False):
    """The fix keywords of :meth:`Rule.report`, as a rule's fix helper returns them (``{}``
    when there is no fix): ``self.report(node, message, **self._fix(...))``."""

    fix: Fix | None
    fix_nodes: tuple[tuple[cst.CSTNode, str], ...]


class Rule:
    """Base class of every rule.

    Class attributes are the rule's metadata (one source of truth, checked against its docs
    page ``docs/rules/<code>.md`` by a test). One instance is made per checked file, so a rule may
    keep per-file state on ``self``.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    default_enabled: ClassVar[bool] = True
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    tags: ClassVar[tuple[str, ...]] = ()
    precision: ClassVar[str] = "high"
    # The Dynamo graph-break ids (``GBnnnn``) the rule reports: the one place that says which
    # rule covers which id (docs/graph-breaks.md, DL901's advice and the proofs read it).
    graph_breaks: ClassVar[tuple[str, ...]] = ()
    docs_url: ClassVar[str | None] = (
        None  # a plugin rule's docs page (built-in: docs/rules/CODE.md)
    )
    scope: ClassVar[str] = "file"  # "file" | "region" | "project" (see the module docstring)
    reads_facts: ClassVar[bool] = False  # a file rule that reads ``ctx.facts`` (see above)
    # A rule may set ``self.active = False`` in ``__init__`` when the file cannot concern it
    # (its trigger words are absent): its handlers are then not called for that file at all.
    active: bool = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return  # an abstract helper base, not a rule
        _check_metadata(cls)
        if cls.code in _REGISTRY and _REGISTRY[cls.code].__qualname__ != cls.__qualname__:
            raise ValueError(f"rule code {cls.code} declared twice")
        _REGISTRY[cls.code] = cls

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        severity: Severity | None = None,
        related: tuple[Location, ...] = (),
        fix: Fix | None = None,
        fix_nodes: tuple[tuple[cst.CSTNode, str], ...] = (),
        related_nodes: tuple[tuple[cst.CSTNode, str], ...] = (),
    ) -> None:
        """Report a finding at ``node``; its position is computed later, only if needed.

        ``fix_nodes`` describes a fix's edits as (node, replacement text) pairs, and
        ``related_nodes`` related places in this file as (node, label) pairs; their spans
        are resolved together with the finding's own position.
        """
        self.ctx.add_report(self, node, message, severity, related, fix, fix_nodes, related_nodes)

    def record(self, data: object) -> None:
        """Keep picklable ``data`` for :meth:`check_project` (project-scope rules)."""
        self.ctx.records.append((self.code, data))

    @classmethod
    def check_project(cls, project: Project) -> Iterable[Finding]:
        """Findings that need several files' records.

        See :class:`distlint.rules.project.Project`.
        """
        return ()

    @classmethod
    def visitor_methods(cls) -> Iterator[tuple[str, str]]:
        """(event, node type name) pairs for each ``visit_X`` / ``leave_X`` the rule defines."""
        yield from _visitor_methods(cls)  # type: ignore[arg-type]  # classes hash: mypy#11470

    @classmethod
    def url(cls) -> str | None:
        """Where the rule's docs page lives online (a plugin rule: its ``docs_url``, if any)."""
        from distlint.meta import rule_url

        return rule_url(cls.code) if cls.code.startswith(BUILTIN_PREFIX) else cls.docs_url


class RegionRule(Rule):
    """A rule about code inside ``torch.compile`` regions: ``self.ctx.region`` says which
    roots compile the current function (visitors run in the second pass). A handler that
    only looks inside a region takes it as an argument under :func:`in_region`."""

    scope = "region"

    def report_break(
        self,
        node: cst.CSTNode,
        region: Region,
        *,
        fullgraph: str,
        breaks: str,
        certain_only: bool = False,
        then: str = "",
        uncertain_breaks: bool = False,
        fix: Fix | None = None,
        fix_nodes: tuple[tuple[cst.CSTNode, str], ...] = (),
    ) -> None:
        """Report what graph-breaks in ``region``: under fullgraph=True a compile error (the
        ``fullgraph`` message, severity error), otherwise the ``breaks`` message at the rule's
        severity; related to the region's roots either way, ``then`` (advice) closing both.

        With ``certain_only`` the error is kept for a node that runs whenever a fullgraph=True
        root runs (``ctx.certain``); elsewhere it is a warning that says it runs on some paths
        only (in the sentence before ``then``, or as a closing note), or with
        ``uncertain_breaks`` the ``breaks`` message, as if no root were fullgraph."""
        message, severity = f"{breaks}{then}", None
        if region.fullgraph:
            if not certain_only or self.ctx.certain(node):
                message, severity = f"{fullgraph}{then}", Severity.ERROR
            elif not uncertain_breaks:
                some_paths = f"{SOME_PATHS}{then}" if then else SOME_PATHS_NOTE
                message, severity = f"{fullgraph}{some_paths}", Severity.WARNING
        self.report(
            node, message, severity=severity, related=region.related, fix=fix, fix_nodes=fix_nodes
        )


# How a fullgraph=True failure that only some paths reach is qualified (a warning): within the
# sentence, or as a note closing the message.
SOME_PATHS = (
    " when it runs, and it runs only on some paths of the compiled call (under a branch here or"
    " in a caller)"
)
SOME_PATHS_NOTE = (
    " It runs only on some paths of the compiled call (under a branch here or in a caller):"
    " the compile fails when one of them is taken."
)


_R = TypeVar("_R", bound=RegionRule)
_N = TypeVar("_N", bound="cst.CSTNode")


def in_region(handler: Callable[[_R, _N, Region], None]) -> Callable[[_R, _N], None]:
    """Make ``handler(self, node, region)`` a region rule's visitor method (or a helper taking
    a node) that runs only in a compiled region, and is handed that region (``ctx.region``)::

        @in_region
        def visit_Call(self, node: cst.Call, region: Region) -> None: ...
    """

    @wraps(handler)
    def guarded(self: _R, node: _N) -> None:
        region = self.ctx.region
        if region is not None:
            handler(self, node, region)

    return guarded


class ProjectRule(Rule):
    """A rule about several files: visitors keep plain data with ``self.record(...)``; the
    classmethod ``check_project(project)`` turns every file's records into findings."""

    scope = "project"


@cache
def _visitor_methods(cls: type[Rule]) -> tuple[tuple[str, str], ...]:
    found = []
    for attr in dir(cls):
        for event in ("visit", "leave"):
            prefix = event + "_"
            if attr.startswith(prefix) and callable(getattr(cls, attr)):
                found.append((event, attr[len(prefix) :]))
    return tuple(found)


def _check_metadata(cls: type[Rule]) -> None:
    """Fail at import time, not in a user's CI, when a rule's metadata is malformed."""
    if not CODE_PATTERN.fullmatch(cls.code):
        raise ValueError(f"{cls.__name__}: bad rule code {cls.code!r} (want XYZ123)")
    builtin = cls.__module__.startswith("distlint.")
    if builtin != cls.code.startswith(BUILTIN_PREFIX):
        raise ValueError(
            f"{cls.__name__}: rule code {cls.code!r}: DL codes are distlint's own; "
            "a plugin's codes take a prefix of their own"
        )
    if not NAME_PATTERN.fullmatch(getattr(cls, "name", "")):
        raise ValueError(f"{cls.__name__}: rule name must be kebab-case, got {cls.name!r}")
    if not isinstance(getattr(cls, "severity", None), Severity):
        raise ValueError(f"{cls.__name__}: severity must be a Severity")
    if not getattr(cls, "summary", "").strip():
        raise ValueError(f"{cls.__name__}: summary is required")
    if cls.scope not in ("file", "region", "project"):
        raise ValueError(f"{cls.__name__}: scope must be file, region or project")
    if cls.reads_facts and cls.scope != "file":
        raise ValueError(f"{cls.__name__}: only file rules declare reads_facts")
    bad_ids = [gb for gb in cls.graph_breaks if not GRAPH_BREAK_PATTERN.fullmatch(gb)]
    if not isinstance(cls.graph_breaks, tuple) or bad_ids:
        raise ValueError(f"{cls.__name__}: graph_breaks must be a tuple of GBnnnn ids")
