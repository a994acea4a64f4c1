"""Unit tests of the compiled-region rules DL111-DL118 (graph-break breadth).

Small snippets through ``check_source`` (and small projects for calls across modules); the
proof tests (tests/proof/test_proof_dl1xx.py) show that torch 2.13 breaks or fails as the
messages say.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distlint.engine.checker import check_source
from distlint.file_settings import FileSettings
from distlint.findings import Finding, Severity
from tests.project_util import check_sources

HEADER = "import torch\nimport torch._dynamo\n\n"


def run(source: str, *codes: str) -> list[Finding]:
    result = check_source(textwrap.dedent(source), "t.py", FileSettings(enabled=frozenset(codes)))
    assert result.errors == ()
    return sorted(result.findings, key=lambda f: (f.span.start.line, f.span.start.column))


def where(findings: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.code, f.span.start.line, f.span.start.column) for f in findings]


# -- DL111 ---------------------------------------------------------------------------------------


def test_dl111_direct_call_is_an_error_under_fullgraph() -> None:
    source = HEADER + (
        "@torch.compile(fullgraph=True)\ndef f(x):\n    torch._dynamo.graph_break()\n    return x\n"
    )
    (finding,) = run(source, "DL111")
    assert (finding.code, finding.span.start.line) == ("DL111", 6)
    assert finding.severity is Severity.ERROR
    assert "GB0025" in finding.message and "2.13" in finding.message


def test_dl111_without_fullgraph_is_a_warning() -> None:
    source = HEADER + (
        "from torch._dynamo import skip_frame\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    skip_frame()\n"
        "    return x\n"
    )
    (finding,) = run(source, "DL111")
    assert finding.severity is Severity.WARNING
    assert "GB4297" in finding.message and "whole function" in finding.message


def test_dl111_nested_def_and_self_method_bodies_of_checkpoint_and_cond() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch.utils.checkpoint import checkpoint


        class Block(torch.nn.Module):
            def _inner(self, x):
                torch._dynamo.graph_break()
                return x

            def forward(self, x):
                def branch(t):
                    torch._dynamo.graph_break()
                    return t

                y = checkpoint(self._inner, x, use_reentrant=False)
                return torch.cond(y.sum() > 0, branch, branch, (y,))


        model = torch.compile(Block())
        """
    )
    found = run(source, "DL111")
    assert where(found) == [("DL111", 9, 9), ("DL111", 14, 13)]
    assert found[0].severity is Severity.WARNING  # checkpoint, no fullgraph
    assert found[1].severity is Severity.ERROR  # torch.cond fails even without fullgraph


def test_dl111_silent_outside_regions_and_for_other_names() -> None:
    source = HEADER + textwrap.dedent(
        """\
        def eager(x):
            torch._dynamo.graph_break()
            return x


        @torch.compile(fullgraph=True)
        def f(x, graph_break):
            graph_break()
            torch._dynamo.reset()
            return x
        """
    )
    assert run(source, "DL111") == []


def test_dl111_follows_helpers_across_modules(tmp_path: Path) -> None:
    results = check_sources(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": """\
                import torch._dynamo


                def debug(x):
                    torch._dynamo.graph_break()
                    return x
                """,
            "pkg/model.py": """\
                import torch

                from pkg.helpers import debug


                @torch.compile(fullgraph=True)
                def step(x):
                    return debug(x) + 1
                """,
        },
        enabled=["DL111"],
    )
    (finding,) = results["pkg/helpers.py"].findings
    assert (finding.code, finding.span.start.line, finding.severity) == (
        "DL111",
        5,
        Severity.ERROR,
    )
    assert results["pkg/model.py"].findings == ()


# -- DL112 ---------------------------------------------------------------------------------------

TEST_CASE = HEADER + textwrap.dedent(
    """\
    import unittest


    class Base(unittest.TestCase):
        def assertScaled(self, x):
            return x * 2


    class T(Base):
        def test(self):
            @torch.compile
            def step(x):
                self.assertScaled(x)
                self.assertEqual(x.shape, (4,))
                torch.compiler.disable(print)(x)
                return x

            return step
    """
)


def test_dl112_unittest_assertions_and_disable_calls_in_a_region() -> None:
    found = run(TEST_CASE, "DL112")
    assert where(found) == [("DL112", 17, 13), ("DL112", 18, 13)]
    assert "GB0008" in found[0].message and "GB0007" in found[1].message
    assert all(f.severity is Severity.WARNING for f in found)


def test_dl112_not_a_test_case_or_outside_a_region() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import unittest

        from somewhere import ExternalBase


        class Other(ExternalBase):
            def run(self):
                @torch.compile(fullgraph=True)
                def step(x):
                    self.assertEqual(x, x)
                    return x

                return step


        class T(unittest.TestCase):
            def test(self):
                self.assertEqual(1, 1)
                return torch.compiler.disable(print)
        """
    )
    assert run(source, "DL112") == []


# -- DL113 ---------------------------------------------------------------------------------------


def test_dl113_class_in_compiled_function_and_in_a_helper() -> None:
    source = HEADER + textwrap.dedent(
        """\
        def helper(x):
            class Inner:
                class Deeper:
                    pass
            return x


        @torch.compile(fullgraph=True)
        def step(x):
            class Local:
                pass
            return helper(x)


        def eager():
            class Fine:
                pass
        """
    )
    found = run(source, "DL113")
    assert where(found) == [("DL113", 5, 11), ("DL113", 13, 11)]
    assert all(f.severity is Severity.ERROR for f in found)
    assert "GB8977" in found[0].message


# -- DL114 ---------------------------------------------------------------------------------------

ITERATES = HEADER + textwrap.dedent(
    """\
    @torch.compile(fullgraph=True)
    def f(pairs, x):
        return x + sum(a for a in pairs)


    g = torch.compile(lambda x: x)
    """
)


def test_dl114_reports_iterators_and_dict_views() -> None:
    source = ITERATES + textwrap.dedent(
        """\
        d = {"a": 1}
        f(reversed([1, 2]), 1)
        f(d.values(), 1)
        f(filter(None, [1]), x=1)
        f(pairs=iter([1]), x=1)
        """
    )
    found = run(source, "DL114")
    assert where(found) == [
        ("DL114", 11, 3),
        ("DL114", 12, 3),
        ("DL114", 13, 3),
        ("DL114", 14, 9),
    ]
    assert all(f.severity is Severity.ERROR and "GB0811" in f.message for f in found)


def test_dl114_silent_on_lists_keys_unknown_receivers_and_shadowing_locals() -> None:
    source = ITERATES + textwrap.dedent(
        """\
        f(list(zip([1], [2])), 1)
        f({"a": 1}.keys(), 1)
        f(table.values(), 1)
        f(1, zip([1], [2]))


        def local():
            def f(pairs, x):
                return pairs
            return f(zip([1], [2]), 1)
        """
    )
    assert run(source, "DL114") == []


# -- DL115 ---------------------------------------------------------------------------------------


def test_dl115_functions_and_tensor_methods() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile
        def f(x: torch.Tensor, y, other):
            a = torch.equal(x, y)
            b = x.allclose(y)
            c = y.equal(x)
            d = other.equal(y)
            e = torch.isclose(x, y)
            return a, b, c, d, e
        """
    )
    found = run(source, "DL115", "DL101")
    assert where(found) == [("DL115", 6, 9), ("DL115", 7, 9), ("DL115", 8, 9)]
    assert all(f.severity is Severity.WARNING and "GB0033" in f.message for f in found)


def test_dl115_branch_on_allclose_is_not_a_tensor_branch() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile(fullgraph=True)
        def f(x: torch.Tensor, y: torch.Tensor):
            if torch.allclose(x, y):
                return x
            return y
        """
    )
    (finding,) = run(source, "DL115", "DL101")
    assert finding.code == "DL115" and finding.severity is Severity.ERROR


# -- DL116 ---------------------------------------------------------------------------------------


def test_dl116_module_without_super_init() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn
        from project import Base


        class A(nn.Module):
            def __init__(self):
                self.k = 1


        class B(nn.Linear):
            def __init__(self):
                pass


        class C(Base, nn.Module):
            def __init__(self):
                pass


        class D(nn.Module):
            def __init__(self):
                super().__init__()


        class E(nn.Module):
            pass


        class F:
            def __init__(self):
                pass


        class Abstract(nn.Module):
            def __init__(self):
                raise NotImplementedError
        """
    )
    found = run(source, "DL116")
    assert where(found) == [("DL116", 9, 9), ("DL116", 14, 9)]
    assert all(f.severity is Severity.ERROR and "GB0119" in f.message for f in found)


def test_dl116_test_doubles_never_called_in_their_test_module_are_left_alone() -> None:
    """peft's and torchrl's tests hand minimal nn.Module doubles to code that only reads
    their attributes: never called, never broken. A double the test calls is reported."""
    source = """
    import torch
    from torch import nn

    class Mock(nn.Module):
        def __init__(self, keys):
            self.keys = keys

    class Called(nn.Module):
        def __init__(self):
            self.scale = 2

    def test_mock():
        assert Mock(["a"]).keys == ["a"]

    def test_called():
        m = Called()
        return m(torch.ones(2))
    """
    settings = FileSettings(enabled=frozenset({"DL116"}))
    found = check_source(textwrap.dedent(source), "tests/test_mocks.py", settings).findings
    assert [f.span.start.line for f in found] == [10]
    outside = check_source(textwrap.dedent(source), "src/mocks.py", settings).findings
    assert [f.span.start.line for f in outside] == [6, 10]


# -- DL117 ---------------------------------------------------------------------------------------


def test_dl117_sorting_tensors_by_their_values() -> None:
    source = HEADER + textwrap.dedent(
        """\
        @torch.compile
        def f(x: torch.Tensor, names, xs: "list[torch.Tensor]"):
            parts = [x, x + 1]
            a = sorted(parts, key=lambda t: float(t.mean()))
            b = sorted((x, x * 2), key=lambda t: t[0])
            c = sorted(parts, key=lambda t: t.shape[0])
            d = sorted(parts, key=lambda t: t.numel())
            e = sorted(names, key=lambda t: t.sum())
            parts.sort()
            x.sort()
            return a, b, c, d, e
        """
    )
    found = run(source, "DL117")
    assert where(found) == [("DL117", 7, 9), ("DL117", 8, 9), ("DL117", 12, 5)]
    assert all(f.severity is Severity.WARNING and "GB0207" in f.message for f in found)


# -- DL118 ---------------------------------------------------------------------------------------


def test_dl118_mutations_of_outside_containers_in_hop_bodies() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import collections
        from torch.utils.checkpoint import checkpoint

        QUEUE = collections.deque()
        SEEN = set()
        OTHER = object()


        def body(x, acc):
            QUEUE.append(x)
            SEEN.add(1)
            OTHER.update(x)
            acc.append(x)
            local = {}
            local["a"] = x
            return x


        @torch.compile
        def f(x):
            total = 0
            def inner(t):
                nonlocal total
                total = total + 1
                return t
            y = checkpoint(body, x, [], use_reentrant=False)
            return checkpoint(inner, y, use_reentrant=False)
        """
    )
    found = run(source, "DL118")
    assert where(found) == [("DL118", 13, 5), ("DL118", 14, 5), ("DL118", 27, 9)]
    assert all(f.severity is Severity.WARNING and "GB0067" in f.message for f in found)


# -- DL110 (extended): disabled callables passed in, class-attribute aliases ----------------------


def test_dl110_disabled_callables_passed_into_a_fullgraph_function() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn


        @torch.compiler.disable
        def stats(x):
            return x


        eager_layer = torch.compiler.disable(nn.Linear(2, 2))


        class Box:
            fn = torch.compiler.disable(stats)

            @torch.compile(fullgraph=True)
            def run(self, x):
                return self.fn(x)


        @torch.compile(fullgraph=True)
        def apply(x, hook):
            return hook(x)


        @torch.compile
        def lenient(x, hook):
            return hook(x)


        apply(1, stats)
        apply(1, hook=eager_layer)
        lenient(1, stats)
        apply(stats, 1)
        """
    )
    found = run(source, "DL110")
    assert where(found) == [("DL110", 20, 16), ("DL110", 33, 10), ("DL110", 34, 15)]
    assert "GB0099" in found[0].message
    assert "GB0098" in found[1].message and "GB0148" in found[2].message


# -- DL119 ---------------------------------------------------------------------------------------


def test_dl119_context_managers_made_outside() -> None:
    source = HEADER + textwrap.dedent(
        """\
        import contextlib

        NG = torch.no_grad()
        NULL = contextlib.nullcontext()
        AC = torch.autocast("cpu")


        class CM:
            def __enter__(self):
                return self

            def __exit__(self, *a):
                return None


        SHARED = CM()


        @torch.compile
        def f(x, param_ctx):
            local = torch.no_grad()
            with NG, SHARED:
                pass
            with NULL, AC, local, param_ctx, torch.no_grad():
                pass
            return x
        """
    )
    found = run(source, "DL119")
    assert where(found) == [("DL119", 25, 10), ("DL119", 25, 14)]
    assert all(f.severity is Severity.WARNING and "GB0142" in f.message for f in found)


# -- DL120 ---------------------------------------------------------------------------------------


def test_dl120_classes_without_the_protocol() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from elsewhere import Imported


        class Plain:
            pass


        class Magic:
            def __getattr__(self, name):
                return None


        class Enters:
            __enter__ = __exit__ = lambda *a: None


        @torch.compile
        def f(x):
            with Plain(), Magic(), Enters(), Imported():
                pass
            return x
        """
    )
    (finding,) = run(source, "DL120")
    assert where([finding]) == [("DL120", 22, 10)]
    assert finding.severity is Severity.ERROR and "GB0142" in finding.message
