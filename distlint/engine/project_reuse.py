"""Whether the project stage's cached output still holds after an edit of a reported file.

The project stage (linking, the project rules, the second pass) reads of each file only its
summary and records, and its text only to measure the lazily located nodes it reports on
(``ProjectFacts.measured``). A check of a few files in a large project (the pre-commit hook,
an editor) keeps, with the stage's output, what it read of each reported file
(:class:`ReadOfFile`). When such a file was edited since, but its summary and records are the
same and every node the stage measured in it measures the same in the new text, the stage
would compute exactly what it did: its output is reused, and only the edited file's own
first pass runs again. Anything else (a changed summary, a node that changed, a file whose
second pass ran) and the stage runs again.

"The same" is modulo the lines the edit moved: the entry keeps a digest of each line of the
text the stage read, and the lines of the new text that are equal to them (or replaced one
for one) give a map of old lines to new (:class:`LineMap`). When everything the stage read
is equal once each of its positions is moved through that map, the stage computed what it
would compute now with every position of the file moved the same way (it compares positions
only to order them, which a map that keeps the lines' order does not change), so its output
is reused with its positions in the file moved (:func:`moved_output`). A position the map
does not move cleanly (a line removed or added inside a node, a place on a line that is no
longer there) is not the same: the stage runs again.

A second pass re-walks its file's text, and may measure nodes of other files in a worker
where nothing is noted, so an entry holding any second-pass result is not reused for an
edited file.
"""

from __future__ import annotations

import bisect
import dataclasses
import difflib
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from distlint.engine import transport
from distlint.findings import Edit, Finding, Location, Position, Span
from distlint.syntax.node_spans import NOWHERE, NodeSpan, SourceLookup

LazyKey = tuple[str, int, str | None]  # a lazily located node: type, ordinal, part

_DIGEST_BYTES = 8  # per line: enough to tell an edited line from the one it replaced
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # lines as positions count them


@dataclass(frozen=True)
class ReadOfFile:
    """What the project stage read of one reported file: its first-pass key (the same bytes
    and settings: nothing to compare), its summary and records as they were before the stage
    (pickled), the spans the stage measured in its text, and a digest of each line of that
    text (:func:`line_digests`), to tell which lines an edit moved."""

    key: str
    linked: bytes
    measured: Mapping[LazyKey, Span]
    lines: bytes = b""


def read_of_file(key: str, summary: object, records: object, text: str | None) -> ReadOfFile:
    """What the stage reads of a file, taken before it measures spans (measuring fills in
    the summary's lazy nodes): ``measured`` is filled in after the stage."""
    lines = line_digests(text) if text is not None else b""
    return ReadOfFile(key, transport.dumps((summary, records)), {}, lines)


def line_digests(text: str) -> bytes:
    """A digest of each line of ``text``, its line break included (a line whose break
    changed is a line replaced), as many lines as positions count."""
    digests = [
        hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=_DIGEST_BYTES).digest()
        for line in _LINES.findall(text)
    ]
    if not text or text.endswith(("\r", "\n")):
        digests.append(bytes(_DIGEST_BYTES))  # the empty line after the last break
    return b"".join(digests)


class LineMap:
    """Where the lines of the text the stage read are in the edited text: runs of lines
    equal in both (or replaced one for one), each moved by one offset."""

    __slots__ = ("_firsts", "_runs")

    def __init__(self, runs: list[tuple[int, int, int]]) -> None:
        merged: list[tuple[int, int, int]] = []  # (first old line, 1-based; count; offset)
        for first, count, offset in runs:
            if not count:
                continue
            if merged and merged[-1][0] + merged[-1][1] == first and merged[-1][2] == offset:
                merged[-1] = (merged[-1][0], merged[-1][1] + count, offset)
            else:
                merged.append((first, count, offset))
        self._runs = merged
        self._firsts = [first for first, _, _ in merged]

    @property
    def moves_nothing(self) -> bool:
        """Every line still there is where it was."""
        return all(offset == 0 for _, _, offset in self._runs)

    def _run(self, line: int) -> int | None:
        index = bisect.bisect_right(self._firsts, line) - 1
        if index < 0 or line >= self._firsts[index] + self._runs[index][1]:
            return None
        return index

    def line(self, line: int) -> int | None:
        """The new line of an old one; None: it is not there any more."""
        index = self._run(line)
        return None if index is None else line + self._runs[index][2]

    def position(self, position: Position) -> Position | None:
        line = self.line(position.line)
        return None if line is None else dataclasses.replace(position, line=line)

    def span(self, span: Span) -> Span | None:
        """The span moved; None when its lines did not all move together (a line added or
        removed inside it, or one of its ends gone), or it is the place of something not
        located (:data:`NOWHERE`) and the first line moved."""
        index = self._run(span.start.line)
        if index is None or index != self._run(span.end.line):
            return None
        offset = self._runs[index][2]
        if not offset:
            return span
        if span == NOWHERE:
            return None
        return Span(
            dataclasses.replace(span.start, line=span.start.line + offset),
            dataclasses.replace(span.end, line=span.end.line + offset),
        )


def line_map(old: bytes, new: bytes) -> LineMap:
    """The map of the lines whose digests are ``old`` to those whose digests are ``new``
    (:func:`line_digests`): the lines both begin and end with, and in between the lines
    :class:`difflib.SequenceMatcher` matches, or that replace as many old ones."""
    size = _DIGEST_BYTES
    before = [old[i : i + size] for i in range(0, len(old), size)]
    after = [new[i : i + size] for i in range(0, len(new), size)]
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    runs = [(1, head, 0)]
    middle = difflib.SequenceMatcher(
        None, before[head : len(before) - tail], after[head : len(after) - tail], autojunk=False
    )
    for tag, i1, i2, j1, j2 in middle.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            runs.append((head + i1 + 1, i2 - i1, j1 - i1))
    runs.append((len(before) - tail + 1, tail, len(after) - len(before)))
    return LineMap(runs)


@dataclass(frozen=True)
class Moved:
    """The positions of one file (its display path) moved through a :class:`LineMap`."""

    path: str
    lines: LineMap


def still_read_the_same(
    read: ReadOfFile,
    summary: object,
    records: object,
    display: str,
    sources: SourceLookup,
    parsed: dict | None = None,
    measured: Mapping[LazyKey, Span] | None = None,
) -> LineMap | None:
    """Whether an edited file gives the stage what ``read`` says it read, modulo the lines
    the edit moved: the same summary and records, and the same span for every node the stage
    measured in it, each position of the file moved through the returned map (None: not the
    same). ``measured``: those nodes' spans as the file's first pass measured them (else it
    is parsed again)."""
    text = sources(display)
    if summary is None or text is None or not read.lines:
        return None
    lines = line_map(read.lines, line_digests(text))
    moved = Moved(display, lines)
    if not same_data(transport.loads(read.linked), (summary, records), moved):
        return None
    if measured is None:
        from distlint.syntax.spans import resolve_spans  # parses: not to read an entry

        probes = []
        for key in read.measured:
            probe = NodeSpan(None, display, eager=False)
            probe.key = key
            probes.append(probe)
        resolve_spans(probes, sources, parsed)
        measured = {probe.key: probe.span or NOWHERE for probe in probes if probe.key}
    for key, span in read.measured.items():
        if lines.span(span) != measured.get(key, NOWHERE):
            return None
    return lines


def moved_output(
    found: dict[str, list[Finding]], moved: Mapping[str, LineMap]
) -> dict[str, list[Finding]] | None:
    """The stage's findings with the positions in the moved files (by display path) moved:
    their spans, their fixes', related locations there, and "path:line" in messages; None
    when one of them is not moved cleanly (the stage runs again)."""
    moving = {path: lines for path, lines in moved.items() if not lines.moves_nothing}
    if not moving:
        return found
    mentions = re.compile(r"(?<![\w./\\-])(" + "|".join(map(re.escape, moving)) + r"):(\d+)(?!\d)")
    result: dict[str, list[Finding]] = {}
    for path, findings in found.items():
        kept = []
        for finding in findings:
            changed = _moved_finding(finding, moving, mentions)
            if changed is None:
                return None
            kept.append(changed)
        result[path] = kept
    return result


def _moved_finding(
    finding: Finding, moving: Mapping[str, LineMap], mentions: re.Pattern[str]
) -> Finding | None:
    if (
        finding.path not in moving
        and not any(location.path in moving for location in finding.related)
        and not any(path in finding.message for path in moving)
    ):
        return finding  # nothing of it in a moved file
    span: Span | None = finding.span
    fix = finding.fix
    lines = moving.get(finding.path)
    if lines is not None:
        span = lines.span(finding.span)
        if fix is not None:
            edits = [_moved_edit(edit, lines) for edit in fix.edits]
            if None in edits:
                return None
            fix = dataclasses.replace(fix, edits=tuple(e for e in edits if e is not None))
    related = []
    for location in finding.related:
        there = moving.get(location.path)
        moved = there.span(location.span) if there is not None else location.span
        if moved is None:
            return None
        related.append(dataclasses.replace(location, span=moved))
    unmoved = []

    def mention(match: re.Match[str]) -> str:
        old = int(match.group(2))
        new = moving[match.group(1)].line(old)
        if new is None or (old == 1 and new != 1):  # gone, or maybe a place not located
            unmoved.append(match.group(0))
        return f"{match.group(1)}:{new}"

    message = mentions.sub(mention, finding.message)
    if span is None or unmoved:
        return None
    return dataclasses.replace(finding, span=span, fix=fix, related=tuple(related), message=message)


def _moved_edit(edit: Edit, lines: LineMap) -> Edit | None:
    span = lines.span(edit.span)
    return None if span is None else Edit(span, edit.content)


_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def same_data(left: object, right: object, moved: Moved | None = None) -> bool:
    """Whether two values of plain data (summaries, records) are equal field by field: lazy
    nodes by file, key and span (they have no equality of their own), containers in order;
    with ``moved``, the positions in its file of ``left`` moved through its map first.
    Iterative: a summary nests as deep as the code's ``elif`` chains. A type it does not know
    compares with ``==``, which for most objects is identity: unequal, so never reused."""
    pending = [(left, right)]
    while pending:
        a, b = pending.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, (*_PLAIN, set, frozenset)):
            if a != b:
                return False
        elif isinstance(a, (Span, Position)):
            if (_moved(a, moved.lines) if moved is not None else a) != b:
                return False
        elif isinstance(a, NodeSpan):
            assert isinstance(b, NodeSpan)
            span = a.span
            if moved is not None and span is not None and a.path == moved.path:
                span = moved.lines.span(span)
            if (a.path, a.key) != (b.path, b.key) or span != b.span:
                return False
        elif isinstance(a, Location) and moved is not None:
            assert isinstance(b, Location)
            if a.path != moved.path:  # another file's place: not moved
                if a != b:
                    return False
            elif (a.path, a.message, moved.lines.span(a.span)) != (b.path, b.message, b.span):
                return False
        elif isinstance(a, (tuple, list)):
            assert isinstance(b, (tuple, list))
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b, strict=True))
        elif isinstance(a, dict):
            assert isinstance(b, dict)
            if list(a) != list(b):
                return False
            pending.extend((a[k], b[k]) for k in a)
        elif dataclasses.is_dataclass(a):
            pending.extend((getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
        elif a != b:
            return False
    return True


def _moved(place: Span | Position, lines: LineMap) -> Span | Position | None:
    return lines.span(place) if isinstance(place, Span) else lines.position(place)
