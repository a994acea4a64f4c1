"""Engine behaviour on good and bad input: DL000 for anything unparsable, never a traceback.

Spec: syntax errors, undecodable/binary files and bad coding cookies become one DL000 finding;
latin-1 and BOM files are checked normally; pathological nesting is reported like CPython does;
a crashing rule is a ToolError (exit 2) that does not hide other rules' findings; findings are
sorted and independent of ``--jobs``; columns count code points and UTF-16 units.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.rules.collectives.object_collective_in_compiled_region import (
    ObjectCollectiveInCompiledRegion,
)

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = FileSettings(enabled=frozenset({"DL000", "DL203", "DL502"}))

DL203_SRC = """\
import torch
import torch.distributed as dist


@torch.compile
def step(x):
    dist.all_gather_object([None], x)
    return x
"""
DL502_LINE = 'g = torch.compile(print, backend="nvfuser")'
BOTH_SRC = DL203_SRC + "\n\n" + DL502_LINE + "\n"
DEEP = "x = " + "(" * 1000 + "1" + ")" * 1000 + "\n"


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def where(result) -> list[tuple[str, int, int]]:
    return [(f.code, f.span.start.line, f.span.start.column) for f in result.findings]


def cli(args: list[str], **kwargs):
    env = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
    return CliRunner().invoke(main, args, env=env, **kwargs)


def distlint_subprocess(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"FORCE_COLOR", "DISTLINT_DEBUG"}}
    env["NO_COLOR"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "distlint", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# -- the baseline ----------------------------------------------------------------------------------


def test_triggers_are_found_where_expected() -> None:
    result = check_file(FileSource(BOTH_SRC, "t.py"), DEFAULT)
    assert result.errors == ()
    column = DL502_LINE.index('"nvfuser"') + 1
    assert where(result) == [("DL203", 7, 5), ("DL502", 11, column)]


# -- syntax errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "def f(:\n    pass\n",
        "x = (1,\n",
        'print "hello"\n',
        "import torch\nx = 1 +* 2\n",
        "if True:\n\tx = 1\n        y = 2\n",
        "def f():\nreturn 1\n",
        "class C:\n    def f(self)\n        pass\n",
    ],
    ids=["bad-params", "unclosed", "print-stmt", "bad-operator", "tabs", "indent", "no-colon"],
)
def test_syntax_error_is_one_dl000_with_cpythons_message_and_location(source: str) -> None:
    with pytest.raises(SyntaxError) as info:
        ast.parse(source)
    err = info.value
    result = check_file(FileSource(source, "bad.py"), DEFAULT)
    assert result.errors == ()
    assert codes(result) == ["DL000"]
    finding = result.findings[0]
    assert err.msg in finding.message
    assert finding.span.start.line == err.lineno
    assert finding.span.start.column == err.offset
    assert finding.severity.value == "error"
    assert finding.path == "bad.py"


def test_syntax_error_hides_nothing_else_and_is_reported_even_when_other_rules_off() -> None:
    source = DL203_SRC + "def broken(:\n"
    result = check_file(FileSource(source, "bad.py"), FileSettings(enabled=frozenset({"DL000"})))
    assert codes(result) == ["DL000"]


def test_syntax_error_through_the_cli_exits_1_without_traceback(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text("def f(:\n    pass\n")
    result = cli(["check", "bad.py"])
    assert result.exit_code == 1, result.output
    assert "bad.py:1:7: DL000" in result.stdout
    assert "Traceback" not in result.output


# -- bytes that are not Python source --------------------------------------------------------------


def test_undecodable_bytes_give_dl000_naming_the_problem() -> None:
    result = check_file(FileSource(b"x = 1\ny = '\xff'\n", "bad.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    message = result.findings[0].message.lower()
    assert "decode" in message
    assert "utf-8" in message
    assert "0xff" in message
    assert result.findings[0].span.start.line == 2


def test_binary_file_gives_dl000() -> None:
    data = b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256))
    result = check_file(FileSource(data, "lib.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    assert "binary" in result.findings[0].message.lower()


def test_nul_byte_in_text_gives_dl000() -> None:
    result = check_file(FileSource(b"import torch\n\x00\n", "nul.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    assert "nul" in result.findings[0].message.lower()


def test_unknown_coding_cookie_gives_dl000() -> None:
    result = check_file(FileSource(b"# -*- coding: klingon -*-\nx = 1\n", "c.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    message = result.findings[0].message
    assert "encoding" in message
    assert "klingon" in message


def test_cookie_contradicting_bom_gives_dl000() -> None:
    result = check_file(FileSource(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", "c.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    assert "encoding" in result.findings[0].message


def test_latin1_file_with_cookie_is_checked_normally() -> None:
    source = DL203_SRC.replace(
        "    dist.all_gather_object([None], x)",
        "    s = 'déjà vu, ñ'; dist.all_gather_object([s], x)",
    )
    source = "# -*- coding: latin-1 -*-\n" + source
    data = source.encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    result = check_file(FileSource(data, "latin.py"), DEFAULT)
    assert result.errors == ()
    line = source.splitlines()[7]
    column = line.index("dist.") + 1
    assert where(result) == [("DL203", 8, column)]
    assert result.findings[0].span.start.column_utf16 == column


def test_utf8_bom_file_is_checked_normally_and_bom_does_not_shift_columns() -> None:
    data = b"\xef\xbb\xbf" + BOTH_SRC.encode("utf-8")
    result = check_file(FileSource(data, "bom.py"), DEFAULT)
    assert result.errors == ()
    assert where(result) == where(check_file(FileSource(BOTH_SRC, "bom.py"), DEFAULT))
    assert where(result)[0] == ("DL203", 7, 5)


def test_bom_file_through_the_cli_shows_the_right_snippet(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + DL203_SRC.encode())
    result = cli(["check", "bom.py"])
    assert result.exit_code == 1
    assert "bom.py:7:5: DL203" in result.stdout
    assert "\ufeff" not in result.stdout


def test_crlf_and_cr_line_endings() -> None:
    for newline in ("\r\n", "\r"):
        source = BOTH_SRC.replace("\n", newline)
        result = check_file(FileSource(source, "nl.py"), DEFAULT)
        assert where(result) == where(check_file(FileSource(BOTH_SRC, "nl.py"), DEFAULT)), repr(
            newline
        )


def test_empty_and_whitespace_only_files_are_clean() -> None:
    for data in (b"", b"\n", b"   \n\n", b"\xef\xbb\xbf", b"# just a comment"):
        result = check_file(FileSource(data, "e.py"), DEFAULT)
        assert result.findings == () and result.errors == (), data


# -- pathological nesting --------------------------------------------------------------------------


def test_deep_nesting_is_dl000_like_cpython() -> None:
    with pytest.raises(SyntaxError, match="too many nested parentheses"):
        compile(DEEP, "deep.py", "exec")
    result = check_file(FileSource(DEEP, "deep.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    assert "too many nested parentheses" in result.findings[0].message
    assert result.findings[0].span.start.line == 1


def test_deep_nesting_of_brackets_and_braces() -> None:
    for source in ("x = " + "[" * 1000 + "]" * 1000, "x = " + "{1: " * 1000 + "2" + "}" * 1000):
        result = check_file(FileSource(source + "\n", "deep.py"), DEFAULT)
        assert codes(result) == ["DL000"]
        assert "too many nested parentheses" in result.findings[0].message


def test_brackets_inside_strings_and_comments_do_not_count_as_nesting() -> None:
    source = "s = '" + "(" * 1000 + "'\n# " + "[" * 1000 + "\n" + DL203_SRC
    result = check_file(FileSource(source, "s.py"), DEFAULT)
    assert codes(result) == ["DL203"]


def test_deep_nesting_through_the_cli_in_a_subprocess(tmp_path) -> None:
    (tmp_path / "deep.py").write_text(DEEP)
    (tmp_path / "other.py").write_text(BOTH_SRC)
    proc = distlint_subprocess(["check", "--format", "json", "."], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    found = {(f["path"], f["code"]) for f in json.loads(proc.stdout)}
    assert found == {("deep.py", "DL000"), ("other.py", "DL203"), ("other.py", "DL502")}


# -- files that cannot be read ---------------------------------------------------------------------


def test_a_directory_named_like_a_module_is_a_file_not_read(tmp_path) -> None:
    (tmp_path / "x.py").mkdir()
    result = check_file(FileSource.on_disk(tmp_path / "x.py", "x.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    assert "cannot read" in result.findings[0].message
    assert result.findings[0].path == "x.py"


def test_a_broken_symlink_is_a_file_not_read(tmp_path) -> None:
    (tmp_path / "x.py").symlink_to(tmp_path / "missing.py")
    result = check_file(FileSource.on_disk(tmp_path / "x.py", "x.py"), DEFAULT)
    assert codes(result) == ["DL000"]
    assert "cannot read" in result.findings[0].message


def test_cli_broken_symlink_argument_is_an_error_naming_it(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").symlink_to(tmp_path / "missing.py")
    result = cli(["check", "x.py"])
    assert result.exit_code == 2
    assert "x.py" in result.stderr
    assert "Traceback" not in result.output


def test_cli_broken_symlink_while_walking_does_not_crash(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "ok.py").write_text(BOTH_SRC)
    result = cli(["check", "--format", "json", "."])
    assert result.exit_code == 1, result.output
    assert {f["path"] for f in json.loads(result.stdout)} == {"ok.py"}


def test_cli_directory_named_x_py_is_walked_as_a_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "inner.py").write_text(DL203_SRC)
    result = cli(["check", "--format", "json", "x.py"])
    assert result.exit_code == 1, result.output
    assert [f["path"] for f in json.loads(result.stdout)] == ["x.py/inner.py"]
    assert "Traceback" not in result.output


def test_unreadable_file_is_a_dl000_naming_it(tmp_path, monkeypatch) -> None:
    # chmod 000 does not stop root (CI runs as root), so the permission error is injected.
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "secret.py"
    path.write_text(DL203_SRC)
    import distlint.syntax.regular_files

    real_open = distlint.syntax.regular_files.os.open

    def open_file(path, flags, *args):  # type: ignore[no-untyped-def]
        if Path(path).name == "secret.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(distlint.syntax.regular_files.os, "open", open_file)
    result = cli(["check", "--format", "json", "secret.py"])
    findings = json.loads(result.stdout)
    assert result.exit_code == 1
    assert [(f["path"], f["code"]) for f in findings] == [("secret.py", "DL000")]
    assert "cannot read file: Permission denied" in findings[0]["message"]
    assert "Traceback" not in result.output


# -- a rule that crashes ---------------------------------------------------------------------------


def _boom(self, node) -> None:
    raise RuntimeError("boom")


def test_crashing_rule_is_a_tool_error_and_other_rules_still_report(monkeypatch) -> None:
    monkeypatch.setattr(ObjectCollectiveInCompiledRegion, "visit_Call", _boom)
    result = check_file(FileSource(BOTH_SRC, "crash.py"), DEFAULT)
    assert codes(result) == ["DL502"]
    assert len(result.errors) == 1
    error = result.errors[0]
    assert error.rule == "DL203"
    assert error.path == "crash.py"
    assert "DL203" in error.message
    assert "boom" in error.message


def test_a_crash_in_one_file_does_not_switch_the_rule_off_for_the_next(monkeypatch) -> None:
    original = ObjectCollectiveInCompiledRegion.visit_Call

    def flaky(self, node) -> None:
        if self.ctx.path == "first.py":
            raise ValueError("only here")
        return original(self, node)

    monkeypatch.setattr(ObjectCollectiveInCompiledRegion, "visit_Call", flaky)
    first = check_file(FileSource(BOTH_SRC, "first.py"), DEFAULT)
    assert len(first.errors) == 1 and codes(first) == ["DL502"]
    second = check_file(FileSource(BOTH_SRC, "second.py"), DEFAULT)
    assert second.errors == ()
    assert codes(second) == ["DL203", "DL502"]


def test_crashing_rule_makes_the_cli_exit_2_and_still_prints_findings(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ObjectCollectiveInCompiledRegion, "visit_Call", _boom)
    (tmp_path / "crash.py").write_text(BOTH_SRC)
    result = cli(["check", "--jobs", "1", "crash.py"])
    assert result.exit_code == 2
    assert "DL502" in result.stdout
    assert "DL203" not in result.stdout
    assert "crash.py" in result.stderr
    assert "DL203" in result.stderr
    assert "Traceback" not in result.output


def test_crashing_rule_with_exit_zero_still_exits_2(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(ObjectCollectiveInCompiledRegion, "visit_Call", _boom)
    (tmp_path / "crash.py").write_text(BOTH_SRC)
    assert cli(["check", "--exit-zero", "crash.py"]).exit_code == 2


# -- order and determinism -------------------------------------------------------------------------


def _generated_tree(root: Path, count: int = 20) -> None:
    for i in range(count):
        folder = root / ("pkg" if i % 3 == 0 else "") / ("sub" if i % 2 else "")
        folder.mkdir(parents=True, exist_ok=True)
        body = [DL502_LINE.replace("nvfuser", f"nvfuser{i}")] * (i % 3)
        source = DL203_SRC if i % 2 else "import torch\n"
        source += "\n".join(body) + "\n"
        if i % 5 == 0:
            source += "def broken(:\n"
        (folder / f"m{i:02d}.py").write_text(source)


def _sort_key(f: dict) -> tuple:
    start = f["range"]["start"]
    return (f["path"], start["line"], start["column"], f["code"])


def test_findings_are_sorted_by_path_line_column_code(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _generated_tree(tmp_path, 8)
    result = cli(["check", "--jobs", "1", "--format", "json", "."])
    findings = json.loads(result.stdout)
    assert len(findings) > 8
    assert [_sort_key(f) for f in findings] == sorted(_sort_key(f) for f in findings)


def test_findings_in_one_file_are_sorted() -> None:
    source = (
        "import torch\n"
        'a = torch.compile(print, mode="fast", backend="nvfuser")\n'
        'b = torch.compile(print, backend="inductor", mode="max-autotune", options={"x": 1})\n'
    )
    result = check_file(FileSource(source, "s.py"), DEFAULT)
    keys = [f.sort_key for f in result.findings]
    assert len(keys) >= 3
    assert keys == sorted(keys)


def test_output_is_identical_for_jobs_1_and_jobs_2(tmp_path) -> None:
    _generated_tree(tmp_path, 20)
    one = distlint_subprocess(["check", "--jobs", "1", "--format", "json", "."], tmp_path)
    two = distlint_subprocess(["check", "--jobs", "2", "--format", "json", "."], tmp_path)
    assert one.returncode == two.returncode == 1, (one.stderr, two.stderr)
    assert one.stdout == two.stdout
    findings = json.loads(one.stdout)
    assert len({f["path"] for f in findings}) >= 15
    assert {f["code"] for f in findings} == {"DL000", "DL203", "DL502"}


# -- columns ---------------------------------------------------------------------------------------


def test_columns_count_code_points_and_utf16_units() -> None:
    prefix = '    s = "héllo wörld 🎉 日本"; '
    source = DL203_SRC.replace(
        "    dist.all_gather_object([None], x)", prefix + "dist.all_gather_object([s], x)"
    )
    line = source.splitlines()[6]
    result = check_file(FileSource(source, "u.py"), DEFAULT)
    assert codes(result) == ["DL203"]
    span = result.findings[0].span
    start0 = line.index("dist.")
    end0 = len(line)
    assert span.start.line == span.end.line == 7
    assert span.start.column == start0 + 1
    assert span.end.column == end0 + 1
    # The emoji is one code point but two UTF-16 units; the other letters one of each.
    assert span.start.column_utf16 == len(line[:start0].encode("utf-16-le")) // 2 + 1
    assert span.start.column_utf16 == span.start.column + 1
    assert span.end.column_utf16 == span.end.column + 1


def test_columns_after_astral_characters_in_a_call_argument() -> None:
    line = 'g = torch.compile(print, mode="𝔣𝔞𝔰𝔱", backend="nvfuser")'
    result = check_file(FileSource("import torch\n" + line + "\n", "u.py"), DEFAULT)
    backend = [f for f in result.findings if "nvfuser" in f.message]
    assert len(backend) == 1
    start0 = line.index('"nvfuser"')
    assert backend[0].span.start.column == start0 + 1
    assert backend[0].span.start.column_utf16 == start0 + 1 + 4
    assert backend[0].span.end.column == start0 + len('"nvfuser"') + 1


# -- the stages: second pass, parsed trees, one suppression stage ---------------------------------

# A compiled function (region rules, second pass) next to a file-scope finding (DL502), and a
# module that calls a helper of another module under a rank test (project rule DL201).
STAGED = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import torch


        @torch.compile
        def step(x):
            print(x)
            return x


        g = torch.compile(print, backend="nvfuser")
        """,
    "pkg/comm.py": """\
        import torch.distributed as dist


        def all_reduce_mean(t):
            dist.all_reduce(t)
            return t
        """,
    "pkg/train.py": """\
        import torch.distributed as dist
        from pkg.comm import all_reduce_mean


        def log(loss):
            if dist.get_rank() == 0:
                all_reduce_mean(loss)  # distlint: ignore[DL201]
            if dist.get_rank() == 1:
                all_reduce_mean(loss)
            return loss  # noqa: DL104
        """,
}


def _staged(tmp_path: Path, monkeypatch, codes_on: set[str] | None = None) -> dict:
    from tests.project_util import check_sources

    return check_sources(tmp_path, STAGED, codes_on)


def test_the_second_pass_does_not_run_file_rules_again(tmp_path: Path, monkeypatch) -> None:
    """DL502 (a file rule that reads no facts) sees each call once, though the file gets a
    second pass for its compiled function (its handler once fired twice per call)."""
    import libcst as cst

    from distlint.rules.api.invalid_compile_option import InvalidCompileOption

    seen: list[int] = []
    original = InvalidCompileOption.visit_Call

    def counting(self, node):  # type: ignore[no-untyped-def]
        seen.append(id(node))
        return original(self, node)

    monkeypatch.setattr(InvalidCompileOption, "visit_Call", counting)
    results = _staged(tmp_path, monkeypatch, {"DL104", "DL502"})
    model = results["pkg/model.py"]
    assert [f.code for f in model.findings] == ["DL104", "DL502"]
    calls = [n for n in _nodes(STAGED["pkg/model.py"]) if isinstance(n, cst.Call)]
    train_calls = [n for n in _nodes(STAGED["pkg/train.py"]) if isinstance(n, cst.Call)]
    comm_calls = [n for n in _nodes(STAGED["pkg/comm.py"]) if isinstance(n, cst.Call)]
    assert len(seen) == len(calls) + len(train_calls) + len(comm_calls)


def _nodes(source: str) -> list:
    import textwrap

    import libcst as cst

    from distlint.syntax.walker import descendants

    return list(descendants(cst.parse_module(textwrap.dedent(source))))


def test_a_file_in_one_process_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """In one process the second pass and the measuring of lazy spans reuse the first pass's
    tree of a file that compiles code (it was parsed three times: first pass, the compile
    site's span, second pass)."""
    import distlint.engine.checker as engine
    import distlint.syntax.spans as spans

    parsed: list[str] = []
    real = engine.parse_source

    def counting(text: str):  # type: ignore[no-untyped-def]
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(engine, "parse_source", counting)
    monkeypatch.setattr(spans, "parse_source", counting)
    results = _staged(tmp_path, monkeypatch, {"DL104", "DL502", "DL201"})
    assert [f.code for f in results["pkg/model.py"].findings] == ["DL104", "DL502"]
    model = (tmp_path / "pkg/model.py").read_text()
    assert parsed.count(model) == 1
    # files that only a project finding points into are parsed again to measure its spans
    comm = (tmp_path / "pkg/comm.py").read_text()
    assert parsed.count(comm) == 2


def test_only_files_that_hold_compiled_code_get_a_second_pass(tmp_path: Path, monkeypatch) -> None:
    """A file with project findings only (DL201) is not walked again: suppressions apply to
    project findings in the last stage."""
    import distlint.engine.checker as engine

    second: list[str] = []
    real = engine._analyze_source

    def counting(text, path, settings, name, package, again, *rest):  # type: ignore[no-untyped-def]
        if again is not None:
            second.append(path)
        return real(text, path, settings, name, package, again, *rest)

    monkeypatch.setattr(engine, "_analyze_source", counting)
    results = _staged(tmp_path, monkeypatch, {"DL104", "DL502", "DL201"})
    assert [f.code for f in results["pkg/train.py"].findings] == ["DL201"]
    assert second == ["pkg/model.py"]


def test_one_suppression_stage_sees_every_stages_findings(tmp_path: Path, monkeypatch) -> None:
    """The cross-file DL201 under ``ignore[DL201]`` is suppressed and its suppression counts as
    used; the ``noqa: DL104`` on a line without DL104 is reported unused (DL001)."""
    results = _staged(tmp_path, monkeypatch, {"DL001", "DL104", "DL201"})
    train = results["pkg/train.py"]
    assert [(f.code, f.span.start.line) for f in train.findings] == [
        ("DL201", 9),
        ("DL001", 10),
    ]
    assert "`DL104` suppressed nothing" in train.findings[1].message
    assert train.suppressed == 1
    assert [f.code for f in results["pkg/model.py"].findings] == ["DL104"]


def test_a_file_rule_that_reads_facts_is_run_again_with_them(tmp_path: Path) -> None:
    """DL601 sees a capture started in another module only with the facts: its second-pass
    result replaces its first (no duplicate, no loss)."""
    from tests.project_util import check_sources

    files = {
        "pkg/__init__.py": "",
        "pkg/work.py": """\
            import torch


            def body(x):
                return x.item()
            """,
        "pkg/capture.py": """\
            import torch
            from pkg.work import body


            def record(x):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    body(x)
            """,
    }
    results = check_sources(tmp_path, files, {"DL601"})
    assert [(f.code, f.span.start.line) for f in results["pkg/work.py"].findings] == [("DL601", 5)]


def test_a_decoded_buffer_with_compiled_code_is_parsed_once(monkeypatch) -> None:
    """The editor's path: one buffer, its second pass and its compile site's span on the first
    pass's tree."""
    import distlint.engine.checker as engine
    import distlint.syntax.spans as spans

    parsed: list[str] = []
    real = engine.parse_source

    def counting(text: str):  # type: ignore[no-untyped-def]
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(engine, "parse_source", counting)
    monkeypatch.setattr(spans, "parse_source", counting)
    result = check_file(FileSource(BOTH_SRC, "m.py"), DEFAULT)
    assert codes(result) == ["DL203", "DL502"]
    assert parsed == [BOTH_SRC]
    assert check_file(FileSource(BOTH_SRC.encode(), "m.py"), DEFAULT) == result
