"""Run a fixture's cases under torch in a subprocess and hand back what happened."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.proof.runner import MARKER

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    type: str | None
    message: str
    traceback: str


def run_cases(fixture: Path, *cases: str, timeout: float = 180) -> dict[str, Outcome]:
    """Outcomes of the fixture's ``case_*`` functions (all of them, or just ``cases``)."""
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        TORCHINDUCTOR_CACHE_DIR=str(REPO / ".pytest_cache" / "inductor"),
    )
    env.pop("TORCH_LOGS", None)  # an empty TORCH_LOGS crashes `import torch` (2.13.0)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.proof.runner", str(fixture), *cases],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            raw = json.loads(line[len(MARKER) :])
            return {name: Outcome(**data) for name, data in raw.items()}
    raise AssertionError(
        f"proof runner for {fixture} produced no result (exit {proc.returncode}):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )


def run_fixtures(
    folder: Path, kinds: tuple[str, ...] = ("bad", "good")
) -> dict[str, dict[str, Outcome]]:
    """Outcomes of several fixture files of one rule, each in its own subprocess, in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(kinds)) as pool:
        futures = {kind: pool.submit(run_cases, folder / f"{kind}.py") for kind in kinds}
        return {kind: future.result() for kind, future in futures.items()}
