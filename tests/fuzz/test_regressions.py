"""Programs the fuzzer (scripts/fuzz.py, test_fuzz.py) found distlint crashing on, made small.

Each test names the seed and program that found it; each must pass: the fix is in distlint.
"""

from __future__ import annotations

import sys
import threading

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.rules.registry import all_rules
from distlint.syntax.source import limit_raised, on_large_stack

ALL = FileSettings(enabled=frozenset(all_rules()))


def _clean(source: str) -> None:
    result = check_file(FileSource(source, "fuzz.py"), ALL)
    assert result.errors == ()
    assert [f.message for f in result.findings if f.code == "DL000"] == []


def test_a_long_attribute_chain_in_a_cuda_graph_file() -> None:
    """Seed 20260101, program p00016: DL604 visited the module with LibCST's recursive
    visitor and hit Python's recursion limit (RecursionError, exit 2) on a 395-link chain."""
    chain = "x" + "".join(f".a{i}" for i in range(400))
    _clean(f"import torch\nCHAIN = {chain}\nmodel = torch.compile(model, mode='reduce-overhead')\n")


def test_deep_trees_in_rules_that_print_or_visit_subtrees() -> None:
    # the same limit, reached by other rules' code generation (messages quote the code)
    deep = "(" * 150 + "t" + ")" * 150
    chain = "t" + ".a" * 1500
    _clean(
        "import torch\nimport torch.distributed as dist\n"
        f"@torch.compile(mode='reduce-overhead')\ndef f(t):\n    print({deep})\n"
        f"    dist.all_reduce({chain})\n    return {chain}.item()\n"
    )


def test_the_recursion_limit_is_raised_only_on_the_large_stack() -> None:
    # A stage of an earlier test that ran past its time budget (a loaded machine) goes on as a
    # daemon thread and holds the raised limit until it ends (see syntax/source.py): wait for it
    for thread in threading.enumerate():
        if thread.name == "distlint-deep" and thread is not threading.current_thread():
            thread.join(300)
    assert not limit_raised(), "a deep-stack call of an earlier test is still running"
    # Start from Python's default: whatever an earlier test left (a stalled stage's thread
    # holds 30,000 until it ends; tests/engine's budget tests now wait for theirs).
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)
    try:
        seen = on_large_stack(sys.getrecursionlimit)
        assert seen >= 30_000
        assert sys.getrecursionlimit() == 1_000
        names = on_large_stack(lambda: on_large_stack(lambda: threading.current_thread().name))
        assert names == "distlint-deep"  # nested calls stay on the same thread
    finally:
        sys.setrecursionlimit(saved)


def test_an_invalid_escape_prints_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Seed 50056, program p00032 (the device machine, CPython 3.12): a string literal with an
    invalid escape (``'\\#'``) made the evaluation of literals print CPython's
    ``SyntaxWarning: invalid escape sequence '\\#'`` on stderr (a DeprecationWarning before
    3.12, shown here with ``-W always``): noise in the user's terminal, a crash to the fuzzer."""
    import subprocess
    from pathlib import Path

    (tmp_path / "f.py").write_text(
        "import torch\nPATTERN = '\\#+'\n"
        "@torch.compile(mode='max-autotune\\#')\ndef f(x):\n    return x.split('\\#')\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-W", "always", "-m", "distlint", "check", "--select", "ALL", "f.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode in (0, 1), done
    assert done.stderr == ""


def test_a_tab_inside_indentation_that_only_cpython_reads() -> None:
    """Seed 56159, program p00017 (a mutant): a tab in the middle of an indentation
    (``'   \\t     '`` under a 4-space block). CPython reads it as 13 columns and accepts the
    file; LibCST's tokenizer rejects it. It was a DL000 "valid Python that distlint's parser
    (LibCST) cannot read"; the file is now read with that indentation written as spaces, and
    its findings point at the columns as written."""
    source = (
        "import torch\n"
        "@torch.compile(fullgraph=True)\n"
        "def f(x):\n"
        "    if True:\n"
        "   \t     print(x)\n"
        "    return x\n"
    )
    compile(source, "fuzz.py", "exec")  # valid Python
    result = check_file(FileSource(source, "fuzz.py"), ALL)
    assert result.errors == ()
    assert [(f.code, f.span.start.line, f.span.start.column) for f in result.findings] == [
        ("DL104", 5, len("   \t     ") + 1)
    ]
