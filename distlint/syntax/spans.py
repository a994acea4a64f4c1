"""Spans of lazily located nodes, computed only when a finding points at them.

The first pass keys such nodes by (type, ordinal in walk order, field) instead of measuring
them: measuring costs a partial codegen of the file, and most summarised nodes (every
collective, every condition that might be rank-dependent) never end up in a finding. When
one does, its file is parsed again and walked the same way, and only the wanted nodes are
measured.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import libcst as cst

from distlint.findings import Span, make_position
from distlint.syntax.indentation import IndentColumns
from distlint.syntax.node_spans import NOWHERE as NOWHERE  # re-exported: where callers look
from distlint.syntax.node_spans import NodeSpan as NodeSpan
from distlint.syntax.node_spans import SourceLookup as SourceLookup
from distlint.syntax.positions import NodeRange, Positions
from distlint.syntax.source import NEWLINES, SourceError, check_nesting, parse_source
from distlint.syntax.walker import walk

# Node types whose walk-order ordinal identifies them for lazy spans.
ORDINAL_TYPES = (cst.Call, cst.If, cst.Return, cst.Raise, cst.Break, cst.Continue, cst.Decorator)


def resolve_spans(
    items: Iterable[object], lookup: SourceLookup | None, cache: dict | None = None
) -> list[NodeSpan]:
    """Fill ``span`` of every lazy NodeSpan in ``items`` (unknown files: line 1); the ones
    measured now."""
    pending: dict[str, list[NodeSpan]] = {}
    for item in items:
        if isinstance(item, NodeSpan) and item._span is None and item.key is not None:
            pending.setdefault(item.path, []).append(item)
    for path, group in pending.items():
        parsed = cache.get(path) if cache is not None else None
        keys = [item.key for item in group if item.key is not None]
        spans: dict = {}
        if isinstance(parsed, MeasuredSpans):
            spans = {key: parsed.spans[key] for key in keys if key in parsed.spans}
            keys = [key for key in keys if key not in spans]
            parsed = None if keys else parsed
        if parsed is None and keys:
            text = lookup(path) if lookup is not None else None
            parsed = _parse(text) if text is not None else None
            if cache is not None:
                cache[path] = parsed
        if parsed is not None and not isinstance(parsed, MeasuredSpans):
            spans.update(measure_keys(parsed, keys))
        for item in group:
            item.span = spans.get(item.key, NOWHERE)
    return [item for group in pending.values() for item in group]


class MeasuredSpans:
    """A file's lazily located nodes measured beforehand (by key), standing in for its
    :func:`parsed_entry` where spans are resolved: the first pass of a large file measures
    them all while its tree is at hand (``engine.checker``), so the parent of a parallel run
    does not parse it again. A key it lacks is measured by parsing the file after all."""

    __slots__ = ("spans",)

    def __init__(self, spans: dict[tuple, Span]) -> None:
        self.spans = spans


def _parse(text: str) -> tuple | None:
    """The module, its nodes of ordinal types by type name (walk order), and its lines."""
    try:
        check_nesting(text)
        module, columns = parse_source(text)
    except (SourceError, cst.ParserSyntaxError, RecursionError):
        return None
    seen: dict[type, list[cst.CSTNode]] = {kind: [] for kind in ORDINAL_TYPES}
    handlers: dict[type, list[Callable[[cst.CSTNode], None]]] = {
        kind: [seen[kind].append] for kind in ORDINAL_TYPES
    }
    walk(module, handlers, {}, [])
    return parsed_entry(text, module, seen, columns)


def parsed_entry(
    text: str,
    module: cst.Module,
    seen: dict[type, list[cst.CSTNode]],
    columns: IndentColumns | None = None,
    positions: Positions | None = None,
) -> tuple:
    """What measuring a file's lazy spans needs: its nodes of ordinal types in walk order
    (``ParsedFile.seen`` after a first pass), its lines, and its tree's positions (those of
    the first pass, when it kept the tree: what they measured makes the next cheaper)."""
    by_name = {kind.__name__: nodes for kind, nodes in seen.items()}
    return by_name, NEWLINES.split(text), positions or Positions(module, columns)


def measure_keys(parsed: tuple, keys: Sequence[tuple]) -> dict:
    """The spans of lazily located nodes (their keys) in a :func:`parsed_entry`."""
    by_name, lines, positions = parsed
    targets: dict[tuple, cst.CSTNode] = {}
    for key in keys:
        kind, ordinal, part = key
        nodes = by_name.get(kind, [])
        if ordinal < len(nodes):
            node = nodes[ordinal]
            targets[key] = getattr(node, part) if part else node
    ranges = positions.ranges(targets.values())
    found = {}
    for key, node in targets.items():
        measured = ranges.get(node)
        if measured is not None:
            found[key] = range_span(measured, lines)
    return found


def range_span(measured: NodeRange | None, lines: list[str]) -> Span:
    """The span of a measured node range over the file's lines (unmeasured: line 1)."""
    if measured is None:
        return NOWHERE
    return Span(
        make_position(lines, measured.start_line, measured.start_column),
        make_position(lines, measured.end_line, measured.end_column),
    )
