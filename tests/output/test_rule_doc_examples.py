"""Each rule page's ``Example`` triggers its rule and its ``Use instead`` does not.

* Python blocks (```` ```python ````): the blocks of a section are checked together as one file
  with every rule enabled, after a prelude of the imports pages leave out (``torch``, ``dist``,
  ``nn``, ``F``).
* C++ blocks (```` ```cpp ```` / ```` ```c++ ````, DL408): written to a ``.cpp`` file of a
  project folder and checked the way ``distlint check`` checks a folder: discovery finds the
  native file, the runner scans it (``native_sources``) and the project rules read it.
* DL901/DL902 are reported by confirm mode only, from what the real torch did: the static
  check must report nothing for them, and ``test_confirm_mode_*`` (torch) runs each page's
  blocks through ``distlint check --confirm`` with the entry factory the page names.

A page whose blocks cannot run as written would be listed in ``NOT_RUNNABLE_YET`` (strict
xfail: once a page is fixed the test says so, and the entry must go). It is empty: every
page's examples run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.config.settings import CliOverrides, ConfigResolver
from distlint.confirm import torch_available
from distlint.engine.checker import FileSource, check_file
from distlint.engine.session import CheckSession
from distlint.file_settings import FileSettings
from distlint.findings import Finding
from distlint.output.docs import docs_dir, parse_doc
from distlint.rules.registry import all_rules

PRELUDE = (
    "import torch\nimport torch.distributed as dist\nimport torch.nn as nn\n"
    "import torch.nn.functional as F\n"
)
PYTHON = re.compile(r"```python\n(.*?)```", re.S)
NATIVE = re.compile(r"```(?:cpp|c\+\+)\n(.*?)```", re.S)
SECTIONS = ("Example", "Use instead")
ALL = FileSettings(enabled=frozenset(all_rules()))
# Reported by confirm mode from what the real torch did, never by the static check.
CONFIRM_ONLY = {"DL901", "DL902"}
# The entry factory a confirm page names: `--confirm-entry train.py:make_accumulate`.
ENTRY = re.compile(r"--confirm-entry \S+?\.py:(\w+)")
# (code, section): the blocks do not run as written. Each is a page to fix; none may be added
# without saying why.
NOT_RUNNABLE_YET: dict[tuple[str, str], str] = {}


def _blocks(code: str, section: str) -> tuple[list[str], list[str]]:
    """The Python and the C++ blocks of a page's section."""
    text = parse_doc((docs_dir() / f"{code}.md").read_text(encoding="utf-8")).sections
    body = text.get(section, "")
    return PYTHON.findall(body), NATIVE.findall(body)


def _cases() -> list:
    cases = []
    for code in sorted(all_rules()):
        for section in SECTIONS:
            marks = []
            if (code, section) in NOT_RUNNABLE_YET:
                reason = NOT_RUNNABLE_YET[(code, section)]
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            cases.append(pytest.param(code, section, marks=marks, id=f"{code}-{section}"))
    return cases


def _check_project(folder: Path, python: list[str], native: list[str]) -> list[Finding]:
    """``distlint check FOLDER`` with every rule, the blocks written as ``example.py`` and
    ``example.cpp``: native files go through discovery and the runner, as on the command line."""
    folder.mkdir()
    if python:
        (folder / "example.py").write_text(PRELUDE + "\n".join(python), encoding="utf-8")
    (folder / "example.cpp").write_text("\n".join(native), encoding="utf-8")
    session = CheckSession.for_paths(
        [folder],
        ConfigResolver(),
        CliOverrides(select=("ALL",)),
        folder,
        force_exclude=False,
        jobs=1,
        cache=None,
    )
    assert [source.display for source in session.native] == ["example.cpp"]
    findings = session.check()
    assert session.errors == []
    return findings


@pytest.mark.parametrize(("code", "section"), _cases())
def test_example_triggers_and_use_instead_does_not(code: str, section: str, tmp_path: Path) -> None:
    python, native = _blocks(code, section)
    assert python or native, f"{code}: no Python or C++ block under {section}"
    if native:
        findings = _check_project(tmp_path / "project", python, native)
    else:
        findings = list(
            check_file(FileSource(PRELUDE + "\n".join(python), "example.py"), ALL).findings
        )
    produced = [f for f in findings if f.code == code]
    if code != "DL000":
        assert not [f for f in findings if f.code == "DL000"], "the blocks do not parse"
    if code in CONFIRM_ONLY:  # test_confirm_mode_* below checks the page
        assert produced == [], f"{code} is confirm mode's; the static check reported it"
    elif section == "Example":
        assert produced, f"{code}: its Example triggers nothing"
    else:
        assert produced == [], f"{code}: its 'Use instead' triggers it: {produced[0].message}"


def test_the_native_example_is_reported_on_its_cpp_file(tmp_path: Path) -> None:
    python, native = _blocks("DL408", "Example")
    found = [f for f in _check_project(tmp_path / "p", python, native) if f.code == "DL408"]
    lines = "\n".join(native).splitlines()
    assert [(f.path, lines[f.span.start.line - 1].strip()) for f in found] == [
        ("example.cpp", 'm.def("fused_gelu(Tensor x) -> Tensor");  // DL408')
    ]


def test_the_not_runnable_list_names_real_rules_and_sections() -> None:
    assert {code for code, _ in NOT_RUNNABLE_YET} <= set(all_rules())
    assert {section for _, section in NOT_RUNNABLE_YET} <= set(SECTIONS)


def test_confirm_only_codes_are_the_observed_family() -> None:
    assert {code for code in all_rules() if code.startswith("DL9")} == CONFIRM_ONLY


# -- DL901/DL902: the pages' examples through confirm mode (torch) ------------------------------


def _entry(code: str) -> str:
    text = (docs_dir() / f"{code}.md").read_text(encoding="utf-8")
    (name,) = set(ENTRY.findall(text))
    return name


def _module(code: str, section: str) -> str:
    return f"{code.lower()}_{section.lower().replace(' ', '_')}.py"


@pytest.fixture(scope="module")
def confirmed(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """One ``distlint check --confirm`` over every confirm page's Example and Use instead, each
    a file of its own run through the entry factory its page names; the JSON findings."""
    from distlint.cli import main

    folder = tmp_path_factory.mktemp("confirm_pages")
    args = ["check", "--jobs", "1", "--confirm", "--format", "json"]
    for code in sorted(CONFIRM_ONLY):
        for section in SECTIONS:
            python, native = _blocks(code, section)
            assert python and not native, f"{code}: {section} needs a Python block"
            name = _module(code, section)
            (folder / name).write_text(PRELUDE + "\n".join(python), encoding="utf-8")
            args += ["--confirm-entry", f"{name}:{_entry(code)}", name]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        env = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
        result = CliRunner().invoke(main, args, env=env)
    # 1: findings, every target ran (a target that fails or times out exits 2)
    assert result.exit_code == 1, result.output + result.stderr
    return json.loads(result.stdout)


@pytest.mark.torch
@pytest.mark.skipif(not torch_available(), reason="needs torch")
@pytest.mark.parametrize("code", sorted(CONFIRM_ONLY))
def test_confirm_mode_reports_the_example_and_not_use_instead(
    code: str, confirmed: list[dict]
) -> None:
    example, use_instead = (_module(code, section) for section in SECTIONS)
    produced = [row for row in confirmed if row["code"] == code]
    assert {row["path"] for row in produced} == {example}, produced
    lines = (PRELUDE + "\n".join(_blocks(code, "Example")[0])).splitlines()
    for row in produced:
        assert f"# {code}" in lines[row["range"]["start"]["line"] - 1]  # the marked line
        assert row["properties"]["confirmation"] == "confirmed"
    assert not [row for row in confirmed if row["path"] == use_instead]
