"""Confirm mode without torch: GB ids, statement spans, matching, settings, reports."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from distlint.confirm import gb
from distlint.confirm.match import (
    CONFIRMED,
    NOT_OBSERVED,
    NOT_REACHED,
    ConfirmRun,
    Observation,
    TargetOutcome,
    match,
    observations_from_events,
    statement_lines,
    user_frame,
)
from distlint.confirm.progress import Progress
from distlint.confirm.report import (
    headline_tag,
    json_properties,
    notification_lines,
    sarif_invocation,
    summary_lines,
)
from distlint.confirm.targets import ConfirmConfigError, load_settings
from distlint.findings import Finding, Severity, Span, make_position

SOURCE = """\
import torch


@torch.compile
def f(x, flag):
    y = x * 2
    if (y.sum()
            > 0):
        y = y + 1
    if flag:
        return y * y.sum().item()
    return y.cos()
"""


def _finding(path: str, code: str, line: int, col: int = 8, end_col: int = 20) -> Finding:
    lines = SOURCE.splitlines()
    span = Span(make_position(lines, line, col - 1), make_position(lines, line, end_col - 1))
    return Finding(code, "x", Severity.WARNING, "m", path, span)


def _obs(path: str, line: int, kind: str = "break", gb_id: str | None = "GB0170") -> Observation:
    return Observation(
        kind=kind,
        path=path,
        line=line,
        gb_id=gb_id,
        gb_type="Data-dependent branching",
        reason="Data-dependent branching",
        explanation="Detected data-dependent branching.",
        target="t",
        frame=(path, "f", 5),
    )


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SOURCE, encoding="utf-8")
    return path


def test_gb_id_prefers_the_documentation_link_and_skips_the_loop_id() -> None:
    message = (
        "graph break in loop ... https://meta-pytorch.github.io/compile-graph-break-site/gb/"
        "gb7000.html ... .../gb/gb0059.html"
    )
    assert gb.ids_in_message(message) == ["GB7000", "GB0059"]
    assert gb.gb_id("graph break in loop", message) == "GB0059"


def test_gb_id_falls_back_to_the_registry(tmp_path: Path) -> None:
    registry = tmp_path / "graph_break_registry.json"
    registry.write_text(
        json.dumps({"GB0811": [{"Gb_type": "missing tp_iter"}], "GB0001": [{"Gb_type": "x"}]})
    )
    assert gb.gb_id("missing tp_iter", "no link here", str(registry)) == "GB0811"
    assert gb.gb_id("unknown", "unknown", str(registry)) is None


def test_statement_lines_cover_a_multi_line_if_header(source: Path) -> None:
    finding = _finding(str(source), "DL101", 7)
    assert statement_lines(str(source), finding.span) == (7, 8)


def test_match_gives_each_status(source: Path, tmp_path: Path) -> None:
    branch = _finding("train.py", "DL101", 7)  # Dynamo reports the jump on line 8
    item = _finding("train.py", "DL102", 11)
    cosine = _finding("train.py", "DL104", 12)
    deadlock = _finding("train.py", "DL201", 9)  # not something a dry run observes
    traced = {str(source): {6, 7, 8, 9, 10, 12}}
    out, counts, extra = match(
        [branch, item, cosine, deadlock], [_obs(str(source), 8)], traced, cwd=tmp_path
    )
    statuses = {f.code: dict(f.properties).get("confirmation") for f in out}
    assert statuses == {
        "DL101": CONFIRMED,
        "DL102": NOT_REACHED,
        "DL104": NOT_OBSERVED,
        "DL201": None,
    }
    assert dict(out[0].properties)["gbId"] == "GB0170"
    assert counts == {CONFIRMED: 1, NOT_OBSERVED: 1, NOT_REACHED: 1}
    assert extra == 0


def test_unmatched_observations_become_dl901_and_dl902(source: Path, tmp_path: Path) -> None:
    observations = [_obs(str(source), 6, gb_id="GB0811"), _obs(str(source), 12, kind="error")]
    out, _, extra = match([], observations, {}, cwd=tmp_path)
    assert extra == 2
    by_code = {f.code: f for f in out}
    assert by_code["DL901"].severity is Severity.WARNING
    assert by_code["DL902"].severity is Severity.ERROR
    assert by_code["DL901"].path == "train.py"
    assert (by_code["DL901"].span.start.line, by_code["DL901"].span.start.column) == (6, 5)
    assert dict(by_code["DL901"].properties)["gbId"] == "GB0811"
    assert "No static rule predicted it" in by_code["DL901"].message
    assert by_code["DL902"].message.startswith("The confirm run failed to compile here")
    assert by_code["DL901"].related[0].message == "compiled frame `f`"


def test_dl901_respects_disabled_codes_and_noqa(source: Path, tmp_path: Path) -> None:
    out, _, _ = match([], [_obs(str(source), 6)], {}, cwd=tmp_path, enabled=lambda c: False)
    assert out == []
    source.write_text(SOURCE.replace("y = x * 2", "y = x * 2  # noqa: DL901"), encoding="utf-8")
    out, _, _ = match([], [_obs(str(source), 6)], {}, cwd=tmp_path)
    assert out == []


def test_events_pick_the_innermost_user_frame_and_count_library_breaks(tmp_path: Path) -> None:
    user = str(tmp_path / "model.py")
    torch_file = "/usr/lib/python3/site-packages/torch/nn/parallel/distributed.py"
    events = [
        {"event": "graph", "frame": [user, "forward", 3], "ops": 4},
        {
            "event": "break",
            "gb_type": "Unsupported method call",
            "gb_id": "GB0156",
            "message": "Unsupported method call\n  Explanation: no.",
            "stack": [[user, 10, "forward"], [torch_file, 1650, "_pre_forward"]],
        },
        {"event": "break", "gb_type": "x", "stack": [[torch_file, 1, "forward"]]},
        {"event": "lines", "file": user, "lines": [9, 10]},
    ]
    observations, lines, tally = observations_from_events(events, "t", set())
    assert [(o.path, o.line, o.gb_id, o.explanation) for o in observations] == [
        (user, 10, "GB0156", "no.")
    ]
    assert lines == {user: {9, 10}}
    assert tally["graphs"] == 1 and tally["library_breaks"] == 1 and tally["breaks"] == 1
    assert user_frame([[user, 5, "f"]], {user}) == (user, 5)


def test_settings_from_pyproject(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[tool.distlint.confirm]\nentries = ["pkg.mod:make"]\ntimeout = 5\nworld-size = 4\n'
    )
    settings = load_settings(config)
    assert settings.entries == ("pkg.mod:make",)
    assert (settings.timeout, settings.world_size, settings.base) == (5.0, 4, tmp_path.resolve())
    config.write_text("[tool.distlint.confirm]\ntimeot = 5\n")
    with pytest.raises(ConfirmConfigError, match="did you mean 'timeout'"):
        load_settings(config)
    config.write_text('[tool.distlint.confirm]\nentries = "pkg.mod:make"\n')
    with pytest.raises(ConfirmConfigError, match="must be a list of strings"):
        load_settings(config)


def test_report_helpers() -> None:
    lines = SOURCE.splitlines()
    span = Span(make_position(lines, 1, 0), make_position(lines, 1, 5))
    finding = Finding(
        "DL101",
        "x",
        Severity.WARNING,
        "m",
        "a.py",
        span,
        properties=(("confirmation", CONFIRMED), ("gbId", None)),
    )
    assert headline_tag(finding) == " [confirmed]"
    assert json_properties(finding) == {"confirmation": "confirmed"}
    run = ConfirmRun(
        targets=[TargetOutcome("a:b", 1.0, "ok"), TargetOutcome("c:d", 5.0, "timeout", "killed")],
        roots_compiled=2,
        graphs=3,
        breaks=1,
        counts={CONFIRMED: 1, NOT_OBSERVED: 2, NOT_REACHED: 0},
    )
    assert summary_lines(run) == [
        "Confirm: 2 targets, 2 roots compiled, 3 graphs, 1 break; 1 confirmed, "
        "2 not observed, 0 not reached; 1 of 2 targets did not run to the end."
    ]
    assert notification_lines(run) == ["confirm target c:d: timeout: killed"]
    from distlint.output.sarif import to_json_dict

    invocation = to_json_dict(sarif_invocation(run))
    assert invocation["executionSuccessful"] is False
    assert invocation["properties"]["confirm"]["confirmed"] == 1
    assert "c:d" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_progress_writes_only_to_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(2, stream=stream, enabled=True)
    progress.start("a:b")
    progress.tick(1.0)
    progress.done("1 graph, 0 breaks", 1.2)
    assert "confirm [1/2] a:b ... 1.0 s" in stream.getvalue()
    assert stream.getvalue().endswith("confirm [1/2] a:b: 1 graph, 0 breaks (1.2 s)\n")
    quiet = io.StringIO()
    Progress(1, stream=quiet).start("x")  # StringIO is not a TTY
    assert quiet.getvalue() == ""


# -- custom ops (DL401 / DL402) -------------------------------------------------------------------

OPS = """\
import torch


@torch.library.custom_op("lib::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.compile
def f(x):
    return scale(x) + 1
"""
FAKE_ERROR = (
    "RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX node with "
    "fake tensors: call_function lib.scale.default(...): got RuntimeError('There was no fake impl "
    "registered for <CustomOpDef(lib::scale)>. This is necessary for torch.compile/export/fx "
    "tracing to work.')"
)
AUTOGRAD_ERROR = (
    "backend='aot_eager' raised:\nRuntimeError: Trying to backward through lib.scale.default but "
    "no autograd formula was registered. Please use register_autograd to add one."
)


def _op_finding(path: Path, code: str, message: str | None = None) -> Finding:
    from distlint.findings import Location

    lines = OPS.splitlines()
    span = Span(make_position(lines, 4, 1), make_position(lines, 4, 52))
    call = Location(
        str(path), Span(make_position(lines, 11, 11), make_position(lines, 11, 19)), "called in x"
    )
    text = message if message is not None else f"Custom op `lib::scale` lacks it ({code})."
    return Finding(code, "x", Severity.WARNING, text, str(path), span, related=(call,))


def _op_events(path: Path, message: str, kind: str = "compile_error") -> list[dict]:
    return [
        {
            "event": kind,
            "exc_type": "TorchRuntimeError",
            "gb_id": "GB4315",
            "message": message,
            "reason": message.splitlines()[0],
            "stack": [["/lib/site-packages/torch/x.py", 3, "f"], [str(path), 11, "f"]],
        }
    ]


@pytest.fixture
def ops(tmp_path: Path) -> Path:
    path = tmp_path / "ops.py"
    path.write_text(OPS, encoding="utf-8")
    return path


def _status_of(findings: list[Finding], code: str) -> dict:
    (found,) = [f for f in findings if f.code == code]
    return dict(found.properties)


def test_a_missing_fake_failure_at_the_call_site_confirms_dl401(ops: Path, tmp_path: Path) -> None:
    found, _, tally = observations_from_events(_op_events(ops, FAKE_ERROR), "t", set())
    assert (found[0].op, found[0].op_failure, tally["errors"]) == ("lib::scale", "fake", 1)
    findings = [_op_finding(ops, "DL401"), _op_finding(ops, "DL402")]
    out, counts, extra = match(findings, found, {}, cwd=tmp_path)
    dl401 = _status_of(out, "DL401")
    assert dl401["confirmation"] == CONFIRMED and dl401["gbId"] == "GB4315"
    assert dl401["observedAt"] == "ops.py:11"
    assert _status_of(out, "DL402")["confirmation"] == NOT_REACHED  # the fake failed first
    assert extra == 0 and not [f for f in out if f.code == "DL902"]  # not an unpredicted error
    assert counts == {CONFIRMED: 1, NOT_OBSERVED: 0, NOT_REACHED: 1}


def test_a_missing_autograd_failure_confirms_dl402_compiled_or_eager(
    ops: Path, tmp_path: Path
) -> None:
    for kind in ("compile_error", "raised"):
        found, _, _ = observations_from_events(_op_events(ops, AUTOGRAD_ERROR, kind), "t", set())
        assert (found[0].op, found[0].op_failure) == ("lib::scale", "autograd")
        out, _, extra = match([_op_finding(ops, "DL402")], found, {}, cwd=tmp_path)
        assert _status_of(out, "DL402")["confirmation"] == CONFIRMED, kind
        assert extra == 0


def test_a_custom_op_without_failure_is_not_observed_when_its_call_was_traced(
    ops: Path, tmp_path: Path
) -> None:
    findings = [_op_finding(ops, "DL401")]
    traced = {str(ops.resolve()): {11}}
    out, _, _ = match(findings, [], traced, cwd=tmp_path)
    assert _status_of(out, "DL401")["confirmation"] == NOT_OBSERVED
    out, _, _ = match(findings, [], {}, cwd=tmp_path)
    assert _status_of(out, "DL401")["confirmation"] == NOT_REACHED


def test_the_op_of_a_finding_falls_back_to_its_source_line(ops: Path, tmp_path: Path) -> None:
    found, _, _ = observations_from_events(_op_events(ops, FAKE_ERROR), "t", set())
    out, _, _ = match([_op_finding(ops, "DL401", "no name here")], found, {}, cwd=tmp_path)
    assert _status_of(out, "DL401")["confirmation"] == CONFIRMED


def test_another_op_failing_does_not_confirm(ops: Path, tmp_path: Path) -> None:
    other = FAKE_ERROR.replace("lib::scale", "lib::other")
    found, _, _ = observations_from_events(_op_events(ops, other), "t", set())
    out, _, extra = match([_op_finding(ops, "DL401")], found, {}, cwd=tmp_path)
    assert _status_of(out, "DL401")["confirmation"] == NOT_REACHED
    assert extra == 1  # the other op's failure is unpredicted: DL902


def test_a_target_error_that_names_no_op_is_not_an_observation(ops: Path) -> None:
    events = _op_events(ops, "ValueError: bad", kind="raised")
    assert observations_from_events(events, "t", set())[0] == []


def test_roots_count_every_user_function_once() -> None:
    from distlint.confirm.run import root_frames

    events = [
        {"event": "frame", "frame": ["/p/a.py", "forward", 10], "user": True},
        {"event": "frame", "frame": ["/p/a.py", "forward", 30], "user": True},  # another class
        {"event": "frame", "frame": ["/p/a.py", "forward", 10], "user": True},  # a resume
        {"event": "frame", "frame": ["/lib/torch/x.py", "inner", 5], "user": False},
        {"event": "graph", "frame": ["/p/b.py", "g", 1]},
    ]
    assert root_frames(events) == {("/p/a.py", "forward", 10), ("/p/a.py", "forward", 30)}


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("cuda", True),
        ("cuda:1", True),
        (0, True),
        (True, False),
        ("cpu", False),
        ("meta", False),
        ("cudaX", False),
        (None, False),
    ],
)
def test_is_cuda(device: object, expected: bool) -> None:
    from distlint.confirm.cudamap import is_cuda

    assert is_cuda(device) is expected


def test_registry_advice_joins_split_hints_and_drops_boilerplate(tmp_path: Path) -> None:
    registry = tmp_path / "graph_break_registry.json"
    registry.write_text(
        json.dumps(
            {
                "GB0142": [
                    {
                        "Gb_type": "Unsupported context manager",
                        "Explanation": "Dynamo does not know how to enter `{name}`.",
                        "Hints": [
                            "Avoid using the unsupported context manager.",
                            "It may have been created outside the compiled region, ",
                            "which Dynamo does not support.",
                            "File an issue to PyTorch.",
                            "Avoid `{fn}`.",
                        ],
                    }
                ],
                "GB0067": [
                    {
                        "Gb_type": "HOP: Unsafe side effect",
                        "Explanation": "Mutating an outside variable is not supported.",
                        "Hints": ["Return the value instead."],
                    }
                ],
            }
        )
    )
    explanation, hints = gb.advice("GB0142", "Unsupported context manager", str(registry))
    assert explanation == ""  # a template
    assert hints == (
        "Avoid using the unsupported context manager.",
        "It may have been created outside the compiled region, which Dynamo does not support.",
    )
    assert gb.advice("GB0067", None, str(registry)) == (
        "Mutating an outside variable is not supported.",
        ("Return the value instead.",),
    )
    assert gb.advice("GB9999", None, str(registry)) == ("", ())


def test_dl901_message_carries_the_registry_hints_and_the_covering_rules(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gb, "advice", lambda gb_id, gb_type: ("", ("Avoid it.", "Or not.")))
    monkeypatch.setattr(gb, "covering_rules", lambda gb_id: ("DL119",))
    obs = Observation(
        kind="break",
        path=str(source),
        line=6,
        gb_id="GB0142",
        gb_type="Unsupported context manager",
        reason="Unsupported context manager",
        explanation="",
        target="t",
    )
    (finding,) = match([], [obs], {}, cwd=tmp_path)[0]
    assert finding.message.endswith(
        "No static rule predicted it. Hint: Avoid it. Hint: Or not. distlint reports GB0142 "
        "with DL119 where the source shows it (docs/graph-breaks.md)."
    )


def test_covering_rules_are_the_rules_that_declare_the_id() -> None:
    assert gb.covering_rules("GB0811") == ("DL114",)
    assert gb.covering_rules("GB0053") == ("DL301", "DL302")
    assert gb.covering_rules("GB0000") == ()
    assert gb.covering_rules(None) == ()
