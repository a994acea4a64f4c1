"""Diagnostics built in their JSON form (``distlint.lsp.wire``) are what pygls would send for
the same ``types.Diagnostic``: the client receives exactly what it did when the server
converted objects."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from distlint.config.settings import ConfigResolver
from distlint.findings import Applicability, Edit, Finding, Fix, Location, Position, Severity, Span
from distlint.lsp import server
from distlint.lsp.wire import as_sent, converter
from distlint.syntax.text import LineInfo, split_lines

TEXT = "import torch  # é\nx = torch.compile(f, backend='nvfuser')  # 🚀 ü\n\ny = 1\n"


def _span(line: int, start: int, end: int) -> Span:
    return Span(Position(line, start, start - 1), Position(line, end, end - 1))


def _findings(path: str, other: str) -> list[Finding]:
    long = (
        "`f` is compiled with a backend torch 2.13 does not have. It fails at the first "
        "call with `BackendCompilerFailed`; use `inductor` (the default) or `eager`, "
        "`aot_eager` and `cudagraphs` for debugging."
    )
    fix = Fix(
        "Use backend='inductor'",
        (Edit(_span(2, 30, 39), "'inductor'"), Edit(_span(4, 1, 1), "# moved\n")),
        Applicability.SAFE,
    )
    return [
        Finding("DL502", "unknown-backend", Severity.ERROR, long, path, _span(2, 30, 39)),
        Finding(
            "DL502",
            "unknown-backend",
            Severity.WARNING,
            "short message",
            path,
            _span(2, 5, 18),
            related=(
                Location(path, _span(1, 1, 13), "imported here"),
                Location(other, _span(1, 1, 5)),
            ),
            fix=fix,
        ),
        Finding("DL001", "unused-suppression", Severity.NOTE, "Unused.", path, _span(1, 14, 18)),
        Finding("XYZ123", "a-plugin-rule", Severity.NOTE, long, path, _span(3, 1, 1)),
        Finding("DL000", "syntax-error", Severity.ERROR, "cannot parse", path, _span(1, 1, 1)),
    ]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
@pytest.mark.parametrize("related", [True, False])
@pytest.mark.parametrize("unnecessary", [True, False])
def test_the_json_form_is_what_pygls_makes_of_the_object(
    tmp_path: Path, encoding: str, related: bool, unnecessary: bool
) -> None:
    path = tmp_path / "train.py"
    other = tmp_path / "helpers.py"
    other.write_text("def save():\n    pass\n", encoding="utf-8")
    job = server.Job(
        uri=path.as_uri(),
        version=1,
        text=TEXT,
        generation=0,
        resolver=ConfigResolver(),
        features=server.ClientFeatures(encoding, related, unnecessary),
    )
    lines = split_lines(TEXT)
    plain = default_converter()
    findings = _findings(str(path), str(other))
    built = [server._diagnostic(job, lines, str(path), f, LineInfo(TEXT, lines)) for f in findings]
    for wire in built:
        assert plain.unstructure(plain.structure(wire, types.Diagnostic)) == wire
    keys = [set(wire) for wire in built]
    assert "relatedInformation" in keys[1] if related else "relatedInformation" not in keys[1]
    assert ("tags" in keys[2]) is unnecessary
    assert "codeDescription" not in keys[3]  # a code no rule registered has no page


def test_the_servers_converter_sends_json_forms_as_they_are() -> None:
    wire = {
        "range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 2}},
        "message": "m",
        "severity": 2,
        "code": "DL502",
        "source": "distlint",
        "data": {"code": "DL502", "fix": None},
    }
    params = types.PublishDiagnosticsParams(uri="file:///x.py", diagnostics=as_sent([wire]))
    assert converter().unstructure(params)["diagnostics"] == [wire]
    as_object = types.PublishDiagnosticsParams(
        uri="file:///x.py", diagnostics=[default_converter().structure(wire, types.Diagnostic)]
    )
    assert converter().unstructure(as_object) == default_converter().unstructure(as_object)
