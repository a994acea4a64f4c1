"""The places a summary keeps of nodes (:class:`NodeSpan`), apart from measuring them
(:mod:`distlint.syntax.spans`, which parses): unpickling a cached summary, or the project
stage's record of what it read, imports no parser."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from distlint.findings import Position, Span

if TYPE_CHECKING:
    import libcst as cst

SourceLookup = Callable[[str], "str | None"]  # display path -> source text
NOWHERE = Span(Position(1, 1, 1), Position(1, 1, 1))  # where a place not known is said to be


class NodeSpan:
    """A node whose span is computed later, in a batch (positions cost a partial codegen).

    Eager ones (the default) get ``span`` right after the file's walk. Lazy ones only get a
    ``key`` (node type, its ordinal among nodes of that type in walk order, and an optional
    field such as ``"test"``): ``ProjectFacts.resolve`` re-finds the node and computes the
    span when a finding is about to point at it (``span`` is None until then). Either way the
    node reference is dropped after the walk, so summaries and records stay picklable.
    """

    __slots__ = ("_span", "eager", "key", "node", "part", "path")

    def __init__(
        self, node: cst.CSTNode | None, path: str, eager: bool = True, part: str | None = None
    ) -> None:
        self.node = node
        self.path = path
        self.eager = eager
        self.part = part
        self.key: tuple[str, int, str | None] | None = None
        self._span: Span | None = None

    @property
    def span(self) -> Span | None:
        return self._span

    @span.setter
    def span(self, value: Span | None) -> None:
        self._span = value

    def __getstate__(self) -> tuple:
        return (self.path, self._span, self.key)

    def __setstate__(self, state: tuple) -> None:
        self.node = None
        self.eager = True
        self.part = None
        self.path, self._span, self.key = state
