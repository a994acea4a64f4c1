"""The runner survives files that kill the parser's process (SIGSEGV), in any --jobs mode."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

# 6,000 chained lambdas on one line overflowed LibCST's native parser on a thread's default
# stack (SIGSEGV from about 5,000, libcst 1.9); on a large stack it parsed them in 20 s and
# 6.8 GB. CPython's parser refuses them ("too complex"), and so does distlint now, at once.
LAMBDAS = "import torch\nx = " + "lambda: " * 6000 + "1\n"
FINDING = 'import torch\ntorch.compile(f, backend="nvfuser")\n'
# A parser that dies on files holding CRASH_ME (inherited by forked workers and by the
# isolated re-check), to exercise the recovery of a process killed by a native crash.
BOOT = """
import os, signal, sys
import distlint.syntax.source as source
real = source.parse_module
def parse_module(text):
    if "CRASH_ME" in text:
        os.kill(os.getpid(), signal.SIGSEGV)
    return real(text)
source.parse_module = parse_module
from distlint.cli import main
sys.argv = ["distlint", *sys.argv[1:]]
main()
"""
# One line over 5,000 characters: such files are parsed in a process of their own.
CRASHER = "import torch\nx = 'CRASH_ME'" + " + 'a'" * 1000 + "\n"


def _check_json(tmp_path: Path, jobs: str, boot: bool, *args: str) -> tuple[int, list[dict], str]:
    prefix = [sys.executable, "-c", BOOT] if boot else [sys.executable, "-m", "distlint"]
    proc = subprocess.run(
        [*prefix, "check", "--format", "json", "--jobs", jobs, *args, "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parser_crash_is_a_dl000_and_other_files_are_still_checked(tmp_path: Path, jobs) -> None:
    (tmp_path / "crash.py").write_text(CRASHER)
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text(FINDING)
    code, findings, stderr = _check_json(tmp_path, jobs, boot=True)
    assert code == 1, stderr
    assert [(f["path"], f["code"]) for f in findings] == [("crash.py", "DL000")] + [
        (f"f{i}.py", "DL502") for i in range(5)
    ]
    assert "parser crashed" in findings[0]["message"]
    assert "Traceback" not in stderr


def test_chained_lambdas_that_once_crashed_the_parser_are_checked(tmp_path: Path) -> None:
    (tmp_path / "lambdas.py").write_text(LAMBDAS)
    (tmp_path / "f.py").write_text(FINDING)
    started = time.monotonic()
    code, findings, stderr = _check_json(tmp_path, "1", False, "--file-timeout", "0")
    assert code == 1, stderr
    assert [(f["path"], f["code"]) for f in findings] == [
        ("f.py", "DL502"),
        ("lambdas.py", "DL000"),
    ]
    assert "too complex for Python's parser" in findings[1]["message"]
    assert time.monotonic() - started < 30


def test_a_file_that_stalls_the_parser_is_reported_after_the_timeout(tmp_path: Path) -> None:
    from distlint.engine.runner import Task, _check_isolated
    from distlint.file_settings import FileSettings

    # LibCST needs minutes for a 5,000-link attribute chain (CPython rejects it outright).
    path = tmp_path / "stall.py"
    path.write_text("x = a" + ".b" * 5000 + "\n")
    task = Task(path, "stall.py", FileSettings(enabled=frozenset({"DL000", "DL502"})))
    result = _check_isolated(task, timeout=1.0)
    assert [f.code for f in result.findings] == ["DL000"]
    assert "did not finish within 1 s" in result.findings[0].message


# A project whose findings need the second pass in several files (compiled regions reached
# across modules, a project-scope DL201), spread over more files than are checked in-process,
# and a folder whose configuration loads a local plugin (a spawned worker loads it only when
# it meets one of its files, after files whose settings named no plugin).
_PROJECT_PARTS = (
    "fixtures/DL201/project",
    "fixtures/DL104",
    "fixtures/DL601",
    "fixtures/DL102",
    "examples/plugin",
)
_CHECK_ALL = (sys.executable, "-m", "distlint", "check", "--select=ALL", "--format=json")


def _check_parts(method: str, jobs: str) -> list[dict]:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [*_CHECK_ALL, "--exit-zero", "--jobs", jobs, *_PROJECT_PARTS],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "DISTLINT_START_METHOD": method},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_fork_spawn_and_job_counts_give_the_same_findings() -> None:
    """The second pass's facts reach spawned workers too (they were once silently dropped)."""
    reference = _check_parts("fork", "1")
    codes = {f["code"] for f in reference}
    # project- and region-scope findings, and a local plugin's
    assert {"DL201", "DL104", "DL601", "DL102", "XYZ001"} <= codes
    for method, jobs in (("fork", "3"), ("spawn", "3"), ("spawn", "1")):
        assert _check_parts(method, jobs) == reference, (method, jobs)


# A project with compiled code reached across modules, a cross-file DL201 and suppressions:
# one used on a project finding, one used on a region finding, unused ones (DL001).
_SUPPRESSING = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": (
        "import torch.distributed as dist\n\n\ndef sync(t):\n    dist.all_reduce(t)\n"
        "    return t\n\n\ndef show(x):\n    print(x)  # noqa: DL104\n    return x\n"
    ),
    "pkg/train.py": (
        "import torch\nimport torch.distributed as dist\nfrom pkg.helpers import show, sync\n\n\n"
        "@torch.compile\ndef step(x):\n    return show(x)\n\n\ndef log(t):\n"
        "    if dist.get_rank() == 0:\n        sync(t)  # distlint: ignore[DL201]\n"
        "    if dist.get_rank() == 1:\n        sync(t)  # noqa: DL102\n"
        "    return t  # noqa: DL999\n"
    ),
}


def test_every_mode_gives_the_same_findings_with_suppressions(tmp_path: Path) -> None:
    """Fork, spawn, one job, several, and the in-process run that reuses first-pass trees
    (``--file-timeout 0 -j1``): the same findings, suppressions and DL001 after every stage."""
    root = Path(__file__).resolve().parents[2]
    for part in _PROJECT_PARTS:
        shutil.copytree(root / part, tmp_path / part)
    for name, text in _SUPPRESSING.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    def check(method: str, *args: str) -> list[dict]:
        proc = subprocess.run(
            [*_CHECK_ALL, "--exit-zero", "--no-cache", *args, "."],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "DISTLINT_START_METHOD": method},
        )
        assert proc.returncode == 0, proc.stderr
        return [json.loads(proc.stdout), proc.stderr]

    reference = check("fork", "-j1")
    found = {(f["path"], f["code"], f["range"]["start"]["line"]) for f in reference[0]}
    assert ("pkg/helpers.py", "DL104", 10) not in found  # suppressed in the second pass's file
    assert ("pkg/train.py", "DL201", 13) not in found  # a project finding, suppressed
    assert ("pkg/train.py", "DL201", 15) in found
    assert ("pkg/train.py", "DL001", 15) in found  # noqa: DL102 on a line without DL102
    assert ("pkg/train.py", "DL001", 16) in found  # not a rule code
    assert not any(p == "pkg/helpers.py" and c == "DL001" for p, c, _ in found)
    for method, args in (
        ("fork", ("-j3",)),
        ("spawn", ("-j3",)),
        ("spawn", ("-j1",)),
        ("fork", ("-j1", "--file-timeout", "0")),
        ("fork", ("-j3", "--file-timeout", "0")),
    ):
        assert check(method, *args) == reference, (method, args)


# -- the per-file budget and the size cap ---------------------------------------------------------

# LibCST is superlinear on a long call chain: 2,500 links of `.b()` take seconds (not minutes).
SLOW = "x = a" + ".b()" * 2500 + "\n"


def _check(tmp_path: Path, *args: str, stdin: str | None = None) -> tuple[int, list[dict], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "distlint", "check", "--no-cache", "--format", "json", *args],
        cwd=tmp_path,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout or "null"), proc.stderr


def _slow_project(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(SLOW)
    for i in range(5):
        (tmp_path / f"f{i}.py").write_text(FINDING)


EXCEEDED = "not checked: exceeded the 0.5 s budget for one file (--file-timeout)"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_file_over_the_budget_is_a_dl000_and_the_run_goes_on(tmp_path: Path, jobs: str) -> None:
    _slow_project(tmp_path)
    started = time.monotonic()
    code, findings, stderr = _check(tmp_path, "--jobs", jobs, "--file-timeout", "0.5", ".")
    assert time.monotonic() - started < 30
    assert code == 1, stderr
    assert [(f["path"], f["code"]) for f in findings] == [
        (f"f{i}.py", "DL502") for i in range(5)
    ] + [("slow.py", "DL000")]
    assert findings[-1]["message"] == EXCEEDED
    assert stderr == ""


def test_the_budget_holds_for_stdin(tmp_path: Path) -> None:
    for extra in ([], ["--stdin-filename", "slow.py"]):
        code, findings, stderr = _check(tmp_path, "--file-timeout", "0.5", *extra, "-", stdin=SLOW)
        assert code == 1, stderr
        assert [(f["code"], f["message"]) for f in findings] == [("DL000", EXCEEDED)]


def test_the_budget_comes_from_the_configuration(tmp_path: Path) -> None:
    _slow_project(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.distlint]\nfile-timeout = 0.5\n")
    code, findings, stderr = _check(tmp_path, "--jobs", "2", ".")
    assert code == 1, stderr
    assert findings[-1]["message"] == EXCEEDED
    (tmp_path / "pyproject.toml").write_text('[tool.distlint]\nfile-timeout = "soon"\n')
    code, findings, stderr = _check(tmp_path, "slow.py")
    assert code == 2
    assert "key 'file-timeout' in [tool.distlint] must be a number of seconds" in stderr


def test_file_budget_precedence() -> None:
    from distlint.config.settings import Config
    from distlint.engine.tasks import FILE_TIMEOUT, file_budget

    assert file_budget(None, Config()) == FILE_TIMEOUT == 20
    assert file_budget(None, Config(file_timeout=3.0)) == 3.0
    assert file_budget(1.5, Config(file_timeout=3.0)) == 1.5
    assert file_budget(0, Config(file_timeout=3.0)) is None
    assert file_budget(None, Config(file_timeout=0.0)) is None


def _sleep_then(seconds: float, name: str):
    from distlint.engine.results import FileResult

    time.sleep(seconds)
    return FileResult(name)


def _spin(name: str):
    while True:
        pass


def _segfault(name: str):
    import faulthandler
    import os
    import signal

    faulthandler.disable()  # pytest's, inherited: the crash is expected
    os.kill(os.getpid(), signal.SIGSEGV)


def _raise(name: str):
    raise ValueError("a bug")


def test_the_pool_replaces_a_worker_that_stalls_or_dies() -> None:
    from distlint.engine.runner import _Pool

    calls = [
        (_spin, ("spin.py",), "spin.py"),
        (_sleep_then, (60, "stall.py"), "stall.py"),
        (_segfault, ("crash.py",), "crash.py"),
        (_raise, ("bug.py",), "bug.py"),
        *[(_sleep_then, (0, f"f{i}.py"), f"f{i}.py") for i in range(6)],
    ]
    started = time.monotonic()
    with _Pool(2, {}) as pool:
        results = pool.map(calls, 0.5)
    assert time.monotonic() - started < 15
    spin, stall, crash, bug, *rest = results
    # CPU time, else (sleeping) four times the budget in wall time
    for result in (spin, stall):
        assert [f.message for f in result.findings] == [
            "not checked: exceeded the 0.5 s budget for one file (--file-timeout)"
        ]
    assert [f.message for f in crash.findings] == [
        "the parser crashed on this file (the process died: SIGSEGV); it was not checked"
    ]
    assert [e.message for e in bug.errors] == [
        "internal error while checking the file: ValueError: a bug"
    ]
    assert [r.path for r in rest] == [f"f{i}.py" for i in range(6)]
    assert all(not r.findings and not r.errors for r in rest)


def _pid_of(name: str):
    from distlint.engine.results import FileResult
    from distlint.findings import ToolError

    return FileResult(name, errors=(ToolError(name, str(os.getpid())),))


def test_a_call_sent_ahead_survives_the_crash_or_stall_of_the_one_before_it() -> None:
    """One worker runs a call while the next waits in its pipe: when the running one kills
    the worker or runs past the budget, only that call is given up, and the one sent ahead
    is checked by the replacement worker."""
    from distlint.engine.runner import _Pool

    calls = [
        (_pid_of, ("a.py",), "a.py"),
        (_segfault, ("crash.py",), "crash.py"),
        (_pid_of, ("b.py",), "b.py"),
        (_spin, ("spin.py",), "spin.py"),
        (_pid_of, ("c.py",), "c.py"),
        (_pid_of, ("d.py",), "d.py"),
    ]
    with _Pool(1, {}) as pool:
        a, crash, b, spin, c, d = pool.map(calls, 0.5)
    assert [f.message for f in crash.findings] == [
        "the parser crashed on this file (the process died: SIGSEGV); it was not checked"
    ]
    assert [f.message for f in spin.findings] == [
        "not checked: exceeded the 0.5 s budget for one file (--file-timeout)"
    ]
    pids = [result.errors[0].message for result in (a, b, c, d)]
    assert all(not r.findings for r in (a, b, c, d))
    assert pids[0] != pids[1] != pids[2] == pids[3]  # a new worker after each loss


def test_the_pool_hands_out_large_files_first_and_returns_results_in_order(monkeypatch) -> None:
    from distlint.engine import runner

    sent: list[int] = []
    real = runner.Worker.send

    def spy(self, index, message):  # type: ignore[no-untyped-def]
        sent.append(index)
        return real(self, index, message)

    monkeypatch.setattr(runner.Worker, "send", spy)
    calls = [(_pid_of, (f"f{i}.py",), f"f{i}.py") for i in range(4)]
    with runner._Pool(1, {}) as pool:
        results = pool.map(calls, None, sizes=[10, 40, 20, 30])
    assert sent == [1, 3, 2, 0]
    assert [r.path for r in results] == ["f0.py", "f1.py", "f2.py", "f3.py"]


def _pid_after(name: str, seconds: float):
    time.sleep(seconds)
    return _pid_of(name)


def test_no_call_waits_behind_a_large_file() -> None:
    """Calls are sent ahead only behind small files: one queued behind the largest file
    would wait as long as that file takes while the other worker runs out of work (the
    second largest file of torch ran alone at the end of a 16-job check)."""
    from distlint.engine.runner import _Pool

    calls = [(_pid_after, ("large.py", 2.0), "large.py")]
    calls += [(_pid_of, (f"f{i}.py",), f"f{i}.py") for i in range(4)]
    with _Pool(2, {}) as pool:
        large, *small = pool.map(calls, None, sizes=[1_000_000, 10, 10, 10, 10])
    pids = {result.errors[0].message for result in small}
    assert len(pids) == 1  # the other worker checked every small file meanwhile
    assert large.errors[0].message not in pids


def _echo(name: str, payload: str):
    from distlint.engine.results import FileResult
    from distlint.findings import ToolError

    return FileResult(name, errors=(ToolError(name, payload),))


def test_large_calls_and_results_do_not_block_the_pool() -> None:
    """A call too large for the pipe is not sent ahead: the parent would block writing it
    while the worker blocks writing a large result the parent is not reading."""
    from distlint.engine.runner import _Pool

    payload = "x" * 2_000_000
    calls = [(_echo, (f"f{i}.py", payload), f"f{i}.py") for i in range(3)]
    started = time.monotonic()
    with _Pool(1, {}) as pool:
        results = pool.map(calls, 30)
    assert time.monotonic() - started < 30
    assert [r.errors[0].message == payload for r in results] == [True] * 3


def test_files_given_up_on_are_not_cached() -> None:
    from distlint.engine.checker import _unparsable
    from distlint.engine.runner import _cacheable

    assert not _cacheable(_unparsable("a.py", "not checked: exceeded the 1 s budget", 1, 0))
    assert not _cacheable(_unparsable("a.py", "the parser crashed on this file", 1, 0))
    assert _cacheable(_unparsable("a.py", "invalid syntax", 1, 0))


def test_a_file_over_the_size_cap_is_not_parsed(tmp_path: Path, monkeypatch) -> None:
    from distlint.engine import checker as engine
    from distlint.file_settings import FileSettings

    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * (2 * 1024 * 1024))  # 12 MiB
    code, findings, stderr = _check(tmp_path, "big.py")
    assert code == 1, stderr
    assert [(f["code"], f["message"]) for f in findings] == [
        ("DL000", "not checked: 12.0 MiB is over the 10 MiB size cap")
    ]
    monkeypatch.setattr(engine, "MAX_FILE_BYTES", 1024 * 1024)  # every entry point checks it
    settings = FileSettings(enabled=frozenset({"DL000"}))
    data = b"y = 2\n" * 200_000
    for result in (
        engine.analyze_file(engine.FileSource(data, "b.py"), settings),
        engine.analyze_file(engine.FileSource(data.decode(), "b.py"), settings),
    ):
        assert [f.message for f in result.findings] == [
            "not checked: 1.1 MiB is over the 1 MiB size cap"
        ]


# -- the project stage: linking and project rules, crash-safe and within a budget ----------------

_PROJECT_FILES = {
    "pkg/__init__.py": "",
    "pkg/comm.py": "import torch.distributed as dist\n\n\ndef sync(t):\n    dist.all_reduce(t)\n",
    "pkg/train.py": (
        "import torch\nimport torch.distributed as dist\nfrom pkg.comm import sync\n\n\n"
        "def log(t):\n    if dist.get_rank() == 0:\n        sync(t)\n\n\n"
        "@torch.compile\ndef step(x):\n    print(x)\n    return x\n\n\n"
        'g = torch.compile(print, backend="nvfuser")\n'
    ),
    "pkg/ops.py": (
        "import torch\n\n\n"
        '@torch.library.custom_op("demo::scale", mutates_args=())\n'
        "def scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n"
    ),
}


def _project_tasks(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The tasks of :data:`_PROJECT_FILES` written under ``tmp_path``."""
    from distlint.engine.runner import Task
    from tests.project_util import settings, write_tree

    paths = write_tree(tmp_path, _PROJECT_FILES)
    enabled = settings({"DL104", "DL201", "DL401", "DL502"})
    return [Task(p, p.relative_to(tmp_path).as_posix(), enabled) for p in paths]


def _run_project_files(tmp_path: Path, project_timeout: float | None = None):
    from distlint.engine.runner import run

    results = run(_project_tasks(tmp_path), 1, project_timeout=project_timeout)
    found = sorted((f.path, f.code) for r in results for f in r.findings)
    return found, [e.message for r in results for e in r.errors]


EVERYTHING = [
    ("pkg/ops.py", "DL401"),
    ("pkg/train.py", "DL104"),
    ("pkg/train.py", "DL201"),
    ("pkg/train.py", "DL502"),
]


def test_the_project_stage_finds_everything_within_its_budget(tmp_path: Path) -> None:
    assert _run_project_files(tmp_path, 60.0) == (EVERYTHING, [])


def test_first_passes_in_workers_measure_large_files_for_the_parent(
    tmp_path: Path, monkeypatch
) -> None:
    """A first pass in a worker of a file past ``PREMEASURE_CHARS`` measures its lazily
    located nodes while its tree is at hand: the parent places the project findings and the
    compile roots in it without parsing it again, and places them where it did before."""
    from distlint.engine import runner
    from distlint.syntax import spans

    tasks = _project_tasks(tmp_path)
    parent, parsed = os.getpid(), []
    real = spans._parse

    def counted(text: str):  # type: ignore[no-untyped-def]
        if os.getpid() == parent:
            parsed.append(text)
        return real(text)

    monkeypatch.setattr(spans, "_parse", counted)
    monkeypatch.setattr(runner, "_rules_alongside", lambda second, jobs: False)  # here, then
    found = {}
    for chars in (10**9, 0):  # none measured beforehand; every file
        monkeypatch.setattr(runner, "PREMEASURE_CHARS", chars)
        parsed.clear()
        results = runner.run(tasks, 2, file_timeout=60.0)
        found[chars] = [(r.path, r.findings) for r in results]
        assert bool(parsed) == bool(chars), chars
    assert found[0] == found[10**9]
    assert {(path, f.code) for path, findings in found[0] for f in findings} >= {
        ("pkg/train.py", "DL201"),
        ("pkg/ops.py", "DL401"),
    }


def test_project_rules_alongside_the_second_pass_find_what_they_find_before_it(
    tmp_path: Path, monkeypatch
) -> None:
    """With several forked workers, the project rules run in a process of their own while
    the second pass runs: the same findings as when they run in the parent before it."""
    from distlint.engine import runner

    tasks = _project_tasks(tmp_path)
    started = []
    real = runner._RulesAlongside.__init__

    def spy(self, *args):  # type: ignore[no-untyped-def]
        started.append(args)
        real(self, *args)

    monkeypatch.setattr(runner._RulesAlongside, "__init__", spy)
    alongside = [(r.path, r.findings, r.errors) for r in runner.run(tasks, 2, file_timeout=60.0)]
    assert len(started) == 1
    monkeypatch.setattr(runner, "_rules_alongside", lambda second, jobs: False)
    before = [(r.path, r.findings, r.errors) for r in runner.run(tasks, 2, file_timeout=60.0)]
    assert alongside == before
    assert sorted((path, f.code) for path, found, _ in before for f in found) == EVERYTHING


def test_project_rules_whose_process_dies_are_an_error_and_the_rest_stands(
    tmp_path: Path, monkeypatch
) -> None:
    from distlint.engine import runner

    tasks = _project_tasks(tmp_path)
    monkeypatch.setattr(runner, "project_rules_stage", lambda *args: os._exit(3))
    results = runner.run(tasks, 2, file_timeout=60.0)
    found = sorted((f.path, f.code) for r in results for f in r.findings)
    assert found == [("pkg/train.py", "DL104"), ("pkg/train.py", "DL502")]
    assert [e.message for r in results for e in r.errors] == [
        "internal error: the process running the project rules died; their findings are missing"
    ]


def test_a_crashing_project_rule_costs_its_findings_only(tmp_path: Path, monkeypatch) -> None:
    from distlint.rules.collectives.rank_divergent_collective import RankDivergentCollective

    def crash(cls, project):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    monkeypatch.setattr(RankDivergentCollective, "check_project", classmethod(crash))
    found, errors = _run_project_files(tmp_path)
    assert found == [f for f in EVERYTHING if f[1] != "DL201"]
    assert errors == [
        "internal error in rule DL201 (rank-divergent-collective): RuntimeError: boom"
    ]


def test_a_crash_while_linking_is_reported_and_file_findings_stand(
    tmp_path: Path, monkeypatch
) -> None:
    import distlint.engine.checker as engine

    def crash(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "link", crash)
    found, errors = _run_project_files(tmp_path)
    assert found == [("pkg/train.py", "DL502")]  # no project rule, no region rule
    assert errors == [
        "internal error while linking the project: RuntimeError: boom; project rules and "
        "region rules were not run"
    ]


@pytest.fixture
def stalled_stage_ends():  # type: ignore[no-untyped-def]
    """A stage past its budget runs on as a daemon thread holding the raised recursion limit
    (syntax/source.py) until it ends: wait for it, so that later tests start from the limit
    they expect (this test's stall left 30,000 to the next tests of a full run)."""
    yield
    import threading

    from distlint.syntax.source import limit_raised

    for thread in threading.enumerate():
        if thread.name == "distlint-deep" and thread is not threading.current_thread():
            thread.join(30)
    assert not limit_raised()


@pytest.mark.usefixtures("stalled_stage_ends")
def test_a_project_rule_past_the_budget_is_reported(tmp_path: Path, monkeypatch) -> None:
    """The rules that finished keep their findings; the one that overran and those after it
    are named, and the run does not wait for them."""
    from distlint.rules.custom_ops.custom_op_missing_fake import CustomOpMissingFake

    def stall(cls, project):  # type: ignore[no-untyped-def]
        time.sleep(5)
        return []

    monkeypatch.setattr(CustomOpMissingFake, "check_project", classmethod(stall))
    started = time.monotonic()
    found, errors = _run_project_files(tmp_path, 1.0)
    assert time.monotonic() - started < 4.5
    assert found == [f for f in EVERYTHING if f[1] != "DL401"]
    assert errors == [
        "rule DL401 (custom-op-missing-fake) did not finish within the 1 s budget of the project "
        "stage (--project-timeout); their findings are missing"
    ]


@pytest.mark.usefixtures("stalled_stage_ends")
def test_linking_past_the_budget_is_reported(tmp_path: Path, monkeypatch) -> None:
    import distlint.engine.checker as engine

    real = engine.link

    def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(5)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "link", slow)
    found, errors = _run_project_files(tmp_path, 1.0)
    assert found == [("pkg/train.py", "DL502")]
    assert errors == [
        "linking the project did not finish within the 1 s budget of the project stage "
        "(--project-timeout); project rules and region rules were not run"
    ]


def test_project_budget_precedence_and_configuration(tmp_path: Path) -> None:
    from distlint.config.settings import Config
    from distlint.engine.results import PROJECT_TIMEOUT
    from distlint.engine.tasks import project_budget

    assert project_budget(None, Config()) == PROJECT_TIMEOUT == 300
    assert project_budget(None, Config(project_timeout=3.0)) == 3.0
    assert project_budget(1.5, Config(project_timeout=3.0)) == 1.5
    assert project_budget(0, Config(project_timeout=3.0)) is None
    (tmp_path / "f.py").write_text(FINDING)
    code, findings, stderr = _check(tmp_path, "--project-timeout", "30", "f.py")
    assert (code, [f["code"] for f in findings], stderr) == (1, ["DL502"], "")
    (tmp_path / "pyproject.toml").write_text('[tool.distlint]\nproject-timeout = "later"\n')
    code, findings, stderr = _check(tmp_path, "f.py")
    assert code == 2
    assert "key 'project-timeout' in [tool.distlint] must be a number of seconds" in stderr


def _crash_in_the_parser(text: str):
    import faulthandler
    import os
    import signal

    faulthandler.disable()  # pytest's, inherited: the crash is expected
    os.kill(os.getpid(), signal.SIGSEGV)


def test_library_callers_get_the_budget_and_the_isolation(tmp_path: Path, monkeypatch) -> None:
    """The Python entry points (README, "From Python"): CheckSession has the command line's
    budget by default, check_alone too (one file, in a worker); checker.check_file does not."""
    import inspect

    from distlint.config.settings import CliOverrides, ConfigResolver, FileSettings
    from distlint.engine import runner
    from distlint.engine.session import CheckSession
    from distlint.syntax import source

    (tmp_path / "a.py").write_text(FINDING)
    session = CheckSession.for_paths(
        [tmp_path],
        ConfigResolver(),
        CliOverrides(),
        tmp_path,
        force_exclude=False,
        jobs=1,
        cache=None,
    )
    assert session.file_timeout == runner.FILE_TIMEOUT
    assert [f.code for f in session.check()] == ["DL502"]
    default = inspect.signature(runner.check_alone).parameters["file_timeout"].default
    assert default == runner.FILE_TIMEOUT

    settings = FileSettings(enabled=frozenset({"DL000", "DL502"}))
    slow = runner.check_alone(b"x = 1\n" * 300_000, "slow.py", settings, file_timeout=0.2)
    assert [f.message for f in slow.findings] == [
        "not checked: exceeded the 0.2 s budget for one file (--file-timeout)"
    ]
    monkeypatch.setattr(source, "parse_module", _crash_in_the_parser)  # forked workers inherit it
    crashed = runner.check_alone(FINDING.encode(), "crash.py", settings)
    assert [f.message for f in crashed.findings] == [
        "the parser crashed on this file (the process died: SIGSEGV); it was not checked"
    ]


def test_spawned_workers_take_second_pass_inputs_nested_past_the_recursion_limit(
    tmp_path: Path,
) -> None:
    """Under spawn, ``Process(args=...)`` pickles its arguments with plain pickle: a project
    whose summary holds a 1,500-branch elif chain of rank tests ended the whole run with an
    internal RecursionError. The inputs now travel packed (pickled on a large stack)."""
    chain = "".join(f"    elif rank == {i}:\n        dist.all_reduce(t)\n" for i in range(1, 1500))
    files = {
        "a.py": "import torch.distributed as dist\n\n\ndef sync(rank, t):\n"
        "    if rank == 0:\n        dist.all_reduce(t)\n" + chain,
        "b.py": "import torch\nfrom a import sync\n\n\n@torch.compile\ndef f(x):\n"
        "    return x.sum().item()\n",
        **{f"c{i}.py": f"def g{i}(x):\n    return x\n" for i in range(12)},
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    outputs = []
    for method, jobs in (("fork", "2"), ("spawn", "2")):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "distlint",
                "check",
                ".",
                "--no-cache",
                "--format",
                "json",
                "--jobs",
                jobs,
                "--select",
                "DL102",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "DISTLINT_START_METHOD": method},
        )
        assert proc.returncode == 1 and proc.stderr == "", (method, proc.stderr)
        outputs.append(json.loads(proc.stdout))
    assert [(f["path"], f["code"]) for f in outputs[0]] == [("b.py", "DL102")]
    assert outputs[1] == outputs[0]


def test_a_run_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path, monkeypatch) -> None:
    """The run pauses the collector and freezes the heap it starts with (and what survives
    its own collections); afterwards both are as before, so garbage made meanwhile is
    collected as usual."""
    import gc

    from distlint.engine import runner
    from distlint.file_settings import FileSettings

    for i in range(3):
        (tmp_path / f"f{i}.py").write_text(FINDING)
    tasks = [
        runner.Task(tmp_path / f"f{i}.py", f"f{i}.py", FileSettings(frozenset({"DL502"})))
        for i in range(3)
    ]
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    seen: list[tuple[bool, int]] = []
    real = runner._check

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "_check", spy)
    results = runner.run(tasks, jobs=1)
    assert [f.code for r in results for f in r.findings] == ["DL502"] * 3
    assert seen and all(not enabled and count > frozen for enabled, count in seen)
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_files_cyclic_garbage_is_collected_before_the_next_file(tmp_path: Path) -> None:
    """A file's rule context and its rank flow refer to each other (and keep the file's tree
    alive); with the collector paused, they are collected before the next file is checked,
    not every 200 files: a worker holds at most one file's garbage."""
    import gc

    from distlint.engine import runner
    from distlint.file_settings import FileSettings
    from distlint.rules.context import RuleContext

    source = (
        "import torch.distributed as dist\n\n\ndef f(t):\n"
        "    if dist.get_rank() == 0:\n        dist.all_reduce(t)\n"
    )
    settings = FileSettings(frozenset({"DL201", "DL502"}))
    tasks = []
    for i in range(4):
        (tmp_path / f"f{i}.py").write_text(source)
        tasks.append(runner.Task(tmp_path / f"f{i}.py", f"f{i}.py", settings))
    with runner._collector_paused():
        for task in tasks:
            runner._check_in_worker(task)
        alive = sum(isinstance(o, RuleContext) for o in gc.get_objects())
    assert alive <= 1
