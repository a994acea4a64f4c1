"""distlint/rules/catalog.json (scripts/gen_rule_catalog.py): what selecting rules reads of
every built-in rule without importing it is what the rule classes say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from distlint.rules.registry import CATALOG_FILE, all_rules, catalog_data, info_of, rule_catalog

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_catalog_is_what_the_rule_classes_say() -> None:
    shipped = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
    assert shipped == catalog_data(all_rules()), "run python scripts/gen_rule_catalog.py"


def test_the_catalog_gives_every_rule_as_its_class_does() -> None:
    assert list(rule_catalog()) == list(all_rules())
    assert list(rule_catalog().values()) == [info_of(rule) for rule in all_rules().values()]


def test_reading_the_catalog_imports_no_rule_module_nor_libcst() -> None:
    probe = (
        "import sys; from distlint.rules.registry import rule_catalog; rule_catalog(); "
        "print(sorted(m for m in sys.modules if m == 'libcst' or m.startswith('distlint.rules.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.split() == [
        "['distlint.rules.base',",
        "'distlint.rules.plugins',",
        "'distlint.rules.registry']",
    ]


def test_the_check_script_says_the_shipped_catalog_is_current() -> None:
    script = ROOT / "scripts" / "gen_rule_catalog.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout
