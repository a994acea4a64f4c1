"""Generate ``docs/graph-breaks.md``: every graph-break id of the installed torch, and what
distlint can say about it.

torch ships its registry of graph-break types, ``torch/_dynamo/graph_break_registry.json``
(id ``GBnnnn`` -> the ``Gb_type`` strings, context, explanation and hints it has had). This
script reads it from the installed torch package WITHOUT importing torch (the file is found
with ``importlib.util.find_spec``) and merges the human judgments kept in
``distlint/knowledge/data/graph_break_coverage.json``:

* ``predictable``: ``yes`` (a static reader sees the construct that breaks), ``partly`` (in some
  spellings, or not yet reproduced on the supported torch), ``no`` (it depends on runtime
  types, values or Dynamo internals);
* ``reason``: a few words.

Which DL rules report an id is not kept in the map: each rule class declares its ids
(``graph_breaks``), and the page lists the rules that declare each one.

Usage::

    python scripts/gen_graph_breaks.py                # write docs/graph-breaks.md
    python scripts/gen_graph_breaks.py --check        # exit 1 with a diff if it is stale
    python scripts/gen_graph_breaks.py --add-missing  # add new registry ids to the map

After a torch upgrade, ``--add-missing`` adds the registry's new ids to the map with
``predictable: "unreviewed"``; review each (reproduce it on that torch before calling it
``yes``), then regenerate. ``tests/rules/test_graph_breaks_map.py`` fails while an id is unreviewed,
missing from the map, marked ``yes`` without a rule that declares it, or while the page is stale.

The output is deterministic (registry order is sorted by id).
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: the rules are read from this tree

from distlint.rules.base import BUILTIN_PREFIX  # noqa: E402
from distlint.rules.registry import graph_break_rules  # noqa: E402

MAP_PATH = ROOT / "distlint" / "knowledge" / "data" / "graph_break_coverage.json"
DOC_PATH = ROOT / "docs" / "graph-breaks.md"
GB_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb{}.html"
VERDICTS = ("yes", "partly", "no")


def torch_dir() -> Path | None:
    """The installed torch package folder, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        if (Path(location) / "_dynamo" / "graph_break_registry.json").is_file():
            return Path(location)
    return None


def torch_version(folder: Path) -> str:
    """``torch/version.py``'s ``__version__``, read as text."""
    text = (folder / "version.py").read_text(encoding="utf-8")
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else "unknown"


def load_registry(folder: Path) -> dict[str, list[dict]]:
    path = folder / "_dynamo" / "graph_break_registry.json"
    return json.loads(path.read_text(encoding="utf-8"))


def load_map(path: Path = MAP_PATH) -> dict[str, dict]:
    """Each id's judgment: ``predictable`` and ``reason``."""
    return json.loads(path.read_text(encoding="utf-8"))["ids"]


def load_rules() -> dict[str, tuple[str, ...]]:
    """Each id's covering rules, from the built-in rules' ``graph_breaks`` (a plugin's rules
    are not distlint's coverage)."""
    return {
        gb: builtin
        for gb, codes in graph_break_rules().items()
        if (builtin := tuple(c for c in codes if c.startswith(BUILTIN_PREFIX)))
    }


def gb_types(entries: list[dict]) -> list[str]:
    """The distinct ``Gb_type`` strings of one id, in registry order."""
    found: list[str] = []
    for entry in entries:
        text = " ".join(str(entry.get("Gb_type", "")).split())
        if text and text not in found:
            found.append(text)
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def totals(
    registry: dict[str, list[dict]], coverage: dict[str, dict], rules: dict[str, tuple[str, ...]]
) -> dict[str, int]:
    counts = {"ids": len(registry), "covered": 0, "yes_covered": 0}
    for verdict in VERDICTS:
        counts[verdict] = 0
    for gb in registry:
        entry = coverage.get(gb, {})
        verdict = entry.get("predictable")
        if verdict in VERDICTS:
            counts[verdict] += 1
        if rules.get(gb):
            counts["covered"] += 1
            if verdict == "yes":
                counts["yes_covered"] += 1
    return counts


def render(
    registry: dict[str, list[dict]],
    coverage: dict[str, dict],
    rules: dict[str, tuple[str, ...]],
    version: str,
) -> str:
    count = totals(registry, coverage, rules)
    lines = [
        "# Graph breaks: what distlint can predict",
        "",
        "<!-- Generated by scripts/gen_graph_breaks.py from torch's "
        "_dynamo/graph_break_registry.json and distlint/knowledge/data/graph_break_coverage.json. "
        "Do not edit by hand. -->",
        "",
        f"Every graph-break id (`GBnnnn`) in the registry of torch {version}, whether a static "
        "reader can predict it, and the distlint rules that report it.",
        "",
        "* **yes**: the construct that breaks is visible in the source (a call, a statement).",
        "* **partly**: visible in some spellings only, or not yet reproduced on this torch (no "
        "rule is written for an id before it is reproduced).",
        "* **no**: it depends on runtime types or values, the environment, or Dynamo internals.",
        "",
        "## Totals",
        "",
        "| | ids |",
        "|---|---|",
        f"| graph-break ids in the registry | {count['ids']} |",
        f"| statically predictable: yes | {count['yes']} |",
        f"| statically predictable: partly | {count['partly']} |",
        f"| not statically predictable | {count['no']} |",
        f"| covered by a distlint rule (yes or partly) | {count['covered']} |",
        f"| predictable (yes) and covered | {count['yes_covered']} of {count['yes']} |",
        "",
        "## Ids",
        "",
        "| id | type | predictable | why | rules |",
        "|---|---|---|---|---|",
    ]
    for gb in sorted(registry):
        entry = coverage.get(gb, {})
        number = gb[2:]
        kinds = " / ".join(
            f"`{_cell(t)}`" if "`" not in t else _cell(t) for t in gb_types(registry[gb])
        )
        links = ", ".join(f"[{code}](rules/{code}.md)" for code in rules.get(gb, ()))
        lines.append(
            f"| [{gb}]({GB_URL.format(number)}) | {kinds} | {entry.get('predictable', '?')} | "
            f"{_cell(entry.get('reason', ''))} | {links} |"
        )
    return "\n".join(lines) + "\n"


def add_missing(registry: dict[str, list[dict]], path: Path = MAP_PATH) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    added = sorted(set(registry) - set(data["ids"]))
    for gb in added:
        data["ids"][gb] = {"predictable": "unreviewed", "reason": ""}
    data["ids"] = dict(sorted(data["ids"].items()))
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    parser.add_argument(
        "--add-missing", action="store_true", help="add the registry's new ids to the map"
    )
    args = parser.parse_args(argv)
    folder = torch_dir()
    if folder is None:
        print("torch (with _dynamo/graph_break_registry.json) is not installed", file=sys.stderr)
        return 2
    registry = load_registry(folder)
    if args.add_missing:
        added = add_missing(registry)
        print(f"added {len(added)} ids to {MAP_PATH}: {', '.join(added) or 'none'}")
    coverage = load_map()
    missing = sorted(set(registry) - set(coverage))
    if missing:
        print(
            f"{MAP_PATH} lacks {len(missing)} registry ids ({', '.join(missing[:10])}...): "
            "run with --add-missing and review them",
            file=sys.stderr,
        )
        return 1
    text = render(registry, coverage, load_rules(), torch_version(folder))
    if args.check:
        old = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        if old == text:
            print(f"{DOC_PATH} is up to date")
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"{DOC_PATH} (shipped)",
                tofile=f"{DOC_PATH} (generated)",
            )
        )
        print(f"\n{DOC_PATH} is stale: run python scripts/gen_graph_breaks.py", file=sys.stderr)
        return 1
    DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOC_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
