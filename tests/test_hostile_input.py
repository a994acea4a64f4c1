"""Inputs that once ended a whole run (exit 2, nothing on stdout): each is now a DL000 finding
or a normal check, and the other files of the run keep their findings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GOOD_WITH_FINDING = (
    'import torch\n\n\ndef f(x):\n    return x\n\n\ng = torch.compile(f, backend="nvfuser")\n'
)
DISTLINT = (sys.executable, "-m", "distlint", "check")

CASES = {
    # coding cookies naming codecs that are not text encodings
    "rot13.py": (b"# -*- coding: rot13 -*-\nx = 1\n", "not a text encoding"),
    "hexcodec.py": (b"# coding: hex\nx = 1\n", "not a text encoding"),
    "undefined.py": (b"# coding: undefined\nx = 1\n", "not a text encoding"),
    # LibCST validation and logic errors
    "mixed.py": (b"x = 'a' b'b'\n", "syntax error"),
    "tstring.py": (b"x = 'a' t'b'\n", "syntax error"),
    # literals Python rejects, evaluated while looking at compile options
    "escape.py": (b'import torch\n@torch.compile(mode="\\x")\ndef f(x):\n    return x\n', None),
    "name.py": (b'import torch\n@torch.compile(mode="\\N{NOPE}")\ndef f(x):\n    return x\n', None),
    "bigint.py": (
        b"import torch\n@torch.compile(mode=" + b"9" * 4400 + b")\ndef f(x):\n    return x\n",
        None,
    ),
    # a NUL byte after the first 8 KiB
    "late_nul.py": (b"x = 1\n" * 3000 + b"y = '\0'\n", "NUL bytes"),
    # valid Python that LibCST does not read: said so, not called a syntax error
    "annotation.py": (b"(x): int = 1\n", "valid Python"),
    # chains CPython's parser refuses: LibCST once died on them (SIGSEGV), then took 20 s and
    # 9 GB before the per-file budget stopped it; now refused at once, as CPython does
    "unary_chain.py": (b"x = (" + b"-\n" * 20000 + b"y)\n", "too complex for Python's parser"),
    "lambda_chain.py": (b"x = " + b"lambda: " * 6000 + b"1\n", "too complex for Python's parser"),
    # a setup.py CPython refuses, read for the project's torch range: that read once ended the
    # run ("internal error: MemoryError"); its invalid escape must not warn on stderr either
    "setup.py": (
        b'x = "\\#"\ny = ' + b"lambda: " * 6000 + b"1\n",
        "too complex for Python's parser",
    ),
    # a match statement in a module class (DL406/DL407 once crashed on it)
    "match.py": (
        b"import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self, m):\n"
        b"        super().__init__()\n        match m:\n            case 1:\n"
        b"                self.l = nn.Linear(2, 2)\n\n    def forward(self, x):\n"
        b"        return self.l(x)\n",
        None,
    ),
    # 300 levels of elif: the summary's effects nest as deep, past pickle's recursion limit
    # when a worker hands the result back (the worker died: "the parser crashed")
    "elif_chain.py": (
        b"import torch.distributed as dist\n\nrank = dist.get_rank()\nif rank == 0:\n    pass\n"
        + b"".join(b"elif rank == %d:\n    dist.all_reduce(t)\n" % i for i in range(1, 300)),
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_hostile_file_never_loses_the_run(tmp_path: Path, name: str) -> None:
    data, dl000 = CASES[name]
    (tmp_path / name).write_bytes(data)
    (tmp_path / "good.py").write_text(GOOD_WITH_FINDING)
    for paths in ([name], [".", "--jobs", "1"], [".", "--jobs", "2"]):
        proc = subprocess.run(
            [
                sys.executable,
                "-W",
                "always",
                *DISTLINT[1:],
                "--select",
                "ALL",
                "--format",
                "json",
                *paths,
            ],
            cwd=tmp_path,
            capture_output=True,
            timeout=120,
        )
        assert proc.returncode in (0, 1), proc.stderr.decode()
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()
        assert b"Warning" not in proc.stderr, proc.stderr.decode()
        found = json.loads(proc.stdout)
        mine = [f for f in found if f["path"] == name]
        if dl000 is None:
            assert [f["code"] for f in mine if f["code"] == "DL000"] == []
        else:
            assert [f["code"] for f in mine] == ["DL000"] and dl000 in mine[0]["message"]
        if paths[0] == ".":
            assert ("good.py", "DL502") in [(f["path"], f["code"]) for f in found]


def test_a_project_rule_that_raises_loses_only_its_own_findings(tmp_path: Path) -> None:
    """DL201's analysis crashing (a RecursionError once) must not take DL502 with it."""
    (tmp_path / "good.py").write_text(GOOD_WITH_FINDING)
    boot = (
        "import sys\n"
        "from distlint.rules.registry import all_rules\n"
        "def boom(project):\n"
        "    raise RecursionError('injected')\n"
        "all_rules()['DL201'].check_project = classmethod(lambda cls, project: boom(project))\n"
        "from distlint.cli import main\n"
        "sys.argv = ['distlint', 'check', '--format', 'json', '--jobs', '1', '.']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", boot], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert [(f["path"], f["code"]) for f in json.loads(proc.stdout)] == [("good.py", "DL502")]
    assert "internal error in rule DL201 (rank-divergent-collective): RecursionError" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_long_operator_chain_over_short_lines_parses(tmp_path: Path) -> None:
    """7,000 lines of ``a +`` once killed distlint itself (SIGSEGV in LibCST's parser) with
    ``-j1``, with few files, and always through stdin: the parser now runs on a large stack."""
    chain = "x = (\n" + "a +\n" * 7000 + "a)\n"  # 7,000: SIGSEGV on an 8 MiB stack
    (tmp_path / "chain.py").write_text(chain)
    (tmp_path / "good.py").write_text(GOOD_WITH_FINDING)
    # stdin: the route that always crashed (one run: parsing such a chain takes seconds)
    proc = subprocess.run(
        [*DISTLINT, "--format", "json", "-", "--stdin-filename", "x.py"],
        cwd=tmp_path,
        input=chain,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    assert isinstance(json.loads(proc.stdout), list)


def test_catch_warnings_opening_with_a_compound_statement(tmp_path: Path) -> None:
    """DL504 read the first statements of ``with warnings.catch_warnings():`` as simple ones
    (a crash met in torchao, apex, Lightning and TransformerEngine tests)."""
    (tmp_path / "t.py").write_text(
        "import warnings\nimport torch\n\n\ndef test():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        for _ in range(2):\n            pass\n"
        "        torch.cuda.amp.GradScaler()\n"
    )
    proc = subprocess.run(
        [*DISTLINT, "--select", "DL504", "--format", "json", "t.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert [f["code"] for f in json.loads(proc.stdout)] == ["DL504"]


def test_a_file_name_that_is_not_utf8_is_reported_in_every_format(tmp_path: Path) -> None:
    """Reports written to a file (-o, --sarif-output) once failed on the name's lone
    surrogates; the name is shown with its undecodable byte escaped."""
    import os

    (tmp_path / os.fsdecode(b"bad\xff.py")).write_text(GOOD_WITH_FINDING)
    out, sarif = tmp_path / "out.txt", tmp_path / "out.sarif"
    proc = subprocess.run(
        [*DISTLINT, "-o", str(out), "--sarif-output", str(sarif), "bad\udcff.py"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr.decode()
    assert out.read_text(encoding="utf-8").startswith("bad\\xff.py:8:30: DL502 ")
    assert json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"]
