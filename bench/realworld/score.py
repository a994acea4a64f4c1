"""Score distlint on the real-code corpus against our hand labels.

    python bench/realworld/score.py --corpus CORPUS [--codes DL201,DL208] [--save DIR]

``CORPUS/<owner>+<name>/`` is a checkout of each repository of ``repos.txt`` (see
``export.py``). Each is checked as its own project; every finding of the selected rules is
matched to ``labels.jsonl`` by (repository, path, line, code). A removed rule's code
(distlint/rules/removed.py) is skipped: its labels stay as history. Reports, per rule: findings,
true and false positives, findings nobody has reviewed yet (listed: review them and add a
label), the same counts for error-severity findings alone (the ones that must be right nine
times in ten), and labelled true positives that are no longer found (recall lost). Exits 1 when a
rule's precision over reviewed findings is below ``--min-precision`` or when findings are
unreviewed and ``--strict`` is given.

A label is one JSON object a line: ``{"repo", "path", "line", "code", "verdict": "TP"|"FP",
"why"}``; ``why`` is our own words on what the code does.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent.parent))
from export import read_repos  # noqa: E402

from distlint.rules.removed import REMOVED_RULES  # noqa: E402

Key = tuple[str, str, int, str]


def read_labels(path: Path) -> dict[Key, dict]:
    labels: dict[Key, dict] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        item = json.loads(line)
        key = (item["repo"], item["path"], int(item["line"]), item["code"])
        if item["verdict"] not in ("TP", "FP"):
            raise SystemExit(f"{path}:{number}: verdict must be TP or FP")
        if key in labels:
            raise SystemExit(f"{path}:{number}: duplicate label for {key}")
        labels[key] = item
    return labels


def check_repo(checkout: Path, codes: str) -> list[dict]:
    command = [
        sys.executable,
        "-m",
        "distlint",
        "check",
        ".",
        "--select",
        codes,
        "--format",
        "json",
        "--exit-zero",
        "-q",
        "--jobs",
        "1",
    ]
    env = dict(os.environ, PYTHONPATH=str(HERE.parent.parent))
    done = subprocess.run(command, cwd=checkout, capture_output=True, text=True, env=env)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"{checkout}: distlint failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--codes", default="DL201,DL208")
    parser.add_argument("--labels", type=Path, default=HERE / "labels.jsonl")
    parser.add_argument("--repos", type=Path, default=HERE / "repos.txt")
    parser.add_argument("--min-precision", type=float, default=0.85)
    parser.add_argument("--strict", action="store_true", help="fail on unreviewed findings")
    parser.add_argument("--save", type=Path, help="write each repository's findings here")
    parser.add_argument(
        "--results", type=Path, help="read findings saved by --save instead of running distlint"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    labels = read_labels(args.labels)
    selected: list[str] = []
    for code in (c.strip().upper() for c in args.codes.split(",")):
        if code in REMOVED_RULES:  # its labels stay as history; it has no findings to score
            print(f"skipped: {REMOVED_RULES[code].notice()}", file=sys.stderr)
        else:
            selected.append(code)
    repos = [repo for repo, _ in read_repos(args.repos)]
    checkouts = {repo: args.corpus / repo.replace("/", "+") for repo in repos}
    missing = [repo for repo, path in checkouts.items() if not path.is_dir()]
    if missing and args.results is None:
        raise SystemExit(f"not exported: {', '.join(missing)} (run export.py)")
    if args.results is not None:
        results = {
            repo: json.loads((args.results / f"{repo.replace('/', '+')}.json").read_text())
            for repo in repos
        }
    else:
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            codes = ",".join(selected)
            found = pool.map(lambda r: check_repo(checkouts[r], codes), repos)
            results = dict(zip(repos, found, strict=True))
    counts: Counter[tuple[str, str]] = Counter()
    errors: Counter[tuple[str, str]] = Counter()  # the same, error-severity findings only
    unreviewed: list[str] = []
    found_keys: set[Key] = set()
    for repo in repos:
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            target = args.save / f"{repo.replace('/', '+')}.json"
            target.write_text(json.dumps(results[repo], indent=1), encoding="utf-8")
        for finding in results[repo]:
            if finding["code"] in REMOVED_RULES:  # saved (--results) before it was removed
                continue
            line = finding["range"]["start"]["line"]
            key = (repo, finding["path"], line, finding["code"])
            found_keys.add(key)
            label = labels.get(key)
            verdict = label["verdict"] if label is not None else "unreviewed"
            counts[(finding["code"], verdict)] += 1
            if finding["severity"] == "error":
                errors[(finding["code"], verdict)] += 1
            if label is None:
                message = " ".join(finding["message"].split())[:160]
                unreviewed.append(f"  {repo} {finding['path']}:{line} {finding['code']} {message}")
    lost = [
        key
        for key, item in labels.items()
        if item["verdict"] == "TP" and key[3] in selected and key not in found_keys
    ]
    failed = False
    print(f"{len(repos)} repositories, {len(labels)} labels")
    for code in selected:
        tp, fp, new = counts[(code, "TP")], counts[(code, "FP")], counts[(code, "unreviewed")]
        reviewed = tp + fp
        precision = tp / reviewed if reviewed else None
        shown = f"{precision:.2f}" if precision is not None else "n/a"
        etp, efp, enew = (errors[(code, verdict)] for verdict in ("TP", "FP", "unreviewed"))
        print(
            f"{code}: {tp + fp + new} findings, {tp} TP, {fp} FP, {new} unreviewed; "
            f"precision {shown}; errors {etp} TP, {efp} FP, {enew} unreviewed"
        )
        if precision is not None and precision < args.min_precision:
            failed = True
    etp, efp = (sum(errors[(code, v)] for code in selected) for v in ("TP", "FP"))
    if etp + efp:
        print(f"error severity: {etp} TP, {efp} FP; precision {etp / (etp + efp):.2f}")
    if unreviewed:
        print("unreviewed findings:")
        print("\n".join(unreviewed))
        failed = failed or args.strict
    if lost:
        print("labelled true positives no longer found:")
        for repo, path, line, code in lost:
            print(f"  {repo} {path}:{line} {code}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
