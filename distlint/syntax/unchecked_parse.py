"""LibCST's ``parse_module`` without re-checking each node its parser builds.

LibCST checks every node as it is constructed (``CSTNode.__post_init__`` calls ``_validate``:
parentheses paired, the whitespace the grammar needs between keywords, non-empty names). A
node its own parser builds from text the grammar accepted passes those checks by construction,
yet they were an eighth to a fifth of the parse's CPU time (1.65 M constructor checks on
torch/distributed; that parse 6.5 s checked, 5.7 s not, the best of six rounds on one box).
So while :func:`parse_unchecked` runs, the check is a no-op; it is LibCST's own method again
as soon as the parse returns or raises, so a node our code builds (a fix's replacement) is
checked as usual. The tree is the checked parse's: the checks read nodes, never change them.

The switch is the class attribute itself, nothing else: a parse overlapping another on a
second thread may see the check back on before it ends (its later nodes are checked: slower,
not different), and a node built on another thread while a parse runs is not checked (our
code builds none there). A LibCST without the hook parses as before, checked.
"""

from __future__ import annotations

import libcst as cst

_CHECK = cst.CSTNode.__dict__.get("__post_init__")  # LibCST's own: restored after each parse


def _not_checked(node: cst.CSTNode) -> None:
    """Stands for ``CSTNode.__post_init__`` during a parse."""


def parse_unchecked(text: str) -> cst.Module:
    """``libcst.parse_module(text)``: the same tree, or the same error, faster."""
    if _CHECK is None:  # pragma: no cover - a LibCST that validates elsewhere
        return cst.parse_module(text)
    # setattr: mypy types the method with its own signature, which a stand-in cannot match
    setattr(cst.CSTNode, "__post_init__", _not_checked)  # noqa: B010
    try:
        return cst.parse_module(text)
    finally:
        setattr(cst.CSTNode, "__post_init__", _CHECK)  # noqa: B010
