"""The walker visits nodes in source order; ``node_ranges`` equals LibCST's PositionProvider."""

from __future__ import annotations

import contextlib
import random
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from distlint.syntax import positions as positions_module
from distlint.syntax import walker as walker_module
from distlint.syntax.positions import Positions, node_ranges
from distlint.syntax.walker import children, walk

LIBCST_DIR = Path(cst.__file__).parent
# Real files of moderate size from the installed libcst package (parsed fresh each run).
CORPUS = [
    LIBCST_DIR / "codemod" / "_cli.py",
    LIBCST_DIR / "codemod" / "commands" / "rename.py",
    LIBCST_DIR / "helpers" / "_template.py",
    LIBCST_DIR / "_parser" / "conversions" / "params.py",
    LIBCST_DIR / "metadata" / "reentrant_codegen.py",
]
CORPUS = [path for path in CORPUS if path.is_file()]

EVERYTHING = textwrap.dedent(
    '''\
    """Module docstring."""
    from __future__ import annotations
    from ..pkg.mod import (alpha as beta, gamma)
    from . import delta
    import torch.distributed as dist, os

    type Alias[T: int = int] = list[T]


    @first
    @second(arg, key=value)
    class Klass[K](Base, metaclass=Meta):
        attr: int = 1

        @staticmethod
        def method[T](a, b=2, /, c: int = 3, *args, d, e=4, **kwargs) -> ret:
            lambda_ = lambda p, q=5, *r, s, **t: p if q else r
            value = body if test else orelse
            call(first_pos, *star, key=kw_value, **double)
            total = [elt for elt in seq if cond]
            mapping = {k: v for k, v in pairs}
            text = f"{name!r:>{width}} and {other}"
            if (walrus := compute()) > 0:
                pass
            elif other_test:
                pass
            else:
                pass
            try:
                risky()
            except ValueError as err:
                handle(err)
            except (KeyError, TypeError):
                pass
            else:
                fine()
            finally:
                cleanup()
            try:
                grouped()
            except* OSError as group:
                handle(group)
            with ctx() as (a1, a2), other_ctx():
                pass
            for i, j in pairs:
                continue
            else:
                pass
            while cond2:
                break
            match subject:
                case [head, *rest] if head > limit:
                    pass
                case {"key": kv, **others}:
                    pass
                case Point(x=0, y=yy) | None:
                    pass
                case _:
                    pass
            assert check, message
            del target[index]
            x[lower:upper:step] = slice_value
            ann_only: Annot
            counter += increment
            raise Error(msg) from cause
            return (yield from gen)


    async def coroutine(param):
        async with lock as held:
            async for item in aiter_:
                await item
    '''
)


def _modules() -> list[tuple[str, cst.Module]]:
    modules = [("everything", cst.parse_module(EVERYTHING))]
    for path in CORPUS:
        modules.append((path.name, cst.parse_module(path.read_text(encoding="utf-8"))))
    return modules


@pytest.fixture(scope="module")
def parsed() -> list[tuple[str, cst.Module, dict]]:
    out = []
    for name, module in _modules():
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        out.append((name, module, positions))
    return out


class _Everything(dict):
    """A handler table that hands every node type to one recorder."""

    def __init__(self, handler) -> None:
        super().__init__()
        self._handler = handler

    def get(self, key, default=None):
        return [self._handler]


def walk_order(module: cst.Module) -> list[cst.CSTNode]:
    seen: list[cst.CSTNode] = []
    walk(module, _Everything(seen.append), {}, [])
    return seen


def names_in_walk_order(source: str) -> list[str]:
    module = cst.parse_module(textwrap.dedent(source))
    return [node.value for node in walk_order(module) if isinstance(node, cst.Name)]


# -- order -----------------------------------------------------------------------------------------


def test_decorators_before_name_params_and_body() -> None:
    source = """
        @deco1
        @deco2(arg)
        def func(param: ann = default) -> ret:
            body
    """
    assert names_in_walk_order(source) == [
        "deco1",
        "deco2",
        "arg",
        "func",
        "param",
        "ann",
        "default",
        "ret",
        "body",
    ]


def test_class_decorators_before_name_bases_and_body() -> None:
    source = """
        @deco
        class C(Base, metaclass=Meta):
            body
    """
    assert names_in_walk_order(source) == ["deco", "C", "Base", "metaclass", "Meta", "body"]


def test_conditional_expression_body_test_orelse() -> None:
    assert names_in_walk_order("x = a if t else b\n") == ["x", "a", "t", "b"]
    assert names_in_walk_order("x = (a if t else b) if u else c\n") == [
        "x",
        "a",
        "t",
        "b",
        "u",
        "c",
    ]


def test_keyword_argument_name_before_value() -> None:
    assert names_in_walk_order("f(key=value)\n") == ["f", "key", "value"]


def test_except_handler_type_and_name_before_body() -> None:
    source = """
        try:
            risky
        except Error as err:
            handle
    """
    assert names_in_walk_order(source) == ["risky", "Error", "err", "handle"]


def test_positional_only_parameters_first() -> None:
    assert names_in_walk_order("def f(a, /, b, *c, d, **e): pass\n") == list("fabcde")


def test_match_guard_before_case_body() -> None:
    source = """
        match s:
            case p if guard:
                body
    """
    assert names_in_walk_order(source) == ["s", "p", "guard", "body"]


def test_type_alias_parameters_before_value() -> None:
    assert names_in_walk_order("type A[T] = list[T]\n") == ["A", "T", "list", "T"]


def test_walk_is_in_source_order_on_every_node(parsed) -> None:
    """Every node's children come in the order of their start positions."""
    problems = []
    for name, module, positions in parsed:
        for node in walk_order(module):
            kids = [kid for kid in children(node) if kid in positions]
            starts = [(positions[k].start.line, positions[k].start.column) for k in kids]
            if starts != sorted(starts):
                problems.append((name, type(node).__name__, [type(k).__name__ for k in kids]))
    assert problems[:5] == []


def test_walk_visits_every_name_call_and_string_libcst_visits(parsed) -> None:
    wanted = (cst.Name, cst.Call, cst.SimpleString, cst.Arg, cst.Decorator, cst.Param)

    class Collect(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[cst.CSTNode] = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, wanted):
                self.found.append(node)
            return True

    for name, module, _ in parsed:
        collector = Collect()
        module.visit(collector)
        walked = [node for node in walk_order(module) if isinstance(node, wanted)]
        assert len(walked) == len(set(map(id, walked))), name
        assert {id(n) for n in walked} == {id(n) for n in collector.found}, name


def test_parents_hold_the_ancestors_during_a_visit() -> None:
    module = cst.parse_module("def f():\n    return g(x)\n")
    parents: list[cst.CSTNode] = []
    seen = {}

    def on_name(node: cst.Name) -> None:
        seen[node.value] = [type(p).__name__ for p in parents]

    walk(module, {cst.Name: [on_name]}, {}, parents)
    assert seen["f"] == ["Module", "FunctionDef"]
    assert seen["x"][:3] == ["Module", "FunctionDef", "IndentedBlock"]
    assert seen["x"][-2:] == ["Call", "Arg"]


def test_visit_returning_false_skips_children_and_leave_is_called() -> None:
    module = cst.parse_module("f(g(x))\ny = 1\n")
    events: list[str] = []

    def visit_call(node: cst.Call) -> bool:
        events.append("visit " + cst.Module([]).code_for_node(node.func))
        return False

    def leave_call(node: cst.Call) -> None:
        events.append("leave " + cst.Module([]).code_for_node(node.func))

    def visit_name(node: cst.Name) -> None:
        events.append(node.value)

    walk(module, {cst.Call: [visit_call], cst.Name: [visit_name]}, {cst.Call: [leave_call]}, [])
    assert events == ["visit f", "leave f", "y"]


def test_leave_of_a_node_without_children_comes_right_after_its_visit() -> None:
    module = cst.parse_module("f(x, g(y))\n")
    parents: list[cst.CSTNode] = []
    events: list[tuple[str, str, int]] = []

    def visit_name(node: cst.Name) -> None:
        events.append(("visit", node.value, len(parents)))

    def leave_name(node: cst.Name) -> None:
        events.append(("leave", node.value, len(parents)))

    def leave_call(node: cst.Call) -> None:
        events.append(("leave call", cst.Module([]).code_for_node(node.func), len(parents)))

    on_leave = {cst.Name: [leave_name], cst.Call: [leave_call]}
    walk(module, {cst.Name: [visit_name]}, on_leave, parents)
    assert events == [
        ("visit", "f", 4),  # Module, SimpleStatementLine, Expr, Call
        ("leave", "f", 4),
        ("visit", "x", 5),  # ..., Call, Arg
        ("leave", "x", 5),
        ("visit", "g", 6),
        ("leave", "g", 6),
        ("visit", "y", 7),
        ("leave", "y", 7),
        ("leave call", "g", 5),
        ("leave call", "f", 3),
    ]


def test_classes_walked_as_childless_have_no_children(parsed) -> None:
    """The walk calls no children function for a class whose fields cannot hold a node."""
    childless = set()
    for _, module, _ in parsed:
        for node in walk_order(module):
            if walker_module._walk_getters[type(node)] is None:
                childless.add(type(node))
                assert children(node) == [], type(node).__name__
    assert {cst.Name, cst.Integer, cst.SimpleString} <= childless
    assert cst.Call not in childless and cst.Attribute not in childless


def test_walk_is_iterative_on_deep_trees() -> None:
    source = "x = " + "-" * 1200 + "1\n"  # deeper than the recursion limit allows a recursive walk
    module = cst.parse_module(source)
    count = 0

    def on_unary(node: cst.UnaryOperation) -> None:
        nonlocal count
        count += 1

    walk(module, {cst.UnaryOperation: [on_unary]}, {}, [])
    assert count == 1200


# -- positions -------------------------------------------------------------------------------------

RANGE_TYPES = (
    cst.Call,
    cst.Name,
    cst.Arg,
    cst.Decorator,
    cst.SimpleStatementLine,
    cst.FunctionDef,
    cst.ClassDef,
    cst.Attribute,
    cst.SimpleString,
    cst.Param,
    cst.If,
    cst.IndentedBlock,
)


def _expected(positions, node) -> tuple[int, int, int, int]:
    p = positions[node]
    return (p.start.line, p.start.column, p.end.line, p.end.column)


def _got(ranges, node) -> tuple[int, int, int, int] | None:
    r = ranges.get(node)
    return None if r is None else (r.start_line, r.start_column, r.end_line, r.end_column)


def test_node_ranges_match_position_provider_for_random_nodes(parsed) -> None:
    rng = random.Random(20240601)
    compared = 0
    for name, module, positions in parsed:
        candidates = [n for n in walk_order(module) if isinstance(n, RANGE_TYPES)]
        by_type = {t: [n for n in candidates if type(n) is t] for t in RANGE_TYPES}
        sample = rng.sample(candidates, min(80, len(candidates)))
        for nodes in by_type.values():
            sample.extend(rng.sample(nodes, min(3, len(nodes))))
        ranges = node_ranges(module, sample)
        for node in sample:
            assert _got(ranges, node) == _expected(positions, node), (name, type(node).__name__)
            compared += 1
        # One node at a time exercises the early stop after the last wanted node.
        for node in sample[:10]:
            single = node_ranges(module, [node])
            assert _got(single, node) == _expected(positions, node), (name, type(node).__name__)
    assert compared > 300


def test_node_ranges_for_every_requested_type_in_the_everything_module(parsed) -> None:
    name, module, positions = parsed[0]
    assert name == "everything"
    nodes = [n for n in walk_order(module) if isinstance(n, RANGE_TYPES)]
    ranges = node_ranges(module, nodes)
    mismatches = [
        (type(n).__name__, _got(ranges, n), _expected(positions, n))
        for n in nodes
        if _got(ranges, n) != _expected(positions, n)
    ]
    assert mismatches == []


def test_node_ranges_with_crlf_tabs_and_non_ascii() -> None:
    source = "x = 1\r\nif x:\r\n\ty = f('é🎉', k=z)\r\n"
    module = cst.parse_module(source)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [n for n in walk_order(module) if isinstance(n, RANGE_TYPES)]
    ranges = node_ranges(module, nodes)
    for node in nodes:
        assert _got(ranges, node) == _expected(positions, node), type(node).__name__


def test_positions_measured_again_match_position_provider(parsed) -> None:
    """One tree measured in several batches (as a file is: its findings, lazy spans, its
    second pass's findings), before and beyond where an earlier batch stopped."""
    rng = random.Random(20261203)
    for name, module, positions in parsed:
        candidates = [n for n in walk_order(module) if isinstance(n, RANGE_TYPES)]
        measured = Positions(module)
        early = candidates[len(candidates) // 4]  # the first batch stops after it
        batches = [[early], rng.sample(candidates, 20), [candidates[-1]], [module, early]]
        batches += [rng.sample(candidates, 5) for _ in range(5)]
        for batch in batches:
            ranges = measured.ranges(batch)
            for node in batch:
                # the module's own range ends past PositionProvider's, as a single measure's
                want = node_ranges(module, [module])[module] if node is module else None
                got = ranges[node] if node is module else _got(ranges, node)
                assert got == (want or _expected(positions, node)), (name, type(node))


FIFTY_FUNCTIONS = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(50))


def _generated_nodes(monkeypatch: pytest.MonkeyPatch) -> list[cst.CSTNode]:
    """The nodes code generation goes through from now on, in order."""
    generated: list[cst.CSTNode] = []
    real = positions_module._TrackingState.before_codegen

    def noting(self, node):  # type: ignore[no-untyped-def]
        generated.append(node)
        real(self, node)

    monkeypatch.setattr(positions_module._TrackingState, "before_codegen", noting)
    return generated


def test_a_later_measurement_generates_only_the_statements_that_hold_its_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = cst.parse_module(FIFTY_FUNCTIONS)
    measured = Positions(module)
    last = module.body[-1]
    assert measured.ranges([last])[last].start_line == 148  # the last statement only
    generated = _generated_nodes(monkeypatch)
    inner = module.body[30].body
    assert measured.ranges([inner])[inner].start_line == 92  # the line after the def's
    assert generated[0] is module.body[30]
    assert all(node is not module and node not in module.body[:30] for node in generated)
    assert not any(node in module.body[31:] for node in generated)


def test_a_node_measured_once_is_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first pass's findings and compile sites are what the second pass reports and
    matches again: their ranges are remembered, with the tree."""
    module = cst.parse_module("import torch\n\n\n@torch.compile\ndef f(x):\n    return x\n")
    measured = Positions(module)
    decorator = module.body[-1].decorators[0]  # type: ignore[attr-defined]
    first = measured.ranges([decorator])
    generated = _generated_nodes(monkeypatch)
    assert measured.ranges([decorator]) == first
    assert generated == []


def test_node_ranges_of_nothing_is_empty() -> None:
    assert node_ranges(cst.parse_module("x = 1\n"), []) == {}


# -- measuring a statement where it starts, without generating the code before it -----------------

TRICKY = {
    "crlf": (
        "import os\r\n\r\n# lead\r\ndef f(a,\r\n      b):\r\n    return a\r\n\r\n"
        "x = f(1,\r\n  2)\r\n"
    ),
    "cr": "x = 1\ry = f(\r2)\rz = 3\r",
    "tabs": "if x:\n\ty = 1\n\tif y:\n\t\tz = g(y)\n\t# tail\nw = [\n\t1]\n",
    "form feeds": "x = 1\n\f\ny = 2\n\fz = 3\n\f# c\nw = 4\n",
    "decorators": (
        "@a\n# between\n@b(\n  1)\n\ndef f():\n    pass\n@c\nclass K:\n    x = 1\ny = 2\n"
    ),
    "comments before statements": (
        "# header\n\n# lead\nx = 1\n  # indented\n# c\n\ndef f():\n    pass\n"
        "    # footer\n\n# lead of y\ny = 2\n# footer of the module\n"
    ),
    "semicolons": "a = 1; b = g(2); c = 3\nd = 4;\ne = h(5) ;  f = 6 # c\n",
    "no trailing newline": "x = 1\ndef f():\n    return g(x)\ny = f(\n 1)",
    "wide characters": "s = '日本語🎉'; t = f('é', k='😀')\nu = '''日本\n語''' + v\nw = 1\n",
    "continuations": (
        'x = 1 + \\\n    2\nif a and \\\n   b:\n    c = """multi\nline""" \\\n        + d\n'
        "e = f(\n    1,  # c\n\n    2,\n)\ng = f'{x!r}\\\n{y}'\nh = 3\n"
    ),
    "strings with line breaks": 'doc = """one\r\ntwo\rthree\nfour"""\nx = 1\n',
    "one statement": "x = f(1)\n",
    "nested blocks": (
        "class A:\n    # lead\n\n    class B(Base,\n            Other):\n        @dec(\n   1)\n"
        "        # between\n        def m(self, a,\n              b):\n            if a:\n"
        "                x = g(a)\n            elif b:  # c\n                y = 1\n"
        "                # footer of elif\n            else:\n                z = 2\n"
        "            try:\n                t = h()\n            except (K,\n  V) as e:\n"
        "                u = e\n            else:\n                v = 1\n"
        "            finally:\n                w = 2\n            with c(1,\n 2) as q:\n"
        "                r = q\n            for i in range(\n3):\n                s = i\n"
        "            else:\n                s2 = 0\n            while s:\n"
        "                s -= 1\n            else:\n                s3 = 0\n"
        "            return x\n\n\n    # after B\n    n = 1\nm = 2\n"
    ),
    "match and try star": (
        "def f(p):\n    match p:\n        case [a, *b] if a > (\n1):\n            q = a\n"
        "        # between cases\n        case {'k': v, **rest}:\n            q = v\n"
        "        case _:\n            match q:\n              case 1:\n                  r = 2\n"
        "    try:\n        g()\n    except* OSError as e:\n        h(e)\n"
        "    except* (KeyError,\n ValueError):\n        pass\n    return q\n"
    ),
    "mixed indentation": (
        "if a:\n\tb = 1\n\tif c:\n\t  d = f(1,\n2)\n\t  def g():\n\t        return 3\n"
        "\telse:\n\t    e = 4\nclass K:\n  x = 1\n  def m(self):\n   \ty = 2\n"
    ),
    "nested crlf": (
        "class K:\r\n    def m(self):\r\n        if x:\r\n\r\n            # c\r\n"
        "            y = f(1,\r\n   2)\r\n        z = 3\r\n"
    ),
    "one-line suites": (
        "if x: f()\nelif y: g(); h()\nelse: k()\nfor i in j: m(i)\n"
        "def f(): return 1\nclass C: x = 1; y = 2\nwhile z: z -= 1\n"
        "def g():\n    if a: b()\n    else:\n        c()\n    try: d()\n"
        "    except E: e()\n    with w: v()\n"
    ),
    "only comments": "# a\n\n# b\n",
}


def _every_node(module: cst.Module) -> list[cst.CSTNode]:
    """Every node of ``module`` (whitespace and punctuation too), the module excluded."""
    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = list(module.children)
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


def _whole_module_ranges(module: cst.Module, nodes: list[cst.CSTNode]) -> dict:
    """The ranges one codegen of the whole module gives (what a first measurement did)."""
    state = positions_module._TrackingState(module, set(nodes))
    with contextlib.suppress(positions_module._Done):
        positions_module.Positions(module)._whole(state)
    return {node: state.ranges[node] for node in nodes if node in state.ranges}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_statements_measured_alone_match_the_whole_module_measuring(name: str) -> None:
    module = cst.parse_module(TRICKY[name])
    nodes = _every_node(module)
    expected = _whole_module_ranges(module, nodes)
    assert len(expected) == len(nodes)
    for node in nodes:  # each the first measurement of its tree
        assert Positions(module).ranges([node]) == {node: expected[node]}, (name, node)
    rng = random.Random(name)
    for _ in range(5):  # a tree measured in batches
        measured = Positions(module)
        for _ in range(4):
            batch = rng.sample(nodes, min(len(nodes), rng.randint(1, 6)))
            assert measured.ranges(batch) == {node: expected[node] for node in batch}, name


def test_statement_starts_counted_match_the_codegen_on_the_corpus(parsed) -> None:
    for name, module, _ in parsed:
        generated = Positions(module)
        with contextlib.suppress(positions_module._Done):
            generated._whole(positions_module._TrackingState(module, set()))
        last = module.body[-1]
        counted = Positions(module)
        counted.ranges([last])  # counts the line breaks of every statement before it
        assert counted._starts == generated._starts, name


def test_an_empty_indented_block_is_counted_as_the_pass_line_it_is_written_with() -> None:
    module = cst.Module(
        body=[
            cst.FunctionDef(cst.Name("f"), cst.Parameters(), cst.IndentedBlock([])),
            cst.SimpleStatementLine([cst.Expr(cst.Name("x"))]),
        ]
    )
    name = module.body[1].body[0].value  # type: ignore[attr-defined]
    assert module.code == "def f():\n    pass\nx\n"
    assert Positions(module).ranges([name]) == _whole_module_ranges(module, [name])
    assert Positions(module).ranges([name])[name].start_line == 3


def test_a_first_measurement_generates_only_the_statements_that_hold_its_nodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = cst.parse_module(FIFTY_FUNCTIONS)
    generated = _generated_nodes(monkeypatch)
    inner, later = module.body[30].body, module.body[40].body  # type: ignore[attr-defined]
    ranges = Positions(module).ranges([later, inner])
    assert (ranges[inner].start_line, ranges[later].start_line) == (92, 122)
    holders = [module.body[30], module.body[40]]
    assert generated[0] is holders[0]
    assert {id(node) for node in generated} <= {
        id(node) for stmt in holders for node in [stmt, *_every_node(stmt)]
    }


def test_a_node_outside_every_statement_is_measured_in_the_whole_module() -> None:
    module = cst.parse_module("# header\nx = 1\n# footer\n")
    header, footer = module.header[0], module.footer[0]
    ranges = Positions(module).ranges([header, footer, module])
    assert ranges == _whole_module_ranges(module, [header, footer, module])
    assert ranges[footer].start_line == 3
    foreign = cst.Name("y")  # not in the tree: not measured
    assert Positions(module).ranges([foreign, module.body[0]]).keys() == {module.body[0]}


def test_a_statement_is_generated_only_up_to_the_last_node_it_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stopped inside an indented block, a statement's generation leaves no indentation
    behind for the next statement measured."""
    module = cst.parse_module(
        "def f():\n    if x:\n        a = 1\n        b = 2\n\n\n"
        "def g():\n    if y:\n        c = 3\n"
    )
    names = {n.value: n for n in _every_node(module) if isinstance(n, cst.Name)}
    expected = _whole_module_ranges(module, [names["a"], names["c"]])
    generated = _generated_nodes(monkeypatch)
    assert Positions(module).ranges([names["c"], names["a"]]) == expected
    assert (expected[names["a"]].start_column, expected[names["c"]].start_column) == (8, 8)
    assert names["a"] in generated and names["b"] not in generated


NESTED = (
    "nested blocks",
    "match and try star",
    "mixed indentation",
    "nested crlf",
    "one-line suites",
)


@pytest.mark.parametrize("name", NESTED)
def test_nodes_inside_compound_statements_match_position_provider(name: str) -> None:
    module = cst.parse_module(TRICKY[name])
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [n for n in walk_order(module) if isinstance(n, RANGE_TYPES)]
    for node in nodes:
        assert _got(Positions(module).ranges([node]), node) == _expected(positions, node), node
    measured = Positions(module)  # a later measurement starts from the counted starts
    measured.ranges([module.body[-1]])
    assert {n: _got(measured.ranges([n]), n) for n in nodes} == {
        n: _expected(positions, n) for n in nodes
    }


def test_a_node_deep_in_a_class_generates_only_its_innermost_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = cst.parse_module(TRICKY["nested blocks"])
    names = {n.value: n for n in _every_node(module) if isinstance(n, cst.Name)}
    wanted = [names["r"], names["u"]]
    expected = _whole_module_ranges(module, wanted)
    generated = _generated_nodes(monkeypatch)
    ranges = Positions(module).ranges(wanted)
    assert ranges == expected
    assert (ranges[names["r"]].start_line, ranges[names["u"]].start_line) == (29, 22)
    holders = {type(node).__name__ for node in generated if isinstance(node, cst.BaseStatement)}
    assert holders == {"SimpleStatementLine"}  # ``u = e`` and ``r = q``, nothing around them
    test = module.body[0].body.body[0].body.body[0].body.body[0].test  # type: ignore[attr-defined]
    generated.clear()
    Positions(module).ranges([test, names["x"]])  # in a header: the whole ``if`` statement
    assert type(generated[0]) is cst.If
