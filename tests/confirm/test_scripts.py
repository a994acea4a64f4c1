"""Confirm mode on training scripts written for GPUs, run on CPU with ``--map-cuda-to-cpu``.

The three fixture scripts (fixtures/confirm) are the kind people have: DDP with
``torch.device("cuda", local_rank)`` and NCCL, FSDP2 (``fully_shard`` on a CUDA device mesh)
and FSDP1 (``FullyShardedDataParallel(device_id=torch.cuda.current_device())``). Each runs
once, through the real command line (``distlint confirm --map-cuda-to-cpu SCRIPT``, which is
``distlint check --confirm`` on the script), with SARIF output; the tests then read that one
run. The CUDA forms are exercised one by one by the entry factory in cuda_forms.py. All the
runs of this module fork their targets from one warm server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from distlint.cli import main
from distlint.confirm import torch_available
from distlint.confirm.sandbox import ForkServer
from tests.confirm.server_util import shared_server

__all__ = ["shared_server"]

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not torch_available(), reason="needs torch"),
]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = "fixtures/confirm"
ENV = {"NO_COLOR": None, "FORCE_COLOR": None, "DISTLINT_DEBUG": None}
SCRIPTS = ("ddp_local_rank.py", "fsdp2_mesh.py", "fsdp1_wrap.py")


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def sarif(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    @property
    def results(self) -> dict[tuple[str, int], dict[str, Any]]:
        """(rule, line) -> the result's properties (the confirmation status among them)."""
        out = {}
        for result in self.sarif["runs"][0]["results"]:
            line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
            out[(result["ruleId"], line)] = result.get("properties", {})
        return out

    @property
    def confirm(self) -> dict[str, Any]:
        (invocation,) = [
            i for i in self.sarif["runs"][0]["invocations"] if "confirm" in i.get("properties", {})
        ]
        return invocation["properties"]["confirm"]


def _cli(args: list[str]) -> Run:
    result = CliRunner().invoke(main, args, env=ENV)
    return Run(result.exit_code, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def runs(shared_server: ForkServer) -> dict[str, Run]:
    """Each script once: ``distlint confirm --map-cuda-to-cpu --format sarif``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        return {
            name: _cli(
                [
                    "confirm",
                    "--map-cuda-to-cpu",
                    "--format",
                    "sarif",
                    "--path",
                    f"{FIXTURES}/{name}",
                    f"{FIXTURES}/{name}",
                ]
            )
            for name in SCRIPTS
        }


def _confirmed(run: Run, rule: str, line: int) -> dict[str, Any]:
    properties = run.results.get((rule, line))
    assert properties is not None, sorted(run.results)
    assert properties.get("confirmation") == "confirmed", properties
    return properties


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_runs_on_cpu_to_its_step_limit_or_failure(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    assert run.exit_code == 1, run.stderr  # findings, and no target failure (that is 2)
    (target,) = run.confirm["targets"]
    assert target["status"] == "ok", target
    assert "confirm target" not in run.stderr
    assert "Traceback" not in run.stdout + run.stderr


def test_ddp_with_a_cuda_local_rank_device_confirms_its_branch(runs: dict[str, Run]) -> None:
    run = runs["ddp_local_rank.py"]
    assert _confirmed(run, "DL101", 25)["gbId"] == "GB0170"
    assert run.confirm["rootsCompiled"] == 1  # Net.forward
    assert run.confirm["graphs"] >= 2  # before and after the break
    assert not [key for key in run.results if key[0] in ("DL901", "DL902")]


def test_fsdp2_confirms_the_missing_fake_where_the_op_is_called(runs: dict[str, Run]) -> None:
    run = runs["fsdp2_mesh.py"]
    dl401 = _confirmed(run, "DL401", 17)  # on the op's definition
    assert dl401["gbId"] == "GB4315"
    assert dl401["observedAt"] == f"{FIXTURES}/fsdp2_mesh.py:28"  # the call in Block.forward
    assert run.results[("DL402", 17)]["confirmation"] == "not-reached"  # the fake failed first
    assert _confirmed(run, "DL105", 38)["observed"] == "graph break in loop"
    assert ("DL902", 28) not in run.results  # the failure is DL401's, not an unpredicted one
    assert run.confirm["rootsCompiled"] == 2  # Model.forward (skipped), Block.forward


def test_fsdp1_confirms_the_missing_autograd_and_the_item_break(runs: dict[str, Run]) -> None:
    run = runs["fsdp1_wrap.py"]
    dl402 = _confirmed(run, "DL402", 20)
    assert dl402["observed"] == "BackendCompilerFailed"
    assert _confirmed(run, "DL102", 37)["gbId"] == "GB0124"
    assert not [key for key in run.results if key[0] == "DL902"]
    assert run.confirm["rootsCompiled"] == 2  # Model.forward, Block.forward


def test_every_cuda_form_maps_eagerly_and_compiles_in_one_graph() -> None:
    entry = f"{FIXTURES}/cuda_forms.py:make_forms"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        run = _cli(
            [
                "check",
                "--confirm",
                "--map-cuda-to-cpu",
                "--confirm-entry",
                entry,
                "--format",
                "sarif",
                f"{FIXTURES}/cuda_forms.py",
            ]
        )
    assert run.exit_code == 0, run.stderr
    confirm = run.confirm
    assert [t["status"] for t in confirm["targets"]] == ["ok"], confirm["targets"]
    assert (confirm["graphs"], confirm["breaks"], confirm["compileErrors"]) == (1, 0, 0)
    assert confirm["libraryBreaks"] == 0


def test_without_the_mapping_a_cuda_script_fails_once_with_advice() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        run = _cli(["confirm", "--path", f"{FIXTURES}/train_cuda.py", f"{FIXTURES}/train_cuda.py"])
    assert run.exit_code == 2
    output = run.stdout + run.stderr
    assert output.count("Module.cuda()") == 1, output  # printed once, on stderr
    assert "--map-cuda-to-cpu" in run.stderr
    assert f"at {FIXTURES}/train_cuda.py:8" in run.stderr
    assert "raised: raised" not in output and "Traceback" not in output
    assert "1 of 1 target did not run to the end" in run.stdout


def test_bad_targets_are_reported_once_each_with_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def train(:\n", encoding="utf-8")
    (tmp_path / "factory.py").write_text("def make():\n    return 42\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        script = _cli(["confirm", "--path", "broken.py", "broken.py"])
        entries = _cli(
            [
                "check",
                "--confirm",
                "--confirm-entry",
                "no_such_module:make",
                "--confirm-entry",
                "factory.py:make",
                "factory.py",
            ]
        )
    assert script.exit_code == 2
    assert script.stderr.count("confirm target broken.py: raised: SyntaxError") == 1
    assert entries.exit_code == 2
    assert "ModuleNotFoundError: No module named 'no_such_module'" in entries.stderr
    assert "factory.py:make: raised: TypeError: an entry factory must return" in entries.stderr
    for run in (script, entries):
        assert "Traceback" not in run.stdout + run.stderr


def test_the_runs_shared_one_server(shared_server: ForkServer, runs: dict[str, Run]) -> None:
    assert shared_server.pid is not None and shared_server.notes == []


def test_a_gpu_script_that_fails_without_the_mapping_is_told_about_it() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        name = f"{FIXTURES}/ddp_local_rank.py"
        run = _cli(["confirm", "--path", name, name])
    assert run.exit_code == 2
    (line,) = [line for line in run.stderr.splitlines() if "confirm target" in line]
    assert f"raised: AssertionError: this script needs GPUs at {name}:31" in line
    assert "--map-cuda-to-cpu runs it as if it had its GPUs" in line
