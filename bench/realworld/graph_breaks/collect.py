"""Turn the harness's output into ``observed.jsonl`` (one break a line), keeping our "why"s.

    python bench/realworld/graph_breaks/collect.py RESULTS.jsonl [--observed FILE]

Each break the harness saw (in the ``TORCH_LOGS=graph_breaks`` log or in ``explain``'s
break reasons) becomes one line keyed by (repo, path, line, GB id); the "why" already written
for that key in ``observed.jsonl`` is kept, a new key gets an empty one to fill in by hand.
Cases the harness skipped are recorded in ``cases.json`` (``"skipped"``) by hand.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHAS = HERE.parent / "repos.txt"


def read_shas() -> dict[str, str]:
    shas = {}
    for line in SHAS.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.startswith("#"):
            shas[parts[0]] = parts[1]
    return shas


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--observed", type=Path, default=HERE / "observed.jsonl")
    parser.add_argument("--runs", type=Path, default=HERE / "runs.jsonl")
    options = parser.parse_args(argv)
    old = {}
    if options.observed.exists():
        for line in options.observed.read_text(encoding="utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                old[(item["repo"], item["path"], item["line"], item["gb"])] = item
    shas = read_shas()
    rows: dict[tuple, dict] = {}
    runs: dict[str, dict] = {}
    for line in options.results.read_text(encoding="utf-8").splitlines():
        result = json.loads(line)
        run = {"id": result["id"], "repo": result["repo"]}
        if result.get("skipped"):
            print(f"skipped: {result['id']}: {result['skipped'][-200:]}")
            runs[result["id"]] = {**run, "skipped": result["skipped"][-200:]}
            continue
        sites = {
            (b["path"], b["line"]) for b in result.get("logged", []) + result.get("breaks", [])
        }
        runs[result["id"]] = {
            **run,
            "graphs": result.get("graphs"),
            "explain_break_count": result.get("break_count"),
            "break_sites": len(sites),
            "fullgraph": result.get("fullgraph"),
        }
        for found in result.get("logged", []) + result.get("breaks", []):
            if not found.get("path") or found["path"].startswith("/"):
                continue  # a break outside the repository (torch itself)
            key = (result["repo"], found["path"], found["line"], found["gb"])
            if key in rows:
                if result["id"] not in rows[key]["cases"]:
                    rows[key]["cases"].append(result["id"])
                continue
            stack = [[*frame[:2], frame[2]] for frame in found.get("stack", [])]
            rows[key] = {
                "repo": result["repo"],
                "sha": shas.get(result["repo"], ""),
                "path": found["path"],
                "line": found["line"],
                "gb": found["gb"],
                "message": found["message"],
                "stack": stack,
                "cases": [result["id"]],
                "why": old.get(key, {}).get("why", ""),
            }
    with options.observed.open("w", encoding="utf-8") as out:
        for row in sorted(rows.values(), key=lambda r: (r["repo"], r["path"], r["line"])):
            out.write(json.dumps(row) + "\n")
    with options.runs.open("w", encoding="utf-8") as out:
        for run in runs.values():
            out.write(json.dumps(run) + "\n")
    print(f"{len(rows)} breaks written to {options.observed}, {len(runs)} runs to {options.runs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
