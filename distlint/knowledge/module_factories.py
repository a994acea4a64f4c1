"""Library calls that build an ``nn.Module`` whose class is not in the checked project.

The linker follows compiled models whose class the project defines; a model built by a library
(``nn.Sequential(...)``, ``torchvision.models.resnet18()``, ``timm.create_model(...)``,
``AutoModelForCausalLM.from_pretrained(...)``) is known only to be a module. That is enough for
the rules whose claim holds for any module (DL109: hooks on its submodules after the first
compiled call never fire). One entry per library, with the documented fact and its version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst


@dataclass(frozen=True)
class ModuleFactory:
    pattern: re.Pattern[str]  # matched against the call's resolved dotted name
    evidence: str


# nn.Module methods that return the module itself (torch 2.13 ``nn.Module``): a chain of them
# on a model (``Net().to(device).train()``) is that model.
RETURNS_THE_MODULE = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "xpu",
        "mtia",
        "ipu",
        "half",
        "float",
        "double",
        "bfloat16",
        "type",
        "train",
        "eval",
        "requires_grad_",
        "share_memory",
        "to_empty",
        "apply",
    }
)


def the_module(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``Net()`` for ``Net().to(device).train()``: the receiver of methods that return it."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in RETURNS_THE_MODULE
    ):
        expr = expr.func.value
    return expr


# capitalised torch.nn names that are not modules (torch 2.13)
_NOT_MODULES = (
    "Parameter",
    "UninitializedParameter",
    "Buffer",
    "UninitializedBuffer",
    "LinearCrossEntropyOptions",
)
# torchvision.models functions that return weights, names or builders, not models
_NOT_BUILDERS = ("get_weight", "get_model_weights", "list_models", "get_model_builder")
_HF_NOT_MODELS = r"(?!\w*(Tokenizer|Config|Processor|FeatureExtractor))"

_TORCH_NN = ModuleFactory(
    re.compile(r"torch\.nn\.(modules\.\w+\.)?(?!(" + "|".join(_NOT_MODULES) + r")$)[A-Z]\w*"),
    "torch 2.13: every capitalised name of torch.nn but Parameter, UninitializedParameter, "
    "Buffer, UninitializedBuffer and LinearCrossEntropyOptions is a subclass of nn.Module "
    "(checked over the whole namespace by tests/proof/test_proof_dl107_109.py)",
)
MODULE_FACTORIES: tuple[ModuleFactory, ...] = (
    _TORCH_NN,
    ModuleFactory(
        re.compile(r"torchvision\.models\.(\w+\.)?(?!(" + "|".join(_NOT_BUILDERS) + r")$)[a-z]\w*"),
        "torchvision 0.2x documentation (Models and pre-trained weights): the model builders "
        "of torchvision.models and its subpackages, and get_model, return nn.Module instances",
    ),
    ModuleFactory(
        re.compile(r"timm\.create_model"),
        "timm 1.0 documentation: create_model returns an nn.Module",
    ),
    ModuleFactory(
        re.compile(
            r"transformers\." + _HF_NOT_MODELS + r"\w*(Model|For)\w*\.from_(pretrained|config)"
        ),
        "transformers 4.x documentation: models are PreTrainedModel instances, which subclass "
        "torch.nn.Module; from_pretrained and from_config of the Auto classes return them",
    ),
)


def builds_module(dotted: str | None) -> bool:
    """Whether calling the resolved name ``dotted`` returns an ``nn.Module`` (see above)."""
    return dotted is not None and any(f.pattern.fullmatch(dotted) for f in MODULE_FACTORIES)


# torch.nn module classes with no forward of their own (containers), or whose forward is not
# plain torch.nn layer code (DataParallel scatters to devices)
_NO_LAYER_FORWARD = frozenset(
    {"Module", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "DataParallel"}
)


def torch_nn_layer(dotted: str) -> bool:
    """Whether ``dotted`` names a torch.nn module class whose ``forward`` is defined in
    torch.nn itself (``nn.Linear``, ``nn.Sequential``, ``nn.TransformerEncoderLayer``)."""
    return bool(_TORCH_NN.pattern.fullmatch(dotted)) and dotted.rsplit(".", 1)[-1] not in (
        _NO_LAYER_FORWARD
    )
