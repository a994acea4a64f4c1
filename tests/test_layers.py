"""The package's layers: no import cycle between modules, and imports only go downward.

Every import counts: module level, function-local and under ``TYPE_CHECKING`` alike, since a
cycle hidden behind any of them still ties the modules into one unit a reader must take in
whole.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "distlint"

# Lowest first. A module may import from its own layer and from the layers before it.
LAYERS = (
    ("__init__", "findings", "meta", "file_settings"),  # plain data every layer reads
    ("syntax",),  # source text, the CST walk, positions, names, suppressions, the file index
    ("knowledge",),  # facts about torch shipped as data
    ("semantic",),  # compile roots, summaries, linking, rank taint
    ("rules",),  # the rule API (base, context, project) and every rule
    ("confirm",),  # running findings under torch to confirm them
    ("config",),  # [tool.distlint], selection, which files are checked
    ("engine",),  # the pipeline: check files and projects, caching, parallelism
    ("output",),  # reporters, docs, baselines
    ("lsp",),  # the language server
    ("api", "testing"),  # the public API for rule and plugin authors
    ("cli", "__main__"),  # the command line
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, wherever in the file the import is."""
    modules = module_files(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target not in (name, root.name):
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(step) == 1:
                return [*path[path.index(step) :], step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(graph.get(step, ()))))
    return None


def layer_of(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def test_no_import_cycle_between_modules() -> None:
    cycle = find_cycle(import_graph(PACKAGE))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_every_module_belongs_to_a_layer() -> None:
    assert sorted({layer_of(m) for m in module_files(PACKAGE)} - set(RANK)) == []


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if RANK.get(layer_of(target), 0) > RANK.get(layer_of(module), 0)
    ]


def test_imports_only_go_downward() -> None:
    assert upward_imports(import_graph(PACKAGE)) == []


def test_the_checks_see_cycles_and_upward_imports(tmp_path: Path) -> None:
    """The detector finds a cycle through a function-local and a TYPE_CHECKING import."""
    root = tmp_path / "distlint"
    (root / "syntax").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "syntax" / "__init__.py").write_text("")
    (root / "syntax" / "a.py").write_text("def f():\n    from distlint.syntax import b\n")
    (root / "syntax" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from distlint.engine.c import X\n"
    )
    (root / "engine").mkdir()
    (root / "engine" / "__init__.py").write_text("")
    (root / "engine" / "c.py").write_text("from ..syntax.a import f\nX = 1\n")
    graph = import_graph(root)
    assert graph["distlint.syntax.b"] == {"distlint.engine.c"}
    assert graph["distlint.engine.c"] == {"distlint.syntax.a"}  # relative import resolved
    assert find_cycle(graph) == [
        "distlint.engine.c",
        "distlint.syntax.a",
        "distlint.syntax.b",
        "distlint.engine.c",
    ]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert upward_imports(graph) == [
        "distlint.syntax.b (syntax) imports distlint.engine.c (engine)"
    ]
