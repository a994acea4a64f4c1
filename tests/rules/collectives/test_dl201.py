"""Unit tests of DL201 against DL209: which rank-divergent shapes are proven hangs (errors)
and which are only possible (notes), on snippets of the review's false-alarm classes.

The shapes as written in real code, with their 2-gloo-rank proofs, are in
fixtures/DL201/traps_realworld.py (tests/semantic/test_dl201_shapes.py,
tests/proof/test_proof_dl201.py).
"""

from __future__ import annotations

from tests.rules.conftest import findings


def codes(source: str) -> list[str]:
    return sorted(f.code for f in findings(source, "DL201", "DL209"))


# -- a type test of an argument in the callee (class B) ------------------------------------------


def test_collective_under_an_inline_type_test_in_the_callee_is_only_possible() -> None:
    assert codes(
        """
        import torch
        import torch.distributed as dist
        from torch.distributed.fsdp import FSDPModule

        def save_checkpoint(path, models):
            if any(isinstance(m, FSDPModule) for m in models):
                dist.barrier()
            torch.save([m.state_dict() for m in models], path)

        def train(model, epoch):
            if dist.get_rank() == 0 and epoch % 5 == 0:
                save_checkpoint("c.pt", [model])
        """
    ) == ["DL209"]


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

        def train(model):
            if dist.get_rank() == 0:
                save_checkpoint("c.pt", model)
        """
    ) == ["DL209"]


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
    assert codes(source) == ["DL209"]


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
    ) == ["DL209"]


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
    ) == ["DL209"]


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
    assert found and set(found) <= {"DL201", "DL209"}
