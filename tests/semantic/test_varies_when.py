"""A rank test's flags fixed to what they must be for the test to differ between ranks.

``if not gather or rank == 0:`` is true on every rank when ``gather`` is false: where the
ranks take different sides, ``gather`` is true, so a later ``if gather:`` of the same function
is decided while the divergence is compared (``Condition.varies_when``, ``EffectAnalysis``).
The shapes with their 2-gloo-rank proofs: ``write_predictions`` in fixtures/DL201/bad.py,
``load_model_state`` in fixtures/DL208/bad.py, and their traps.
"""

from __future__ import annotations

from distlint.semantic.model import Effect
from distlint.semantic.rankflow import MAYBE
from tests.rules.conftest import rank_labels
from tests.semantic.conftest import summary


def _rank_tests(source: str, function: str) -> list[tuple[tuple[str, bool], ...]]:
    """``varies_when`` of every rank branch of ``function`` in ``source``, in order."""
    module = summary(source)
    found: list[tuple[tuple[str, bool], ...]] = []

    def walk(effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if effect.kind == "branch" and effect.cond is not None and effect.cond.level >= MAYBE:
                found.append(effect.cond.varies_when)
            walk(effect.body)
            walk(effect.orelse)

    walk(module.functions[f"m:{function}"].effects)
    return found


def _codes(source: str) -> list[tuple[str, int]]:
    """(label, line) of the rank review listing's places: DL201/DL208 proven, or "possible"."""
    return rank_labels(source)


# -- which flags a rank test fixes -----------------------------------------------------------


def test_an_or_needs_its_uniform_flags_false_and_an_and_needs_them_true() -> None:
    source = """
        import torch.distributed as dist

        def f(a, b, c, info):
            if not a or dist.get_rank() == 0:
                dist.barrier()
            if b and c and dist.get_rank() != 0:
                dist.barrier()
            if (not info.from_rank0 or dist.get_rank() == 0) and info.strict:
                dist.barrier()
            if not (b and dist.get_rank() == 0):
                dist.barrier()
        """
    assert _rank_tests(source, "f") == [
        (("a", True),),
        (("b", True), ("c", True)),
        (("info.strict", True), ("info.from_rank0", True)),
        (("b", True),),  # a negation does not change where the test differs
    ]


def test_no_flag_is_fixed_when_it_may_change_or_the_rank_may_be_in_two_operands() -> None:
    source = """
        import torch.distributed as dist

        def f(flag, other, rank, local_rank):
            if not flag or dist.get_rank() == 0:
                dist.barrier()
            flag = other.check()
            if (other and rank == 0) or (flag and local_rank == 0):
                dist.barrier()
            if other.ready() and rank == 0:
                dist.barrier()
            if rank == 0 or local_rank == 0:
                dist.barrier()
        """
    # ``flag`` is assigned in the function: its value at a later branch is not the tested one
    assert _rank_tests(source, "f") == [(), (), (), ()]


def test_an_attribute_the_function_assigns_is_not_fixed() -> None:
    source = """
        import torch.distributed as dist

        def f(info, opts):
            if (not info.strict or dist.get_rank() == 0) and opts.cfg.verbose:
                dist.barrier()
            info.strict, other = False, 1
            opts.cfg = None
        """
    assert _rank_tests(source, "f") == [()]


def test_self_attributes_are_not_fixed() -> None:
    source = """
        import torch.distributed as dist

        class Saver:
            def save(self, args):
                if not self.distributed or dist.get_rank() == 0:
                    dist.barrier()
                if args.verbose and dist.get_rank() == 0:
                    dist.barrier()
        """
    module = summary(source)
    conds = [e.cond for e in module.functions["m:Saver.save"].effects if e.kind == "branch"]
    # a method the function calls may change ``self.distributed``
    assert [c.varies_when for c in conds] == [(), (("args.verbose", True),)]


# -- what it decides ---------------------------------------------------------------------------


def test_a_collective_under_the_flag_on_the_rank_side_is_proven() -> None:
    assert _codes(
        """
        import torch.distributed as dist

        def write(preds, gather):
            if not gather or dist.get_rank() == 0:
                if gather:
                    out = [None] * dist.get_world_size()
                    dist.gather_object(preds, out, dst=0)
        """
    ) == [("DL201", 8)]


def test_a_raise_before_a_broadcast_under_the_flag_is_a_proven_abort() -> None:
    assert _codes(
        """
        import torch.distributed as dist

        def load(local, full, info):
            for key in local:
                if (not info.broadcast_from_rank0 or dist.get_rank() == 0) and key not in full:
                    raise KeyError(key)
            if info.broadcast_from_rank0:
                box = [full]
                dist.broadcast_object_list(box, src=0)
            return box[0]
        """
    ) == [("DL208", 7)]


def test_an_exit_and_a_collective_under_opposite_values_of_the_flag_are_silent() -> None:
    # before: the all-reduce was only possibly skipped (listed as possible); it never runs where the
    # exit differs between ranks
    assert (
        _codes(
            """
            import torch.distributed as dist

            def evaluate(metric, sharded_eval):
                if not sharded_eval and dist.get_rank() != 0:
                    return None
                if sharded_eval:
                    dist.all_reduce(metric)
                return metric
            """
        )
        == []
    )


def test_a_reassigned_flag_or_a_self_attribute_stays_only_possible() -> None:
    assert _codes(
        """
        import torch.distributed as dist

        def evaluate(metric, flag):
            if not flag or dist.get_rank() == 0:
                return None
            flag = metric.sum() > 0
            if flag:
                dist.all_reduce(metric)
            return metric

        class Evaluator:
            def run(self, metric):
                if not self.sharded or dist.get_rank() == 0:
                    return None
                if self.sharded:
                    dist.all_reduce(metric)
                return metric
        """
    ) == [("possible", 6), ("possible", 15)]


def test_a_comparison_of_the_flag_is_not_decided_by_its_truth() -> None:
    # ``backend`` is true where the ranks differ; that says nothing of ``backend == "nccl"``
    assert _codes(
        """
        import torch.distributed as dist

        def sync(t, backend):
            if not backend or dist.get_rank() == 0:
                return t
            if backend == "nccl":
                dist.all_reduce(t)
            return t
        """
    ) == [("possible", 6)]


def test_a_callee_with_a_parameter_of_the_same_name_is_not_decided() -> None:
    # the flag is fixed in the function whose rank test it is, not in what it calls
    assert _codes(
        """
        import torch.distributed as dist

        def maybe_sync(t, gather):
            if gather:
                dist.all_reduce(t)

        def step(t, gather, other):
            if not gather or dist.get_rank() == 0:
                maybe_sync(t, other)
        """
    ) == [("possible", 10)]
