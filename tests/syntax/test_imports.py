"""Name resolution with ``ImportTable``: imports, aliases, relative imports and shadowing."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.syntax.imports import ImportTable, canonical_name, dotted_name, statements_in_order
from distlint.syntax.module_names import module_name_for
from distlint.syntax.walker import descendants

DL203_ON = FileSettings(enabled=frozenset({"DL000", "DL203", "DL502"}))


def module_table(source: str, module_name: str | None = None, is_package: bool = False):
    module = cst.parse_module(textwrap.dedent(source))
    return module, ImportTable.for_module(module, module_name, is_package)


def resolve(source: str, expr: str, **kwargs) -> str | None:
    _, table = module_table(source, **kwargs)
    return table.resolve(cst.parse_expression(expr))


def function_table(source: str, name: str = "f") -> ImportTable:
    module, table = module_table(source)
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return table.for_function(stmt)
    raise AssertionError(f"no def {name}")


def resolve_in(source: str, expr: str, name: str = "f") -> str | None:
    return function_table(source, name).resolve(cst.parse_expression(expr))


@pytest.mark.parametrize(
    ("source", "expr", "expected"),
    [
        ("import torch as t", "t.compile", "torch.compile"),
        ("import torch as t", "t", "torch"),
        ("import torch", "torch.distributed.all_reduce", "torch.distributed.all_reduce"),
        ("import torch.distributed", "torch.distributed.barrier", "torch.distributed.barrier"),
        ("import torch.distributed as dist", "dist.all_reduce", "torch.distributed.all_reduce"),
        ("import torch.distributed as dist", "dist", "torch.distributed"),
        (
            "from torch.distributed import all_reduce as ar",
            "ar",
            "torch.distributed.all_reduce",
        ),
        ("from torch import compile", "compile", "torch.compile"),
        ("from torch import distributed as d", "d.broadcast", "torch.distributed.broadcast"),
        ("from torch import (compile as c, distributed)", "c", "torch.compile"),
        (
            "from torch import (compile as c, distributed)",
            "distributed.gather",
            "torch.distributed.gather",
        ),
        ("import os, torch.distributed as dist", "dist.gather", "torch.distributed.gather"),
        ("import numpy as np", "np.sum", "numpy.sum"),
    ],
)
def test_module_level_imports(source: str, expr: str, expected: str) -> None:
    assert resolve(source, expr) == expected


@pytest.mark.parametrize(
    ("source", "expr"),
    [
        ("import torch", "dist.all_reduce"),
        ("import torch.distributed as dist", "torch.compile"),
        ("from torch import compile", "torch.compile"),
        ("", "torch.compile"),
        ("import torch", "foo().compile"),
        ("import torch", "torch[0].compile"),
    ],
)
def test_unresolved_names(source: str, expr: str) -> None:
    assert resolve(source, expr) is None


def test_imports_inside_if_and_try_bind_at_module_level() -> None:
    source = """
        try:
            import torch.distributed as dist
        except ImportError:
            pass
        if True:
            from torch import compile as tc
        else:
            pass
    """
    assert resolve(source, "dist.barrier") == "torch.distributed.barrier"
    assert resolve(source, "tc") == "torch.compile"


def test_optional_import_fallback_does_not_shadow_the_import() -> None:
    source = """
        try:
            import torch.distributed as dist
        except ImportError:
            dist = None
    """
    assert resolve(source, "dist.barrier") == "torch.distributed.barrier"


def test_optional_import_fallback_def_does_not_shadow_the_import() -> None:
    source = """
        try:
            from torch.compiler import disable as compiler_disable
        except ImportError:
            def compiler_disable(fn=None):
                return fn
    """
    assert resolve(source, "compiler_disable") == "torch.compiler.disable"


def test_a_def_after_a_conditional_import_still_shadows_it() -> None:
    source = """
        try:
            from torch.compiler import disable
        except ImportError:
            pass

        def disable(fn):
            return fn
    """
    assert resolve(source, "disable") is None


def test_function_local_import() -> None:
    source = """
        def f():
            import torch.distributed as dist
            from torch import compile as c
            return dist.all_reduce

        def g():
            return dist.all_reduce
    """
    assert resolve(source, "dist.all_reduce") is None
    assert resolve_in(source, "dist.all_reduce") == "torch.distributed.all_reduce"
    assert resolve_in(source, "c") == "torch.compile"
    assert resolve_in(source, "dist.all_reduce", "g") is None


def test_function_scope_sees_module_imports() -> None:
    source = """
        import torch.distributed as dist

        def f(x):
            return dist.all_reduce(x)
    """
    assert resolve_in(source, "dist.all_reduce") == "torch.distributed.all_reduce"


def test_imports_in_a_nested_def_or_class_body_do_not_leak_to_the_module() -> None:
    source = """
        class C:
            import torch.distributed as dist

        def f():
            import torch as t
    """
    assert resolve(source, "dist.barrier") is None
    assert resolve(source, "t.compile") is None


# -- canonical names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expr", "expected"),
    [
        (
            "from torch.distributed.distributed_c10d import all_gather_object",
            "all_gather_object",
            "torch.distributed.all_gather_object",
        ),
        (
            "import torch.distributed.distributed_c10d as c10d",
            "c10d.broadcast_object_list",
            "torch.distributed.broadcast_object_list",
        ),
        (
            "import torch",
            "torch.distributed.distributed_c10d.all_reduce",
            "torch.distributed.all_reduce",
        ),
        (
            "from torch.distributed import distributed_c10d",
            "distributed_c10d.barrier",
            "torch.distributed.barrier",
        ),
    ],
)
def test_private_c10d_names_are_canonicalised(source: str, expr: str, expected: str) -> None:
    assert resolve(source, expr) == expected


def test_canonical_name_leaves_public_names_alone() -> None:
    assert canonical_name("torch.distributed.all_reduce") == "torch.distributed.all_reduce"
    assert (
        canonical_name("torch.distributed.distributed_c10d") == "torch.distributed.distributed_c10d"
    )


def test_dotted_name() -> None:
    assert dotted_name(cst.parse_expression("a.b.c")) == "a.b.c"
    assert dotted_name(cst.parse_expression("a")) == "a"
    assert dotted_name(cst.parse_expression("a().b")) is None


# -- aliases and shadowing -------------------------------------------------------------------------


def test_assignment_alias() -> None:
    source = """
        import torch.distributed as dist
        ar = dist.all_reduce
        c: object = dist
        again = ar
    """
    assert resolve(source, "ar") == "torch.distributed.all_reduce"
    assert resolve(source, "c.barrier") == "torch.distributed.barrier"
    assert resolve(source, "again") == "torch.distributed.all_reduce"


def test_alias_in_a_function() -> None:
    source = """
        import torch.distributed as dist

        def f():
            ar = dist.all_reduce
            return ar
    """
    assert resolve_in(source, "ar") == "torch.distributed.all_reduce"
    assert resolve(source, "ar") is None


def test_parameter_shadows_an_import() -> None:
    source = """
        import torch.distributed as dist

        def f(dist):
            dist.x
    """
    assert resolve(source, "dist.x") == "torch.distributed.x"
    assert resolve_in(source, "dist.x") is None


@pytest.mark.parametrize(
    "params", ["dist", "dist=None", "*, dist", "dist, /", "*dist", "**dist", "dist: int = 1"]
)
def test_every_kind_of_parameter_shadows(params: str) -> None:
    source = f"import torch.distributed as dist\n\ndef f({params}):\n    pass\n"
    assert resolve_in(source, "dist.barrier") is None


def test_local_def_shadows_an_import() -> None:
    source = """
        from torch import compile

        def compile(fn):
            return fn
    """
    assert resolve(source, "compile") is None


def test_local_class_shadows_an_import() -> None:
    assert resolve("import torch.distributed as dist\nclass dist: pass\n", "dist.barrier") is None


def test_def_inside_a_function_shadows_a_module_import() -> None:
    source = """
        import torch.distributed as dist

        def f():
            def dist():
                pass
            return dist.barrier
    """
    assert resolve_in(source, "dist.barrier") is None


def test_reassignment_to_a_non_import_shadows() -> None:
    source = """
        import torch.distributed as dist
        dist = object()
    """
    assert resolve(source, "dist.barrier") is None


# -- relative imports ------------------------------------------------------------------------------


@pytest.fixture
def package(tmp_path: Path) -> Path:
    for folder in ("pkg", "pkg/sub", "pkg/sub/deep"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("")
    (tmp_path / "pkg" / "sub" / "deep" / "leaf.py").write_text("")
    (tmp_path / "loose.py").write_text("")
    return tmp_path


def test_module_name_for(package: Path) -> None:
    assert module_name_for(package / "pkg" / "sub" / "mod.py") == ("pkg.sub.mod", False)
    assert module_name_for(package / "pkg" / "sub" / "__init__.py") == ("pkg.sub", True)
    assert module_name_for(package / "pkg" / "__init__.py") == ("pkg", True)
    assert module_name_for(package / "pkg" / "sub" / "deep" / "leaf.py") == (
        "pkg.sub.deep.leaf",
        False,
    )
    assert module_name_for(package / "loose.py") == ("loose", False)


@pytest.mark.parametrize(
    ("statement", "expr", "expected"),
    [
        ("from . import helpers", "helpers.run", "pkg.sub.helpers.run"),
        ("from .helpers import run", "run", "pkg.sub.helpers.run"),
        ("from .. import util", "util.f", "pkg.util.f"),
        ("from ..util import f as g", "g", "pkg.util.f"),
        ("from ...x import y", "y", None),  # escapes the top-level package
        ("from .... import z", "z", None),
    ],
)
def test_relative_imports_in_a_module(statement: str, expr: str, expected: str | None) -> None:
    assert resolve(statement, expr, module_name="pkg.sub.mod") == expected


@pytest.mark.parametrize(
    ("statement", "expr", "expected"),
    [
        ("from . import mod", "mod.f", "pkg.sub.mod.f"),
        ("from .mod import f", "f", "pkg.sub.mod.f"),
        ("from .. import util", "util", "pkg.util"),
    ],
)
def test_relative_imports_in_a_package_init(statement: str, expr: str, expected: str) -> None:
    assert resolve(statement, expr, module_name="pkg.sub", is_package=True) == expected


def test_relative_import_without_a_package_is_unresolved() -> None:
    assert resolve("from . import x", "x.y") is None
    # A top-level module has no parent package: `from .x import y` is an ImportError.
    assert resolve("from . import x", "x.y", module_name="loose") is None
    assert resolve("from .x import y", "y", module_name="loose") is None


def test_relative_import_resolved_end_to_end_from_the_package_layout(tmp_path: Path) -> None:
    # A package that re-exports torch.distributed as `.comm`, used from a sibling module.
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(
        textwrap.dedent(
            """
            import torch
            from . import comm
            from .comm import all_gather_object

            @torch.compile
            def step(x):
                all_gather_object([None], x)
                return x
            """
        )
    )
    result = check_file(FileSource.on_disk(pkg / "train.py", "mypkg/train.py"), DL203_ON)
    # `.comm` is mypkg.comm, not torch.distributed: nothing to report.
    assert result.findings == ()


# -- end to end: resolution drives the rules -------------------------------------------------------

DL203_TEMPLATE = """\
{imports}


@{compile}
def step(x):
    {call}([None], x)
    return x
"""


@pytest.mark.parametrize(
    ("imports", "compile_", "call", "fires"),
    [
        (
            "import torch\nimport torch.distributed as dist",
            "torch.compile",
            "dist.all_gather_object",
            True,
        ),
        ("import torch as t", "t.compile", "t.distributed.all_gather_object", True),
        (
            "from torch import compile\nfrom torch.distributed import all_gather_object as ago",
            "compile",
            "ago",
            True,
        ),
        (
            "import torch\nfrom torch.distributed.distributed_c10d import all_gather_object",
            "torch.compile",
            "all_gather_object",
            True,
        ),
        (
            "import torch\nimport torch.distributed as dist\nago = dist.all_gather_object",
            "torch.compile",
            "ago",
            True,
        ),
        ("import torch\nimport mylib as dist", "torch.compile", "dist.all_gather_object", False),
        (
            "import torch\nimport torch.distributed as dist\ndef compile(f): return f",
            "compile",
            "dist.all_gather_object",
            False,
        ),
    ],
)
def test_rules_use_the_resolution(imports: str, compile_: str, call: str, fires: bool) -> None:
    source = DL203_TEMPLATE.format(imports=imports, compile=compile_, call=call)
    result = check_file(FileSource(source, "m.py"), DL203_ON)
    assert ([f.code for f in result.findings] == ["DL203"]) is fires, source


def test_parameter_shadowing_silences_the_rule() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.distributed as dist

        @torch.compile
        def step(x, dist):
            dist.all_gather_object([None], x)
            return x
        """
    )
    assert check_file(FileSource(source, "m.py"), DL203_ON).findings == ()


def test_function_local_import_drives_the_rule() -> None:
    source = textwrap.dedent(
        """
        import torch

        @torch.compile
        def step(x):
            from torch.distributed import all_gather_object
            all_gather_object([None], x)
            return x
        """
    )
    assert [f.code for f in check_file(FileSource(source, "m.py"), DL203_ON).findings] == ["DL203"]


# every kind of block, a try's handlers before its else, statements in one-line suites
STATEMENTS = """\
import torch
@torch.compile(backend="eager")
def f(x):
    g = lambda y: (z := y)
    class C:
        a = 1
        def m(self): return torch.compile(self)
    if x: b = 1; c = torch.compile(g)
    elif x > 1:
        d = 2
    else:
        m.compile()
    try:
        e = 3
    except ValueError:
        pass
    else:
        f1 = 4
    finally:
        del x
    for i in range(3):
        h = i
    else:
        h = 0
    while True:
        break
    with open("p") as fh:
        k = fh
    match x:
        case 1:
            n = 1
        case _:
            n = 2
    return [q for q in range(2)]
async def later():
    await f(1)
"""


def test_statements_in_order_are_the_statements_a_walk_of_every_node_finds() -> None:
    """With ``into_scopes``, the small statements and def/class heads that walking every node
    finds, in the same order (the compiled bindings read their candidates from it)."""
    module = cst.parse_module(STATEMENTS)
    kinds = (cst.BaseSmallStatement, cst.FunctionDef, cst.ClassDef)
    walked = [node for node in descendants(module) if isinstance(node, kinds)]
    assert list(statements_in_order(module.body, into_scopes=True)) == walked
    assert len(walked) == 24
