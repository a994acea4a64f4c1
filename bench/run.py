"""Time ``distlint check`` against a plain ``libcst.parse_module`` of the same files.

Default corpus: the installed torch package's own ``torch/distributed`` sources (real code, no
download; torch is located without being imported). Both sides run in fresh subprocesses and
are measured by CPU time (user + sys) and wall time; the best of ``--repeat`` runs counts.

    python bench/run.py                     # torch/distributed, 1 job, cold (--no-cache)
    python bench/run.py --corpus src/ --jobs 1,2 --select ";ALL" --warm

Cold runs pass ``--no-cache``; ``--warm`` also times a re-check of unchanged files with a cache
filled by one run before (a fresh temporary cache directory), and a re-check after one file
changed: the corpus is copied to a temporary directory, the cache filled, then before each
timed run one comment line is appended to the first file (a new content each time).

Each run also reports its peak resident memory: the largest of distlint's process and its
workers (``ru_maxrss`` of a wrapper's children, which counts every process they waited for).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARSE_ONLY = """
import sys, libcst
from pathlib import Path
from distlint.syntax.source import decode_source
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


# runs a command (its output passed on) and writes, as the last line of its standard error,
# the peak resident memory in KiB of any one of its processes (read it with peak_mib)
PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
sys.stderr.write(f"\\nPEAK-KIB {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
sys.exit(done.returncode)
"""


def peak_mib(stderr: str) -> float:
    """The peak memory :data:`PEAK` wrote at the end of ``stderr``, in MiB."""
    return int(stderr.rsplit("PEAK-KIB ", 1)[1].split()[0]) / 1024


def measure(command: list[str]) -> tuple[float, float, int, float]:
    """(cpu seconds, wall seconds, exit code, peak MiB of one process) of one subprocess run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PEAK, *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1) or "Traceback" in proc.stderr:
        raise SystemExit(f"{command[:4]}... failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return cpu, wall, proc.returncode, peak_mib(proc.stderr)


def best(command: list[str], repeat: int) -> tuple[float, float, float]:
    """The least CPU and wall time of ``repeat`` runs, and the largest peak memory."""
    runs = [measure(command) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[3] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="directory of Python files")
    parser.add_argument("--jobs", default="1", help="job counts, comma-separated (1,2,16)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--select", default="", help="rule selections, ';'-separated ('' is the default rules)"
    )
    parser.add_argument(
        "--warm", action="store_true", help="also time a re-check with a warm cache"
    )
    args = parser.parse_args()

    root = args.corpus or torch_distributed_dir()
    files = corpus_files(root)
    size = sum(os.path.getsize(f) for f in files)
    print(f"corpus: {root.name}/ ({len(files)} files, {size / 1e6:.1f} MB)")

    parse_cpu, parse_wall, parse_peak = best(
        [sys.executable, "-c", PARSE_ONLY, *files], args.repeat
    )
    print(
        f"parse only      : {parse_cpu:7.2f} s CPU  {parse_wall:7.2f} s wall "
        f"(peak {parse_peak:.0f} MiB)"
    )
    for selection in args.select.split(";"):
        for jobs in (int(j) for j in args.jobs.split(",")):
            command = _check_command(files, jobs, selection)
            cold_cpu, cold_wall, cold_peak = best([*command, "--no-cache"], args.repeat)
            what = f"jobs={jobs} select={selection or 'default'}"
            _report(f"cold, {what}", cold_cpu, cold_wall, parse_cpu, parse_wall, peak=cold_peak)
            if args.warm:
                with tempfile.TemporaryDirectory() as cache:
                    warm = [*command, "--cache-dir", cache]
                    measure(warm)  # fills the cache
                    warm_cpu, warm_wall, _ = best(warm, args.repeat)
                _report(f"warm, {what}", warm_cpu, warm_wall, cold_cpu, cold_wall, "cold")
                changed_cpu, changed_wall = _one_changed(root, jobs, selection, args.repeat)
                what = f"one file changed, {what}"
                _report(what, changed_cpu, changed_wall, cold_cpu, cold_wall, "cold")
    print(f"throughput (last cold run): {len(files) / cold_cpu:.1f} files per CPU-second")


def _one_changed(root: Path, jobs: int, selection: str, repeat: int) -> tuple[float, float]:
    """Best (cpu, wall) of a warm re-check of a copy of ``root`` after one file changed."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / root.name
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
        files = corpus_files(copy)
        command = [*_check_command(files, jobs, selection), "--cache-dir", f"{scratch}/cache"]
        measure(command)  # fills the cache
        original = Path(files[0]).read_bytes()
        runs = []
        for attempt in range(repeat):
            Path(files[0]).write_bytes(original + f"\n# changed {attempt}\n".encode())
            runs.append(measure(command))
    return min(r[0] for r in runs), min(r[1] for r in runs)


NO_SETTINGS = Path(__file__).resolve().parent / "no-settings.toml"  # a config file must be a file


def _check_command(files: list[str], jobs: int, selection: str) -> list[str]:
    command = [sys.executable, "-m", "distlint", "check", "--jobs", str(jobs), "-q"]
    command += ["--no-show-source", "--exit-zero", "--config", str(NO_SETTINGS)]
    if selection:
        command += ["--select", selection]
    return [*command, *files]


def _report(
    what: str,
    cpu: float,
    wall: float,
    base_cpu: float,
    base_wall: float,
    base: str = "parse",
    peak: float | None = None,
) -> None:
    memory = "" if peak is None else f"; peak {peak:.0f} MiB in one process"
    print(
        f"{what}: {cpu:7.2f} s CPU {wall:7.2f} s wall; "
        f"{cpu / base_cpu:.2f}x CPU, {wall / base_wall:.2f}x wall of the {base}{memory}"
    )


if __name__ == "__main__":
    main()
