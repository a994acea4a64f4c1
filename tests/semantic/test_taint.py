"""Rank taint on a parsed file alone: which tests may differ between ranks."""

from __future__ import annotations

import libcst as cst

from distlint.semantic.taint import expression_is_rank_dependent
from tests.semantic.conftest import parsed


def _if_tests(node: cst.CSTNode) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class Ifs(cst.CSTVisitor):
        def visit_If(self, node: cst.If) -> None:
            found.append(node.test)

    node.visit(Ifs())
    return found


def _verdicts(source: str, rank_predicates: tuple[str, ...] = ()) -> list[bool]:
    file = parsed(source, rank_predicates=rank_predicates)
    return [expression_is_rank_dependent(file, test) for test in _if_tests(file.module)]


def test_a_rank_flows_through_names_and_calls() -> None:
    assert _verdicts(
        """
        import torch.distributed as dist
        rank = dist.get_rank()
        if rank == 0:
            pass
        if dist.get_rank() % 2:
            pass
        if len([rank]) == 1:
            pass
        """
    ) == [True, True, False]


def test_inside_functions_too() -> None:
    assert _verdicts(
        """
        import torch.distributed as dist
        def step(x):
            is_main = dist.get_rank() == 0
            if is_main:
                pass
            if x > 0:
                pass
        """
    ) == [True, False]


def test_a_global_whose_rank_a_later_round_learns_reaches_functions_defined_after_it() -> None:
    # `x = g()` runs before h is known to return a rank (g's return is learnt in a later
    # round), so f, defined after x, sees a rank in x only then: it must be run again in that
    # round though it reads no global (x is among the names it is defined with)
    assert _verdicts(
        """
        import torch.distributed as dist
        def g():
            return h()
        def h():
            return dist.get_rank()
        x = g()
        def f():
            if x == 0:
                pass
        y = 1
        def k():
            if y == 0:
                pass
        """
    ) == [True, False]


def test_configured_rank_predicates_count() -> None:
    source = """
        from utils import check_flag
        if check_flag():
            pass
        """
    assert _verdicts(source) == [False]
    assert _verdicts(source, rank_predicates=("utils.check_flag",)) == [True]


def test_the_analysis_is_built_once_per_file() -> None:
    from distlint.semantic.taint import FileTaint, file_taint

    file = parsed("import torch.distributed as dist\nif dist.get_rank():\n    pass\n")
    first = file_taint(file)
    assert isinstance(first, FileTaint) and file_taint(file) is first
