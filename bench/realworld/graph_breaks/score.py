"""Score distlint's DL1xx rules against the graph breaks Dynamo really produced.

    python bench/realworld/graph_breaks/score.py --corpus CORPUS [--mode as-is|driver|both]
        [--json FILE] [--reuse] [--repos owner/name,...]

``observed.jsonl`` holds one break a line (see README.md); ``cases.json`` the modules the
harness ran. For every repository of a case, distlint checks ``CORPUS/<owner>+<name>/`` as its
own project (``--select ALL --format json``). A break counts as *predicted* when a DL1xx
finding lies in the same file on the statement of the break (its first to last line), or on
the statement of one of the break's callers inside the repository (the call line that led
there). Every other DL1xx finding in a case's files is listed as a possible false alarm:
the harness ran one input through one path, so a finding on a path it did not take is not
proof of a false alarm.

Modes: ``as-is`` checks the repository as exported; ``driver`` checks a temporary copy
(the ``.py`` files only) to which a generated file adds ``torch.compile(<case object>)`` for
every case, so that modules the repository never compiles are treated as compiled regions;
where the module cannot be imported by a dotted name (a folder or file name that is not an
identifier) the same lines are appended to the end of the module's copy instead, which moves
no line of the original.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DRIVER = "_distlint_gbreal_driver.py"


def read_jsonl(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_distlint(checkout: Path, cache: Path) -> list[dict]:
    command = [sys.executable, "-m", "distlint", "check", ".", "--select", "ALL"]
    command += ["--format", "json", "--exit-zero", "-q", "--jobs", "1", "--cache-dir", str(cache)]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent.parent.parent))
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True, env=env)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"{checkout}: distlint failed ({done.returncode}): {done.stderr[-2000:]}")
    findings = json.loads(done.stdout)
    for finding in findings:
        path = Path(finding["path"])
        path = path if path.is_absolute() else checkout / path
        finding["relpath"] = str(path.resolve().relative_to(checkout.resolve()))
    return findings


def dotted_name(path: str) -> str | None:
    parts = list(Path(path).with_suffix("").parts)
    if all(part.isidentifier() for part in parts):
        return ".".join(parts)
    return None


def driver_lines(case: dict) -> list[str]:
    lines = ["import torch", *case.get("setup", [])]
    target = f"_target_{case['id'].replace('-', '_')}"
    lines.append(f"{target} = {case['ctor']}")
    if case.get("method"):
        lines.append(f"{target}_compiled = torch.compile({target}.{case['method']})")
    else:
        lines.append(f"{target}_compiled = torch.compile({target})")
    return lines


def used_names(case: dict) -> set[str]:
    names = set()
    for text in [case["ctor"], *case.get("setup", [])]:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names - {"torch"}


def make_driver_copy(source: Path, cases: list[dict], into: Path) -> Path:
    copy = into / source.name
    for path in source.rglob("*.py"):
        if ".distlint_cache" in path.parts:
            continue
        target = copy / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    for name in ("pyproject.toml", "setup.cfg", "distlint.toml", ".distlint.toml"):
        if (source / name).is_file():
            shutil.copyfile(source / name, copy / name)
    driver: list[str] = []
    for case in cases:
        dotted = case.get("import") or dotted_name(case["path"])
        if dotted:
            names = sorted(used_names(case) & top_level_names(copy / case["path"]))
            driver += [f"from {dotted} import {', '.join(names)}", *driver_lines(case), ""]
        else:
            module = copy / case["path"]
            text = module.read_text(encoding="utf-8")
            tail = "\n".join(["", "", "# added by the graph-break scorer", *driver_lines(case), ""])
            module.write_text(text.rstrip("\n") + "\n" + tail, encoding="utf-8")
    if driver:
        (copy / DRIVER).write_text("\n".join(driver), encoding="utf-8")
    return copy


class Statements:
    """The (first, last) line of the innermost statement holding a line, per file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[str, list[tuple[int, int]]] = {}

    def span(self, path: str, line: int) -> tuple[int, int]:
        if path not in self.cache:
            spans = []
            try:
                tree = ast.parse((self.root / path).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                tree = None
            if tree is not None:
                for node in ast.walk(tree):
                    if isinstance(node, ast.stmt) and not isinstance(
                        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
                    ):
                        end = node.end_lineno or node.lineno
                        # a compound statement counts by its header only
                        body = getattr(node, "body", None)
                        if isinstance(body, list) and body and not isinstance(node, ast.With):
                            end = body[0].lineno - 1
                        spans.append((node.lineno, max(end, node.lineno)))
            self.cache[path] = spans
        holding = [s for s in self.cache[path] if s[0] <= line <= s[1]]
        if not holding:
            return (line, line)
        return min(holding, key=lambda s: s[1] - s[0])


def score(
    corpus: Path,
    mode: str,
    observed: list[dict],
    cases: list[dict],
    cache_dir: Path,
    reuse: bool = False,
) -> dict:
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        by_repo[case["repo"]].append(case)
    findings: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="gbreal-") as scratch:
        cache = cache_dir / mode
        for repo, repo_cases in sorted(by_repo.items()):
            saved = cache / (repo.replace("/", "+") + ".findings.json")
            if reuse and saved.is_file():
                findings[repo] = json.loads(saved.read_text(encoding="utf-8"))
                continue
            source = corpus / repo.replace("/", "+")
            checkout = source
            if mode == "driver":
                checkout = make_driver_copy(source, repo_cases, Path(scratch))
            print(f"distlint ({mode}): {repo}", file=sys.stderr)
            found = run_distlint(checkout, cache)
            findings[repo] = [f for f in found if f["code"].startswith("DL1")]
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(findings[repo]), encoding="utf-8")
    # the rules that declare each id (Rule.graph_breaks); the coverage map no longer lists them
    from distlint.rules.registry import graph_break_rules

    declared = graph_break_rules()
    results = []
    used: set[int] = set()
    for item in observed:
        statements = Statements(corpus / item["repo"].replace("/", "+"))
        sites = [(item["path"], item["line"], "site")]
        sites += [(path, line, "caller") for path, line, _ in item.get("stack", [])[:-1]]
        match = None
        for path, line, kind in sites:
            first, last = statements.span(path, line)
            for finding in findings.get(item["repo"], []):
                start = finding["range"]["start"]["line"]
                if finding["relpath"] == path and first <= start <= last:
                    used.add(id(finding))
                    covers = finding["code"] in declared.get(item["gb"], ())
                    if match is None or (covers and not match["same_id"]):
                        match = {
                            "code": finding["code"],
                            "line": start,
                            "kind": kind,
                            # the rule is one distlint lists for this GB id: the same cause
                            "same_id": covers,
                        }
            if match:
                break
        results.append({**item, "predicted": match})
    files = {(c["repo"], c["path"]) for c in cases} | {(o["repo"], o["path"]) for o in observed}
    alarms = [
        {
            "repo": repo,
            "path": f["relpath"],
            "line": f["range"]["start"]["line"],
            "code": f["code"],
            "headline": f.get("headline", ""),
        }
        for repo, items in findings.items()
        for f in items
        if (repo, f["relpath"]) in files and id(f) not in used
    ]
    return {"results": results, "alarms": alarms}


def report(mode: str, scored: dict) -> None:
    results = scored["results"]
    hits = [r for r in results if r["predicted"]]
    missed_count = len(results) - len(hits)
    same = sum(1 for r in hits if r["predicted"]["same_id"])
    print(
        f"\n== {mode}: observed {len(results)}, predicted {len(hits)} "
        f"({same} by a rule listed for that GB id), missed {missed_count}"
    )
    for r in results:
        hit = r["predicted"]
        mark = "MISSED"
        if hit:
            cause = "same id" if hit["same_id"] else "another cause on the statement"
            mark = f"{hit['code']} ({hit['kind']}, {cause})"
        print(f"  {r['repo']} {r['path']}:{r['line']} {r['gb']} {mark}  {r['message'][:70]}")
    missed = Counter(r["gb"] for r in results if not r["predicted"])
    print("  missed by GB id: " + ", ".join(f"{k} {v}" for k, v in missed.most_common()))
    alarms = len(scored["alarms"])
    print(f"  DL1xx findings in the cases' files that Dynamo did not observe: {alarms}")
    print("  (the harness runs one input through one path: a finding on another path")
    print("  is not proof of a false alarm)")
    for a in scored["alarms"]:
        print(f"    {a['repo']} {a['path']}:{a['line']} {a['code']} {a['headline'][:80]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--mode", choices=("as-is", "driver", "both"), default="both")
    parser.add_argument("--observed", type=Path, default=HERE / "observed.jsonl")
    parser.add_argument("--cases", type=Path, default=HERE / "cases.json")
    parser.add_argument("--json", type=Path, default=None, help="also write the scores as JSON")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "distlint-gbreal-cache",
        help="distlint's cache (kept between runs; never inside the corpus)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="reuse the findings an earlier run saved (same cases)"
    )
    parser.add_argument("--repos", default="", help="only these repositories (owner/name,...)")
    options = parser.parse_args(argv)
    observed = read_jsonl(options.observed)
    cases = json.loads(options.cases.read_text(encoding="utf-8"))
    cases = [c for c in cases if not c.get("skipped")]
    if options.repos:
        keep = set(options.repos.split(","))
        cases = [c for c in cases if c["repo"] in keep]
        observed = [o for o in observed if o["repo"] in keep]
    modes = ("as-is", "driver") if options.mode == "both" else (options.mode,)
    out = {}
    for mode in modes:
        out[mode] = score(options.corpus, mode, observed, cases, options.cache_dir, options.reuse)
        report(mode, out[mode])
    if options.json:
        options.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
