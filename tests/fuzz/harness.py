"""Check generated programs with the real command line and judge the outcome.

A *batch* is a directory of programs, each a package ``pNNNNN/`` (its modules may import each
other). :func:`check_batch` runs ``distlint check --select ALL --format json`` on it twice, with
``--jobs 1`` and ``--jobs 2``, in fresh processes, and returns the problems it sees
(:class:`Problem`):

* ``crash``: an exit status other than 0 or 1, anything on stderr (an internal error, a rule
  that crashed, a traceback), output that is not JSON, a DL000 on a file CPython compiles
  (DL000 is for input that is really invalid), or the two job counts disagreeing;
* ``hang``: a file given up on at its time budget (DL000 "not checked: exceeded"), or the
  command not finishing within :data:`BATCH_TIMEOUT`.

When a batch has problems, :func:`culprits` checks its programs one by one to name them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.generator import valid

ROOT = Path(__file__).resolve().parents[2]
FILE_TIMEOUT = 20.0  # the command line's default
BATCH_TIMEOUT = 600.0


@dataclass(frozen=True)
class Problem:
    kind: str  # "crash" | "hang"
    where: str  # the batch or the program directory
    detail: str


def write_program(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8", errors="surrogatepass")


def check_environment() -> dict[str, str]:
    """The environment of every distlint run: this checkout first on the path, before whatever
    path the caller set (where libcst may live), no cache, no debug output."""
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "DISTLINT_NO_CACHE": "1"}
    env.pop("DISTLINT_DEBUG", None)
    return env


def preflight() -> str | None:
    """Why distlint cannot start in the campaign's environment, or None: a campaign whose every
    program "crashes" on an import error measures nothing."""
    proc = subprocess.run(
        [sys.executable, "-m", "distlint", "--version"],
        env=check_environment(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return (
            f"`python -m distlint --version` exits {proc.returncode}: {proc.stderr.strip()[-1000:]}"
        )
    return None


def run_check(target: Path, jobs: int, cwd: Path) -> subprocess.CompletedProcess | None:
    command = [sys.executable, "-m", "distlint", "check", "--select", "ALL", "--format", "json"]
    command += ["--no-cache", "--jobs", str(jobs), "--file-timeout", str(FILE_TIMEOUT)]
    env = check_environment()
    try:
        return subprocess.run(
            [*command, str(target.relative_to(cwd)) if target != cwd else "."],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=BATCH_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None


def judge(proc: subprocess.CompletedProcess | None, where: str, root: Path) -> list[Problem]:
    """The problems one run shows (see the module docstring)."""
    if proc is None:
        return [Problem("hang", where, f"no result within {BATCH_TIMEOUT:.0f} s")]
    problems = []
    if proc.returncode not in (0, 1):
        problems.append(Problem("crash", where, f"exit {proc.returncode}"))
    if proc.stderr.strip():
        problems.append(Problem("crash", where, f"stderr: {proc.stderr.strip()[-2000:]}"))
    try:
        findings = json.loads(proc.stdout)
    except ValueError:
        return [*problems, Problem("crash", where, f"not JSON: {proc.stdout[-500:]!r}")]
    for finding in findings:
        if finding.get("code") != "DL000":
            continue
        message = finding.get("message", "")
        path = finding.get("path", "")
        if message.startswith("not checked: exceeded"):
            problems.append(Problem("hang", path, message))
            continue
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if valid(text, path):
            problems.append(Problem("crash", path, f"DL000 on valid Python: {message}"))
    return problems


def check_batch(batch: Path) -> tuple[list[Problem], int]:
    """Problems of ``batch`` (checked with 1 and 2 jobs) and how many findings it gave."""
    one = run_check(batch, 1, batch)
    two = run_check(batch, 2, batch)
    problems = judge(one, str(batch), batch) + judge(two, str(batch), batch)
    if one is not None and two is not None and one.stdout != two.stdout:
        problems.append(Problem("crash", str(batch), "--jobs 1 and --jobs 2 differ"))
    try:
        count = len(json.loads(one.stdout)) if one is not None else 0
    except ValueError:
        count = 0
    return problems, count


def culprits(batch: Path) -> list[Problem]:
    """Check each program of ``batch`` alone; the problems, named by program."""
    found = []
    for program in sorted(p for p in batch.iterdir() if p.is_dir()):
        for problem in check_batch(program)[0]:
            found.append(Problem(problem.kind, str(program), problem.detail))
    return found


# -- what a batch holds ----------------------------------------------------------------------------

KINDS = ("torch", "grammar", "mutant")  # generator programs, hypothesmith programs, mutants


def grammar_programs(count: int, seed: int) -> list[str]:
    """``count`` programs from hypothesmith's grammar strategy, reproducibly from ``seed``."""
    if count <= 0:
        return []  # hypothesmith is a test extra: a campaign without grammar programs needs none
    import hypothesmith
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    found: list[str] = []
    if count <= 0:
        return found

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(hypothesmith.from_grammar())
    def collect(source: str) -> None:
        found.append(source)

    collect()
    return found[:count]


def fill_batch(batch: Path, seed: int, size: int, kinds: dict[str, float]) -> dict[str, int]:
    """Write ``size`` programs into ``batch`` (``pNNNNN/`` each), chosen by ``kinds``' weights.

    Reproducible from ``seed``; returns how many of each kind were written.
    """
    import random

    from tests.fuzz.generator import mutate, program

    rng = random.Random(seed)
    chosen = rng.choices(list(kinds), list(kinds.values()), k=size)
    counts = {kind: chosen.count(kind) for kind in KINDS}
    grammar = iter(grammar_programs(counts["grammar"], seed))
    for index, kind in enumerate(chosen):
        target = batch / f"p{index:05d}"
        if kind == "torch":
            write_program(target, program(random.Random(rng.getrandbits(64))))
        elif kind == "grammar":
            write_program(target, {"__init__.py": "", "g.py": next(grammar, "pass\n")})
        else:
            files = program(random.Random(rng.getrandbits(64)))
            name = rng.choice(sorted(n for n in files if n != "__init__.py"))
            files[name] = mutate(rng, files[name])
            write_program(target, files)
    return counts
