"""Argument validity judged against every torch release of the project's range (DL501, DL502,
DL503): rejected by all, an error; accepted by some only, a warning that names both sides.
The facts come from the shipped tables of torch 2.4-2.14 (scripts/gen_torch_tables.py)."""

from __future__ import annotations

import re
import textwrap

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from distlint.knowledge.torch_tables import load_table


def findings(source: str, code: str, lowest: str | None, highest: str | None = None) -> list:
    settings = FileSettings(enabled=frozenset({code}), torch_floor=lowest, torch_ceiling=highest)
    result = check_source(textwrap.dedent(source), "t.py", settings)
    assert result.errors == ()
    return [f for f in result.findings if f.code == code]


def only(found: list[Finding]) -> Finding:
    assert len(found) == 1, [f.message for f in found]
    return found[0]


BARRIER = """\
import datetime
import torch.distributed as dist

dist.barrier(timeout=datetime.timedelta(seconds=30))
"""


def test_the_facts_the_tests_below_rely_on() -> None:
    """Read from the wheels: barrier's timeout= arrived after 2.4, skip_fsdp_hooks left after
    2.4, mode 'lite' arrived after 2.4."""
    old, new = load_table("2.4"), load_table("2.13")
    barrier = "torch.distributed.barrier"
    assert not old.signature(barrier).accepts_keyword("timeout")
    assert new.signature(barrier).accepts_keyword("timeout")
    assert "skip_fsdp_hooks" in old.dynamo_config
    assert "skip_fsdp_hooks" not in new.dynamo_config
    assert not old.is_mode("lite") and new.is_mode("lite")


def test_dl501_keyword_of_newer_releases_only_is_a_warning_naming_them() -> None:
    first = next(
        t.version
        for t in map(load_table, ("2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12"))
        if t.signature("torch.distributed.barrier").accepts_keyword("timeout")
    )
    finding = only(findings(BARRIER, "DL501", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        f"`dist.barrier` (`torch.distributed.barrier`) takes keyword `timeout` only in torch "
        f"{first}-2.14: on torch 2.4"
    )
    assert "the call raises `TypeError: barrier() got an unexpected keyword argument " in (
        finding.message
    )
    assert finding.message.endswith(
        f"Guard it with a version check, or raise the project's lowest torch to {first}."
    )
    assert finding.fix is None
    # a project whose lowest torch has it: nothing to say
    assert findings(BARRIER, "DL501", first) == []
    # a project that stays on 2.4: the call always fails, an error
    pinned = only(findings(BARRIER, "DL501", "2.4", "2.4"))
    assert pinned.severity is Severity.ERROR
    assert "has no keyword `timeout` in torch 2.4:" in pinned.message


def test_dl501_keyword_no_release_accepts_stays_an_error() -> None:
    source = "import torch.distributed as dist\n\ndist.barrier(timout=5)\n"
    finding = only(findings(source, "DL501", "2.4"))
    assert finding.severity is Severity.ERROR
    assert "has no keyword `timout` in torch 2.4-2.14:" in finding.message
    # the suggestion must hold on every release of the range: 2.4 has no `timeout`
    assert "Did you mean" not in finding.message and finding.fix is None
    newer = only(findings(source, "DL501", "2.12"))
    assert "Did you mean `timeout`?" in newer.message


CONFIG = """\
import torch._dynamo.config

torch._dynamo.config.skip_fsdp_hooks = False
"""


def test_dl503_config_of_older_releases_only_is_a_warning() -> None:
    finding = only(findings(CONFIG, "DL503", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        "`torch._dynamo.config.skip_fsdp_hooks` exists only in torch 2.4"
    )
    assert "which the project supports, the assignment raises `AttributeError: " in finding.message
    gone = re.search(r"on torch (\d+\.\d+)", finding.message)[1]  # type: ignore[index]
    assert finding.message.endswith(f"or keep the project's torch below {gone}.")
    error = only(findings(CONFIG, "DL503", "2.13"))
    assert error.severity is Severity.ERROR
    assert "does not exist in torch 2.13-2.14:" in error.message
    assert findings(CONFIG, "DL503", "2.4", "2.4") == []


LITE = 'import torch\n\ntorch.compile(lambda x: x, mode="lite")\n'


def test_dl502_mode_of_newer_releases_only_is_a_warning() -> None:
    finding = only(findings(LITE, "DL502", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("'lite' is a torch.compile mode only in torch ")
    assert "on torch 2.4" in finding.message
    assert findings(LITE, "DL502", "2.13") == []
    assert only(findings(LITE, "DL502", "2.4", "2.4")).severity is Severity.ERROR


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
    finding = only(findings(source, "DL502", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(f"Option '{key}' takes bool True only in torch ")
    assert findings(source, "DL502", "2.13") == []
