"""Run every ``case_*`` function of a fixture file under the real torch; print outcomes as JSON.

Used by proof tests through :func:`tests.proof.harness.run_cases`, always in a fresh
subprocess, so Dynamo caches, process groups and global config never leak between fixtures.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from pathlib import Path

MARKER = "DISTLINT-PROOF-RESULT:"


def _load(path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(f"fixture_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(path: str, only: list[str]) -> None:
    import torch._dynamo

    module = _load(Path(path))
    cases = [name for name in vars(module) if name.startswith("case_")]
    outcomes = {}
    for name in cases:
        if only and name not in only:
            continue
        torch._dynamo.reset()
        try:
            getattr(module, name)()
        except BaseException as exc:  # the documented failure is what we are here to see
            outcomes[name] = {
                "ok": False,
                "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
                "message": str(exc)[:4000],
                "traceback": "".join(traceback.format_exception(exc))[-4000:],
            }
        else:
            outcomes[name] = {"ok": True, "type": None, "message": "", "traceback": ""}
    print(MARKER + json.dumps(outcomes))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
