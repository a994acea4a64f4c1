"""LibCST's ``parse_module`` without re-checking each node its parser builds.

LibCST checks every node as it is constructed (``CSTNode.__post_init__`` calls ``_validate``:
parentheses paired, the whitespace the grammar needs between keywords, non-empty names). Its
parser's grammar already requires nearly all of it, yet those checks were an eighth to a fifth
of the parse's CPU time (1.65 M constructor checks on torch/distributed; that parse 6.5 s
checked, 5.7 s not, the best of six rounds on one box). So while :func:`parse_unchecked` runs,
the check is skipped, but for the one kind of node whose check goes beyond the grammar:
a concatenation of strings (``'a' b'b'``, ``'a' t'b'``: the grammar takes any adjacent
strings, the check rejects mixing str with bytes or template strings, as Python does). It is
LibCST's own method again as soon as the parse returns or raises, so a node our code builds
(a fix's replacement) is checked as usual. The tree, or the error, is the checked parse's:
the checks read nodes, never change them (the trees of all 2,285 files of torch 2.13
compared equal; ``tests/syntax/test_unchecked_parse.py`` keeps the errors equal).

The switch is the class attribute itself, nothing else: a parse overlapping another on a
second thread may see the check back on before it ends (its later nodes are checked: slower,
not different), and a node built on another thread while a parse runs is not checked (our
code builds none there). A LibCST without the hook parses as before, checked.
"""

from __future__ import annotations

import libcst as cst

_CHECK = cst.CSTNode.__dict__.get("__post_init__")  # LibCST's own: restored after each parse


def _not_checked(node: cst.CSTNode) -> None:
    """Stands for ``CSTNode.__post_init__`` during a parse: only a concatenation of strings
    is checked (see the module docstring)."""
    if type(node) is cst.ConcatenatedString:
        node._validate()


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
