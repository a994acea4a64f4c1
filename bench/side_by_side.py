"""Two versions of distlint timed at the same moment, beside a bare parse of the same files.

A machine whose speed drifts between runs (by a sixth within minutes on the shared device)
hides a change of a few percent when two versions run one after the other. Here each round
starts the old version's check, the new version's check and a bare ``libcst.parse_module`` of
the same files at once, each pinned to cores of its own where the machine has enough of them
(``taskset``), so a drift slows all three alike; each round prints their CPU times, each
check's ratio to the parse beside it, and new / old:

    python bench/side_by_side.py --old SNAPSHOT_A --new SNAPSHOT_B --corpus DIR [--rounds 4]
        [--select ALL] [--jobs 2]

``--old`` and ``--new``: folders holding a ``distlint`` package (a ``git archive`` of a commit,
or an install target), put first on ``PYTHONPATH`` of their check; the parse uses the new one's
source decoding. Run it from outside any checkout of distlint (``python -m`` would import the
checkout's package first). Needs a machine with at least ``2 × jobs + 1`` idle cores for
pinned runs; with fewer, the three run unpinned, and what the round says is only relative.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import PARSE_ONLY, _check_command, corpus_files


def _environment(version: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(version), env.get("PYTHONPATH")]))
    return env


def _pinned(jobs: int) -> list[str] | None:
    """The cores of (old, new, parse), or None where there are too few to pin them apart."""
    count = os.cpu_count() or 1
    if shutil.which("taskset") is None or count < 2 * jobs + 1:
        return None
    old = ",".join(str(core) for core in range(jobs))
    new = ",".join(str(core) for core in range(jobs, 2 * jobs))
    return [old, new, str(2 * jobs)]


def one_round(
    old: Path, new: Path, files: list[str], selection: str, jobs: int
) -> dict[str, tuple[float, float, int]]:
    """(CPU seconds, wall seconds, exit status) of the old check, the new one and the parse,
    run at the same time."""
    check = [*_check_command(files, jobs, selection), "--no-cache"]
    commands = [
        ("old", check, _environment(old)),
        ("new", check, _environment(new)),
        ("parse", [sys.executable, "-c", PARSE_ONLY, *files], _environment(new)),
    ]
    cores = _pinned(jobs)
    running: dict[int, tuple[str, float]] = {}
    for index, (name, command, env) in enumerate(commands):
        pin = ["taskset", "-c", cores[index]] if cores else []
        process = subprocess.Popen(
            [*pin, *command],
            env=env,
            cwd=tempfile.gettempdir(),  # not a checkout, whose package -m would import
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        running[process.pid] = (name, time.monotonic())
    found: dict[str, tuple[float, float, int]] = {}
    while running:
        pid, status, usage = os.wait4(-1, 0)  # its usage includes the workers it reaped
        name, started = running.pop(pid)
        cpu = usage.ru_utime + usage.ru_stime
        found[name] = (cpu, time.monotonic() - started, os.waitstatus_to_exitcode(status))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="folder holding the old distlint")
    parser.add_argument("--new", type=Path, required=True, help="folder holding the new distlint")
    parser.add_argument("--corpus", type=Path, required=True, help="directory of Python files")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--select", default="", help="a rule selection ('': the default rules)")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    for version in (args.old, args.new):
        if not (version / "distlint" / "__init__.py").is_file():
            parser.error(f"{version} holds no distlint package")
    files = corpus_files(args.corpus)
    if not files:
        parser.error(f"{args.corpus} holds no Python file")
    pinned = "pinned" if _pinned(args.jobs) else "not pinned (too few cores)"
    print(f"corpus: {args.corpus.name}/ ({len(files)} files), {pinned}")
    failed = False
    for number in range(args.rounds):
        found = one_round(args.old, args.new, files, args.select, args.jobs)
        parse, old, new = found["parse"][0], found["old"], found["new"]
        failed = failed or any(status != 0 for _, _, status in found.values())
        print(
            f"round {number}: parse {parse:.2f} s CPU; "
            f"old {old[0]:.2f} s CPU {old[1]:.2f} s wall ({old[0] / parse:.2f}x the parse); "
            f"new {new[0]:.2f} s CPU {new[1]:.2f} s wall ({new[0] / parse:.2f}x); "
            f"new / old CPU {new[0] / old[0]:.3f}",
            flush=True,
        )
    if failed:
        print("a run failed (exit status not 0): its time is not a check's", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
