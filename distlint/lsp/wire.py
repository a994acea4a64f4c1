"""Diagnostics in the JSON form the client receives, built once where they are computed.

The analysis process builds each diagnostic as the plain JSON object that
``publishDiagnostics`` (or a pull report) carries, and the server sends it as it is. Built as
``lsprotocol`` objects instead, the 342 diagnostics of a 3,000-line training script cost the
server about 0.1 s per edit to convert to JSON (cattrs, in the event loop), more than
building and sending them together, and pickling them from the analysis process cost
twice what plain dicts cost. The objects built here are exactly what pygls's converter makes
of the equivalent ``types.Diagnostic`` (camelCase keys, absent optional fields left out, enums
as their values; tests/lsp/test_wire.py checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import cattrs
from lsprotocol import types
from pygls.protocol import default_converter

WireDiagnostic = dict[str, Any]  # a diagnostic as JSON (see the module docstring)


def as_sent(diagnostics: Sequence[WireDiagnostic]) -> list[types.Diagnostic]:
    """Diagnostics in their JSON form where pygls expects ``types.Diagnostic`` objects (a
    ``PublishDiagnosticsParams``, a pull report): the converter of :func:`converter` sends
    them as they are. Nothing else may read them as objects."""
    return cast("list[types.Diagnostic]", list(diagnostics))


def converter() -> cattrs.Converter:
    """pygls's converter, except that a diagnostic already in its JSON form is sent as it is
    (a ``types.Diagnostic`` object still goes through pygls's own conversion)."""
    chosen = default_converter()
    objects = default_converter()  # for real objects: a hook cannot call its own converter

    def unstructure(diagnostic: types.Diagnostic | WireDiagnostic) -> Any:
        if isinstance(diagnostic, dict):
            return diagnostic
        return objects.unstructure(diagnostic)

    chosen.register_unstructure_hook(types.Diagnostic, unstructure)
    return chosen


def range_json(rng: types.Range) -> dict[str, Any]:
    """A range object as its JSON form (to compare with a diagnostic's)."""
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


def range_object(rng: dict[str, Any]) -> types.Range:
    """A range's JSON form as an object (for the server's own replies)."""
    return types.Range(start=types.Position(**rng["start"]), end=types.Position(**rng["end"]))
