"""Each rule page's ``Example`` triggers its rule and its ``Use instead`` does not.

The Python blocks of a section are checked together as one file with every rule enabled,
after a prelude of the imports pages leave out (``torch``, ``dist``, ``nn``, ``F``). Pages whose
blocks are fragments that need more context are listed in ``NOT_RUNNABLE_YET`` (strict xfail:
once a page is fixed the test says so, and the entry must go).
"""

from __future__ import annotations

import re

import pytest

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.output.docs import docs_dir, parse_doc
from distlint.rules.registry import all_rules

PRELUDE = (
    "import torch\nimport torch.distributed as dist\nimport torch.nn as nn\n"
    "import torch.nn.functional as F\n"
)
FENCE = re.compile(r"```python\n(.*?)```", re.S)
ALL = FileSettings(enabled=frozenset(all_rules()))
# Reported by confirm mode from what the real torch did, never by the static check.
CONFIRM_ONLY = {"DL901", "DL902"}
# (code, section): the blocks do not run as written (missing definitions, a C++ example, no
# Python block). Each is a page to fix; none may be added without saying why.
NOT_RUNNABLE_YET = {
    ("DL408", "Example"): "a C++ example",
    ("DL408", "Use instead"): "a C++ example",
}


def _cases() -> list:
    cases = []
    for code in sorted(all_rules()):
        for section in ("Example", "Use instead"):
            marks = []
            if code in CONFIRM_ONLY:
                marks.append(pytest.mark.skip(reason="reported by confirm mode only"))
            elif (code, section) in NOT_RUNNABLE_YET:
                reason = NOT_RUNNABLE_YET[(code, section)]
                marks.append(pytest.mark.xfail(reason=reason, strict=True))
            cases.append(pytest.param(code, section, marks=marks, id=f"{code}-{section}"))
    return cases


@pytest.mark.parametrize(("code", "section"), _cases())
def test_example_triggers_and_use_instead_does_not(code: str, section: str) -> None:
    doc = parse_doc((docs_dir() / f"{code}.md").read_text(encoding="utf-8"))
    blocks = FENCE.findall(doc.sections.get(section, ""))
    assert blocks, f"{code}: no Python block under {section}"
    result = check_source(PRELUDE + "\n".join(blocks), "example.py", ALL)
    produced = [f for f in result.findings if f.code == code]
    if code != "DL000":
        assert not [f for f in result.findings if f.code == "DL000"], "the blocks do not parse"
    if section == "Example":
        assert produced, f"{code}: its Example triggers nothing"
    else:
        assert produced == [], f"{code}: its 'Use instead' triggers it: {produced[0].message}"


def test_the_not_runnable_list_names_real_rules_and_sections() -> None:
    assert {code for code, _ in NOT_RUNNABLE_YET} <= set(all_rules())
    assert {section for _, section in NOT_RUNNABLE_YET} <= {"Example", "Use instead"}
