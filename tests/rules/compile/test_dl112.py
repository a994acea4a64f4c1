"""Unit tests of DL112 skipped-function-call: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl1xx.py) show that torch behaves as the messages say.
"""

from __future__ import annotations

import textwrap

from distlint.findings import Severity
from tests.rules.compile.conftest import HEADER
from tests.rules.conftest import run, where

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


def test_dl112_packing_functions_in_a_region() -> None:
    source = HEADER + textwrap.dedent(
        """\
        from torch import nn
        from torch.nn.utils.rnn import pack_padded_sequence as pack, pad_sequence


        class M(nn.Module):
            def forward(self, x, lengths):
                padded = pad_sequence([x, x])
                packed = pack(padded, lengths)
                out, _ = nn.utils.rnn.pad_packed_sequence(packed)
                return torch.nn.utils.rnn.pack_sequence([out])


        model = torch.compile(M())
        eager = pack(torch.ones(2, 2), torch.tensor([2, 1]))
        """
    )
    found = run(source, "DL112")
    assert where(found) == [("DL112", 11, 18), ("DL112", 12, 18), ("DL112", 13, 16)]
    assert all("GB0007" in f.message for f in found)
    assert "`pack(...)`" in found[0].message
