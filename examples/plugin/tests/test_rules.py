"""The example plugin's rules, tested the way distlint tests its own (``# expect:`` markers)."""

from pathlib import Path

from distlint.testing import assert_fixtures

HERE = Path(__file__).resolve().parent


def test_xyz001_fixtures() -> None:
    assert_fixtures(
        [HERE / "fixtures" / "XYZ001"], select=["XYZ"], plugins=[HERE.parent / "lint_rules"]
    )
