"""Unit tests of DL201 against the possible places of the rank review listing (``distlint
explain-ranks``, which took DL209's notes): which rank-divergent shapes are proven hangs
(errors) and which are only possible, on snippets of the review's false-alarm classes.

The shapes as written in real code, with their 2-gloo-rank proofs, are in
fixtures/DL201/traps_realworld.py (tests/semantic/test_dl201_shapes.py,
tests/proof/test_proof_dl201.py).
"""

from __future__ import annotations

import pytest

from tests.rules.conftest import rank_labels


def codes(source: str) -> list[str]:
    """The listing's label of each place: DL201/DL208 when proven, else "possible"."""
    return sorted(label for label, _ in rank_labels(source))


# -- a type test of an argument in the callee (class B), the caller's model sharded -------------
# (a model not known to be sharded: not listed, see tests/semantic/test_possible_divergences.py)


def test_collective_under_an_inline_type_test_in_the_callee_is_only_possible() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist
        from torch.distributed.fsdp import FSDPModule, fully_shard

        def save_checkpoint(path, models):
            if any(isinstance(m, FSDPModule) for m in models):
                dist.barrier()
            torch.save([m.state_dict() for m in models], path)

        def train(net, epoch):
            model = fully_shard(net)
            if dist.get_rank() == 0 and epoch % 5 == 0:
                save_checkpoint("c.pt", [model])
        """
    ) == ["possible"]


def test_collective_under_a_type_test_flag_in_the_callee_is_only_possible() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        def save_checkpoint(path, model):
            is_fsdp = isinstance(model, FSDP)
            if is_fsdp:
                dist.barrier()
            torch.save(model.state_dict(), path)

        def train(net):
            model = FSDP(net)
            if dist.get_rank() == 0:
                save_checkpoint("c.pt", model)
        """
    ) == ["possible"]


def test_collective_under_a_flag_the_call_decides_true_stays_an_error() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def save_checkpoint(path, model, sync=True):
            if sync:
                dist.barrier()
            torch.save(model.state_dict(), path)

        def train(model):
            if dist.get_rank() == 0:
                save_checkpoint("c.pt", model)
        """
    ) == ["DL201"]


def test_unconditional_collective_in_the_callee_stays_an_error() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def save_checkpoint(path, model):
            dist.barrier()
            torch.save(model.state_dict(), path)

        def train(model):
            if dist.get_rank() == 0:
                save_checkpoint("c.pt", model)
        """
    ) == ["DL201"]


def test_distributed_guard_in_the_callee_stays_an_error() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def save_checkpoint(path, model):
            if dist.is_initialized():
                dist.barrier()
            torch.save(model.state_dict(), path)

        def train(model):
            if dist.get_rank() == 0:
                save_checkpoint("c.pt", model)
        """
    ) == ["DL201"]


# -- a flag returned in a tuple next to the rank (class C) ---------------------------------------

INFO = """
import os
import torch.distributed as dist

def info():
    return ("RANK" in os.environ), int(os.environ.get("RANK", 0))
"""


def test_flag_unpacked_next_to_the_rank_is_not_a_rank_test() -> None:
    source = INFO + (
        "\ndef main():\n"
        "    is_ddp, rank = info()\n"
        "    if is_ddp:\n"
        '        dist.init_process_group("nccl")\n'
        "        dist.barrier()\n"
    )
    assert codes(source) == []


def test_rank_element_of_the_tuple_is_still_the_rank() -> None:
    source = INFO + (
        "\ndef main():\n    is_ddp, r = info()\n    if r == 0:\n        dist.barrier()\n"
    )
    assert codes(source) == ["DL201"]


def test_tuples_of_different_shapes_keep_the_whole_value() -> None:
    source = """
    import os
    import torch.distributed as dist

    def info(full):
        if full:
            return True, int(os.environ["RANK"]), 1
        return int(os.environ["RANK"]), True

    def main():
        a, b = info(False)
        if b:
            dist.barrier()
    """
    assert codes(source) == ["possible"]


# -- an early return and a callee's collective gated by one flag (class A) ----------------------


def test_return_gated_by_the_flag_that_gates_the_callee_collective_is_only_possible() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def zero_shot(args):
            if args.fsdp:
                dist.broadcast(torch.zeros(1), 0)

        def evaluate(args):
            if not args.fsdp and dist.get_rank() != 0:
                return {}
            zero_shot(args)
        """
    ) == ["possible"]


def test_getattr_flags_on_both_sides_are_only_possible() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def zero_shot(args):
            use = getattr(args, "fsdp", False) and getattr(args, "distributed", False)
            if use:
                dist.broadcast(torch.zeros(1), 0)

        def evaluate(args):
            use = getattr(args, "fsdp", False) and getattr(args, "distributed", False)
            if not use and dist.get_rank() != 0:
                return {}
            zero_shot(args)
        """
    ) == ["possible"]


def test_return_on_a_plain_rank_test_before_a_guarded_collective_stays_an_error() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def zero_shot(args):
            if args.fsdp:
                dist.broadcast(torch.zeros(1), 0)

        def evaluate(args):
            if dist.get_rank() != 0:
                return {}
            zero_shot(args)
        """
    ) == ["DL201"]


def test_return_negating_an_unrelated_flag_before_an_unconditional_collective_stays_an_error() -> (
    None
):
    assert codes(
        """
        import torch
        import torch.distributed as dist

        def evaluate(args):
            if not args.fsdp and dist.get_rank() != 0:
                return {}
            dist.broadcast(torch.zeros(1), 0)
        """
    ) == ["DL201"]


# -- a barrier before the early return, one barrier on every later path (class D) ---------------

LEAVE_AFTER_A_BARRIER = """
import torch
import torch.distributed as dist

def save(rank, x):
    if rank != 0:
        dist.barrier()
        return None
    if not x:
        dist.{first}
        return None
    dist.barrier()
    return x
"""


def test_leaving_ranks_issue_the_barrier_every_later_path_issues() -> None:
    assert codes(LEAVE_AFTER_A_BARRIER.format(first="barrier()")) == []


def test_a_later_path_with_another_collective_is_still_reported() -> None:
    found = codes(LEAVE_AFTER_A_BARRIER.format(first="all_reduce(torch.ones(1))"))
    assert found and set(found) <= {"DL201", "possible"}


# -- a model looked up by name in a project module (``resnet.__dict__[args.arch]``) -------------

_FACTORIES = """
import torch.nn as nn


def conv_block(in_channels, out_channels):
    return nn.Conv2d(in_channels, out_channels, 3)


class Net(nn.Module):
    def __init__(self, width, zero_init=False, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.conv = conv_block(3, width)
        self.norm = norm_layer(width)


def narrow(**kwargs):
    return Net(8, **kwargs), 8


def wide(**kwargs):
    return Net(64, **kwargs), 64
"""

_PROBE = """
import torch
import torch.distributed as dist
import torch.nn as nn

import factories


def probe(args, batch):
    backbone, width = factories.__dict__[args.arch](zero_init=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(backbone, nn.Linear(width, 2)))
    model(batch).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(batch)
"""


def _lookup_codes(tmp_path, factories: str, probe: str = _PROBE) -> list[str]:
    from tests.project_util import rank_labels as project_rank_labels

    found = project_rank_labels(tmp_path, {"factories.py": factories, "probe.py": probe})
    return sorted(label for places in found.values() for label, _ in places)


def test_model_looked_up_by_name_owns_buffers_when_every_factory_builds_them(tmp_path) -> None:
    # conv_block needs two positional arguments: a keywords-only call cannot run it
    assert _lookup_codes(tmp_path, _FACTORIES) == ["DL201"]


def test_model_looked_up_by_name_is_only_possible_when_a_factory_builds_no_buffers(
    tmp_path,
) -> None:
    extra = "\n\ndef plain(**kwargs):\n    return nn.Conv2d(3, 8, 3), 8\n"
    assert _lookup_codes(tmp_path, _FACTORIES + extra) == ["possible"]


def test_model_looked_up_by_name_is_only_possible_when_a_helper_accepts_the_call(
    tmp_path,
) -> None:
    helper = _FACTORIES.replace(
        "def conv_block(in_channels, out_channels):",
        "def conv_block(in_channels=3, out_channels=8, **kw):",
    )
    assert _lookup_codes(tmp_path, helper) == ["possible"]


@pytest.mark.parametrize(
    "line",
    [
        "from torchvision.models import resnet18",
        "build = nn.Identity",
        "globals()['extra'] = nn.Identity",
    ],
)
def test_model_looked_up_by_name_is_only_possible_when_the_namespace_is_open(
    tmp_path, line: str
) -> None:
    factories = _FACTORIES.replace("import torch.nn as nn\n", f"import torch.nn as nn\n{line}\n", 1)
    assert _lookup_codes(tmp_path, factories) == ["possible"]


def test_model_looked_up_by_name_in_a_module_outside_the_project_is_only_possible(
    tmp_path,
) -> None:
    probe = _PROBE.replace("factories.__dict__", "torchvision.models.__dict__").replace(
        "import factories", "import torchvision.models"
    )
    assert _lookup_codes(tmp_path, _FACTORIES, probe) == ["possible"]


def test_model_called_straight_from_the_lookup_owns_buffers_when_every_member_builds_them(
    tmp_path,
) -> None:
    factories = """
import torch.nn as nn


def normed(width=8):
    return nn.Sequential(nn.Linear(width, width), nn.BatchNorm1d(width))


def batch_normed(width=8, momentum=0.1):
    return nn.BatchNorm1d(width, momentum=momentum)
"""
    probe = """
import torch
import torch.distributed as dist
import torch.nn as nn

import factories


def probe(name, batch):
    model = nn.parallel.DistributedDataParallel(factories.__dict__[name](width=4))
    model(batch).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            model(batch)
"""
    assert _lookup_codes(tmp_path, factories, probe) == ["DL201"]
    plain = factories + "\n\ndef plain(width=8):\n    return nn.Linear(width, 2)\n"
    assert _lookup_codes(tmp_path / "plain", plain, probe) == ["possible"]


def test_an_object_handed_to_a_library_on_rank_zero_is_not_a_callback_registration() -> None:
    """Project functions handed to unknown code on one rank may run collectives later (a
    served demo's callback), which makes a divergence next to them only possible. An
    object built and passed (recorded so that a callee compiling its parameter compiles the
    object's forward) is not such a callback: the rank-0 barrier stays an error."""
    assert codes(
        """
        import torch
        import torch.distributed as dist

        class Averager(torch.nn.Module):
            def forward(self, x):
                dist.all_reduce(x)
                return x

        def publish(server):
            server.register(Averager())

        def export_on_rank_zero(server):
            if dist.get_rank() == 0:
                publish(server)
                dist.barrier()
        """
    ) == ["DL201"]
