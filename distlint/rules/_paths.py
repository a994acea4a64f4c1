"""Path helpers shared by rules of several families."""

from __future__ import annotations


def is_test_path(path: str) -> bool:
    """A pytest module (``test_*.py``, ``*_test.py``, or under ``test``/``tests``): rules that
    cannot see whether test doubles are ever run say less there."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or any(part in ("test", "tests") for part in parts[:-1])
    )
