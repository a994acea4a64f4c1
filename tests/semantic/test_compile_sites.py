"""The compile-site model: options read and coerced once, the linked root derived from the
summary's record, and the form rules see in the tree."""

from __future__ import annotations

import libcst as cst

from distlint.findings import Position, Span
from distlint.semantic.compile_sites import (
    UNKNOWN,
    CompileOptions,
    CompileSite,
    compiles,
    decorator_site,
    literal_options,
)
from distlint.syntax.imports import ImportTable
from distlint.syntax.spans import NodeSpan

HERE = Span(Position(3, 1, 1), Position(3, 15, 15))


def _call(text: str) -> cst.Call:
    expr = cst.parse_expression(text)
    assert isinstance(expr, cst.Call)
    return expr


def _site(kind: str, keywords: tuple = (), target: tuple = ("f", "m:f")) -> CompileSite:
    span = NodeSpan(None, "m.py")
    span.span = HERE
    return CompileSite(target, ("g", "torch.compile"), keywords, span, kind)


def test_a_calls_keywords_are_read_as_literals_and_coerced_to_options() -> None:
    call = _call(
        'torch.compile(m, mode=MODE, fullgraph=True, backend="eager", dynamic=False,'
        ' options={"triton.cudagraphs": True, "x": y})'
    )
    keywords = literal_options(call)
    assert keywords == (
        ("backend", "eager"),
        ("dynamic", False),
        ("fullgraph", True),
        ("mode", UNKNOWN),
        ("options", (("triton.cudagraphs", True), ("x", UNKNOWN))),
    )
    options = CompileOptions.of(keywords)
    assert options == CompileOptions(True, False, None, "eager", True)
    assert options.text == "fullgraph=True, dynamic=False, backend='eager'"


def test_the_linked_root_takes_the_compilers_options_then_the_sites_own() -> None:
    """``partial(torch.compile, mode="reduce-overhead", fullgraph=True)(fn, fullgraph=False)``:
    the site's own keyword wins, the compiler's others stand."""
    site = _site("call", (("fullgraph", False),))
    given = (("fullgraph", True), ("mode", "reduce-overhead"))
    root = site.root("m.py", "m:f", "call", given, None)
    assert (root.path, root.span, root.target, root.kind) == ("m.py", HERE, "m:f", "call")
    assert (root.fullgraph, root.mode) == (False, "reduce-overhead")


def test_the_linked_roots_kind_and_binding_follow_the_site() -> None:
    binding = (("**", UNKNOWN), ("self.flag", True))
    decorator = _site("decorator").root("m.py", "m:f", "call", (), binding)
    assert (decorator.kind, decorator.binding) == ("decorator", None)
    method = _site("method", target=("f", "m:Net")).root(
        "m.py", "m:Net.forward", "module", (), binding
    )
    assert (method.kind, method.binding) == ("method", binding)
    block = _site("method", target=("elem", ("attr", ("self",), "layers")))
    assert block.root("m.py", "m:Block.forward", "module", (), binding).kind == "block"
    unmeasured = CompileSite(
        ("f", "m:f"), ("g", "torch.compile"), (), NodeSpan(None, "m.py"), "call"
    )
    assert unmeasured.root("m.py", "m:f", "call", (), None).span.start.line == 1


def test_rules_see_a_decorators_site_in_the_tree_with_the_same_options() -> None:
    module = cst.parse_module(
        "import torch\nfrom tools import jit\n\n"
        "@torch.compile(fullgraph=True, mode='max-autotune')\ndef f(x):\n    return x\n\n"
        "@jit\ndef g(x):\n    return x\n\n"
        "@staticmethod\ndef h(x):\n    return x\n"
    )
    table = ImportTable.for_module(module, "m", False)
    functions = [node for node in module.body if isinstance(node, cst.FunctionDef)]
    site = decorator_site(functions[0], table.resolve)
    assert site is not None and (site.compiler, site.kind, site.target) == (
        "torch.compile",
        "decorator",
        None,
    )
    assert site.options == CompileOptions(fullgraph=True, mode="max-autotune")
    assert site.root("m.py", HERE, "m:f").options.text == "fullgraph=True, mode='max-autotune'"
    assert decorator_site(functions[1], table.resolve) is None
    wrapped = decorator_site(functions[1], table.resolve, ("tools.jit",))
    assert wrapped is not None and wrapped.compiler == "tools.jit"
    assert decorator_site(functions[2], table.resolve, ("tools.jit",)) is None
    assert compiles("torch.compile", ()) and compiles("tools.jit", ("tools.jit",))
    assert not compiles("tools.jit", ())
