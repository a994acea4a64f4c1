"""Unit tests of DL207 shared-compile-cache-dir: what it reports, where, and what it leaves
alone.
"""

from __future__ import annotations

import textwrap

import pytest

from distlint.findings import Finding, Severity
from distlint.rules.registry import get_rule
from tests.rules.conftest import findings, where


def dl207(body: str, launcher: str = "dist.init_process_group('nccl')\n") -> list[Finding]:
    source = (
        "import os\nimport socket\nfrom pathlib import Path\nimport torch.distributed as dist\n"
        "ROOT = '/shared/cache'\n" + textwrap.dedent(body) + launcher
    )
    return findings(source, "DL207")


def test_dl207_reports_fixed_cache_dirs() -> None:
    found = dl207(
        """\
        os.environ["TRITON_CACHE_DIR"] = "/shared/triton"
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(ROOT, "inductor"))
        os.environ["TRITON_CACHE_DIR"] = f"{ROOT}/triton"
        os.environ.update({"TRITON_CACHE_DIR": "/a"}, TORCHINDUCTOR_CACHE_DIR=str(Path(ROOT) / "b"))
        os.putenv("TRITON_CACHE_DIR", ROOT + "/t")
        """
    )
    assert where(found) == [
        ("DL207", 6, 34),
        ("DL207", 7, 50),
        ("DL207", 8, 34),
        ("DL207", 9, 40),
        ("DL207", 9, 71),
        ("DL207", 10, 31),
    ]
    assert all(f.severity is Severity.NOTE for f in found)
    assert found[0].message.startswith(
        "`TRITON_CACHE_DIR` is set to one fixed path in a file that runs several processes "
        "(`dist.init_process_group`)"
    )
    assert "is defaulted to one fixed path" in found[1].message
    assert "not an observed failure" in found[0].message


@pytest.mark.parametrize(
    "launcher",
    [
        "import torch.multiprocessing as mp\nmp.spawn(main, nprocs=2)\n",
        "rank = int(os.environ['LOCAL_RANK'])\n",
        "rank = int(os.environ.get('RANK', '0'))\n",
    ],
)
def test_dl207_launchers(launcher: str) -> None:
    found = dl207('os.environ["TRITON_CACHE_DIR"] = "/shared/triton"\n', launcher)
    assert len(found) == 1


@pytest.mark.parametrize(
    "body",
    [
        'os.environ["TRITON_CACHE_DIR"] = f"/tmp/triton-{dist.get_rank()}"\n',
        'os.environ["TRITON_CACHE_DIR"] = f"/tmp/{socket.gethostname()}/triton"\n',
        'os.environ["TRITON_CACHE_DIR"] = os.path.join(ROOT, os.environ["LOCAL_RANK"])\n',
        'os.environ["TORCHINDUCTOR_CACHE_DIR"] = args.cache_dir\n',
        'os.environ["OMP_NUM_THREADS"] = "1"\n',
        'cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/tmp/x")\n',
        'os.environ.setdefault("NCCL_DEBUG", "WARN")\n',
    ],
)
def test_dl207_traps(body: str) -> None:
    assert dl207(body) == []


def test_dl207_single_process_file_is_silent() -> None:
    assert dl207('os.environ["TRITON_CACHE_DIR"] = "/shared/triton"\n', launcher="") == []


def test_dl207_is_off_by_default() -> None:
    rule = get_rule("DL207")
    assert rule is not None and not rule.default_enabled
    assert rule.severity is Severity.NOTE


def test_dl207_sees_setters_by_any_spelling() -> None:
    # visit_Call skips calls whose spelling cannot resolve to a setter: a bare name bound by
    # an import or an alias, and an attribute chain through an alias, must still be seen
    found = dl207(
        """\
        from os import putenv as put
        default = os.environ.setdefault
        from os import environ as env
        put("TRITON_CACHE_DIR", "/shared/a")
        default("TORCHINDUCTOR_CACHE_DIR", "/shared/b")
        env.update(TRITON_CACHE_DIR="/shared/c")
        """
    )
    assert where(found) == [("DL207", 9, 25), ("DL207", 10, 36), ("DL207", 11, 29)]
