"""Confirm mode: run compiled code under Dynamo on CPU and match what it reports to findings.

``distlint check --confirm`` turns static predictions into observations. Each target (an
entry factory from the configuration, or a training script) runs in a child process
(:mod:`distlint.confirm.sandbox`) that records every graph break and compile error Dynamo
reports (:mod:`distlint.confirm.child`); :mod:`distlint.confirm.match` then gives each finding
a status and turns unpredicted observations into DL901 / DL902 findings.

Nothing here imports torch in the parent process: only the child does.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = (
    "confirm mode needs torch: install the 'confirm' extra (from a distlint checkout: "
    "pip install '.[confirm]')"
)


def torch_available() -> bool:
    """Whether torch can be imported, without importing it."""
    return importlib.util.find_spec("torch") is not None
