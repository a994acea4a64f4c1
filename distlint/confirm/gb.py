"""Graph-break ids (``GBnnnn``) for Dynamo messages, from the installed torch's registry.

torch ships ``torch/_dynamo/graph_break_registry.json`` mapping each id to the ``Gb_type``
strings (the first line of a graph-break message) it has had. Messages of torch 2.13 also end
with a documentation link ``.../gb/gbNNNN.html``; that link wins when present.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

_LINK = re.compile(r"/gb/gb(\d{4})\.html")
LOOP_SKIP_ID = "GB7000"  # "graph break in loop": the whole frame falls back to eager


@cache
def _entries(path: str | None = None) -> dict[str, list[dict]]:
    """The registry file as it is: id -> its entries (read once per path)."""
    if path is None:
        path = _default_registry_path()
        if path is None:
            return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@cache
def registry(path: str | None = None) -> dict[str, str]:
    """``Gb_type`` -> id from ``path`` (default: the installed torch's registry file)."""
    mapping: dict[str, str] = {}
    for gb_id, entries in sorted(_entries(path).items()):
        for entry in entries:
            gb_type = entry.get("Gb_type") if isinstance(entry, dict) else None
            if isinstance(gb_type, str):
                mapping.setdefault(gb_type, gb_id)
    return mapping


def _default_registry_path() -> str | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_dynamo" / "graph_break_registry.json"
        if candidate.is_file():
            return str(candidate)
    return None


def ids_in_message(message: str) -> list[str]:
    """Every ``GBnnnn`` that the message's documentation links name, in order, no repeats."""
    return list(dict.fromkeys(f"GB{number}" for number in _LINK.findall(message)))


def gb_id(gb_type: str | None, message: str = "", registry_path: str | None = None) -> str | None:
    """The id of a break: the message's first non-loop link, else its ``Gb_type`` looked up."""
    linked = [i for i in ids_in_message(message) if i != LOOP_SKIP_ID]
    if linked:
        return linked[0]
    table = registry(registry_path)
    if gb_type:
        found = table.get(gb_type) or table.get(gb_type.strip())
        if found:
            return found
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    if first and first in table:
        return table[first]
    return LOOP_SKIP_ID if LOOP_SKIP_ID in ids_in_message(message) else None


# -- the registry's explanations and hints, for confirm mode's messages -----------------------

# Hints that say nothing about the user's code (how to report to PyTorch, generic warnings).
_BOILERPLATE = (
    "It may be possible to write Dynamo tracing rules",
    "Your code may result in an error when running in eager",
    "This is likely to be a Dynamo bug",
    "This graph break may be difficult to debug",
    "Please open an issue",
    "Please report an issue",
    "File an issue",
)
_MAX_HINTS = 2
_MAX_HINT = 200


def _joined(hints: list[str]) -> list[str]:
    """The registry splits some hints mid-sentence across entries: join them back."""
    joined: list[str] = []
    for hint in hints:
        text = " ".join(str(hint).split())
        if not text:
            continue
        if joined and not joined[-1].endswith((".", "!", "?", ":", ")")):
            joined[-1] = f"{joined[-1]} {text}"
        else:
            joined.append(text)
    return joined


def advice(
    gb: str | None, gb_type: str | None = None, registry_path: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """(explanation, hints) the registry gives for an id: the entry of that ``Gb_type`` (else
    the id's first entry); templated text (``{...}``) and boilerplate hints are left out."""
    entries = _entries(registry_path).get(gb or "", [])
    if not entries:
        return "", ()
    entry = next((e for e in entries if e.get("Gb_type") == gb_type), entries[0])
    explanation = " ".join(str(entry.get("Explanation", "")).split())
    if "{" in explanation or '"' in explanation or " " not in explanation:
        explanation = ""  # a source template or a bare variable name, not text
    hints = []
    for hint in _joined(list(entry.get("Hints", []))):
        if "{" in hint or hint.startswith(_BOILERPLATE):
            continue
        if len(hint) > _MAX_HINT:
            hint = hint[: _MAX_HINT - 1].rstrip() + "…"
        hints.append(hint)
    return explanation, tuple(hints[:_MAX_HINTS])


def covering_rules(gb: str | None) -> tuple[str, ...]:
    """The static rules that declare an id in their ``graph_breaks`` (docs/graph-breaks.md)."""
    from distlint.rules.registry import graph_break_rules

    return graph_break_rules().get(gb, ()) if gb else ()
