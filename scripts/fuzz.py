"""Fuzz distlint with generated programs: it must never crash or hang.

Usage::

    python scripts/fuzz.py --programs 100000 --jobs 2      # the long run (README, "Fuzzing")
    python scripts/fuzz.py --programs 400 --seed 7 --keep out/

Programs come in batches of ``--batch`` (default 50): torch-flavoured programs from
tests/fuzz/generator.py (most), programs from hypothesmith's Python grammar, and mutants
(generated programs after random edits, mostly invalid Python). Each batch is checked by the
real command line with ``--jobs 1`` and ``--jobs 2`` (tests/fuzz/harness.py says what counts as
a crash or a hang); ``--jobs J`` batches run at once. A batch with problems is re-checked
program by program and those programs are copied to ``--keep`` (default fuzz-failures/) to
become regression tests. The last line printed is a JSON summary; the exit status is 1 when
anything crashed or hung.

``--kinds torch=0.9,mutant=0.1`` changes the mix (leave ``grammar`` out where hypothesmith is
not installed); ``--seconds S`` stops handing out new batches after S seconds, lets the batches
under way finish and prints the summary of what ran.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz.harness import Problem, check_batch, culprits, fill_batch, preflight  # noqa: E402

KINDS = {"torch": 0.8, "grammar": 0.1, "mutant": 0.1}


def run_batch(seed: int, size: int, keep: Path, kinds: dict[str, float]) -> dict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="distlint-fuzz-") as tmp:
        batch = Path(tmp) / f"batch{seed}"
        counts = fill_batch(batch, seed, size, kinds)
        problems, findings = check_batch(batch)
        named: list[Problem] = []
        if problems:
            named = culprits(batch) or problems
            for problem in named:
                source = Path(problem.where)
                if source.is_dir() and source.is_relative_to(batch):
                    shutil.copytree(source, keep / f"seed{seed}-{source.name}", dirs_exist_ok=True)
    return {
        "seed": seed,
        "programs": size,
        "kinds": counts,
        "findings": findings,
        "problems": [p.__dict__ for p in named],
        "seconds": round(time.monotonic() - started, 1),
    }


def parse_kinds(text: str) -> dict[str, float]:
    """``torch=0.9,mutant=0.1`` -> weights; every name must be a kind the harness knows."""
    weights = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name not in KINDS:
            raise argparse.ArgumentTypeError(f"unknown kind {name!r} (known: {', '.join(KINDS)})")
        weights[name] = float(weight)
    return weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1, help="batches checked at once")
    parser.add_argument("--batch", type=int, default=50, help="programs per batch")
    parser.add_argument("--seed", type=int, default=0, help="first batch's seed")
    parser.add_argument("--keep", type=Path, default=Path("fuzz-failures"))
    parser.add_argument(
        "--kinds", type=parse_kinds, default=KINDS, help="e.g. torch=0.9,mutant=0.1"
    )
    parser.add_argument("--seconds", type=float, default=None, help="hand out no batch after S s")
    args = parser.parse_args(argv)
    sizes = []
    left = args.programs
    while left > 0:
        sizes.append(min(args.batch, left))
        left -= sizes[-1]
    broken = preflight()
    if broken:
        print(f"fuzz: distlint does not start here: {broken}", file=sys.stderr)
        return 2
    args.keep.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    total = {"programs": 0, "crashes": 0, "hangs": 0, "findings": 0}
    kinds = {"torch": 0, "grammar": 0, "mutant": 0}
    batches = iter(enumerate(sizes))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        running = set()

        def hand_out() -> None:
            """Keep every worker busy until the batches or the time run out."""
            while len(running) < args.jobs:
                if args.seconds is not None and time.monotonic() - started > args.seconds:
                    return
                index, size = next(batches, (None, 0))
                if index is None:
                    return
                running.add(pool.submit(run_batch, args.seed + index, size, args.keep, args.kinds))

        hand_out()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            running -= done
            hand_out()
            for future in done:
                report(future.result(), total, kinds, args.programs)
    summary = {**total, "kinds": kinds, "seconds": round(time.monotonic() - started)}
    print(json.dumps(summary))
    return 1 if total["crashes"] or total["hangs"] else 0


def report(result: dict, total: dict, kinds: dict, wanted: int) -> None:
    """Add one batch's result to the totals and print its line (and its problems)."""
    total["programs"] += result["programs"]
    total["findings"] += result["findings"]
    for kind, count in result["kinds"].items():
        kinds[kind] += count
    for problem in result["problems"]:
        total["crashes" if problem["kind"] == "crash" else "hangs"] += 1
        print(
            f"seed {result['seed']}: {problem['kind']}: {problem['where']}: "
            f"{problem['detail'][:500]}",
            flush=True,
        )
    print(
        f"batch seed {result['seed']}: {result['programs']} programs, "
        f"{len(result['problems'])} problems, {result['seconds']} s "
        f"({total['programs']}/{wanted})",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
