"""Time the pre-commit hook's check of one staged file in a large project, warm, and the peak
memory of any one distlint process on the cold check of that project.

The corpus (default: the installed torch package, about 2,100 files) is copied into a fresh
temporary project (a ``pyproject.toml`` at its root, so the cache lives there). A cold
``distlint check`` of the whole project fills the cache; its peak resident memory per process
is read from ``getrusage`` in a wrapper process (the largest of distlint and its workers).
Then the hook's command, ``distlint check --force-exclude FILE`` for one file (default: the
file with the most findings in the whole check), is timed ``--repeat`` times with
the cache warm, then ``--repeat`` times more, each after appending a comment to that file
(the usual commit: the staged file changed since the cache was filled, in a way the project
stage does not see, so its cached output serves), then ``--repeat`` times more, each after
inserting a blank line at the top of the file (every node of it moves, nothing else changes:
the project stage's output serves, its positions in the file moved). The hook's findings
for that file must equal the whole check's (cross-file findings included; after the
inserted lines, one line lower each): the script says whether they do.

    python bench/hook_latency.py --jobs 16
    python bench/hook_latency.py --corpus src/ --file src/train.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import PEAK, peak_mib


def torch_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed: pass --corpus PATH")
    return Path(next(iter(spec.submodule_search_locations)))


def findings_by_file(stdout: str) -> dict[str, list[tuple]]:
    found: dict[str, list[tuple]] = {}
    for item in json.loads(stdout or "[]"):
        start = item["range"]["start"]
        key = (item["code"], start["line"], start["column"], item["message"])
        found.setdefault(item["path"], []).append(key)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--file", default=None, help="the staged file, relative to the corpus")
    parser.add_argument("--jobs", type=int, default=1, help="jobs of the cold check")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    corpus = (args.corpus or torch_dir()).resolve()
    with tempfile.TemporaryDirectory(prefix="distlint-hook-") as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(corpus, project / corpus.name, ignore=shutil.ignore_patterns("__pycache__"))
        (project / "pyproject.toml").write_text("[project]\nname = 'bench'\n")
        files = sorted(p for p in (project / corpus.name).rglob("*.py"))
        distlint = [sys.executable, "-m", "distlint", "check", "--format", "json"]
        started = time.perf_counter()
        cold = subprocess.run(
            [sys.executable, "-c", PEAK, *distlint, "-j", str(args.jobs), corpus.name],
            cwd=project,
            capture_output=True,
            text=True,
        )
        cold_wall = time.perf_counter() - started
        if cold.returncode not in (0, 1):
            raise SystemExit(f"the cold check failed ({cold.returncode}):\n{cold.stderr[-2000:]}")
        peak = peak_mib(cold.stderr)
        whole = findings_by_file(cold.stdout)
        staged = args.file or max(sorted(whole), key=lambda path: len(whole[path]))
        timings = []
        hook = None
        for _ in range(args.repeat):
            started = time.perf_counter()
            hook = subprocess.run(
                [*distlint, "--force-exclude", staged], cwd=project, capture_output=True, text=True
            )
            timings.append(time.perf_counter() - started)
        assert hook is not None
        if hook.returncode not in (0, 1):
            raise SystemExit(f"the hook's check failed ({hook.returncode}):\n{hook.stderr[-2000:]}")
        same = findings_by_file(hook.stdout).get(staged, []) == whole.get(staged, [])
        # the usual commit: the staged file itself was edited since the cache was filled (a
        # comment appended each time, so no finding moves)
        edited_timings = []
        edited_same = True
        for index in range(args.repeat):
            with open(project / staged, "a", encoding="utf-8") as handle:
                handle.write(f"\n# edit {index}\n")
            started = time.perf_counter()
            edited = subprocess.run(
                [*distlint, "--force-exclude", staged], cwd=project, capture_output=True, text=True
            )
            edited_timings.append(time.perf_counter() - started)
            edited_same &= findings_by_file(edited.stdout).get(staged, []) == whole.get(staged, [])
        # an edit that moves every node of the file and changes nothing else: the project
        # stage's output serves, its positions in the file moved down with the lines
        moved_timings = []
        moved_same = True
        for index in range(args.repeat):
            text = (project / staged).read_text(encoding="utf-8")
            (project / staged).write_text("\n" + text, encoding="utf-8")
            started = time.perf_counter()
            moved = subprocess.run(
                [*distlint, "--force-exclude", staged], cwd=project, capture_output=True, text=True
            )
            moved_timings.append(time.perf_counter() - started)
            lowered = [
                (code, line - index - 1, column)
                for code, line, column, _ in findings_by_file(moved.stdout).get(staged, [])
            ]
            moved_same &= lowered == [key[:3] for key in whole.get(staged, [])]
        cold_line = f"cold check with -j{args.jobs}: {cold_wall:.1f} s"
        print(f"corpus {corpus} ({len(files)} files), {cold_line}")
        print(f"peak resident memory of one process: {peak:.0f} MiB")
        print(
            f"hook on {staged}, warm cache: median {statistics.median(timings):.2f} s "
            f"(runs: {', '.join(f'{t:.2f}' for t in timings)}); "
            f"{len(whole.get(staged, []))} findings, the same as the whole check's: {same}"
        )
        warm = statistics.median(timings)
        print(
            f"hook on {staged} edited since (a comment appended), warm cache otherwise: median "
            f"{statistics.median(edited_timings):.2f} s, "
            f"{statistics.median(edited_timings) / warm:.2f} x the unchanged file's (runs: "
            f"{', '.join(f'{t:.2f}' for t in edited_timings)}); the same findings: {edited_same}"
        )
        print(
            f"hook on {staged} with a line inserted at its top: "
            f"median {statistics.median(moved_timings):.2f} s, "
            f"{statistics.median(moved_timings) / warm:.2f} x the unchanged file's (runs: "
            f"{', '.join(f'{t:.2f}' for t in moved_timings)}); the same findings, one line "
            f"lower: {moved_same}"
        )


if __name__ == "__main__":
    main()
