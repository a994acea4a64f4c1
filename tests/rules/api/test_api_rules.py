"""DL501, DL503 and DL504 together: their metadata, and the guards and skipped tests under which
they are all silent."""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from distlint.rules.registry import get_rule
from tests.rules.api.api_util import HEADER, dl501, findings


def test_metadata() -> None:
    for code, severity in (
        ("DL501", Severity.ERROR),
        ("DL503", Severity.ERROR),
        ("DL504", Severity.WARNING),
    ):
        rule = get_rule(code)
        assert rule is not None and rule.severity is severity and rule.default_enabled


GUARDED = """\
    import torch
    import torch.distributed as dist
    from packaging import version

    if version.parse(torch.__version__) < version.parse("1.13"):
        gather = dist._all_gather_base
    if TORCH_VERSION < (2, 0):
        from torch.distributed._tensor import DTensor
    if hasattr(dist, "reduce_scatter_tensor"):
        rs = dist.reduce_scatter_tensor
    else:
        rs = dist._reduce_scatter_base
    try:
        from torch.distributed.fsdp import fully_shard
    except (ImportError, AttributeError):
        from torch.distributed._composable.fsdp import fully_shard
    try:
        model = torch.compile(net, dynamic_shapes=True)
    except TypeError:
        model = torch.compile(net)
    if is_torch_min_version("2.4.0"):
        model = torch.compile(net, fullgrph=True)
    fn = dist.all_gather_single if hasattr(dist, "all_gather_single") else dist._all_gather_base
    """


def test_dl501_and_dl504_silent_under_version_and_feature_guards() -> None:
    assert findings(GUARDED, "DL504") == []
    assert findings(GUARDED, "DL501") == []


def test_guards_do_not_hide_unguarded_uses() -> None:
    source = textwrap.dedent(GUARDED).rstrip(" ") + (
        "try:\n"
        "    x = dist._all_gather_base\n"
        "except RuntimeError:\n"
        "    pass\n"
        "if world_size > 1:\n"
        "    torch.compile(net, fullgrph=True)\n"
    )
    assert [f.span.start.line for f in findings(source, "DL504")] == [25]
    assert [f.span.start.line for f in findings(source, "DL501")] == [29]


def test_api_rules_silent_in_a_test_that_is_always_skipped() -> None:
    """xformers: a removed dynamo flag patched on a test marked ``skipif(True, ...)`` never
    runs; the same test without the mark, or with a computed condition, is reported."""
    skipped = """\
        import pytest
        import torch._dynamo

        @pytest.mark.skipif(True, reason="broken on nightly")
        @torch._dynamo.config.patch("a_flag_that_is_gone", True)
        def test_compile():
            torch.compile(print, fullgrph=True)

        @pytest.mark.skip
        def test_other():
            torch.compile(print, fullgrph=True)
        """
    assert findings(HEADER + textwrap.dedent(skipped), "DL503") == []
    assert dl501(skipped) == []
    live = skipped.replace("skipif(True,", "skipif(torch.cuda.device_count() < 2,")
    assert [f.code for f in findings(HEADER + textwrap.dedent(live), "DL503")] == ["DL503"]
    assert [f.code for f in dl501(live)] == ["DL501"]
