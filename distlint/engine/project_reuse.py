"""Whether the project stage's cached output still holds after an edit of a reported file.

The project stage (linking, the project rules, the second pass) reads of each file only its
summary and records, and its text only to measure the lazily located nodes it reports on
(``ProjectFacts.measured``). A check of a few files in a large project (the pre-commit hook,
an editor) keeps, with the stage's output, what it read of each reported file
(:class:`ReadOfFile`). When such a file was edited since, but its summary and records are the
same and every node the stage measured in it measures the same in the new text, the stage
would compute exactly what it did: its output is reused, and only the edited file's own
first pass runs again. Anything else (a changed summary, a node that moved, a file whose
second pass ran) and the stage runs again.

A second pass re-walks its file's text, and may measure nodes of other files in a worker
where nothing is noted, so an entry holding any second-pass result is not reused for an
edited file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from distlint.engine import transport
from distlint.findings import Span
from distlint.syntax.spans import NOWHERE, NodeSpan, SourceLookup, resolve_spans

LazyKey = tuple[str, int, str | None]  # a lazily located node: type, ordinal, part


@dataclass(frozen=True)
class ReadOfFile:
    """What the project stage read of one reported file: its first-pass key (the same bytes
    and settings: nothing to compare), its summary and records as they were before the stage
    (pickled), and the spans the stage measured in its text."""

    key: str
    linked: bytes
    measured: Mapping[LazyKey, Span]


def read_of_file(key: str, summary: object, records: object) -> tuple[str, bytes]:
    """The first two fields of a :class:`ReadOfFile`, taken before the stage measures spans
    (measuring fills in the summary's lazy nodes)."""
    return key, transport.dumps((summary, records))


def still_read_the_same(
    read: ReadOfFile,
    summary: object,
    records: object,
    display: str,
    sources: SourceLookup,
    parsed: dict | None = None,
    measured: Mapping[LazyKey, Span] | None = None,
) -> bool:
    """Whether an edited file gives the stage what ``read`` says it read: the same summary
    and records, and the same span for every node the stage measured in it. ``measured``:
    those nodes' spans as the file's first pass measured them (else it is parsed again)."""
    if summary is None or not same_data(transport.loads(read.linked), (summary, records)):
        return False
    if measured is not None:
        return all(measured.get(key, NOWHERE) == span for key, span in read.measured.items())
    probes = []
    for key in read.measured:
        probe = NodeSpan(None, display, eager=False)
        probe.key = key
        probes.append(probe)
    resolve_spans(probes, sources, parsed)
    return all(probe.span == read.measured[probe.key] for probe in probes)  # type: ignore[index]


_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def same_data(left: object, right: object) -> bool:
    """Whether two values of plain data (summaries, records) are equal field by field: lazy
    nodes by file, key and span (they have no equality of their own), containers in order.
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
        elif isinstance(a, NodeSpan):
            assert isinstance(b, NodeSpan)
            if (a.path, a.key, a.span) != (b.path, b.key, b.span):
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
