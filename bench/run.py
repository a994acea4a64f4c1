"""Time ``distlint check`` against a plain ``libcst.parse_module`` of the same files.

Default corpus: the installed torch package's own ``torch/distributed`` sources (real code, no
download; torch is located without being imported). Both sides run in fresh subprocesses and
are measured by CPU time (user + sys) and wall time; the best of ``--repeat`` runs counts.

    python bench/run.py                     # torch/distributed, 1 job
    python bench/run.py --corpus src/ --jobs 2 --select ALL
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PARSE_ONLY = """
import sys, libcst
from pathlib import Path
from distlint.source import decode_source
for name in sys.argv[1:]:
    libcst.parse_module(decode_source(Path(name).read_bytes()))
"""


def torch_distributed_dir() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed: pass --corpus PATH")
    return Path(next(iter(spec.submodule_search_locations))) / "distributed"


def corpus_files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def measure(command: list[str]) -> tuple[float, float, int]:
    """(cpu seconds, wall seconds, exit code) of one subprocess run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:
        raise SystemExit(f"{command[:4]}... failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return cpu, wall, proc.returncode


def best(command: list[str], repeat: int) -> tuple[float, float]:
    runs = [measure(command) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="directory of Python files")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--select", default=None, help="rule selection for distlint")
    args = parser.parse_args()

    root = args.corpus or torch_distributed_dir()
    files = corpus_files(root)
    size = sum(os.path.getsize(f) for f in files)
    print(f"corpus: {root.name}/ ({len(files)} files, {size / 1e6:.1f} MB)")

    parse_cmd = [sys.executable, "-c", PARSE_ONLY, *files]
    check_cmd = [sys.executable, "-m", "distlint", "check", "--jobs", str(args.jobs), "-q"]
    check_cmd += ["--no-show-source", "--exit-zero", "--config", os.devnull]
    if args.select:
        check_cmd += ["--select", args.select]
    check_cmd += files

    parse_cpu, parse_wall = best(parse_cmd, args.repeat)
    check_cpu, check_wall = best(check_cmd, args.repeat)
    print(f"parse only     : {parse_cpu:7.2f} s CPU  {parse_wall:7.2f} s wall")
    print(f"distlint check : {check_cpu:7.2f} s CPU  {check_wall:7.2f} s wall (jobs={args.jobs})")
    print(
        f"ratio (check / parse): {check_cpu / parse_cpu:.2f}x CPU, "
        f"{check_wall / parse_wall:.2f}x wall"
    )
    print(f"throughput: {len(files) / check_cpu:.1f} files per CPU-second")


if __name__ == "__main__":
    main()
