"""``nodes_with_parents``: every node with its ancestors, into nested scopes or not."""

from __future__ import annotations

import libcst as cst

from distlint.syntax.source import parse_module
from distlint.syntax.walker import children, descendants, nodes_with_parents, scope_nodes

SOURCE = """\
def f(x):
    y = [x + 1 for _ in x]
    def g(z):
        return z + y
    h = lambda w: w * 2
    class C:
        q = 3
    return g(h(y))
"""


def _names(nodes) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.value for n in nodes if isinstance(n, cst.Name)]


def test_into_scopes_gives_every_node_with_its_ancestors() -> None:
    func = parse_module(SOURCE).body[0]
    walked = [(node, list(parents)) for node, parents in nodes_with_parents(func, into_scopes=True)]
    assert [node for node, _ in walked] == list(descendants(func))
    for node, parents in walked:
        expected = [func]
        while expected[-1] is not node:  # the path from ``func`` down, found the slow way
            expected.append(next(c for c in children(expected[-1]) if _holds(c, node)))
        assert parents == expected[:-1]


def test_own_scope_yields_nested_scopes_without_entering_them() -> None:
    func = parse_module(SOURCE).body[0]
    own = [node for node, _ in nodes_with_parents(func)]
    assert own[0] is func
    assert "z" not in _names(own) and "w" not in _names(own) and "q" not in _names(own)
    assert sum(isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) for n in own) == 4
    assert _names(own) == ["f", "x", "y", "x", "_", "x", "h", "g", "h", "y"]
    inner = list(scope_nodes(func))
    assert func not in inner
    assert not any(isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) for n in inner)


def _holds(root: cst.CSTNode, target: cst.CSTNode) -> bool:
    return any(n is target for n in descendants(root))
