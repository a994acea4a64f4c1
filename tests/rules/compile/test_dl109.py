"""Unit tests of DL109 hook-after-compile: what it reports, where, and what it leaves alone.

The proof tests (tests/proof/test_proof_dl107_109.py) show that torch behaves as the messages
say.
"""

from __future__ import annotations

from tests.rules.conftest import run, where

NET = """\
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

"""


def test_dl109_submodule_hook_after_first_call() -> None:
    source = NET + (
        "model = Net()\n"
        "compiled = torch.compile(model)\n"
        "compiled(x)\n"
        "model.fc.register_forward_hook(hook)\n"
        "compiled.fc.register_forward_pre_hook(hook)\n"
    )
    found = run(source, "DL109")
    assert where(found) == [("DL109", 15, 1), ("DL109", 16, 1)]
    assert "never fires" in found[0].message
    assert found[0].related[0].message == "first compiled call"


def test_dl109_loop_over_modules_and_hook_in_a_training_loop() -> None:
    source = NET + (
        "def train(batches):\n"
        "    model = Net()\n"
        "    model.compile()\n"
        "    for step, x in enumerate(batches):\n"
        "        if step == 10:\n"
        "            for name, mod in model.named_modules():\n"
        "                mod.register_forward_hook(hook)\n"
        "        model(x)\n"
    )
    assert where(run(source, "DL109")) == [("DL109", 18, 17)]


def test_dl109_model_called_from_a_compiled_function() -> None:
    source = NET + (
        "MODEL = Net()\n"
        "@torch.compile\n"
        "def step(x):\n"
        "    return MODEL(x).sum()\n"
        "step(x)\n"
        "MODEL.register_forward_hook(hook)\n"
    )
    assert where(run(source, "DL109")) == [("DL109", 17, 1)]


def test_dl109_traps() -> None:
    source = NET + (
        "model = Net()\n"
        "model.fc.register_forward_hook(hook)\n"
        "compiled = torch.compile(model)\n"
        "compiled(x)\n"
        "compiled.register_forward_hook(hook)\n"
        "model.register_forward_pre_hook(hook)\n"
        "model.fc.weight.register_hook(hook)\n"
        "other = Net()\n"
        "other.fc.register_forward_hook(hook)\n"
        "def later():\n"
        "    m = Net()\n"
        "    c = torch.compile(m)\n"
        "    c(x)\n"
        "    m.fc.register_forward_hook(hook)\n"
        "    torch._dynamo.reset()\n"
        "    c(x)\n"
    )
    assert run(source, "DL109") == []


def test_dl109_a_library_model_rebound_before_it_is_compiled_is_not_followed() -> None:
    """``model`` was an ``nn.Sequential``, then something the analysis cannot see: the
    compiled object is not known to be that module."""
    from tests.rules.conftest import run

    source = """\
        import torch
        from torch import nn


        def probe(loaded):
            model = nn.Sequential(nn.Linear(4, 4))
            model = loaded
            compiled = torch.compile(model)
            compiled(torch.ones(1, 4))
            model[0].register_forward_hook(lambda m, a, o: None)


        def kept():
            model = nn.Sequential(nn.Linear(4, 4))
            compiled = torch.compile(model)
            compiled(torch.ones(1, 4))
            model[0].register_forward_hook(lambda m, a, o: None)
        """
    assert [f.span.start.line for f in run(source, "DL109")] == [17]


def test_dl109_a_library_model_compiled_by_a_configured_wrapper_is_followed() -> None:
    from distlint.file_settings import FileSettings
    from tests.rules.conftest import check

    source = """\
        import torch
        from torch import nn
        from mylib.jit import fast_compile


        def kept():
            model = nn.Sequential(nn.Linear(4, 4))
            compiled = fast_compile(model)
            compiled(torch.ones(1, 4))
            model[0].register_forward_hook(lambda m, a, o: None)
        """
    assert check(source, FileSettings(enabled=frozenset({"DL109"}))) == []
    wrapped = FileSettings(
        enabled=frozenset({"DL109"}), compile_wrappers=("mylib.jit.fast_compile",)
    )
    assert [f.span.start.line for f in check(source, wrapped)] == [10]


def test_dl109_library_models_are_read_from_the_statements_of_each_scope() -> None:
    """The library-built models are found from the scope's statements (not all its nodes):
    assignments inside if/with/try/loops and one-line suites are still read, a nested
    function's or class's are their own scope's, and a one-line ``def`` has none."""
    from tests.rules.conftest import run

    source = """\
        import torch
        from torch import nn


        def in_blocks(flag, data):
            if flag: model = nn.Sequential(nn.Linear(4, 4))
            with torch.no_grad():
                try:
                    compiled = torch.compile(model)
                except RuntimeError:
                    pass
            for x in data:
                compiled(x)
            model[0].register_forward_hook(lambda m, a, o: None)


        def nested():
            def inner():
                model = nn.Sequential(nn.Linear(4, 4))
            compiled = torch.compile(model)
            compiled(torch.ones(1, 4))
            model[0].register_forward_hook(lambda m, a, o: None)


        class Holder:
            model = nn.Sequential(nn.Linear(4, 4))

        def one_line(): model = nn.Sequential(nn.Linear(4, 4)); compiled = torch.compile(model)
        """
    assert [f.span.start.line for f in run(source, "DL109")] == [14]


def test_dl107_109_without_a_compiled_name_no_flow_is_built() -> None:
    """No compiled name bound in the file: the flows are not built (none would have a call
    event), and process-group or hook calls alone find nothing."""
    from tests.rules.conftest import run

    source = """\
        import torch
        import torch.distributed as dist


        def main(model):
            model(torch.ones(1))
            dist.init_process_group("nccl")
            model.layer.register_forward_hook(lambda m, a, o: None)
            dist.destroy_process_group()
        """
    assert run(source, "DL107", "DL108", "DL109") == []


def test_library_models_read_the_assignments_the_scope_nodes_hold_in_order() -> None:
    """The statements a scope's library-built models are read from are the small statements
    of the scope's own nodes (``_list_scope_nodes``, what the flows walk), in the same order."""
    import libcst as cst

    from distlint.rules.compile._script_flow import _list_scope_nodes, _scope_statements
    from tests.syntax.test_imports import STATEMENTS

    module = cst.parse_module(STATEMENTS)
    functions = [n for n in module.body if isinstance(n, cst.FunctionDef)]
    one_line = cst.ensure_type(cst.parse_statement("def one(): a = 1"), cst.FunctionDef)
    for scope in [module, *functions, one_line]:
        small = [n for n, _ in _list_scope_nodes(scope) if isinstance(n, cst.BaseSmallStatement)]
        statements = list(_scope_statements(scope))
        assert [n for n in statements if isinstance(n, cst.BaseSmallStatement)] == small
