"""Version guards that reach past the guarded line: a fallback after ``if <version test>:
return``, and a private helper that is only ever called behind such a guard."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import libcst as cst

from distlint.semantic.regions import ends_in_exit
from distlint.syntax.guards import is_feature_guarded, is_version_test
from distlint.syntax.walker import nodes_with_parents


@functools.lru_cache(maxsize=64)  # asked once per block and name use below it: scanned once
def after_early_exit_guard(block: cst.IndentedBlock | cst.Module) -> frozenset[int]:
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


def guarded_here(ancestors: Sequence[cst.CSTNode]) -> bool:
    """Under a version/feature guard, or after one that returns early, in some block."""
    if is_feature_guarded(ancestors):
        return True
    return any(
        (type(node) is cst.IndentedBlock or type(node) is cst.Module)
        and i + 1 < len(ancestors)
        and id(ancestors[i + 1]) in after_early_exit_guard(node)
        for i, node in enumerate(ancestors)
    )


def only_called_behind_guards(module: cst.Module, function: cst.FunctionDef) -> bool:
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
        if not guarded_here(parents):
            return False
        calls += 1
    return calls > 0
