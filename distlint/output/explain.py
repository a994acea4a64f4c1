"""``distlint explain-regions`` and ``explain-ranks``: why a finding fired, in the analysis's
own terms.

``explain-regions`` prints the compile roots, the compile sites whose compiled code is not known
(and why), every function they reach (with the roots that reach it), and the places where ranks
stop issuing the same collectives, from the same linked facts the rules use. ``explain-ranks``
prints those places for review, with why each is proven or only possible and where the rank
enters (:mod:`distlint.rules.collectives.rank_review`).
"""

from __future__ import annotations

from typing import Any

from distlint.rules.collectives.rank_review import rank_places
from distlint.semantic.effects import project_divergences
from distlint.semantic.link import ProjectFacts

_KINDS = {
    "decorator": "decorator",
    "call": "torch.compile(fn)",
    "module": "torch.compile(module) -> forward",
    "method": "module.compile() -> forward",
    "block": "per-block compile -> forward",
}


def explain(facts: ProjectFacts, reported: set[str] | None = None) -> dict[str, Any]:
    """Plain data (the JSON format); :func:`render_text` prints it for people. ``reported``:
    the files to report on (None: all), as ``check`` reports findings on the files named
    while it links their project: a root, a site, a function or a collective is listed when
    it is in one of them."""
    data = _explain(facts)
    if reported is None:
        return data
    return {section: [i for i in items if i["path"] in reported] for section, items in data.items()}


def _explain(facts: ProjectFacts) -> dict[str, Any]:
    roots = [
        {
            "path": root.path,
            "line": root.span.start.line,
            "kind": root.kind,
            "compiles": _display(facts, root.target),
            "options": root.options_text,
        }
        for root in facts.roots
    ]
    functions = []
    for function_id in sorted(facts.regions, key=lambda f: (_path(facts, f), f)):
        functions.append(
            {
                "function": _display(facts, function_id),
                "path": _path(facts, function_id),
                "reached_from": [
                    f"{root.path}:{root.span.start.line}" for root in facts.regions[function_id]
                ],
                "disabled": facts.is_disabled(function_id),
                "unresolved_calls": facts.unknown_calls.get(function_id, 0),
            }
        )
    divergences = []
    for d in project_divergences(facts):
        span = getattr(d.at.span, "span", None)
        if span is not None:
            divergences.append(
                {
                    "path": d.path,
                    "line": span.start.line,
                    "function": _display(facts, d.function),
                    "condition": d.condition.text,
                    "when": "true" if d.taken else "false",
                    "kind": d.kind,
                    "proven": d.proven,
                    "collective": d.issued.kind,
                    "issued_at": _where(d.issued.origin_path, d.issued.origin.span),
                }
            )
    divergences.sort(key=lambda d: (d["path"], d["line"]))
    unresolved = sorted(
        (
            {"path": path, "line": span.start.line, "why": why}
            for path, located, why in facts.unresolved
            if (span := getattr(located, "span", None)) is not None
        ),
        key=lambda item: (item["path"], item["line"], item["why"]),
    )
    return {
        "roots": roots,
        "unresolved_compile_sites": unresolved,
        "functions": functions,
        "rank_dependent_collectives": divergences,
    }


def render_text(data: dict[str, Any]) -> str:
    out = [f"Compiled roots ({len(data['roots'])}):"]
    for root in data["roots"]:
        options = f"  [{root['options']}]" if root["options"] else ""
        kind = _KINDS.get(root["kind"], root["kind"])
        out.append(f"  {root['path']}:{root['line']}  {kind}: {root['compiles']}{options}")
    unresolved = data["unresolved_compile_sites"]
    if unresolved:
        out.append("")
        out.append(f"Compile sites whose compiled code is not known ({len(unresolved)}):")
        for site in unresolved:
            out.append(f"  {site['path']}:{site['line']}  {site['why']}")
    out.append("")
    out.append(f"Functions in compiled regions ({len(data['functions'])}):")
    for function in data["functions"]:
        reached = ", ".join(function["reached_from"])
        notes = []
        if function["unresolved_calls"]:
            notes.append(f"{function['unresolved_calls']} calls not followed")
        note = f"  ({'; '.join(notes)})" if notes else ""
        out.append(f"  {function['path']}: {function['function']}  <- {reached}{note}")
    out.append("")
    found = data["rank_dependent_collectives"]
    out.append(f"Collectives only some ranks reach ({len(found)}):")
    for d in found:
        what = "skips" if d["kind"] == "exit" else "issues"
        possible = "" if d["proven"] else " [possible: the condition or the paths are not proven]"
        out.append(
            f"  {d['path']}:{d['line']} in {d['function']}: when `{d['condition']}` is "
            f"{d['when']}, {what} {d['collective']} (issued at {d['issued_at']}){possible}"
        )
    return "\n".join(out)


def _display(facts: ProjectFacts, function_id: str) -> str:
    return function_id.split(":", 1)[1] if ":" in function_id else function_id


def _path(facts: ProjectFacts, function_id: str) -> str:
    module = facts.function_module.get(function_id)
    return module.path if module is not None else "?"


def _where(path: str, located: object) -> str:
    span = getattr(located, "span", None)
    return f"{path}:{span.start.line}" if span is not None else path


def explain_ranks(facts: ProjectFacts, reported: set[str] | None = None) -> dict[str, Any]:
    """``distlint explain-ranks`` as plain data (the JSON format): every rank-dependent
    decision around a collective in the files ``reported`` (None: all), proven or possible."""
    places = []
    for place in rank_places(facts, reported):
        places.append(
            {
                "path": place.path,
                "line": place.line,
                "column": place.column,
                "function": place.function,
                "kind": place.kind,
                "reported_as": place.reported_as,
                "doubt": place.doubt,
                "what": place.what,
                "why": place.why,
                "related": [
                    {"path": r.path, "line": r.span.start.line, "label": r.message}
                    for r in place.related
                ],
            }
        )
    proven = sum(1 for place in places if place["kind"] == "proven")
    return {"proven": proven, "possible": len(places) - proven, "places": places}


def render_ranks_text(data: dict[str, Any]) -> str:
    out = [
        f"Rank-dependent decisions around collectives: {data['proven']} proven, "
        f"{data['possible']} possible (a review listing, not findings)."
    ]
    for place in data["places"]:
        tag = place["reported_as"] if place["kind"] == "proven" else f"possible, {place['doubt']}"
        out.append("")
        where = f"{place['path']}:{place['line']}:{place['column']}"
        out.append(f"{where} in {place['function']} [{tag}]")
        out.append(f"  {place['what']}.")
        out.append(f"  {place['why']}")
        for where in place["related"]:
            out.append(f"  - {where['path']}:{where['line']}: {where['label']}")
    return "\n".join(out)
