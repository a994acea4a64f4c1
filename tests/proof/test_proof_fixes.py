"""Proof that fixed code runs: each rule's fix applied to its bad fixture, run under torch 2.13.

* DL504: every case whose flagged call gets the (safe, drop-in) fix stops emitting its
  FutureWarning (run with ``-W error::FutureWarning``) and runs; the cases without a fix are
  unchanged. ``DROP_IN`` is exactly the set of table entries whose deprecated function only
  returns its replacement called with its own parameters, both with the same parameters.
* DL206, DL207, DL604 (unsafe fixes): the fixed fixtures run every case as the originals do
  (DL604's CUDA-graph failure needs a GPU; on the CPU build the cases run either way).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import shutil
import textwrap
import warnings
from pathlib import Path

import pytest

from distlint.engine.checker import FileSource, check_file
from distlint.engine.fixes import fix_project
from distlint.file_settings import FileSettings
from distlint.rules.api._deprecations import deprecated_apis
from distlint.rules.api.deprecated_torch_api import DROP_IN
from tests.proof.harness import FIXTURES, run_cases

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch"),
]


def fixed_copy(code: str, tmp_path: Path, unsafe: bool) -> tuple[Path, int]:
    """``fixtures/<code>/bad.py`` copied and fixed for ``code``; (path, fixes applied)."""
    target = tmp_path / code / "bad.py"
    target.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / code / "bad.py", target)
    original = target.read_text(encoding="utf-8")
    settings = FileSettings(enabled=frozenset({code}))

    def check(texts: dict[str, str]) -> list:
        return list(
            check_file(FileSource(texts.get("bad.py", original), "bad.py"), settings).findings
        )

    run = fix_project(check, lambda _: original, unsafe=unsafe)
    target.write_text(run.texts.get("bad.py", original), encoding="utf-8")
    return target, run.total


def test_dl504_fixed_cases_no_longer_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, total = fixed_copy("DL504", tmp_path, unsafe=False)
    monkeypatch.setenv("PYTHONWARNINGS", "error::FutureWarning")
    before = run_cases(FIXTURES / "DL504" / "bad.py")
    after = run_cases(path)
    assert set(before) == set(after)
    newly_ok = {case for case in after if after[case].ok and not before[case].ok}
    # 10 fixes: 9 end a warning; the 10th imports fully_shard from its public home instead
    # of torch.distributed._composable.fsdp (a private path that never warned: same outcome)
    assert (len(newly_ok), total) == (9, 10)
    for case, outcome in after.items():
        if case not in newly_ok:  # no fix there: the same outcome as before
            assert (outcome.ok, outcome.type, outcome.message) == (
                before[case].ok,
                before[case].type,
                before[case].message,
            ), case


@pytest.mark.parametrize("code", ["DL206", "DL207", "DL604"])
def test_unsafe_fixes_keep_the_fixture_running(code: str, tmp_path: Path) -> None:
    path, total = fixed_copy(code, tmp_path, unsafe=True)
    assert total > 0
    before = run_cases(FIXTURES / code / "bad.py")
    after = run_cases(path)
    assert {case: o.ok for case, o in after.items()} == {case: o.ok for case, o in before.items()}
    assert all(o.ok for o in after.values()), {c: o.traceback for c, o in after.items()}


# -- DROP_IN is derived from the installed torch ---------------------------------------------------


def _resolve(dotted: str):  # type: ignore[no-untyped-def]
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for part in parts[end:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def _parameters(obj) -> list[tuple[str, object, str]] | None:  # type: ignore[no-untyped-def]
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, repr(p.default)) for p in signature.parameters.values()]


def _only_delegates(old, new) -> bool:  # type: ignore[no-untyped-def]
    """``old``'s last statement is ``return <new>(<old's parameters, passed through>)``."""
    function = inspect.unwrap(old)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef) or not definition.body:
        return False
    last = definition.body[-1]
    if not isinstance(last, ast.Return) or not isinstance(last.value, ast.Call):
        return False
    call = last.value
    parts = []
    func = call.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in function.__globals__:
        return False
    callee = function.__globals__[func.id]
    for part in reversed(parts):
        callee = getattr(callee, part, None)
    if callee is None or inspect.unwrap(callee) is not inspect.unwrap(new):
        return False
    names = [p.name for p in inspect.signature(function).parameters.values()]
    passed = [
        a.value.id if isinstance(a, ast.Starred) else getattr(a, "id", None) for a in call.args
    ]
    passed += [k.value.id if isinstance(k.value, ast.Name) else None for k in call.keywords]
    keywords_match = all(
        k.arg is None or k.arg == getattr(k.value, "id", None) for k in call.keywords
    )
    return keywords_match and passed == names


def test_drop_in_is_exactly_the_delegating_same_signature_entries() -> None:
    derived = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for api in deprecated_apis():
            if api.kind != "function" or api.category is None or not api.replacement:
                continue
            old, new = _resolve(api.name), _resolve(api.replacement)
            if old is None or new is None:
                continue
            same = _parameters(old) is not None and _parameters(old) == _parameters(new)
            if same and _only_delegates(old, new):
                derived[api.name] = api.replacement
    assert derived == DROP_IN


DL104_SOURCE = """\
import logging
import warnings

import torch

logger = logging.getLogger("dl104-fix")


@torch.compile(backend="eager", fullgraph=True)
def step(x: torch.Tensor) -> torch.Tensor:
    print("step", x.shape)
    logger.warning("scaling")
    warnings.warn("slow path")
    return x * 2
"""


def _load(path: Path, name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dl104_guard_fix_makes_the_fullgraph_function_compile(tmp_path: Path) -> None:
    """Unfixed, torch 2.13 refuses the print under fullgraph=True; with the (unsafe) fix each
    host statement is guarded by ``if not torch.compiler.is_compiling():`` and it compiles."""
    import torch
    from torch._dynamo.exc import Unsupported

    settings = FileSettings(enabled=frozenset({"DL104"}))
    run = fix_project(
        lambda texts: list(
            check_file(FileSource(texts.get("m.py", DL104_SOURCE), "m.py"), settings).findings
        ),
        lambda _: DL104_SOURCE,
        unsafe=True,
    )
    assert run.total == 3
    original, fixed = tmp_path / "dl104_original.py", tmp_path / "dl104_fixed.py"
    original.write_text(DL104_SOURCE, encoding="utf-8")
    fixed.write_text(run.texts["m.py"], encoding="utf-8")
    torch._dynamo.reset()
    with pytest.raises(Unsupported):
        _load(original, "dl104_original").step(torch.ones(2))
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the guarded warning is not emitted while compiled
        out = _load(fixed, "dl104_fixed").step(torch.ones(2))
    assert out.tolist() == [2.0, 2.0]
