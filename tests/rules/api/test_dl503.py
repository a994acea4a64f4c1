"""DL503 unknown-compiler-config: what distlint reports, where, and the fixes it offers, on one
torch release and on a project's torch range (a name only some releases have: a warning naming
both sides)."""

from __future__ import annotations

import re

from distlint.findings import Severity
from distlint.knowledge.torch_tables import load_table
from tests.rules.api.api_util import dl503, fixed, only, range_findings, where


def test_dl503_range_facts() -> None:
    """Read from the wheels: skip_fsdp_hooks left after 2.4 (the tests below rely on it)."""
    old, new = load_table("2.4"), load_table("2.13")
    assert "skip_fsdp_hooks" in old.dynamo_config
    assert "skip_fsdp_hooks" not in new.dynamo_config


def test_dl503_assignments_in_every_import_form() -> None:
    found = dl503(
        """\
        import torch
        import torch._dynamo.config as dc
        from torch._inductor import config
        import torch._inductor.config

        torch._dynamo.config.suppress_error = True
        dc.capture_scalar_output = True
        config.triton.cudagraph = True
        torch._inductor.config.max_autotun = True
        dc.recompile_limt += 1
        x: int = 0
        dc.verbos: bool = True
        """
    )
    assert where(found) == [(6, 1), (7, 1), (8, 1), (9, 1), (10, 1), (12, 1)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert found[0].message == (
        "`torch._dynamo.config.suppress_error` does not exist in torch 2.13: the assignment "
        "raises `AttributeError: torch._dynamo.config.suppress_error does not exist`. "
        "Did you mean `suppress_errors`?"
    )
    # fixes keep the module spelling
    assert fixed(found[1]) == ["dc.capture_scalar_outputs"]
    assert fixed(found[2]) == ["config.triton.cudagraphs"]
    assert fixed(found[3]) == ["torch._inductor.config.max_autotune"]


def test_dl503_group_assigned_whole() -> None:
    (finding,) = dl503("import torch\ntorch._inductor.config.triton = {}\n")
    assert "`triton` is a group of settings" in finding.message
    assert "torch._inductor.config.triton." in finding.message


def test_dl503_setattr_and_patch() -> None:
    found = dl503(
        """\
        import torch
        from torch._dynamo import config

        setattr(config, "verbos", True)
        with config.patch(recompile_limt=4):
            pass
        with torch._inductor.config.patch({"max_autotun": True}):
            pass

        @torch._dynamo.config.patch("suppress_error", True)
        def f():
            pass
        """
    )
    assert where(found) == [(4, 17), (5, 19), (7, 36), (10, 29)]
    assert "`setattr` raises" in found[0].message
    assert "the patch raises" in found[1].message


def test_dl503_patch_through_a_bare_name_and_an_aliased_module() -> None:
    """Only chains whose last attribute is ``patch`` are skipped unresolved: a bare name bound
    to a patch, or an alias of the config module, is still resolved."""
    found = dl503(
        """\
        import torch._inductor.config as ic
        from torch._dynamo.config import patch

        with patch(recompile_limt=4):
            pass
        with ic.patch(max_autotun=True):
            pass
        """
    )
    assert [f.span.start.line for f in found] == [4, 6]


def test_dl503_traps() -> None:
    found = dl503(
        """\
        import types
        import torch
        import torch._dynamo.config as dc

        torch._dynamo.config.cache_size_limit = 64
        torch._dynamo.config.dynamic_shapes = True
        torch._dynamo.config.recompile_limit += 1
        torch._dynamo.config.optimize_ddp = "python_reducer"
        torch._inductor.config.triton.cudagraphs = True
        with torch._inductor.config.patch({"triton.cudagraphs": False}):
            pass
        config = types.SimpleNamespace()
        config.anything = 1

        def configure(dc):
            dc.anything = 1

        setattr(dc, name, True)
        """
    )
    assert found == []


CONFIG = """\
import torch._dynamo.config

torch._dynamo.config.skip_fsdp_hooks = False
"""


def test_dl503_config_of_older_releases_only_is_a_warning() -> None:
    finding = only(range_findings(CONFIG, "DL503", "2.4"))
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith(
        "`torch._dynamo.config.skip_fsdp_hooks` exists only in torch 2.4"
    )
    assert "which the project supports, the assignment raises `AttributeError: " in finding.message
    gone = re.search(r"on torch (\d+\.\d+)", finding.message)[1]  # type: ignore[index]
    assert finding.message.endswith(f"or keep the project's torch below {gone}.")
    error = only(range_findings(CONFIG, "DL503", "2.13"))
    assert error.severity is Severity.ERROR
    assert "does not exist in torch 2.13-2.14:" in error.message
    assert range_findings(CONFIG, "DL503", "2.4", "2.4") == []


HELPER = """\
import torch
from packaging import version


def _configure():
    from torch._dynamo import config

    config.recompile_limit = 1024


def _also_called_unguarded():
    torch._dynamo.config.recompile_limit = 8


def configure_after_an_early_return():
    if version.parse(torch.__version__) < version.parse("2.7"):
        return
    torch._dynamo.config.accumulated_recompile_limit = 8


def build(model):
    if version.parse(torch.__version__) < version.parse("2.8"):
        return model
    _configure()
    _also_called_unguarded()
    return torch.compile(model)


def other():
    _also_called_unguarded()
"""


def test_dl503_a_private_helper_called_only_behind_a_version_guard_is_guarded() -> None:
    """lmdeploy sets ``recompile_limit`` (torch 2.7+) in a private helper whose only call
    follows ``if version < 2.8: return``: on older torch it never runs. A helper also called
    from unguarded code, and a write after an early-return guard of its own function, are
    judged as before and as guarded."""
    found = range_findings(HELPER, "DL503", "2.4")
    assert [f.span.start.line for f in found] == [12]
