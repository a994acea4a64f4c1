"""The analysis a language-server job runs (``distlint.lsp.server.analyse``), in this process."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import libcst
import pytest

from distlint.config.settings import ConfigResolver
from distlint.lsp import server

TRAIN = """\
import torch
import torch.distributed as dist
from proj.helpers import save


@torch.compile(backend="nvfuser")
def step(x, out):
    dist.all_gather_object(out, x)
    return x


def finish(path):
    if dist.get_rank() == 0:
        save(path)
"""
HELPERS = "import torch.distributed as dist\n\n\ndef save(path):\n    dist.barrier()\n"


def _project(tmp_path: Path) -> Path:
    """A project whose ``proj/train.py`` (the buffer) imports ``proj/helpers.py``."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "helpers.py").write_text(HELPERS)
    path = tmp_path / "proj" / "train.py"
    path.write_text(TRAIN)
    return path


def _with_steps(count: int, comment: str = "") -> str:
    """TRAIN and ``count`` compiled steps (a DL502 and a DL203 in each)."""
    return TRAIN + "".join(
        f"\n\n@torch.compile(backend='nvfuser')\ndef step_{i}(x, out):\n"
        f"    dist.all_gather_object(out, x){comment}\n    return x * {i}\n"
        for i in range(count)
    )


def _job(tmp_path: Path, path: Path, text: str, version: int) -> server.Job:
    return server.Job(
        uri=path.as_uri(),
        version=version,
        text=text,
        generation=0,
        resolver=ConfigResolver(),
        features=server.ClientFeatures(),
        root=tmp_path,
    )


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text given to LibCST's parser from now on."""
    texts: list[str] = []
    real = libcst.parse_module

    def counting(text, *args, **kwargs):  # type: ignore[no-untyped-def]
        texts.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counting)
    return texts


def test_the_buffer_is_parsed_once_for_every_stage(tmp_path: Path, parsed: list[str]) -> None:
    """First pass, linking with the project and the second pass over the compiled code all
    use one tree of the buffer (the CLI's one-process run does the same): a second parse
    cost the editor about a parse per keystroke."""
    path = _project(tmp_path)
    edited = TRAIN + "# edited, not saved\n"
    analysis = server.analyse(server.AnalysisState(), _job(tmp_path, path, edited, 2))
    assert analysis.crash is None and analysis.tool_errors == ()
    codes = sorted(d["code"] for d in analysis.diagnostics)
    assert codes == ["DL201", "DL203", "DL502"]  # cross-file, second pass, first pass
    assert parsed.count(edited) == 1


def test_an_edit_of_a_large_buffer_reparses_only_what_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parsed: list[str]
) -> None:
    """The analysis process keeps the parsed pieces of a document's last text: after an
    edit, the parser sees only the pieces around it, and the diagnostics are those of a
    fresh analysis process (which parses all of it)."""
    path = _project(tmp_path)
    text = _with_steps(120)
    kept = server.AnalysisState()
    server.analyse(kept, _job(tmp_path, path, text, 1))
    middle = text.index("@torch.compile(backend='nvfuser')\ndef step_60")
    edited = text[:middle] + "# a comment\nimport os\n\n" + text[middle:]
    parsed.clear()
    again = server.analyse(kept, _job(tmp_path, path, edited, 2))
    reparsed = sum(map(len, parsed))
    assert 0 < reparsed < len(edited) // 5
    parsed.clear()
    fresh = server.analyse(server.AnalysisState(), _job(tmp_path, path, edited, 2))
    assert sum(map(len, parsed)) >= len(edited)
    assert again.crash is None and again.tool_errors == ()
    assert len(again.diagnostics) > 240  # DL502 and DL203 in every step
    assert again.diagnostics == fresh.diagnostics
    assert again.safe_fixes == fresh.safe_fixes


def test_every_edit_of_a_buffer_gives_a_fresh_analysis_diagnostics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits one after the other (lines added or removed above, in and below the compiled
    steps, a line's text changed, one that does not parse, then its fix), each analysed with
    what the analysis process kept of the texts before: the diagnostics of a fresh analysis
    process, positions included."""
    path = _project(tmp_path)
    text = _with_steps(80, "  # é")
    middle = text.index("@torch.compile(backend='nvfuser')\ndef step_40")
    edits = [
        text,
        "import os\n\n" + text,
        "import os\n\n" + text[:middle] + "y = 1\n\n" + text[middle:],
        text[:middle] + "y = 1\n\n" + text[middle:],
        text.replace("return x * 40", "return x * 40000"),
        text.replace("def step_41(x, out):\n", "def step_41(x, out):\n    x = (\n"),
        text.replace("def step_41(x, out):\n", "def step_41(x, out):\n    x = (x)\n"),
        text.replace("    dist.all_gather_object(out, x)  # é\n    return x * 7", "    pass"),
        text + "# edit\n",
    ]
    kept = server.AnalysisState()
    for version, edited in enumerate(edits, 1):
        again = server.analyse(kept, _job(tmp_path, path, edited, version))
        fresh = server.analyse(server.AnalysisState(), _job(tmp_path, path, edited, version))
        assert again.crash is None and again.tool_errors == ()
        assert again.diagnostics == fresh.diagnostics, version
        assert again.safe_fixes == fresh.safe_fixes, version
        assert len(again.diagnostics) > 100 or "x = (\n" in edited


def test_no_collection_before_the_second_pass_of_the_kept_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The garbage collector runs before each file's first pass only: before the buffer's
    second pass, on the tree its first pass kept, it would only walk that tree (which lives
    on)."""
    from distlint.engine import runner

    path = _project(tmp_path)
    collections: list[None] = []
    passes: list[bool] = []
    collect, analyze = runner._collect_before_a_file, runner.analyze_file

    def counting_collect() -> None:
        collections.append(None)
        collect()

    def counting_analyze(source, settings, second=None, *args):  # type: ignore[no-untyped-def]
        passes.append(second is not None)
        return analyze(source, settings, second, *args)

    monkeypatch.setattr(runner, "_collect_before_a_file", counting_collect)
    monkeypatch.setattr(runner, "analyze_file", counting_analyze)
    analysis = server.analyse(server.AnalysisState(), _job(tmp_path, path, TRAIN + "# edited\n", 2))
    assert sorted(d["code"] for d in analysis.diagnostics) == ["DL201", "DL203", "DL502"]
    assert passes.count(True) == 1  # the buffer's second pass
    assert len(collections) == passes.count(False)  # one before each first pass


def test_the_heap_is_trimmed_only_when_workers_are_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Giving freed pages back to the system before the second pass is for the workers it
    forks; an editor's check runs that pass in this process, where it only cost time."""
    from distlint.config.settings import CliOverrides
    from distlint.engine import runner

    trims: list[None] = []
    monkeypatch.setattr(runner, "release_freed_memory", lambda: trims.append(None))
    path = _project(tmp_path)
    analysis = server.analyse(server.AnalysisState(), _job(tmp_path, path, TRAIN + "# edited\n", 2))
    assert sorted(d["code"] for d in analysis.diagnostics) == ["DL201", "DL203", "DL502"]
    assert trims == []
    resolver = ConfigResolver()
    tasks = [
        runner.Task(p, str(p), resolver.file_settings(p, CliOverrides()))
        for p in (path, tmp_path / "proj" / "helpers.py")
    ]
    results = runner.run(tasks, 2, file_timeout=20.0)
    assert sorted(f.code for f in results[0].findings) == ["DL201", "DL203", "DL502"]
    assert trims == [None]


def test_cache_entries_are_written_after_the_reply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analysis process writes a check's cache entries once its reply went out
    (``after_reply``, which the worker runs next), not before."""
    import gc

    monkeypatch.delenv("DISTLINT_NO_CACHE", raising=False)
    path = _project(tmp_path)
    job = replace(_job(tmp_path, path, TRAIN + "# edited\n", 2), after_reply=True)
    cache = tmp_path / ".distlint_cache"
    state = server.AnalysisState()
    try:
        analysis = server.analyse(state, job)
        assert not gc.isenabled()  # paused until the reply went out
        assert list(cache.glob("??/*.entry")) == []
    finally:
        server.after_reply(state)
    assert gc.isenabled()
    assert sorted(d["code"] for d in analysis.diagnostics) == ["DL201", "DL203", "DL502"]
    assert len(list(cache.glob("??/*.entry"))) >= 2  # the first passes and the project stage
    # from those entries, in a new analysis process
    again = server.analyse(server.AnalysisState(), replace(job, after_reply=False))
    assert again.diagnostics == analysis.diagnostics


QUIET = "def save(path):\n    return path\n"


def test_the_workspace_index_sees_a_helper_changed_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analysis process that keeps its workspace index between jobs sees a helper changed
    on disk: reported by the client (a watched folder: that file is read again), or, where
    nothing watches, found by its status; each job gives a fresh process's diagnostics."""
    from distlint.lsp.workspace import ChangeLog
    from distlint.syntax import regular_files

    # digests are kept at once (not only for files changed 3 s before): a digest trusted
    # when it should not be would show here
    monkeypatch.setattr(regular_files, "SETTLED_NS", 0)
    monkeypatch.delenv("DISTLINT_NO_CACHE", raising=False)  # the cache keys files by digest

    path = _project(tmp_path)
    helpers = tmp_path / "proj" / "helpers.py"
    kept = server.AnalysisState()
    log = ChangeLog()

    def check(version: int, watched: Path | None) -> list[str]:
        job = replace(
            _job(tmp_path, path, TRAIN + f"# {version}\n", version), changes=log.changes(watched)
        )
        again = server.analyse(kept, job)
        assert again.diagnostics == server.analyse(server.AnalysisState(), job).diagnostics
        return sorted(d["code"] for d in again.diagnostics)

    assert check(1, None) == ["DL201", "DL203", "DL502"]
    helpers.write_text(QUIET)  # no event: its status says it changed
    assert check(2, None) == ["DL203", "DL502"]
    helpers.write_text(HELPERS)  # before the client's watchers were registered: unreported
    assert check(3, tmp_path) == ["DL201", "DL203", "DL502"]
    helpers.write_text(QUIET)
    log.record(str(helpers), listing=False)  # the client reports it
    assert check(4, tmp_path) == ["DL203", "DL502"]
    helpers.write_text(HELPERS)
    log.record(str(helpers), listing=False)
    assert check(4, tmp_path) == ["DL201", "DL203", "DL502"]
    helpers.unlink()
    log.record(str(helpers), listing=True)
    assert check(5, tmp_path) == ["DL203", "DL502"]
    other = tmp_path / "proj" / "other.py"  # no event: its folder's status says so
    other.write_text(HELPERS)
    (tmp_path / "proj" / "train.py").write_text(TRAIN.replace("proj.helpers", "proj.other"))
    assert check(6, None) == ["DL203", "DL502"]  # the buffer still imports proj.helpers
    path.write_text(TRAIN)
    helpers.write_text(HELPERS)
    log.record(str(helpers), listing=True)
    assert check(7, tmp_path) == ["DL201", "DL203", "DL502"]


def test_a_log_that_no_longer_reaches_back_looks_at_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changes dropped from the server's log before the analysis process saw them: the index
    looks at every file's status, so the helper's change is still seen."""
    from distlint.lsp.workspace import ChangeLog
    from distlint.syntax import regular_files

    monkeypatch.setattr(regular_files, "SETTLED_NS", 0)  # as above
    monkeypatch.delenv("DISTLINT_NO_CACHE", raising=False)

    path = _project(tmp_path)
    kept = server.AnalysisState()
    log = ChangeLog(limit=4)
    job = replace(_job(tmp_path, path, TRAIN, 1), changes=log.changes(tmp_path))
    assert "DL201" in [d["code"] for d in server.analyse(kept, job).diagnostics]
    (tmp_path / "proj" / "helpers.py").write_text(QUIET)
    for number in range(6):  # the helper's own report among those dropped
        log.record(
            str(tmp_path / "proj" / ("helpers.py" if number == 0 else f"x{number}.py")), False
        )
    assert log.start > 0
    job = replace(_job(tmp_path, path, TRAIN + "#\n", 2), changes=log.changes(tmp_path))
    assert "DL201" not in [d["code"] for d in server.analyse(kept, job).diagnostics]
