"""The first-pass cache: hits, misses, invalidation across files, corrupt and foreign entries,
concurrent runs, and the options that place or disable it."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from distlint.engine.cache import FirstPassCache
from distlint.findings import Position, Span

DISTLINT = (sys.executable, "-m", "distlint", "check")

HELPER_SYNC = """\
import torch.distributed as dist


def save_checkpoint(state, path):
    dist.barrier()
"""
HELPER_QUIET = """\
def save_checkpoint(state, path):
    return path
"""
TRAIN = """\
import torch.distributed as dist
from pkg.helpers import save_checkpoint


def finish(state, path):
    if dist.get_rank() == 0:
        save_checkpoint(state, path)
"""


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "helpers.py").write_text(HELPER_SYNC)
    (root / "pkg" / "train.py").write_text(TRAIN)
    return root


def _check(root: Path, *args: str, env: dict | None = None) -> list[tuple[str, str, int]]:
    found = _report(root, "--select", "DL201", *args, env=env)
    return [(f["path"], f["code"], f["range"]["start"]["line"]) for f in found]


def _report(root: Path, *args: str, env: dict | None = None) -> list[dict]:
    """``distlint check`` in ``root``, its JSON report."""
    environment = {k: v for k, v in os.environ.items() if k != "DISTLINT_NO_CACHE"}
    environment["DISTLINT_CACHE_KEY"] = "test-key"
    environment.update(env or {})
    proc = subprocess.run(
        [*DISTLINT, "--format", "json", "--exit-zero", "--jobs", "1", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _entries(directory: Path) -> list[Path]:
    """The entries of results (not the one of the files' digests, written once files are a
    few seconds old: see FileDigests)."""
    digests = FirstPassCache(directory, b"test-key").digests_key
    return sorted(p for p in directory.glob("??/*.entry") if p.stem != digests)


def test_a_warm_run_reuses_entries_and_an_edit_elsewhere_changes_the_finding(tmp_path) -> None:
    root = _project(tmp_path)
    cache = root / ".distlint_cache"
    assert _check(root, ".") == [("pkg/train.py", "DL201", 7)]
    entries = _entries(cache)
    assert len(entries) == 4  # one per file, one for the project stage
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    stamps = {p: p.stat().st_mtime_ns for p in entries}
    assert _check(root, ".") == [("pkg/train.py", "DL201", 7)]
    assert {p: p.stat().st_mtime_ns for p in _entries(cache)} == stamps  # all hits, no rewrite
    # the helper stops synchronising: the caller's finding goes, though train.py is unchanged
    (root / "pkg" / "helpers.py").write_text(HELPER_QUIET)
    assert _check(root, ".") == []
    (root / "pkg" / "helpers.py").write_text(HELPER_SYNC)
    assert _check(root, "pkg/train.py") == [("pkg/train.py", "DL201", 7)]


# runs ``distlint check`` in this process, then prints its JSON report's codes and lines and
# which of LibCST and the rule modules the run imported
IMPORTS_OF_A_CHECK = """
import contextlib, io, json, sys
from distlint.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
    main(["check", "--format", "json", "--exit-zero", "-j", "1", *sys.argv[1:]])
rules = sorted(m for m in sys.modules if m.startswith("distlint.rules.") and m.count(".") == 3)
found = [(f["code"], f["range"]["start"]["line"]) for f in json.loads(out.getvalue())]
print(json.dumps([found, "libcst" in sys.modules, len(rules)]))
"""


def test_a_re_check_where_nothing_changed_imports_neither_libcst_nor_any_rule(tmp_path) -> None:
    """Nothing changed: the project entry answers, and what reading it needs imports no parser
    and no rule (most of a warm run's cost was importing them); a changed file runs them."""
    root = _project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if k != "DISTLINT_NO_CACHE"}
    environment["DISTLINT_CACHE_KEY"] = "test-key"

    def check() -> list:
        done = subprocess.run(
            [sys.executable, "-c", IMPORTS_OF_A_CHECK, "--select", "ALL", "."],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            env=environment,
            check=True,
        )
        return json.loads(done.stdout)

    cold, cold_libcst, cold_rules = check()
    assert ["DL201", 7] in cold and cold_libcst and cold_rules > 50
    assert check() == [cold, False, 0]
    (root / "pkg" / "helpers.py").write_text(HELPER_QUIET)
    changed, changed_libcst, changed_rules = check()
    assert ["DL201", 7] not in changed and changed_libcst and changed_rules > 50


def test_corrupt_foreign_and_unsigned_entries_are_misses_and_rewritten(tmp_path) -> None:
    root = _project(tmp_path)
    expected = _check(root, ".")
    entries = _entries(root / ".distlint_cache")
    entries[0].write_bytes(b"garbage")
    entries[1].write_bytes(b"\0" * 32 + pickle.dumps({"not": "a result"}))
    assert _check(root, ".") == expected
    assert _check(root, ".", env={"DISTLINT_CACHE_KEY": "another-key"}) == expected
    for entry in entries[:2]:
        assert entry.read_bytes() != b"garbage" and len(entry.read_bytes()) > 64


def test_an_entry_signed_with_another_key_is_never_unpickled(tmp_path, monkeypatch) -> None:
    cache = FirstPassCache.open(tmp_path / "c")
    assert cache is not None
    cache.put("ab" + "0" * 38, {"path": "x"})
    other = FirstPassCache(tmp_path / "c", b"other secret")
    monkeypatch.setattr(pickle, "loads", lambda *_: pytest.fail("unpickled a foreign entry"))
    assert other.get("ab" + "0" * 38, "x") is None


def test_no_cache_and_cache_dir(tmp_path) -> None:
    root = _project(tmp_path)
    _check(root, "--no-cache", ".")
    assert not (root / ".distlint_cache").exists()
    _check(root, ".", env={"DISTLINT_NO_CACHE": "1"})
    assert not (root / ".distlint_cache").exists()
    _check(root, "--cache-dir", str(tmp_path / "elsewhere"), ".")
    assert len(_entries(tmp_path / "elsewhere")) == 4
    _check(root, ".", env={"DISTLINT_CACHE_DIR": str(tmp_path / "env")})
    assert len(_entries(tmp_path / "env")) == 4


def test_two_concurrent_runs_agree(tmp_path) -> None:
    root = _project(tmp_path)
    for i in range(6):
        (root / "pkg" / f"extra{i}.py").write_text(textwrap.dedent(TRAIN))
    command = [sys.executable, "-m", "distlint", "check", "--select", "DL201", "--format"]
    command += ["json", "--exit-zero", "--jobs", "2", "."]
    environment = {k: v for k, v in os.environ.items() if k != "DISTLINT_NO_CACHE"}
    environment["DISTLINT_CACHE_KEY"] = "test-key"
    runs = [
        subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True, env=environment)
        for _ in range(2)
    ]
    outputs = [json.loads(run.communicate(timeout=120)[0]) for run in runs]
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) == 7
    assert outputs[0] == json.loads(
        subprocess.run(command, cwd=root, capture_output=True, text=True, env=environment).stdout
    )


def test_the_cache_is_pruned_to_its_bound(tmp_path) -> None:
    cache = FirstPassCache.open(tmp_path / "c", max_bytes=10_000)
    assert cache is not None
    for i in range(20):
        cache.put(f"{i:02d}" + "0" * 38, {"path": "x", "pad": "y" * 2_000})
    cache.prune()
    total = sum(p.stat().st_size for p in _entries(tmp_path / "c"))
    assert 0 < total <= 8_000


def test_deferred_writes_are_read_from_memory_until_flushed(tmp_path) -> None:
    """The language server's cache: entries put during a check are written (and the cache
    pruned) after its reply went out; meanwhile they serve from memory, as signed entries."""
    from distlint.findings import ToolError

    cache = FirstPassCache.open(tmp_path / "c", max_bytes=10_000)
    assert cache is not None
    cache.defer_writes()
    for i in range(20):
        cache.put(f"{i:02d}" + "0" * 38, ToolError("x", "y" * 2_000))
    cache.prune()
    assert _entries(tmp_path / "c") == []
    entry = cache.get("00" + "0" * 38, "x")
    assert isinstance(entry, ToolError) and entry.message == "y" * 2_000
    assert cache.get("00" + "0" * 38, "elsewhere") is None
    cache.flush()
    total = sum(p.stat().st_size for p in _entries(tmp_path / "c"))
    assert 0 < total <= 8_000
    cache.put("99" + "0" * 38, ToolError("x", "z"))  # still deferred after a flush
    assert not (tmp_path / "c" / "99").exists()


def test_the_entries_are_listed_only_when_what_runs_wrote_may_reach_the_bound(
    tmp_path, monkeypatch
) -> None:
    """Each run adds what it wrote to a ledger; the entries are listed (and the oldest
    removed) only once the ledger's sum nears the bound, and the ledger then holds what is
    left."""
    listed: list[str] = []
    real_glob = Path.glob

    def glob(self: Path, pattern: str):  # type: ignore[no-untyped-def]
        listed.append(pattern)
        return real_glob(self, pattern)

    monkeypatch.setattr(Path, "glob", glob)
    listed_in = []
    for run in range(5):  # each writes an entry of 2 KB
        cache = FirstPassCache.open(tmp_path / "c", max_bytes=10_000)
        assert cache is not None
        cache.put(f"{run:02d}" + "0" * 38, {"path": "x", "pad": "y" * 2_000})
        cache.prune()
        if listed:
            listed_in.append(run)
        listed.clear()
    assert listed_in == [3, 4]  # 4 x 2 KB: over 80% of 10 KB, the oldest removed
    total = sum(p.stat().st_size for p in _entries(tmp_path / "c"))
    assert 0 < total <= 8_000
    assert (tmp_path / "c" / "written").read_text() == f"{total}\n"


def test_a_re_check_reads_the_project_entry_alone_and_no_summary_it_need_not(
    tmp_path: Path, monkeypatch
) -> None:
    """Two files staged. Nothing changed: the project stage's entry holds the whole output,
    no other entry is read. A comment appended to one: the stage's output serves, and of the
    other's cached first pass only what is reported is read, its summary and records (most
    of an entry) stay pickled. The other changed so that its caller's finding goes: the
    stage runs, each unchanged file's summary is read once."""
    from distlint.engine.results import PROJECT
    from distlint.engine.runner import StoredPass, Task, run
    from tests.project_util import settings, write_tree

    root = tmp_path / "project"
    paths = write_tree(root, STAGED)
    (tmp_path / "cache").mkdir()
    cache = FirstPassCache(tmp_path / "cache", b"key")
    staged = ("pkg/helpers.py", "pkg/train.py")
    tasks = [
        Task(p, name, settings({"DL104", "DL201"}), report=name in staged)
        for p in paths
        if (name := p.relative_to(root).as_posix())
    ]
    cold = run(tasks, 1, cache=cache)
    assert [(f.path, f.code) for r in cold for f in r.findings] == [("pkg/train.py", "DL201")]
    asked: list[str] = []
    read: list[bool] = []
    real_get, real_result = cache.get, StoredPass.result

    def get(key: str, display: str) -> object | None:
        asked.append(display)
        return real_get(key, display)

    def result(self: StoredPass, linked: bool = True):  # type: ignore[no-untyped-def]
        read.append(linked)
        return real_result(self, linked)

    monkeypatch.setattr(cache, "get", get)
    monkeypatch.setattr(StoredPass, "result", result)
    assert run(tasks, 1, cache=cache) == cold
    assert asked == [PROJECT] and read == []
    (root / "pkg" / "train.py").write_text(TRAIN + "# the end\n")
    assert [f for r in run(tasks, 1, cache=cache) for f in r.findings] == [
        f for r in cold for f in r.findings
    ]
    assert read == [False]  # helpers.py's findings; train.py itself is analysed again
    read.clear()
    (root / "pkg" / "helpers.py").write_text(HELPER_QUIET)
    assert [f for r in run(tasks, 1, cache=cache) for f in r.findings] == []
    # linked again: each unchanged file's summary is read (once), the edited file is analysed
    assert read == [True] * (len(paths) - 1)


def _staged_checks(tmp_path: Path, monkeypatch) -> tuple[Path, Callable[[], list[tuple[str, str]]]]:
    """The :data:`STAGED` project written under ``tmp_path``, its helper file, and a check of
    it with a cache of its own (each call a run of its own, as each CLI's) giving (path, code)
    of each finding; every file counts as settled when it is hashed."""
    import distlint.syntax.regular_files as regular_files
    from distlint.engine.runner import Task, run
    from tests.project_util import settings, write_tree

    monkeypatch.setattr(regular_files, "SETTLED_NS", -60 * 10**9)
    root = tmp_path / "project"
    paths = write_tree(root, STAGED)
    (tmp_path / "cache").mkdir()

    def check() -> list[tuple[str, str]]:
        cache = FirstPassCache(tmp_path / "cache", b"key")
        tasks = [Task(p, p.relative_to(root).as_posix(), settings({"DL201"})) for p in paths]
        return [(f.path, f.code) for r in run(tasks, 1, cache=cache) for f in r.findings]

    return root / "pkg" / "helpers.py", check


def test_an_edit_that_keeps_a_files_size_and_modification_time_reaches_the_findings(
    tmp_path: Path, monkeypatch
) -> None:
    """The files' digests are kept across runs and taken from their status: a helper edited
    so that it no longer synchronises, its size and modification time kept, still changes
    the caller's finding (its status-change time moved)."""
    helpers, check = _staged_checks(tmp_path, monkeypatch)

    assert check() == [("pkg/train.py", "DL201")]
    assert check() == [("pkg/train.py", "DL201")]
    stamp = helpers.stat()
    quiet = HELPER_SYNC.replace("dist.barrier()", "print(path)   ")
    assert len(quiet) == len(HELPER_SYNC)
    time.sleep(0.05)  # a later tick of the file system's clock
    helpers.write_text(quiet)
    os.utime(helpers, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert (helpers.stat().st_size, helpers.stat().st_mtime_ns) == (
        stamp.st_size,
        stamp.st_mtime_ns,
    )
    assert check() == []


def test_a_file_written_while_it_is_checked_leaves_nothing_cached_under_its_old_key(
    tmp_path: Path, monkeypatch
) -> None:
    """A helper written between the computation of its key and its analysis is analysed as
    written, and neither its first pass nor the project stage is cached under the key of the
    bytes it had: written back to those bytes, it gives their finding again, not the empty
    one its other text gave."""
    import distlint.engine.checker as checker

    helpers, check = _staged_checks(tmp_path, monkeypatch)

    real_read = checker.read_regular_file
    written: list[Path] = []

    def read_after_a_write(path: Path) -> bytes:  # the editor saves as the worker reads
        if path == helpers and not written:
            written.append(path)
            time.sleep(0.05)  # a later tick of the file system's clock
            helpers.write_text(HELPER_QUIET)
        return real_read(path)

    monkeypatch.setattr(checker, "read_regular_file", read_after_a_write)
    assert check() == []  # the helper as the worker read it
    assert written == [helpers]
    time.sleep(0.05)
    helpers.write_text(HELPER_SYNC)  # the bytes it was keyed by, back
    assert check() == [("pkg/train.py", "DL201")]
    assert check() == [("pkg/train.py", "DL201")]  # and cached now


def test_a_hook_on_a_file_edited_but_for_its_imports_reuses_the_files_linked_last_time(
    tmp_path: Path, monkeypatch
) -> None:
    """What is linked with the named file is cached under what it is found from: a comment
    appended to the named file finds it again without scanning the project; an import added
    to it links the module it imports."""
    import distlint.engine.tasks as tasks_module
    from distlint.config.settings import CliOverrides, ConfigResolver

    root = _project(tmp_path)
    (root / "pkg" / "ops.py").write_text("def op():\n    return 1\n")
    (tmp_path / "cache").mkdir()
    cache = FirstPassCache(tmp_path / "cache", b"key")
    scanned: list[int] = []
    real_related = tasks_module.related_files

    def related_files(*args, **kwargs):  # type: ignore[no-untyped-def]
        scanned.append(1)
        return real_related(*args, **kwargs)

    monkeypatch.setattr(tasks_module, "related_files", related_files)
    train = root / "pkg" / "train.py"

    def linked() -> list[str]:
        scanned.clear()
        tasks = tasks_module.context_tasks(
            [train], [train], ConfigResolver(), CliOverrides(), root, cache=cache
        )
        return [task.display for task in tasks]

    first = linked()
    assert first == ["pkg/__init__.py", "pkg/helpers.py"] and scanned
    train.write_text(TRAIN + "# the end\n")
    assert linked() == first and not scanned
    train.write_text(TRAIN + "from pkg import ops\n")
    assert linked() == [*first, "pkg/ops.py"] and scanned


STAGED = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": HELPER_SYNC,
    "pkg/train.py": TRAIN,
    "pkg/model.py": "import torch\n\n\n@torch.compile\ndef step(x):\n    print(x)\n    return x\n",
}


def test_a_re_check_of_unchanged_files_skips_linking_and_the_later_stages(
    tmp_path: Path, monkeypatch
) -> None:
    """Project findings and second-pass results are cached under every file's key: nothing
    changed, nothing is linked or walked again and the findings are the same; one file
    changed, all of it runs again."""
    import distlint.engine.checker as engine
    from distlint.engine.runner import Task, run
    from tests.project_util import settings, write_tree

    calls: list[str] = []
    real_link, real_analyze = engine.link, engine._analyze_source

    def link(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append("link")
        return real_link(*args, **kwargs)

    def analyze(text, path, settings, name, package, second, *rest):  # type: ignore[no-untyped-def]
        calls.append(f"{'second' if second is not None else 'first'} {path}")
        return real_analyze(text, path, settings, name, package, second, *rest)

    monkeypatch.setattr(engine, "link", link)
    monkeypatch.setattr(engine, "_analyze_source", analyze)
    root = tmp_path / "project"
    paths = write_tree(root, STAGED)
    (tmp_path / "cache").mkdir()
    cache = FirstPassCache(tmp_path / "cache", b"key")

    def check() -> list[tuple[str, str, int, int]]:
        tasks = [
            Task(p, p.relative_to(root).as_posix(), settings({"DL104", "DL201"})) for p in paths
        ]
        results = run(tasks, 1, cache=cache)
        return [
            (f.path, f.code, f.span.start.line, r.suppressed) for r in results for f in r.findings
        ]

    expected = [("pkg/model.py", "DL104", 6, 0), ("pkg/train.py", "DL201", 7, 0)]
    assert check() == expected
    assert calls.count("link") == 1 and "second pkg/model.py" in calls
    calls.clear()
    assert check() == expected
    assert calls == []
    (root / "pkg" / "helpers.py").write_text(HELPER_QUIET)
    assert check() == [("pkg/model.py", "DL104", 6, 0)]
    assert calls == ["first pkg/helpers.py", "link", "second pkg/model.py"]


def test_a_check_of_one_file_right_after_the_project_check_is_warm(tmp_path) -> None:
    """The hook's first run after ``check .``: the files linked for context take the full
    check's entries, though only project rules would run on them; nothing is analysed again:
    the new entries are the project stage's for this set of files, the import scans and the
    files linked with the named one."""
    root = _project(tmp_path)
    cache = root / ".distlint_cache"
    more = ("--extend-select", "DL104")  # a file rule: the full selection is not project-only
    whole = _check(root, *more, ".")
    before = set(_entries(cache))
    assert _check(root, *more, "pkg/train.py") == [f for f in whole if f[0] == "pkg/train.py"]
    assert len(set(_entries(cache)) - before) == 3


def test_a_re_check_of_one_file_in_an_unchanged_project_reads_only_its_own_entry(
    tmp_path: Path, monkeypatch
) -> None:
    """The hook run again on an unchanged project: the project stage's entry serves, so the
    first passes of the files linked for context are not needed and not unpickled; an edit
    of one of them brings them all back (and changes the finding)."""
    from distlint.engine.results import PROJECT
    from distlint.engine.runner import Task, run
    from tests.project_util import settings, write_tree

    root = tmp_path / "project"
    paths = write_tree(root, STAGED)
    (tmp_path / "cache").mkdir()
    cache = FirstPassCache(tmp_path / "cache", b"key")
    asked: list[str] = []
    real_get = cache.get

    def get(key: str, display: str) -> object | None:
        asked.append(display)
        return real_get(key, display)

    monkeypatch.setattr(cache, "get", get)

    def check() -> list[tuple[str, str, int]]:
        tasks = [
            Task(p, name, settings({"DL104", "DL201"}), report=name == "pkg/train.py")
            for p in paths
            if (name := p.relative_to(root).as_posix())
        ]
        return [
            (f.path, f.code, f.span.start.line)
            for r in run(tasks, 1, cache=cache)
            for f in r.findings
        ]

    assert check() == [("pkg/train.py", "DL201", 7)]
    asked.clear()
    assert check() == [("pkg/train.py", "DL201", 7)]
    assert asked == [PROJECT]  # it holds the output of the check that made it
    (root / "pkg" / "helpers.py").write_text(HELPER_QUIET)
    asked.clear()
    assert check() == []
    assert "pkg/helpers.py" in asked and "pkg/model.py" in asked


TRAIN_LOGGED = """\
import torch.distributed as dist
from pkg.helpers import save_checkpoint


def finish(state, path):
    print("saving")
    if dist.get_rank() == 0:
        save_checkpoint(state, path)
"""


def _staged_check(tmp_path: Path, monkeypatch, staged: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A hook-like check (``staged`` reported, the rest linked for context) with a cache, and
    the stages it ran: "link", and the files whose cached first pass it read."""
    import distlint.engine.checker as engine
    from distlint.engine.runner import Task, run
    from tests.project_util import settings, write_tree

    root = tmp_path / "project"
    paths = write_tree(root, {**STAGED, "pkg/train.py": TRAIN_LOGGED})
    (tmp_path / "cache").mkdir()
    cache = FirstPassCache(tmp_path / "cache", b"key")
    ran: list[str] = []
    real_link, real_get = engine.link, cache.get

    def link(*args, **kwargs):  # type: ignore[no-untyped-def]
        ran.append("link")
        return real_link(*args, **kwargs)

    def get(key: str, display: str) -> object | None:
        ran.append(display)
        return real_get(key, display)

    monkeypatch.setattr(engine, "link", link)
    monkeypatch.setattr(cache, "get", get)

    def check(cold: bool = False) -> list[tuple]:
        """The findings: path, code, line, column, message, related places; ``cold``:
        without the cache (what ``--no-cache`` gives)."""
        tasks = [
            Task(p, name, settings({"DL104", "DL201"}), report=name in staged)
            for p in paths
            if (name := p.relative_to(root).as_posix())
        ]
        ran.clear()
        return [
            (
                f.path,
                f.code,
                f.span.start.line,
                f.span.start.column,
                f.message,
                tuple((r.path, r.span.start.line, r.span.start.column) for r in f.related),
            )
            for r in run(tasks, 1, cache=None if cold else cache)
            for f in r.findings
        ]

    return root, check, ran


def test_an_edit_of_the_staged_file_the_project_stage_does_not_see_reuses_its_output(
    tmp_path: Path, monkeypatch
) -> None:
    """The hook on a staged file edited since the last run: an edit that changes nothing the
    project stage reads of it (a literal in a function body, a comment appended) reuses the
    stage's output (nothing linked, no other file's first pass read) with the findings a
    full run gives, also when the edited file's first pass is a cached one (it is parsed
    again to measure); so does one that only moves lines (a line inserted above the branch),
    the finding moved with them; one that changes a node the stage reported on (the call's
    text) or what the file links (the call removed) runs the stage again."""
    from distlint.engine.results import PROJECT

    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/train.py",))
    train = root / "pkg" / "train.py"
    found = check()
    assert [f[:4] for f in found] == [("pkg/train.py", "DL201", 8, 9)]
    assert "link" in ran
    edited = TRAIN_LOGGED.replace('"saving"', '"saving now"') + "# the end\n"
    train.write_text(edited)
    assert check() == found
    assert sorted(ran) == sorted([PROJECT, "pkg/train.py"])  # the stage's output, reused
    moved = TRAIN_LOGGED.replace('    print("saving")\n', '    print("saving")\n\n')
    train.write_text(moved)
    assert [f[:4] for f in check()] == [("pkg/train.py", "DL201", 9, 9)]
    assert "link" not in ran
    train.write_text(moved.replace("(state, path)", "(state,  path)"))
    assert [f[:4] for f in check()] == [("pkg/train.py", "DL201", 9, 9)]
    assert "link" in ran
    # first passes taken from the cache (they measured nothing): the file is parsed again
    for text, reused in ((TRAIN_LOGGED, False), (edited, True)):
        train.write_text(text)
        assert check() == found
        assert ("link" not in ran) == reused
    train.write_text(moved.replace("        save_checkpoint(state, path)\n", "        pass\n"))
    assert check() == []
    assert "link" in ran


def test_an_edit_of_a_staged_helper_that_stops_issuing_a_collective_reaches_its_caller(
    tmp_path: Path, monkeypatch
) -> None:
    """Both files staged: the helper's edit changes what the caller's file links to (it no
    longer issues a barrier), so the caller's DL201 goes, and comes back with the barrier."""
    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/helpers.py", "pkg/train.py"))
    helpers = root / "pkg" / "helpers.py"
    found = check()
    assert [f[:3] for f in found] == [("pkg/train.py", "DL201", 8)]
    helpers.write_text(HELPER_QUIET)
    assert check() == []
    assert "link" in ran
    helpers.write_text(HELPER_SYNC)
    assert check() == found


TRAIN_RANKED = """\
import torch.distributed as dist
from pkg.helpers import save_checkpoint


def finish(state, path):
    rank = dist.get_rank()
    if rank == 0:
        save_checkpoint(state, path)
"""


def _lines_of(found: list[tuple]) -> list[tuple]:
    """Each finding's line and its related places (path, line, column)."""
    return [(f[2], f[5]) for f in found]


def _reused_after(
    path: Path, text: bytes, check: Callable[..., list[tuple]], ran: list[str]
) -> list[tuple]:
    """The findings once ``path`` holds ``text``: the project stage's output served (nothing
    linked), and they are what a run without the cache gives."""
    path.write_bytes(text)
    found = check()
    assert "link" not in ran
    assert found == check(cold=True)
    return found


def test_a_line_inserted_above_the_branch_reuses_the_stage_and_moves_the_finding(
    tmp_path: Path, monkeypatch
) -> None:
    """Every position of the staged file moves down a line, nothing else changes: the stage's
    output serves (nothing linked), the finding, its message's "path:line" and its related
    places in the file move with the lines, the one in the helper stays; what a cold run
    gives."""
    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/train.py",))
    train = root / "pkg" / "train.py"
    ((_, _, line, _, message, related),) = check()
    assert line == 8 and "pkg/train.py:7" in message
    assert ("pkg/helpers.py", 5, 5) in related and ("pkg/train.py", 7, 8) in related
    moved = _reused_after(train, ("# a header\n" + TRAIN_LOGGED).encode(), check, ran)
    ((_, _, line, _, message, moved_related),) = moved
    assert line == 9 and "pkg/train.py:8" in message and "pkg/train.py:7" not in message
    assert moved_related == tuple(
        (path, row + (path == "pkg/train.py"), column) for path, row, column in related
    )


def test_lines_deleted_reuse_the_stage_and_move_the_finding_up(tmp_path: Path, monkeypatch) -> None:
    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/train.py",))
    train = root / "pkg" / "train.py"
    assert _lines_of(check())[0][0] == 8
    deleted = TRAIN_LOGGED.replace("\n\n\ndef", "\ndef").encode()
    assert _lines_of(_reused_after(train, deleted, check, ran))[0][0] == 6


def test_an_inserted_line_that_changes_what_the_rank_test_reads_runs_the_stage(
    tmp_path: Path, monkeypatch
) -> None:
    """``rank = 0`` inserted before ``if rank == 0:``: the lines move, and the test no longer
    reads a rank: the summary differs modulo the moved lines, so the stage runs again and
    the finding goes, as in a cold run."""
    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/train.py",))
    train = root / "pkg" / "train.py"
    train.write_text(TRAIN_RANKED)
    assert [f[:3] for f in check()] == [("pkg/train.py", "DL201", 8)]
    pinned = TRAIN_RANKED.replace("get_rank()\n", "get_rank()\n    rank = 0\n")
    train.write_text(pinned)
    found = check()
    assert "link" in ran
    assert found == check(cold=True) == []


def test_a_crlf_file_with_a_line_inserted_reuses_the_stage(tmp_path: Path, monkeypatch) -> None:
    """Lines end in CRLF, counted as positions count them: two lines inserted at the top move
    the finding down two lines."""
    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/train.py",))
    train = root / "pkg" / "train.py"
    crlf = TRAIN_LOGGED.replace("\n", "\r\n").encode()
    train.write_bytes(crlf)
    assert _lines_of(check())[0][0] == 8
    found = _reused_after(train, b"# a header\r\n\r\n" + crlf, check, ran)
    assert _lines_of(found)[0][0] == 10


def test_an_edit_that_moves_a_staged_helper_moves_the_callers_related_place_there(
    tmp_path: Path, monkeypatch
) -> None:
    """Both files staged, a line inserted at the helper's top: the caller's finding stays,
    its related place in the helper (the barrier) moves down a line; nothing is linked."""
    root, check, ran = _staged_check(tmp_path, monkeypatch, ("pkg/helpers.py", "pkg/train.py"))
    helpers = root / "pkg" / "helpers.py"
    ((_, _, line, _, _, related),) = check()
    moved = _reused_after(helpers, ("# a header\n" + HELPER_SYNC).encode(), check, ran)
    assert _lines_of(moved) == [
        (line, tuple((p, row + (p == "pkg/helpers.py"), column) for p, row, column in related))
    ]


def test_a_warm_hook_after_edits_that_move_lines_gives_what_no_cache_gives(tmp_path) -> None:
    """The command line: each edit of the staged file (lines inserted, deleted, CRLF, a
    changed call, a rank pinned), checked warm and with ``--no-cache``, gives the same
    report, related places and messages included."""
    root = _project(tmp_path)
    train = root / "pkg" / "train.py"
    _report(root, ".")
    _report(root, "--force-exclude", "pkg/train.py")  # the hook's entry of the project stage
    edits = [
        "# a header\n\n" + TRAIN,
        TRAIN.replace("\n\n\ndef", "\ndef"),
        ("# a header\n" + TRAIN).replace("\n", "\r\n"),
        "# a header\n" + TRAIN.replace("(state, path)", "(state,\n path)"),
        "# a header\n" + TRAIN_RANKED.replace("get_rank()\n", "get_rank()\n    rank = 0\n"),
        "# a header\n" + TRAIN_RANKED,
        "\n\n# a header\n" + TRAIN_RANKED,
    ]
    for text in edits:
        train.write_bytes(text.encode())
        warm = _report(root, "--force-exclude", "pkg/train.py")
        assert warm == _report(root, "--no-cache", "--force-exclude", "pkg/train.py")
    assert warm and all(f["path"] == "pkg/train.py" for f in warm)


def test_summaries_compare_field_by_field_lazy_nodes_by_key_and_span_at_any_depth() -> None:
    """The comparison that decides a reuse: equal data, lazy nodes equal by file, key and
    span (they have no equality of their own), a chain nested past the recursion limit, and
    an object it does not know never equal to another (so never reused)."""
    from distlint.engine.project_reuse import same_data
    from distlint.semantic.model import Effect
    from distlint.syntax.spans import NodeSpan

    def lazy(ordinal: int) -> NodeSpan:
        node = NodeSpan(None, "a.py", eager=False)
        node.key = ("If", ordinal, None)
        return node

    def chain(depth: int, ordinal: int) -> Effect:
        effect = Effect("exit", lazy(ordinal), name="return")
        for _ in range(depth):
            effect = Effect("branch", lazy(0), orelse=(effect,))
        return effect

    assert same_data(chain(3, 1), chain(3, 1))
    assert not same_data(chain(3, 1), chain(3, 2))
    assert same_data(chain(5_000, 1), chain(5_000, 1))
    assert not same_data(chain(5_000, 1), chain(5_000, 2))
    assert not same_data({"a": 1, "b": 2}, {"b": 2, "a": 1})  # order is part of a summary
    assert not same_data(object(), object())


def _span(first: int, last: int) -> Span:
    return Span(Position(first, 1, 1), Position(last, 2, 2))


def test_the_line_map_moves_runs_of_lines_and_nothing_a_line_was_added_inside() -> None:
    """Lines inserted at the top and between two lines, one replaced in place: each kept
    line moves by its run's offset (the replaced one too), a span over the inserted line does
    not move, nor the place of something not located once line 1 moved; a line appended moves
    only the end; CRLF lines are lines, and one whose break changed is a line replaced."""
    from distlint.engine.project_reuse import line_digests, line_map
    from distlint.syntax.spans import NOWHERE

    old = "a\nb\nc\nd\ne\n"
    lines = line_map(line_digests(old), line_digests("x\na\nb\nC\nd\ny\ne\n"))
    assert [lines.line(n) for n in range(1, 8)] == [2, 3, 4, 5, 7, 8, None]
    assert lines.span(_span(1, 3)) == _span(2, 4)
    assert lines.span(_span(4, 5)) is None
    assert lines.span(NOWHERE) is None
    assert not lines.moves_nothing
    same = line_map(line_digests(old), line_digests(old + "# the end\n"))
    assert [same.line(n) for n in range(1, 7)] == [1, 2, 3, 4, 5, 7]  # the end moved
    assert same.span(NOWHERE) == NOWHERE
    crlf = old.replace("\n", "\r\n")
    moved = line_map(line_digests(crlf), line_digests("x\r\n" + crlf))
    assert [moved.line(n) for n in range(1, 7)] == [2, 3, 4, 5, 6, 7]
    lf = line_map(line_digests(crlf), line_digests("x\r\n" + old))  # each break replaced
    assert [lf.line(n) for n in range(1, 7)] == [None] * 5 + [7]


def test_moved_findings_move_in_their_file_and_where_they_point_into_it() -> None:
    """The positions in the moved file move: a finding's span, its related place there and
    "a.py:N" in its message; another file's place, and a path that only ends like it, stay;
    a finding over a line added, or naming a line that moved from line 1, is not moved
    (the stage runs again)."""
    from distlint.engine.project_reuse import line_digests, line_map, moved_output
    from distlint.findings import Finding, Location, Severity

    lines = line_map(line_digests("a\nb\nc\n"), line_digests("x\na\nb\ny\nc\n"))

    def finding(path: str, span: Span, message: str = "", *related: Location) -> Finding:
        return Finding("DL201", "n", Severity.ERROR, message, path, span, related)

    there = Location("b.py", _span(2, 2))
    found = {
        "a.py": [finding("a.py", _span(2, 2), "at a.py:2, not xa.py:2", there)],
        "b.py": [finding("b.py", _span(2, 2), "", Location("a.py", _span(1, 2)), there)],
    }
    assert moved_output(found, {"a.py": lines}) == {
        "a.py": [finding("a.py", _span(3, 3), "at a.py:3, not xa.py:2", there)],
        "b.py": [finding("b.py", _span(2, 2), "", Location("a.py", _span(2, 3)), there)],
    }
    assert moved_output({"a.py": [finding("a.py", _span(2, 3))]}, {"a.py": lines}) is None
    assert moved_output({"b.py": [finding("b.py", _span(2, 2), "a.py:1")]}, {"a.py": lines}) is None
    unmoved = line_map(line_digests("a\nb\n"), line_digests("a\nB\n"))
    assert moved_output(found, {"a.py": unmoved}) is found
