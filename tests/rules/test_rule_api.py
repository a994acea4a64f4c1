"""The rule API stays typed: rules take a typed ``RuleContext`` and keep per-file caches in
its typed memo (``ctx.memo(build)``), never as attributes stashed on the context."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst

from distlint.file_settings import FileSettings
from distlint.rules.context import RuleContext

RULES = Path(__file__).resolve().parents[2] / "distlint" / "rules"


def _is_context(node: ast.expr) -> bool:
    """``ctx`` or ``self.ctx``."""
    if isinstance(node, ast.Name):
        return node.id == "ctx"
    return isinstance(node, ast.Attribute) and node.attr == "ctx"


def api_problems(source: str, where: str) -> list[str]:
    problems = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                if arg.arg == "ctx" and arg.annotation is None:
                    problems.append(f"{where}:{node.lineno}: untyped ctx in {node.name}()")
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setattr":
            targets = [ast.Attribute(node.args[0], "?")] if node.args else []
        for target in targets:
            if isinstance(target, ast.Attribute) and _is_context(target.value):
                problems.append(f"{where}:{node.lineno}: writes ctx.{target.attr}")
    lines = source.splitlines()
    for number, line in enumerate(lines, 1):
        if "type: ignore" in line and "def " in line and "ctx" in line.split("#")[0]:
            problems.append(f"{where}:{number}: type: ignore on a def taking ctx")
    return problems


def test_rules_take_a_typed_context_and_never_write_to_it() -> None:
    found = []
    for path in sorted(RULES.rglob("*.py")):
        if path.name != "context.py":
            found += api_problems(path.read_text("utf-8"), str(path.relative_to(RULES)))
    assert found == []


def test_the_check_sees_what_it_forbids() -> None:
    bad = textwrap.dedent(
        """
        def helper(ctx):  # type: ignore[no-untyped-def]
            ctx._dl999_cache = 1
            setattr(ctx, "x", 2)

        class R:
            def visit_Call(self, node) -> None:
                self.ctx.anything = 3
        """
    )
    assert len(api_problems(bad, "bad.py")) == 5


def test_memo_builds_once_per_file_and_per_builder() -> None:
    module = cst.parse_module("x = 1\n")
    ctx = RuleContext("a.py", "x = 1\n", module, FileSettings(enabled=frozenset()))
    calls: list[str] = []

    def count_lines(context: RuleContext) -> int:
        calls.append(context.path)
        return len(context.source.splitlines())

    assert ctx.memo(count_lines) == 1
    assert ctx.memo(count_lines) == 1
    assert calls == ["a.py"]
    other = RuleContext("b.py", "x = 1\n", module, FileSettings(enabled=frozenset()))
    assert other.memo(count_lines) == 1
    assert calls == ["a.py", "b.py"]


def test_the_rule_context_is_built_like_the_parsed_file_it_extends() -> None:
    """One constructor (ParsedFile's): a second pass hands over what measuring the tree
    learnt, and the walk's own state starts empty."""
    import inspect

    from distlint.syntax.parsed_file import ParsedFile
    from distlint.syntax.positions import Positions

    assert inspect.signature(RuleContext) == inspect.signature(ParsedFile)
    module = cst.parse_module("import torch\n")
    measured = Positions(module, None)
    settings = FileSettings(enabled=frozenset())
    ctx = RuleContext("a.py", "import torch\n", module, settings, "a", False, None, measured)
    assert ctx.positions is measured
    assert (ctx.module_key, ctx.reports, ctx.facts, ctx.in_project) == ("a", [], None, False)
    fresh = RuleContext("a.py", "import torch\n", module, settings)
    assert fresh.positions is not measured and fresh.module_key == "a.py"
