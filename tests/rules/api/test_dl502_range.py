"""DL502 invalid-compile-option judged against every torch release of the project's range:
rejected by all, an error; accepted by some only, a warning that names both sides. The rule's
other tests are in tests/rules/test_rules_dl203_dl502.py."""

from __future__ import annotations

from distlint.findings import Severity
from distlint.knowledge.torch_tables import load_table
from tests.rules.api.api_util import only, range_findings


def test_dl502_range_facts() -> None:
    """Read from the wheels: mode 'lite' arrived after 2.4 (the tests below rely on it)."""
    old, new = load_table("2.4"), load_table("2.13")
    assert not old.is_mode("lite") and new.is_mode("lite")


LITE = 'import torch\n\ntorch.compile(lambda x: x, mode="lite")\n'


def test_dl502_mode_of_newer_releases_only_is_a_warning() -> None:
    finding = only(range_findings(LITE, "DL502", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("'lite' is a torch.compile mode only in torch ")
    assert "on torch 2.4" in finding.message
    assert range_findings(LITE, "DL502", "2.13") == []
    assert only(range_findings(LITE, "DL502", "2.4", "2.4")).severity is Severity.ERROR


def test_dl502_option_type_checked_as_each_release_does() -> None:
    """torch 2.4 compares type(value) with type(default) (True is not an int); later releases
    use isinstance against the declared type (True passes for an int)."""
    old, new = load_table("2.4"), load_table("2.13")
    key = next(
        k
        for k, kind in sorted(old.inductor_options.items())
        if kind == "int" and new.inductor_options.get(k) == "int"
    )
    assert old.option_value_ok(key, True) is False and new.option_value_ok(key, True) is True
    source = f'import torch\n\ntorch.compile(lambda x: x, options={{"{key}": True}})\n'
    finding = only(range_findings(source, "DL502", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(f"Option '{key}' takes bool True only in torch ")
    assert range_findings(source, "DL502", "2.13") == []
