"""Unit tests of DL408 native-op-missing-registration: what it reports, where, and what it leaves
alone.

The proof tests (tests/proof/test_proof_dl4xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import re
import textwrap

from distlint.findings import Severity
from tests.rules.custom_ops.conftest import FIXTURES, project

_CPP_EXPECT = re.compile(r"//\s*expect:\s*(DL\d{3})@(\d+)")


def test_dl408_reports_the_cpp_definition_line() -> None:
    cpp = textwrap.dedent(
        """\
        #include <torch/library.h>
        TORCH_LIBRARY(myops, m) {
          m.def("bare(Tensor x) -> Tensor");
          m.def("py_fake(Tensor x) -> Tensor");
          m.def("cpp_ad(Tensor x) -> Tensor");
          m.def("with_kernel(Tensor x) -> Tensor", &with_kernel);
        }
        TORCH_LIBRARY_IMPL(myops, CPU, m) {
          m.impl("bare", &bare_cpu);
        }
        """
    )
    cu = 'TORCH_LIBRARY_IMPL(myops, Autograd, m) { m.impl("cpp_ad", &ad); }\n'
    python = """
    import torch

    def load():
        torch.library.register_fake("myops::py_fake", lambda x: x)
    """
    found = project(
        {"pkg/load.py": python},
        "DL408",
        native=(("csrc/ops.cpp", cpp), ("csrc/ops_ad.cu", cu)),
    )
    assert [(f.path, f.span.start.line, f.span.start.column, f.span.end.column) for f in found] == [
        ("csrc/ops.cpp", 3, 3, 9)
    ]
    assert "`myops::bare`" in found[0].message and "GB0090" in found[0].message
    assert found[0].severity is Severity.WARNING


def test_dl408_without_native_sources_reports_nothing() -> None:
    assert project({"pkg/load.py": "import torch\n"}, "DL408") == []


def test_dl408_fixture_folder() -> None:
    folder = FIXTURES / "DL408"
    sources = {
        f"dl408/{p.name}": p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.py"))
    }
    native = tuple(
        (p.relative_to(folder).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted((folder / "csrc").iterdir())
    )
    expected = {
        (path, number, int(m.group(2)))
        for path, text in native
        for number, line in enumerate(text.splitlines(), start=1)
        if (m := _CPP_EXPECT.search(line))
    }
    found = project(sources, "DL408", native=native)
    assert {(f.path, f.span.start.line, f.span.start.column) for f in found} == expected
    assert expected  # bad_ops.cpp holds the bad cases


def test_native_sources_are_scanned_once_per_project() -> None:
    """``scan_native_sources``: DL404 and DL408 share one scan of a project's native sources
    (kept on the project), and a project of other sources gets its own."""
    from distlint.rules.custom_ops._custom_ops import scan_native_sources
    from distlint.rules.project import Project

    cpp = 'TORCH_LIBRARY(myops, m) {\n  m.def("bare(Tensor x) -> Tensor");\n}\n'
    first = Project([], None, (("csrc/ops.cpp", cpp),))
    scanned = scan_native_sources(first)
    assert [(path, [e.name for e in entries]) for path, _, entries in scanned] == [
        ("csrc/ops.cpp", ["bare"])
    ]
    assert scan_native_sources(first) is scanned
    other = Project([], None, (("csrc/other.cpp", cpp.replace("bare", "other")),))
    assert [e.name for _, _, entries in scan_native_sources(other) for e in entries] == ["other"]
    both = project({"pkg/a.py": "import torch\n"}, "DL404", "DL408", native=(("c.cpp", cpp),))
    assert [f.code for f in both] == ["DL408"]
