"""``distlint explain-regions``: the facts behind region and divergence findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from distlint.cli import main
from tests.project_util import write_tree

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/comm.py": """
    import torch.distributed as dist

    def sync():
        dist.barrier()
    """,
    "pkg/model.py": """
    import torch
    import torch.nn as nn

    def helper(x):
        return x * 2

    class Net(nn.Module):
        def forward(self, x):
            return helper(x)
    """,
    "train.py": """
    import torch
    import torch.distributed as dist
    from pkg.comm import sync
    from pkg.model import Net

    model = torch.compile(Net(), fullgraph=True)

    def evaluate():
        if dist.get_rank() == 0:
            sync()
    """,
}


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_tree(tmp_path, PROJECT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_text_lists_roots_region_functions_and_divergences(project: Path) -> None:
    result = CliRunner().invoke(main, ["explain-regions", "."])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "Compiled roots (1):" in lines
    assert "  train.py:7  torch.compile(module) -> forward: Net.forward  [fullgraph=True]" in lines
    assert "  pkg/model.py: Net.forward  <- train.py:7" in lines
    assert "  pkg/model.py: helper  <- train.py:7" in lines
    assert any(
        line.startswith("  train.py:11 in evaluate: when `dist.get_rank() == 0` is true, issues")
        and "(issued at pkg/comm.py:5)" in line
        for line in lines
    ), result.output


def test_json_has_the_same_facts(project: Path) -> None:
    result = CliRunner().invoke(main, ["explain-regions", "--format", "json", "."])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(r["path"], r["line"], r["kind"]) for r in data["roots"]] == [("train.py", 7, "module")]
    assert {f["function"] for f in data["functions"]} == {"Net.forward", "helper"}
    (divergence,) = data["rank_dependent_collectives"]
    assert (divergence["path"], divergence["line"], divergence["collective"]) == (
        "train.py",
        11,
        "barrier",
    )
    assert divergence["proven"] is True  # a DL201 error, not only possible


def test_compile_sites_it_cannot_resolve_are_listed_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(
        tmp_path,
        {
            "build.py": """
            import torch
            from torchvision.models import resnet50

            class NoForward(torch.nn.Module):
                pass

            class Engine(torch.nn.Module):
                def compile(self, **kwargs):
                    pass

            def build(model_fn):
                a = torch.compile(resnet50())
                b = torch.compile(model_fn)
                c = torch.compile(NoForward())
                Engine().compile()
                return a, b, c
            """
        },
    )
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["explain-regions", "--format", "json", "."])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["unresolved_compile_sites"] == [
        {
            "path": "build.py",
            "line": 13,
            "why": "what `torchvision.models.resnet50(...)` returns, outside the project",
        },
        {
            "path": "build.py",
            "line": 14,
            "why": "the parameter `model_fn`, to which no call passes project code",
        },
        {
            "path": "build.py",
            "line": 15,
            "why": "an instance of `NoForward`, which defines no forward",
        },
    ]
    text = CliRunner().invoke(main, ["explain-regions", "."]).output
    assert "Compile sites whose compiled code is not known (3):" in text


GPT_PROJECT = {
    "pyproject.toml": "[project]\nname = 'demo'\n",
    "models/__init__.py": "",
    "models/gpt.py": """
    import torch.nn as nn

    class GPT(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = nn.Linear(n, n)

        def forward(self, x):
            return self.lin(x)

    def build_model(n):
        return GPT(n)
    """,
    "train.py": """
    import torch
    from models.gpt import build_model

    def main():
        model = torch.compile(build_model(8), fullgraph=True)
        model(torch.randn(2, 8))
    """,
}


def test_a_file_named_is_explained_in_its_project_as_check_links_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``explain-regions train.py`` links the project as ``check train.py`` does: the model
    built in models/gpt.py is followed (not "a value the analysis cannot follow"), and only
    what is in train.py is listed, as in ``explain-regions .``."""
    write_tree(tmp_path, GPT_PROJECT)
    monkeypatch.chdir(tmp_path)
    one = CliRunner().invoke(main, ["explain-regions", "--format", "json", "train.py"])
    whole = CliRunner().invoke(main, ["explain-regions", "--format", "json", "."])
    assert one.exit_code == whole.exit_code == 0, one.output + whole.output
    data, everything = json.loads(one.output), json.loads(whole.output)
    assert [(r["path"], r["compiles"]) for r in data["roots"]] == [("train.py", "GPT.forward")]
    assert data["unresolved_compile_sites"] == []
    assert [f["path"] for f in everything["functions"]] == ["models/gpt.py"]
    assert data == {
        section: [item for item in items if item["path"] == "train.py"]
        for section, items in everything.items()
    }
