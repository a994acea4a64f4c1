"""The library calls taken for builders of an nn.Module (DL109 follows the models they build)."""

from __future__ import annotations

import pytest

from distlint.knowledge.module_factories import builds_module


@pytest.mark.parametrize(
    "name",
    [
        "torch.nn.Sequential",
        "torch.nn.Linear",
        "torch.nn.modules.linear.Linear",
        "torchvision.models.resnet18",
        "torchvision.models.get_model",
        "torchvision.models.detection.fasterrcnn_resnet50_fpn",
        "timm.create_model",
        "transformers.AutoModel.from_pretrained",
        "transformers.AutoModelForCausalLM.from_config",
        "transformers.LlamaForCausalLM.from_pretrained",
        "transformers.BertModel.from_pretrained",
    ],
)
def test_module_builders(name: str) -> None:
    assert builds_module(name)


@pytest.mark.parametrize(
    "name",
    [
        None,
        "torch.nn.Parameter",
        "torch.nn.Buffer",
        "torch.nn.functional.relu",
        "torch.nn.utils.clip_grad_norm_",
        "torch.nn.parallel.DistributedDataParallel",  # a module, but not followed here
        "torchvision.models.get_weight",
        "torchvision.models.list_models",
        "torchvision.models.ResNet18_Weights",
        "transformers.AutoTokenizer.from_pretrained",
        "transformers.AutoConfig.from_pretrained",
        "transformers.AutoProcessor.from_pretrained",
        "transformers.ModelConfig.from_pretrained",
        "timm.list_models",
        "mylib.nn.Sequential",
    ],
)
def test_not_module_builders(name: str | None) -> None:
    assert not builds_module(name)
