"""What one process holds while it checks many files (issue 15: peak memory per process).

A worker checks file after file, and the parent keeps every file's summary until linking:
nothing of a file's tree may outlive its check (caches keyed by nodes kept up to 64 blocks
and 4,096 statements of earlier files, whole modules among them, alive in a worker).
"""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import libcst as cst

from distlint.config.settings import CliOverrides, ConfigResolver, settings_for
from distlint.engine import transport
from distlint.engine.checker import FileSource, analyze_file, check_file
from distlint.semantic.model import Condition, Effect

ROOT = Path(__file__).resolve().parents[2]


def _settings():  # type: ignore[no-untyped-def]
    overrides = CliOverrides(select=("ALL",))
    return settings_for(ConfigResolver().for_path(Path("/")), overrides, Path("/f.py"))


def _nodes_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, cst.CSTNode))


def test_a_checked_file_leaves_no_node_behind() -> None:
    settings = _settings()
    # the version-guard rules (DL501, DL503-DL505) and the rest, on files that guard
    paths = sorted((ROOT / "fixtures").glob("DL50[1-5]/*.py"))
    assert len(paths) >= 10
    check_file(FileSource(paths[0].read_bytes(), "warm-up.py"), settings)  # rule tables built once
    before = _nodes_alive()
    for path in paths:
        check_file(FileSource(path.read_bytes(), path.name), settings)
    assert _nodes_alive() <= before


def test_a_pass_leaves_no_cycle_that_keeps_its_tree() -> None:
    """A pass's rule context, its rules and the analyses memoised on the context refer to
    each other: emptied once the result is made (checker._release), they let reference
    counting free the tree at once, so the collection before the next file (the runner's,
    with the collector paused) walks only what the result keeps."""
    settings = _settings()
    paths = sorted((ROOT / "fixtures").glob("DL20[1-4]/*.py"))
    analyze_file(FileSource(paths[0].read_bytes(), "warm-up.py"), settings)
    before = _nodes_alive()
    gc.disable()
    try:
        results = [analyze_file(FileSource(p.read_bytes(), p.name), settings) for p in paths]
        left = sum(1 for o in gc.get_objects() if isinstance(o, cst.CSTNode))
    finally:
        gc.enable()
    assert [r.summary is not None for r in results] == [True] * len(paths)
    assert left <= before


def _reachable(root: object) -> list[object]:
    """Every object reachable from ``root`` through containers and attributes."""
    seen: dict[int, object] = {}
    pending = [root]
    while pending:
        obj = pending.pop()
        if id(obj) in seen or isinstance(obj, (int, float, type(None))):
            continue
        seen[id(obj)] = obj
        if isinstance(obj, dict):
            pending += [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            pending += obj
        elif not isinstance(obj, str):
            pending += getattr(obj, "__dict__", {}).values()
            pending += [getattr(obj, s) for s in getattr(type(obj), "__slots__", ()) if s != "node"]
    return list(seen.values())


def test_a_summary_holds_each_string_and_name_tuple_once() -> None:
    """The parent keeps every file's summary: equal strings, and equal tuples of strings,
    are one object in it (semantic/sharing.py), so pickled and unpickled once."""
    paths = sorted((ROOT / "fixtures").glob("DL20[1-4]/*.py"))
    for path in paths:
        summary = analyze_file(FileSource(path.read_bytes(), path.name), _settings()).summary
        assert summary is not None
        held = _reachable(summary)
        strings = [o for o in held if type(o) is str]
        assert len(strings) > 50
        assert len(set(strings)) == len(strings), path  # no two equal strings
        plain = [o for o in held if type(o) is tuple and o and all(type(p) is str for p in o)]
        assert len(set(plain)) == len(plain), path


def test_effects_and_conditions_hold_no_instance_dict() -> None:
    """A summary of torch holds 250,000 effects: slots make each 110 bytes smaller."""
    assert not hasattr(Effect("call"), "__dict__")
    assert not hasattr(Condition(3), "__dict__")


def test_effects_and_conditions_keep_every_field_through_the_transport() -> None:
    """Pickled as their constructors' arguments (model.py): every field comes back."""
    condition = Condition(
        level=4,
        callees=(("g", "m.is_main"),),
        self_attrs=("rank",),
        param="p",
        negated=True,
        text="not p",
        names=("p",),
        why="dist.get_rank()",
        deferred=("m.is_main",),
        compare=("p", "==", (0,)),
        junction="or",
        parts=(("p", "truthy", ()),),
        varies_when=(("distributed", True),),
    )
    effect = Effect(
        kind="call",
        name="f",
        text="f(x)",
        callee=("g", "m.f"),
        arguments=(("#0", ("self",)),),
        group=True,
        group_param="group",
        cond=condition,
        body=(Effect("exit", name="return"),),
        orelse=(Effect("loop", name="for"),),
    )
    for instance in (condition, effect):  # a field added later must be set here too
        unset = [
            f.name
            for f in dataclasses.fields(instance)
            if getattr(instance, f.name) == f.default and not f.name.endswith("span")
        ]
        assert unset == []
    back = transport.loads(transport.dumps(effect))
    assert back == effect
    assert back.cond == condition
