"""Proof for the buffered-module table of the rank analysis, on the installed torch.

A DDP forward is a collective only when the model owns buffers (DDP broadcasts them from rank
0 before the forward, ``broadcast_buffers=True``); DL201 reports a forward on some ranks as an
error only when the model is proven to own some (``distlint.semantic.collectives
.BUFFERED_MODULES``, ``CONVERTS_BATCH_NORM``). Each torch.nn constructor listed there must
still build a module with buffers, and ``track_running_stats=False`` (which the analysis
treats as owning none) must still build one without. The hang itself and the buffer-free
forward that finishes are proven with 2 gloo ranks in tests/proof/test_proof_dl201.py
(``case_project_model_with_buffers_sampled_by_a_helper_on_rank_zero``,
``case_buffer_free_ddp_models_sampled_on_rank_zero``).
"""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from distlint.semantic.collectives import BUFFERED_MODULES, CONVERTS_BATCH_NORM

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]


def _resolve(dotted: str) -> object:
    module, _, rest = dotted.partition(".")
    found: object = importlib.import_module(module)
    for part in rest.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            found = importlib.import_module(f"{found.__name__}.{part}")  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize("name", sorted(BUFFERED_MODULES))
def test_listed_constructor_builds_a_module_with_buffers(name: str) -> None:
    constructor = _resolve(name)
    module = constructor(4)  # type: ignore[operator]
    assert [n for n, _ in module.named_buffers()] == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]


@pytest.mark.parametrize("name", ["torch.nn.BatchNorm1d", "torch.nn.SyncBatchNorm"])
def test_untracked_statistics_own_no_buffers(name: str) -> None:
    module = _resolve(name)(4, track_running_stats=False)  # type: ignore[operator]
    assert list(module.buffers()) == []


@pytest.mark.parametrize("name", sorted(CONVERTS_BATCH_NORM))
def test_convert_sync_batchnorm_keeps_the_buffers(name: str) -> None:
    import torch

    converted = _resolve(name)(torch.nn.Sequential(torch.nn.BatchNorm1d(4)))  # type: ignore[operator]
    assert isinstance(converted[0], torch.nn.SyncBatchNorm)
    assert len(list(converted.buffers())) == 3
