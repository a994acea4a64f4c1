"""DL601-DL604: CUDA graph capture and replay (observed on one H200, torch 2.11.0+cu130).

Capture regions are found in the file: the body of ``with torch.cuda.graph(g):``, the
statements between ``g.capture_begin()`` and ``g.capture_end()`` in one block, and the body of a
function of this file passed to ``torch.cuda.make_graphed_callables``; with project facts, also
every function that calls made under a capture run, in any module (a callable stored on
``self`` and called under capture included: ``FunctionSummary.passes``). ``reduce-overhead``
callables are compiled regions whose roots replay CUDA graphs (``region.cudagraphs``), plus, for
DL604's call sites, names bound in this file to ``torch.compile(..., mode="reduce-overhead")``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from distlint.findings import Location
from distlint.knowledge.captures import (
    GRAPH_CONTEXTS,
    GRAPHED_CALLABLES,
    graphed_items,
    statement_method,
)
from distlint.rules.base import Rule
from distlint.rules.context import RuleContext
from distlint.semantic.regions import literal_value
from distlint.syntax.walker import children, descendants, mentions_name

_CAPTURING = "is_current_stream_capturing"


# A capture needs one of these words in the file: ``graph`` (``torch.cuda.graph`` and its
# aliases: the import line names it), ``capture_begin`` or ``make_graphed_callables``.
_GRAPH_WORD = re.compile(r"\bgraph\b")


def _file_gates(ctx: RuleContext) -> tuple[bool, bool]:
    """(whether the file may capture, whether it mentions the capture test), once per file
    for the capture rules. ``graph`` as a word is looked for only where ``str.find`` finds
    the letters (a regex search over the whole text took five times as long); ``match``'s
    ``\\b`` sees the character before the position it starts at."""
    source = ctx.source
    may_capture = "capture_begin" in source or "make_graphed_callables" in source
    at = source.find("graph")
    while not may_capture and at >= 0:
        may_capture = _GRAPH_WORD.match(source, at) is not None
        at = source.find("graph", at + 1)
    return may_capture, _CAPTURING in source


_GUARD_TYPES = (cst.If, cst.While, cst.IfExp)  # LibCST does not subclass these


# Code under these runs on some paths only (a function reached by calls is checked on its
# main path: see _CaptureRule._on_main_path).
_CONDITIONAL_TYPES = frozenset(
    {cst.If, cst.Else, cst.IfExp, cst.While, cst.ExceptHandler, cst.BooleanOperation, cst.Match}
    | {cst.CompIf, cst.Assert}
)


class _CaptureRule(Rule):
    """Knows whether the node being visited runs while a CUDA graph is being captured."""

    reads_facts = True  # captures started in another module (ProjectFacts.capture_of)

    def __init__(self, ctx: RuleContext) -> None:
        super().__init__(ctx)
        self._spans: set[int] = set()  # ids of statements between capture_begin and capture_end
        self._graphed: set[str] = set()  # names of functions given to make_graphed_callables
        self._scanned = False
        # Cheap per-file gate: without these words nothing in the file can be captured.
        self._may_capture, self._guard_words = ctx.memo(_file_gates)
        # Every handler of a capture rule reports only what capture() finds; with no capture
        # in the file and none reaching its functions from the project (the facts are set
        # before the rules are made), it finds none at any node.
        facts = ctx.facts
        self.active = self._may_capture or (
            facts is not None and bool(facts.captures) and facts.has_captures(ctx.module_key)
        )

    def _scan(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        source = self.ctx.source
        graphed = "make_graphed_callables" in source
        spans = "capture_begin" in source
        if not (graphed or spans):
            return
        resolve = self.ctx.imports.resolve
        pending: list[cst.CSTNode] = [self.ctx.module]
        while pending:
            node = pending.pop()
            if type(node) is cst.Call:
                if graphed and node.args and resolve(node.func) in GRAPHED_CALLABLES:
                    items = graphed_items(node)
                    self._graphed.update(i.value for i in items if type(i) is cst.Name)
            elif spans and (type(node) is cst.IndentedBlock or type(node) is cst.Module):
                self._mark_spans(node.body)
            pending.extend(children(node))

    def _mark_spans(self, body: Sequence[cst.CSTNode]) -> None:
        inside = False
        for stmt in body:
            name = statement_method(stmt)
            if name == "capture_begin":
                inside = True
            elif name == "capture_end":
                inside = False
            elif inside:
                self._spans.add(id(stmt))

    def capture(self) -> cst.CSTNode | Location | None:
        """What starts the capture the current node runs under, or None: a node of this file
        enclosing it, or (from the project facts) where a capture that calls the current
        function starts.

        Code under an ``if`` that tests ``torch.cuda.is_current_stream_capturing()`` is
        treated as guarded (not captured).
        """
        if not self._may_capture:
            return self._called_under_capture()
        self._scan()
        found: cst.CSTNode | None = None
        guards = self._guard_words
        for parent in self.ctx.parents:
            if (
                guards
                and isinstance(parent, _GUARD_TYPES)
                and mentions_name(parent.test, _CAPTURING)
            ):
                return None
            if found is not None:
                continue
            if type(parent) is cst.With:
                for item in parent.items:
                    call = item.item
                    if type(call) is cst.Call and self.ctx.resolve(call.func) in GRAPH_CONTEXTS:
                        found = item
            elif id(parent) in self._spans or (
                type(parent) is cst.FunctionDef and parent.name.value in self._graphed
            ):
                found = parent
        return found if found is not None else self._called_under_capture()

    def _called_under_capture(self) -> Location | None:
        """Where a capture that runs the current function by calls starts (project facts)."""
        facts = self.ctx.facts
        if facts is None or not facts.captures or not facts.has_captures(self.ctx.module_key):
            return None
        function = self.ctx.function_id
        where = facts.capture_of(function) if function is not None else None
        if where is None:
            return None
        if not self._on_main_path():
            return None
        return Location(where[0], where[1], "runs under the CUDA graph capture started here")

    def _on_main_path(self) -> bool:
        """Whether the current node runs whenever its function does: not under a branch, a
        handler, a short-circuit or a conditional expression, nor after an early exit. A
        function reached by calls may take other paths under capture than the ones we see."""
        parents = self.ctx.parents
        for index in range(len(parents) - 1, -1, -1):
            parent = parents[index]
            kind = type(parent)
            if type(parent) is cst.FunctionDef:
                body = parent.body
                statement = parents[index + 2] if index + 2 < len(parents) else None
                if isinstance(body, cst.IndentedBlock) and statement is not None:
                    for earlier in body.body:
                        if earlier is statement:
                            break
                        if isinstance(earlier, cst.If) and _exits(earlier):
                            return False
                return True
            if kind in _CONDITIONAL_TYPES:
                return False
        return True

    def inside(self, start: cst.CSTNode | Location) -> str:
        """ "inside CUDA graph capture", naming the function when the capture calls it."""
        if isinstance(start, Location) and self.ctx.function is not None:
            name = self.ctx.function.name.value
            return f"in `{name}`, which runs inside CUDA graph capture,"
        return "inside CUDA graph capture"

    def related_to(self, start: cst.CSTNode | Location) -> dict:
        """The report keywords pointing at the capture's start."""
        if isinstance(start, Location):
            return {"related": (start,)}
        return {"related_nodes": ((start, "capture starts here"),)}


def _exits(node: cst.If) -> bool:
    """Whether an ``if`` statement may ``return`` or ``raise`` (an early exit)."""
    return any(isinstance(n, (cst.Return, cst.Raise)) for n in descendants(node))


def _ends_with(expr: cst.BaseExpression, name: str) -> bool:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == name
    return isinstance(expr, cst.Name) and expr.value == name


def _is_cudagraph_compile(call: cst.Call, ctx: RuleContext) -> bool:
    if not ctx.compiles(ctx.resolve(call.func)):
        return False
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "mode" and literal_value(arg.value) == "reduce-overhead":
            return True
        if arg.keyword.value == "options" and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if (
                    isinstance(element, cst.DictElement)
                    and literal_value(element.key) == "triton.cudagraphs"
                    and literal_value(element.value) is True
                ):
                    return True
    return False
