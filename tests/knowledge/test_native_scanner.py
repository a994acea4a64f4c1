"""The C++/CUDA registration scanner (``distlint.knowledge.native``) used by DL408 and DL404."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from distlint.knowledge.native import scan_native


def entries(text: str) -> list[tuple[str, str, str, str, int, int, str | None]]:
    return [
        (e.kind, e.namespace, e.name, e.overload, e.line, e.column, e.kernel_key)
        for e in scan_native(textwrap.dedent(text))
    ]


def test_library_and_impl_blocks() -> None:
    found = entries(
        """\
        TORCH_LIBRARY(myops, m) {
          m.def("a(Tensor x) -> Tensor");
          m.def("b.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)");
        }
        TORCH_LIBRARY_IMPL(myops, Meta, m) {
          m.impl("a", &a_meta);
        }
        TORCH_LIBRARY_FRAGMENT(myops, lib) {
          lib.def("c(Tensor x) -> Tensor");
        }
        """
    )
    assert found == [
        ("def", "myops", "a", "", 2, 2, None),
        ("def", "myops", "b", "out", 3, 2, None),
        ("impl", "myops", "a", "", 6, 2, "Meta"),
        ("def", "myops", "c", "", 9, 2, None),
    ]


def test_kernels_given_with_the_definition_or_through_dispatch() -> None:
    found = entries(
        """\
        TORCH_LIBRARY(ns, m) {
          m.def("k(Tensor x) -> Tensor", &k);
          m.def("t(Tensor x) -> Tensor", {at::Tag::pt2_compliant_tag});
          m.def(TORCH_SELECTIVE_SCHEMA("ns::s(Tensor x) -> Tensor"));
          m.impl("s", torch::dispatch(c10::DispatchKey::Autograd, [](const at::Tensor& x) {
            if (x.defined()) { return x; }
            return x;
          }));
          m.impl("t", TORCH_FN(t_any));
          m.def("l(Tensor x) -> Tensor", TORCH_FN(l));
        }
        """
    )
    assert found == [
        ("def", "ns", "k", "", 2, 2, "CompositeImplicitAutograd"),
        ("def", "ns", "t", "", 3, 2, None),
        ("def", "ns", "s", "", 4, 2, None),
        ("impl", "ns", "s", "", 5, 2, "Autograd"),
        ("impl", "ns", "t", "", 9, 2, "CompositeImplicitAutograd"),
        ("def", "ns", "l", "", 10, 2, "CompositeImplicitAutograd"),
    ]


def test_comments_strings_raw_strings_and_directives_are_not_code() -> None:
    found = entries(
        r"""
        // TORCH_LIBRARY(c1, m) { m.def("x(Tensor a) -> Tensor"); }
        /* TORCH_LIBRARY(c2, m) { m.def("x(Tensor a) -> Tensor"); } */
        const char* s = "TORCH_LIBRARY(c3, m) { m.def(\"x(Tensor a) -> Tensor\"); }";
        const char* r = R"xx(TORCH_LIBRARY(c4, m) { m.def("x(Tensor a) -> Tensor"); })xx";
        const char* u = u8R"(TORCH_LIBRARY(c5, m) { m.def("x(Tensor a) -> Tensor"); })";
        char q = '"';
        int n = 1'000'000;
        #define REG(x) \
          TORCH_LIBRARY(c6, m) { m.def("x(Tensor a) -> Tensor"); }
        #if 0 // TORCH_LIBRARY(c7, m) {
        #endif
        TORCH_LIBRARY(real, m) {
          m.def("y(Tensor a) -> Tensor");  // m.def("z(Tensor a) -> Tensor");
        }
        """
    )
    assert found == [("def", "real", "y", "", 14, 2, None)]


def test_defined_and_extension_namespaces() -> None:
    found = scan_native(
        "#define NS my_ns\n"
        'TORCH_LIBRARY(NS, m) { m.def("a(Tensor x) -> Tensor"); }\n'
        'TORCH_LIBRARY(TORCH_EXTENSION_NAME, m) { m.def("b(Tensor x) -> Tensor"); }\n'
    )
    assert [(e.namespace, e.name, e.namespace_is_macro) for e in found] == [
        ("my_ns", "a", False),
        ("TORCH_EXTENSION_NAME", "b", True),
    ]


def test_columns_count_code_points_and_the_span_ends_after_the_parenthesis() -> None:
    (entry,) = scan_native('TORCH_LIBRARY(ns, m) { /* é */ m.def("a(Tensor x) -> Tensor"); }\n')
    assert (entry.line, entry.column, entry.end_column) == (1, 31, 37)


def test_concatenated_schema_literals_and_crlf() -> None:
    found = scan_native(
        'TORCH_LIBRARY(ns, m) {\r\n  m.def("a(Tensor x) "\r\n        "-> Tensor");\r\n}\r\n'
    )
    assert [(e.name, e.line, e.column) for e in found] == [("a", 2, 2)]


def test_unbalanced_and_truncated_input_does_not_raise() -> None:
    for text in (
        "TORCH_LIBRARY(ns, m) {",
        'TORCH_LIBRARY(ns, m) { m.def("a(Tensor',
        "TORCH_LIBRARY(",
        'R"abc(never closed',
        "/* never closed",
        "TORCH_LIBRARY_IMPL(ns) { m.impl(); }",
        "",
    ):
        scan_native(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('TORCH_LIBRARY(ns,m){}m.def("a")\\/*\'#\nR '))))
def test_arbitrary_text_never_raises(text: str) -> None:
    scan_native(text)
