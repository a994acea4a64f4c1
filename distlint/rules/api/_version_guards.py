"""Version guards that reach past the guarded line: a fallback after ``if <version test>:
return``, and a private helper that is only ever called behind such a guard."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from distlint.semantic.regions import ends_in_exit
from distlint.syntax.guards import is_feature_guarded, is_version_test
from distlint.syntax.walker import nodes_with_parents

Block = cst.IndentedBlock | cst.Module


def after_early_exit_guard(block: Block) -> frozenset[int]:
    """Ids of the statements of ``block`` that follow ``if <version or feature test>: return``.

    ``if hasattr(funcol, "all_gather_tensor_autograd"): return funcol...`` then the legacy call:
    the statements after such a guard are the fallback for the versions without the feature.
    """
    body = block.body
    for i, stmt in enumerate(body):
        if (
            type(stmt) is cst.If
            and stmt.orelse is None
            and ends_in_exit(stmt.body)
            and is_version_test(stmt.test)
        ):
            return frozenset(id(later) for later in body[i + 1 :])
    return frozenset()


class EarlyExitGuards:
    """:func:`after_early_exit_guard` of the blocks of one tree, each block scanned once (it is
    asked at every statement below a block). A rule keeps one while it checks a file, so no
    tree outlives its check: a cache shared by every file kept up to 64 blocks of earlier files
    alive in a worker, whole modules among them."""

    def __init__(self) -> None:
        self._known: dict[int, frozenset[int]] = {}  # by id of a block of the tree

    def __call__(self, block: Block) -> frozenset[int]:
        found = self._known.get(id(block))
        if found is None:
            found = self._known[id(block)] = after_early_exit_guard(block)
        return found


def guarded_here(
    ancestors: Sequence[cst.CSTNode],
    early_exits: Callable[[Block], frozenset[int]] = after_early_exit_guard,
) -> bool:
    """Under a version/feature guard, or after one that returns early, in some block
    (``early_exits``: :func:`after_early_exit_guard`, or an :class:`EarlyExitGuards`)."""
    if is_feature_guarded(ancestors):
        return True
    return any(
        (type(node) is cst.IndentedBlock or type(node) is cst.Module)
        and i + 1 < len(ancestors)
        and id(ancestors[i + 1]) in early_exits(node)
        for i, node in enumerate(ancestors)
    )


def only_called_behind_guards(
    module: cst.Module,
    function: cst.FunctionDef,
    early_exits: Callable[[Block], frozenset[int]] = after_early_exit_guard,
) -> bool:
    """Whether ``function``, a private helper at module level (``_configure()``), is used in
    its file only by calls that run behind a version guard: lmdeploy calls the helper that sets
    ``recompile_limit`` only after ``if version < 2.8: return``. Other modules are assumed not
    to call a private helper; any other use of its name (passed, stored) answers False."""
    name = function.name.value
    if not name.startswith("_") or not any(stmt is function for stmt in module.body):
        return False
    calls = 0
    for node, parents in nodes_with_parents(module, into_scopes=True):
        if type(node) is not cst.Name or node.value != name or not parents:
            continue
        parent = parents[-1]
        if parent is function:
            continue  # the definition's own name
        if type(parent) is not cst.Call or parent.func is not node:
            return False
        if not guarded_here(parents, early_exits):
            return False
        calls += 1
    return calls > 0
