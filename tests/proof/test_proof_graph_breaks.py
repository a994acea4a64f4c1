"""Generic proof of the graph-break rules: what torch 2.13 does with each rule's fixtures, read
against the graph-break ids the rule declares (``Rule.graph_breaks``).

Every rule that declares ids and whose fixture folder is run by the DL1xx subprocess
(``tests/proof/dynamo_cases.py``) is covered with no proof file of its own:

* each ``case_*`` of a ``bad*`` file fails (a ``fullgraph=True`` compile) with the link of one
  of the rule's ids, at a line its fixture flags with ``# expect: DLxxx``; or Dynamo counts one
  of them: a graph break, or a frame it gives up on (a break in a loop, the recompile limit,
  or before eager Python raises). Where the rule's findings name ids (its message at the
  failing line; for a counted id, whose line the counters do not give, its messages in the
  functions and classes the case reaches), torch's id is one of those;
* each ``case_*`` of a ``good*`` or ``traps*`` file compiles with no counted graph break, no
  frame given up, and one graph (``MAX_GRAPHS`` says where more are compiled by design).

Nothing is skipped silently: a rule that declares ids without runnable cases is in
``NOT_RUN``, a case whose outcome these checks cannot read is in ``DIFFERS``, each with its
reason and the proof that checks it instead; a test fails for a rule in neither, and for an
entry that no longer applies.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

from distlint.rules.registry import all_rules
from distlint.testing import expected_findings
from tests.proof.dynamo_cases import Run, dynamo_runs, fixture_files
from tests.proof.harness import REPO

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")

# Rules that declare graph-break ids whose fixtures the DL1xx subprocess does not run (their
# cases need ranks, a process group or compiled extensions), and the proof that runs them.
NOT_RUN = {
    "DL202": "collectives need a process group (gloo ranks): test_proof_dl202.py",
    "DL203": "object collectives need a process group (gloo ranks): test_proof_dl203.py",
    "DL301": "DDP/FSDP wrappers need a process group: test_proof_dl3xx.py",
    "DL302": "FSDP1 needs a process group: test_proof_dl3xx.py",
    "DL304": "DDP needs a process group: test_proof_dl3xx.py",
    "DL401": "custom ops registered per run: test_proof_dl4xx.py",
    "DL403": "autograd.Function cases: test_proof_dl4xx.py",
    "DL404": "library ops without kernels: test_proof_dl4xx.py",
    "DL406": "custom ops registered per run: test_proof_dl4xx.py",
    "DL408": "native op registration needs a built extension: test_proof_dl4xx.py",
}
# Cases (``DLxxx/file.py::case``) whose outcome the checks here cannot read, and why.
NO_COUNT = "the graph splits without a counted break (no id to read): test_proof_dl1xx.py"
USER_ERROR = "a UserError (data-dependent value), which carries no graph-break id"
UNINITIALIZED = (
    "the fixture flags the __init__ that skips nn.Module.__init__; it fails where the module "
    "is used: test_proof_dl1xx.py"
)
DIFFERS = {
    "DL102/bad.py::case_bool_in_if_fullgraph": f"{USER_ERROR}: test_proof_dl1xx.py",
    "DL102/bad.py::case_item_in_if_fullgraph": f"{USER_ERROR}: test_proof_dl1xx.py",
    "DL102/bad.py::case_item_as_range_fullgraph": f"{USER_ERROR}: test_proof_dl1xx.py",
    "DL102/bad_capture.py::case_item_in_if_still_breaks": NO_COUNT,
    "DL104/traps_project_disable.py::case_host_calls_in_project_disabled_functions": (
        "the trap is a project-disabled function, whose call Dynamo counts as a skip: "
        "test_proof_dl1xx.py"
    ),
    "DL105/bad_fsdp2.py::case_compiled_root_over_sharded_blocks_fullgraph": (
        "fails at the call in the loop's body, the fixture flags the `for`: test_proof_dl1xx.py"
    ),
    "DL110/traps.py::case_disabled_call_without_fullgraph": (
        "without fullgraph a disabled call is a counted skip by design (DL110 is about "
        "fullgraph=True): test_proof_dl1xx.py"
    ),
    "DL116/bad.py::case_doubler_fullgraph": f"{UNINITIALIZED} (InternalTorchDynamoError)",
    "DL116/bad.py::case_shift_fullgraph": UNINITIALIZED,
    "DL116/bad.py::case_shift_eager": f"{UNINITIALIZED} (eager AttributeError too)",
    "DL116/bad.py::case_projector_built": f"{UNINITIALIZED} (eager AttributeError too)",
    "DL123/bad.py::case_requires_grad_on_a_factory_fullgraph": (
        "GB7324 is raised at the return of the flagged local: test_proof_dl123.py"
    ),
    "DL126/bad.py::case_keyword_minus_one_fullgraph": f"{USER_ERROR}: test_proof_dl126.py",
    "DL126/bad_capture.py::case_keyword_minus_one_two_graphs": (
        "two graphs without a counted break: test_proof_dl126.py"
    ),
}

# Good and traps files whose cases compile more than one graph (a split without a counted
# break is a break too), and why.
MAX_GRAPHS = {
    "DL105/good_fsdp2.py": (2, "each block compiled on its own"),
    "DL106/good.py": (2, "the model and the loss compiled apart"),
    "DL107/good.py": (2, "one recompile before the dimension turns dynamic"),
    "DL107/traps.py": (3, "a few fixed sizes, or a recompile before dynamic"),
    "DL115/good.py": (2, "two compiled functions"),
}

_LINK = re.compile(r"/gb/gb(\d{4})\.html")
_NAMED = re.compile(r"GB\d{4}")
_KINDS = ("bad", "good", "traps")


def graph_break_rules() -> dict[str, tuple[str, ...]]:
    return {code: rule.graph_breaks for code, rule in all_rules().items() if rule.graph_breaks}


@cache
def runnable_cases() -> dict[str, dict[str, list[str]]]:
    """code -> fixture path -> its ``case_*`` function names, for the files the DL1xx
    subprocess runs (read without running them)."""
    found: dict[str, dict[str, list[str]]] = {}
    for path in fixture_files():
        code = path.split("/")[1]
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        names = [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("case_")
        ]
        if names and Path(path).name.startswith(_KINDS):
            found.setdefault(code, {})[path] = names
    return found


def _params(bad: bool) -> list[tuple[str, str, str]]:
    return [
        (code, path, case)
        for code in sorted(graph_break_rules())
        for path, names in runnable_cases().get(code, {}).items()
        if Path(path).name.startswith("bad") == bad
        for case in names
    ]


def _key(path: str, case: str) -> str:
    return f"{path.removeprefix('fixtures/')}::{case}"


def _ids(texts: list[str]) -> set[str]:
    return {f"GB{number}" for text in texts for number in _LINK.findall(text)}


@cache
def _named_ids(code: str, path: str) -> dict[int, set[str]]:
    """Line -> the graph-break ids the rule's findings there name (distlint's own output)."""
    from tests.test_fixtures import check_fixture

    named: dict[int, set[str]] = {}
    for finding in check_fixture(REPO / path).findings:
        if finding.code == code:
            line = finding.span.start.line
            named.setdefault(line, set()).update(_NAMED.findall(finding.message))
    return named


@cache
def _definitions(path: str) -> dict[str, tuple[range, frozenset[str]]]:
    """Module-level function, class or global name -> its lines and the names it mentions."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        elif isinstance(node, ast.Assign):  # a module-level instance: ``TRACKED = Tracked()``
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            first = node.lineno
        else:
            continue
        mentioned = frozenset(
            n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))
        )
        for name in names:
            found[name] = (range(first, (node.end_lineno or first) + 1), mentioned)
    return found


def reachable_lines(path: str, case: str) -> set[int]:
    """The lines of the module-level functions and classes ``case`` reaches by name (itself
    included): where the break a counter reports (without its line) can be."""
    definitions = _definitions(path)
    seen, pending = set(), [case]
    while pending:
        name = pending.pop()
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        pending.extend(definitions[name][1])
    return {line for name in seen for line in definitions[name][0]}


def bad_case_problems(code: str, path: str, case: str, run: Run) -> list[str]:
    """Why a bad case does not show one of the rule's ids as the fixture says (none: it does)."""
    declared = set(graph_break_rules()[code])
    named = _named_ids(code, path)
    counted = _ids(run.breaks + run.unimplemented) & declared
    if run.ok or (counted and not _LINK.search(run.message)):  # a break, or eager raised after
        if not counted:
            return [f"compiled with no counted break of {sorted(declared)}: {run.breaks}"]
        reached = reachable_lines(path, case)
        said = set().union(*(ids for line, ids in named.items() if line in reached))
        if said and not counted & said:
            return [f"Dynamo counts {sorted(counted)}, the findings it reaches name {sorted(said)}"]
        return []
    linked = _ids([run.message]) & declared
    if not linked:
        return [f"{run.type} without a link to {sorted(declared)}: {run.message[:300]}"]
    text = run.message + run.traceback
    lines = {int(n) for n in re.findall(rf'{re.escape(path)}", line (\d+)', text)}
    flagged = {line for c, line, _ in expected_findings(REPO / path) if c == code}
    at = lines & flagged
    if not at:
        return [f"fails at lines {sorted(lines)}, none flagged ({sorted(flagged)})"]
    said = set().union(*(named.get(line, set()) for line in at))
    if said and not linked & said:
        return [f"fails with {sorted(linked)}, the finding names {sorted(said)}"]
    return []


def clean_case_problems(path: str, run: Run) -> list[str]:
    if not run.ok:
        return [f"{run.type}: {run.message[:300]}"]
    if run.breaks or run.unimplemented:
        return [f"counted breaks: {run.breaks}, frames given up: {run.unimplemented}"]
    most = MAX_GRAPHS.get(path.removeprefix("fixtures/"), (1, ""))[0]
    return [f"{run.graphs} graphs (at most {most})"] if run.graphs > most else []


def test_every_graph_break_rule_is_run_here_or_listed_with_its_reason() -> None:
    declared = set(graph_break_rules())
    run_here = {code for code in declared if runnable_cases().get(code)}
    assert sorted(declared - run_here - set(NOT_RUN)) == [], (
        "a rule that declares graph_breaks needs runnable case_* fixtures in the DL1xx "
        "subprocess, or a NOT_RUN entry saying where it is proven"
    )
    assert sorted(set(NOT_RUN) - (declared - run_here)) == [], "stale NOT_RUN entries"
    for reason in NOT_RUN.values():
        assert (REPO / "tests" / "proof" / reason.rpartition(": ")[2]).is_file(), reason


def test_every_listed_case_and_file_exists() -> None:
    params = _params(bad=True) + _params(bad=False)
    assert sorted(set(DIFFERS) - {_key(path, case) for _, path, case in params}) == []
    clean_files = {path.removeprefix("fixtures/") for _, path, _ in _params(bad=False)}
    assert sorted(set(MAX_GRAPHS) - clean_files) == []


@pytest.mark.parametrize(
    ("code", "path", "case"), _params(bad=True), ids=[_key(p, c) for _, p, c in _params(True)]
)
@pytest.mark.torch
@needs_torch
def test_bad_case_shows_a_declared_id_at_a_flagged_line(code: str, path: str, case: str) -> None:
    problems = bad_case_problems(code, path, case, dynamo_runs()[path][case])
    if _key(path, case) in DIFFERS:
        assert problems, f"{_key(path, case)} now passes the generic check: drop it from DIFFERS"
    else:
        assert problems == []


@pytest.mark.parametrize(
    ("code", "path", "case"), _params(bad=False), ids=[_key(p, c) for _, p, c in _params(False)]
)
@pytest.mark.torch
@needs_torch
def test_good_and_traps_case_compiles_without_a_counted_break(
    code: str, path: str, case: str
) -> None:
    problems = clean_case_problems(path, dynamo_runs()[path][case])
    if _key(path, case) in DIFFERS:
        assert problems, f"{_key(path, case)} now passes the generic check: drop it from DIFFERS"
    else:
        assert problems == []


@pytest.mark.parametrize(
    ("code", "path"),
    sorted({(code, path) for code, path, _ in _params(bad=True)}),
    ids=[p.removeprefix("fixtures/") for _, p in sorted({(c, p) for c, p, _ in _params(True)})],
)
def test_every_flagged_line_of_a_bad_file_is_reached_by_a_case(code: str, path: str) -> None:
    flagged = {line for c, line, _ in expected_findings(REPO / path) if c == code}
    reached = set().union(*(reachable_lines(path, case) for case in runnable_cases()[code][path]))
    assert sorted(flagged - reached) == [], "a flagged line no case runs is not proven"
