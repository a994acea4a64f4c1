"""Short spellings of nodes for messages (```x.relu().float()...` is not traceable``).

``module.code_for_node(node)`` generates the whole subtree, and a message wants its first 60
characters: on a 400-link call chain every call spells the chain below it, which is
quadratic (400 links: 10 s). :class:`Spellings` generates code only until it has enough
characters, and remembers the prefix of every node on the way down, so the chain's inner
calls are spelled from memory. The result is exactly what the full codegen gives.
"""

from __future__ import annotations

from contextlib import nullcontext

import libcst as cst
from libcst._nodes.internal import CodegenState

_RAW = 240  # characters of code generated per node: enough for a 60-character spelling


class _Enough(Exception):
    """Raised inside codegen once the prefix is long enough."""


_NOWHERE = nullcontext()  # entered around every node's code (see ``_Codegen``)


class _Codegen(CodegenState):
    """LibCST's codegen state, without the generator-based context it opens around each
    node to record positions (no one records them here: a quarter of codegen's time)."""

    def record_syntactic_position(self, *_: object, **__: object) -> nullcontext[None]:  # type: ignore[override]
        return _NOWHERE


class _PrefixState(_Codegen):
    """CodegenState that stops after ``_RAW`` characters and records, for every node it
    entered, the code from that node's start (each a prefix of the node's code)."""

    def __init__(self, module: cst.Module, memo: dict[cst.CSTNode, str]) -> None:
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        self.memo = memo
        self.length = 0
        self.entered: list[tuple[cst.CSTNode, int]] = []  # (node, length when it started)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.length += len(value)
        if self.length >= _RAW:
            raise _Enough

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        known = self.memo.get(node)
        if known is not None and self.entered:  # a prefix of _RAW characters, from memory
            self.add_token(known)  # raises _Enough
        self.entered.append((node, self.length))

    def after_codegen(self, node: cst.CSTNode) -> None:
        self.entered.pop()

    def remember(self) -> None:
        """Keep the prefix of every entered node that has ``_RAW`` characters of its own."""
        text = "".join(self.tokens)
        for node, start in self.entered:
            if len(text) - start >= _RAW:
                self.memo[node] = text[start : start + _RAW]


class Spellings:
    """Short spellings of one module's nodes (see the module docstring)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._memo: dict[cst.CSTNode, str] = {}

    def spell(self, node: cst.CSTNode, limit: int = 60) -> str:
        """The node's code, whitespace runs made one space, cut to ``limit`` characters
        (``...`` at the end when cut)."""
        prefix, code = self._prefix(node)
        if code is None:  # a long node: its first _RAW characters
            text = " ".join(prefix.split())
            if len(text) > limit:
                return text[: limit - 3] + "..."
            code = self.code(node)  # mostly blanks
        text = " ".join(code.split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def code(self, node: cst.CSTNode) -> str:
        """The node's whole code: ``module.code_for_node(node)``, generated faster."""
        module = self.module
        state = _Codegen(
            default_indent=module.default_indent, default_newline=module.default_newline
        )
        node._codegen(state)
        return "".join(state.tokens)

    def _prefix(self, node: cst.CSTNode) -> tuple[str, str | None]:
        """The first ``_RAW`` characters of the node's code and None; or, for a node that is
        shorter, its whole code twice (the stopped codegen ran to its end: it is the code)."""
        known = self._memo.get(node)
        if known is not None:
            return known, None
        state = _PrefixState(self.module, self._memo)
        try:
            node._codegen(state)
        except _Enough:
            state.remember()
            return "".join(state.tokens)[:_RAW], None
        code = "".join(state.tokens)
        return code, code
