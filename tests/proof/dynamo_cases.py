"""Run the compiled-region fixtures' ``case_*`` functions under Dynamo, once per test session.

All fixture files of the DL1xx rules run in ONE subprocess (torch is imported once): every case
runs after ``torch._dynamo.reset()`` with Dynamo's counters cleared; between files the dynamo
config is restored (some fixtures set module-level config) and a process group a file left
behind is destroyed. For each case we keep the
exception (``fullgraph=True`` failures), the return value, the graph-break reasons from
``counters["graph_break"]`` (``explain()`` under-reports), the reasons Dynamo
gave up (``counters["unimplemented"]``) and the number of graphs compiled.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

from tests.proof.harness import FIXTURES, REPO

MARKER = "DISTLINT-DL1XX-RESULT:"
SCRIPT = r"""
import importlib, importlib.util, json, os, sys, traceback
import torch, torch._dynamo
from torch._dynamo.utils import counters


def plain(value):
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


results = {}
for path in sys.argv[1:]:
    saved = torch._dynamo.config.get_config_copy()
    folder, _, name = path.rpartition("/")
    if os.path.exists(folder + "/__init__.py"):  # a package: its relative imports must work
        parent, _, package = folder.rpartition("/")
        sys.path.insert(0, parent)
        module = importlib.import_module(package + "." + name[: -len(".py")])
        sys.path.remove(parent)
    else:
        spec = importlib.util.spec_from_file_location("fixture_" + path.replace("/", "_"), path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    outcomes = {}
    for name in [n for n in vars(module) if n.startswith("case_")]:
        torch._dynamo.reset()
        counters.clear()
        value = None
        try:
            value = getattr(module, name)()
        except BaseException as exc:
            ok, kind = False, f"{type(exc).__module__}.{type(exc).__qualname__}"
            message = str(exc)[:3000]
            tb = "".join(traceback.format_exception(exc))[-3000:]
        else:
            ok, kind, message, tb = True, None, "", ""
        outcomes[name] = {
            "ok": ok,
            "type": kind,
            "message": message,
            "traceback": tb,
            "value": plain(value),
            "graphs": counters["stats"].get("unique_graphs", 0),
            "breaks": sorted(counters["graph_break"]),
            "unimplemented": sorted(counters["unimplemented"]),
        }
    results[path] = outcomes
    torch._dynamo.config.load_config(saved)
    torch._dynamo.reset()
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # files stay independent of each other
print("MARKER" + json.dumps(results))
""".replace("MARKER", MARKER)

RULES = sorted(p.name for p in FIXTURES.glob("DL1[0-9][0-9]") if p.is_dir())  # DL101-DL1xx


@dataclass(frozen=True)
class Run:
    ok: bool
    type: str | None
    message: str
    traceback: str
    value: object
    graphs: int
    breaks: list[str]
    unimplemented: list[str]

    @property
    def gb_ids(self) -> set[str]:
        return {m.upper() for b in self.breaks for m in re.findall(r"gb\d{4}", b)}


def fixture_files() -> list[str]:
    files = []
    for code in RULES:
        folder = FIXTURES / code
        if folder.is_dir():
            files += sorted(str(p.relative_to(REPO)) for p in folder.glob("*.py"))
            # packages of cross-module cases: their bad/good/traps files
            files += sorted(
                str(p.relative_to(REPO))
                for p in folder.glob("*/*.py")
                if (p.parent / "__init__.py").exists()
                and p.name.startswith(("bad", "good", "traps"))
            )
    return files


@cache
def dynamo_runs() -> dict[str, dict[str, Run]]:
    """Outcomes by fixture path and case name (one subprocess for the whole session)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONBREAKPOINT="0")
    env.pop("TORCH_LOGS", None)  # an empty TORCH_LOGS crashes `import torch` (2.13.0)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, *fixture_files()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            raw = json.loads(line[len(MARKER) :])
            return {
                path: {name: Run(**data) for name, data in cases.items()}
                for path, cases in raw.items()
            }
    raise AssertionError(f"no result (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def cases(runs: dict[str, dict[str, Run]], code: str, kind: str) -> dict[str, Run]:
    return runs[f"fixtures/{code}/{kind}.py"]
