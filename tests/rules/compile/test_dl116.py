"""Unit tests of DL116 uninitialized-module: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.engine.checker import FileSource, check_file
from distlint.file_settings import FileSettings
from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where


def test_dl116_module_without_super_init() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn
        from project import Base


        class A(nn.Module):
            def __init__(self):
                self.k = 1

            def forward(self, x):
                return x * self.k


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
    assert where(found) == [("DL116", 9, 9), ("DL116", 17, 9)]
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

        def forward(self, x):
            return x

    class Called(nn.Module):
        def __init__(self):
            self.scale = 2

        def forward(self, x):
            return x * self.scale

    def test_mock():
        assert Mock(["a"]).keys == ["a"]

    def test_called():
        m = Called()
        return m(torch.ones(2))
    """
    settings = FileSettings(enabled=frozenset({"DL116"}))
    found = check_file(
        FileSource(textwrap.dedent(source), "tests/test_mocks.py"), settings
    ).findings
    assert [f.span.start.line for f in found] == [13]
    outside = check_file(FileSource(textwrap.dedent(source), "src/mocks.py"), settings).findings
    assert [f.span.start.line for f in outside] == [6, 13]


def test_dl116_leaves_own_call_and_taken_over_state_alone() -> None:
    """modelscope's video transforms define ``__call__`` (eager calls work); optimum-habana's
    layer wrappers take over a built module's ``__dict__`` (eager and compiled calls work)."""
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn


        class Transform(nn.Module):
            def __init__(self, size):
                self.size = size

            def __call__(self, images):
                return [image[: self.size] for image in images]


        class Wrapper(nn.Module):
            def __init__(self, built):
                self.__dict__.update(built.__dict__)

            def forward(self, x):
                return x @ self.weight.T


        class Plain(nn.Module):
            def __init__(self, size):
                self.size = size

            def forward(self, x):
                return x[: self.size]
        """
    )
    result = check_file(
        FileSource(source, "transforms.py"), FileSettings(enabled=frozenset({"DL116"}))
    )
    assert [f.code for f in result.findings] == ["DL116"]  # Plain only
    assert "`Plain.__init__`" in result.findings[0].message


def test_dl116_a_module_without_forward_is_reported_only_when_building_it_fails() -> None:
    """diffusers' ray samplers subclass nn.Module, define no ``forward`` and are used through
    ``.sample()``: plain attributes work uninitialised. Assigning a submodule or a Parameter
    fails as the instance is built; a base like ``nn.Linear`` brings its own forward."""
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn


        class Sampler(nn.Module):
            def __init__(self, mode):
                self.mode = mode

            def sample(self, t):
                return t


        class Projector(nn.Module):
            def __init__(self):
                self.proj = nn.Linear(2, 2)


        class Weighted(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(torch.ones(2))


        class Wide(nn.Linear):
            def __init__(self):
                self.extra = 1
        """
    )
    found = run(source, "DL116")
    assert where(found) == [("DL116", 16, 9), ("DL116", 21, 9), ("DL116", 26, 9)]
    assert "cannot assign module before Module.__init__() call" in found[0].message
    assert "_backward_hooks" in found[2].message
