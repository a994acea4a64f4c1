"""Fuzzing in the suite: distlint never crashes, never hangs, and --jobs does not matter.

A bounded run with fixed seeds (well under two minutes on two cores): one batch of programs
from the torch-flavoured generator, hypothesmith's grammar and mutants, checked by the real
command line with ``--jobs 1`` and ``--jobs 2`` (tests/fuzz/harness.py judges the outcome),
and hypothesmith programs checked in-process. The long run is ``scripts/fuzz.py``; its figure
is in the README. Every crash either finds becomes a regression test (test_regressions.py).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import hypothesmith
from hypothesis import HealthCheck, Phase, given, settings

from distlint.engine.runner import Task, run
from distlint.file_settings import FileSettings
from distlint.rules.registry import all_rules
from tests.fuzz.generator import program, valid
from tests.fuzz.harness import check_batch, culprits, fill_batch

SEED = 20260101


def test_the_generator_writes_valid_python_with_what_the_rules_look_at() -> None:
    programs = [program(random.Random(SEED + i)) for i in range(150)]
    texts = [text for files in programs for name, text in files.items() if name.endswith(".py")]
    assert all(valid(text) for text in texts)
    everything = "\n".join(texts)
    assert any("TORCH_LIBRARY_IMPL(" in files.get("ops.cpp", "") for files in programs)
    for feature in (
        "@torch.compile(",
        "torch.compile(model",
        "options={",
        "dist.all_reduce(",
        "dist.barrier()",
        "if dist.get_rank() == 0:",
        "break",
        "continue",
        "raise RuntimeError",
        "    return",
        "else:",
        "match ",
        "case [a, b, *rest]:",
        ":= ",
        "async def",
        "await asyncio.sleep(0)",
        "nn.ModuleList(",
        "torch.library.custom_op(",
        "torch.library.Library(",
        "register_fake(",
        "from . import",
        "torch._dynamo.config.",
        "model = DDP(",
        "TABLE = [",
        "BIG = 99999",
        "(torch.autograd.Function):",
        "with torch.cuda.graph(g):",
        "model.register_forward_hook(",
    ):
        assert feature in everything, feature
    cycles = [
        files
        for files in programs
        if re.search(r"from \. import b|from \.b import|import b\n", files.get("a.py", ""))
        and re.search(r"from \. import a|from \.a import|import a\n", files.get("b.py", ""))
    ]
    assert cycles  # modules that import each other
    assert max(text.count("\n") for text in texts) > 300  # long functions
    assert max(len(line) - len(line.lstrip()) for line in everything.splitlines()) > 80  # deep


def test_generated_programs_never_crash_and_jobs_do_not_matter(tmp_path: Path) -> None:
    batch = tmp_path / "batch"
    counts = fill_batch(batch, SEED, 36, {"torch": 0.7, "grammar": 0.15, "mutant": 0.15})
    assert all(counts.values()), counts
    problems, findings = check_batch(batch)
    if problems:  # name the programs
        problems = culprits(batch) or problems
    assert problems == []
    assert findings > 100  # the programs exercise the rules


ALL = FileSettings(enabled=frozenset(all_rules()))


@settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(hypothesmith.from_grammar())
def test_grammar_programs_never_crash_the_engine(source: str) -> None:
    data = source.encode("utf-8", "surrogatepass")
    (result,) = run([Task(Path("fuzz/g.py"), "fuzz/g.py", ALL, data=data)], 1)
    assert result.errors == ()
    decodable = not re.search("[\ud800-\udfff]", source)
    if decodable and valid(source):
        assert [f.message for f in result.findings if f.code == "DL000"] == []


def test_the_long_run_script_reports_programs_crashes_and_hangs(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "fuzz.py"
    keep = str(tmp_path / "keep")
    proc = subprocess.run(
        [sys.executable, str(script), "--programs", "3", "--seed", "3", "--keep", keep],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert (summary["programs"], summary["crashes"], summary["hangs"]) == (3, 0, 0)
    assert sum(summary["kinds"].values()) == 3
    assert not list((tmp_path / "keep").iterdir())


def test_the_long_run_script_takes_a_mix_and_a_time_limit(tmp_path: Path) -> None:
    """``--kinds`` (hypothesmith left out where it is not installed) and ``--seconds`` (no
    batch handed out after it: 0 s runs none and still prints the summary)."""
    import argparse
    import json
    import subprocess
    import sys

    import pytest

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    try:
        from fuzz import parse_kinds
    finally:
        sys.path.pop(0)
    assert parse_kinds("torch=0.9,mutant=0.1") == {"torch": 0.9, "mutant": 0.1}
    with pytest.raises(argparse.ArgumentTypeError, match="unknown kind 'python'"):
        parse_kinds("python=1")
    script = Path(__file__).resolve().parents[2] / "scripts" / "fuzz.py"
    options = ["--programs", "50", "--seconds", "0", "--kinds", "torch=1"]
    proc = subprocess.run(
        [sys.executable, str(script), *options, "--keep", str(tmp_path / "keep")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert (summary["programs"], summary["crashes"], summary["hangs"]) == (0, 0, 0)


def test_a_mix_without_grammar_programs_needs_no_hypothesmith(tmp_path: Path, monkeypatch) -> None:
    """The 16-core campaign machine has no hypothesmith: every batch failed on importing it."""
    import sys

    monkeypatch.setitem(sys.modules, "hypothesmith", None)  # import raises ImportError
    counts = fill_batch(tmp_path, 7, 4, {"torch": 0.5, "mutant": 0.5})
    assert counts["grammar"] == 0 and sum(counts.values()) == 4


def test_distlint_runs_with_the_callers_path_and_a_broken_start_is_caught(monkeypatch) -> None:
    """The caller's PYTHONPATH (where libcst may live) stays behind this checkout; an
    environment where distlint cannot start stops the campaign instead of reporting every
    program as a crash (a run of 22,450 "crashes", all one ModuleNotFoundError)."""
    import os
    import sys

    from tests.fuzz import harness

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/opt/site", "/opt/more"]))
    path = harness.check_environment()["PYTHONPATH"].split(os.pathsep)
    assert path == [str(harness.ROOT), "/opt/site", "/opt/more"]
    assert harness.preflight() is None
    monkeypatch.setattr(sys, "executable", "/bin/false")
    assert "exits 1" in (harness.preflight() or "")
