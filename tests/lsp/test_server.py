"""End to end: a real LSP client (pytest-lsp) drives ``python -m distlint server`` over stdio.

Each test runs once per client capability set: VS Code 1.65 (push, UTF-16), Neovim 0.11
(pull, UTF-8) and Emacs 29 (push, UTF-32, no relatedInformation). One server per client for
the whole module.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import attrs
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from bench.lsp_latency import parse_time, training_script
from distlint.meta import rule_url
from distlint.output.headline import HEADLINE_MAX, headline
from tests.lsp.helpers import (
    CLIENTS,
    ENCODING_OF,
    TIMEOUT,
    Doc,
    codes,
    position_of,
    range_of,
    server_config,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIX_ALL = "source.fixAll.distlint"

# An emoji (2 UTF-16 units, 4 UTF-8 bytes) and a "ü" (2 UTF-8 bytes) precede both findings.
SAMPLE = """\
import torch
import torch.distributed as dist


def f(x):
    return x


label = "🚀 ü"; compiled = torch.compile(f, backend="nvfuser")


@torch.compile
def step(x, out):
    tag = "🚀"; dist.all_gather_object(out, x)
    return x
"""
# Start column of '"nvfuser"' on its line in each encoding (code points: 51).
DL502_START = {"utf-32": 51, "utf-16": 52, "utf-8": 55}

DEBOUNCE = 0.1  # seconds (the default is 0.3); three edits in a row still come well within it
HEADER = "import torch\n\n\ndef f(x):\n    return x\n\n\n"
NVFUSER = HEADER + 'compiled = torch.compile(f, backend="nvfuser")\n'


@pytest_lsp.fixture(config=server_config(), params=CLIENTS, scope="module")
async def client(lsp_client: LanguageClient, request, tmp_path_factory):
    spec = request.param
    root = tmp_path_factory.mktemp(spec.split("@")[0])
    capabilities = client_capabilities(spec)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"debounce": DEBOUNCE},
        )
    )
    lsp_client.init_result = result
    lsp_client.spec = spec
    lsp_client.root = root
    lsp_client.encoding = ENCODING_OF[spec]
    lsp_client.pull = capabilities.text_document.diagnostic is not None
    yield
    await lsp_client.shutdown_session()
    assert lsp_client._server.returncode == 0  # shutdown + exit: a clean exit


async def wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def only(diagnostics: list[types.Diagnostic], code: str) -> types.Diagnostic:
    found = [d for d in diagnostics if d.code == code]
    assert len(found) == 1, diagnostics
    return found[0]


# -- initialize ----------------------------------------------------------------------------------


async def test_initialize_advertises_capabilities(client):
    caps = client.init_result.capabilities
    assert client.init_result.server_info.name == "distlint"
    assert caps.position_encoding == client.encoding
    assert caps.diagnostic_provider.identifier == "distlint"
    assert caps.diagnostic_provider.inter_file_dependencies is False
    assert set(caps.code_action_provider.code_action_kinds) == {
        types.CodeActionKind.QuickFix,
        FIX_ALL,
    }
    assert caps.hover_provider
    assert caps.text_document_sync.open_close
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    # Push for clients without pull support; those with it (Neovim 0.11) pull.
    assert client.pull == (client.spec == "neovim@v0.11.0")

    dynamic = client.capabilities.workspace.did_change_watched_files.dynamic_registration
    if dynamic:  # VS Code and Emacs: watchers for config files and for the sources
        await wait_until(lambda: client.registrations, "client/registerCapability")
        configs, sources = client.registrations
        for registration in (configs, sources):
            assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        globs = [w["globPattern"] for w in configs.register_options["watchers"]]
        assert globs == ["**/pyproject.toml", "**/distlint.toml"]
        globs = [w["globPattern"] for w in sources.register_options["watchers"]]
        assert globs == ["**/*.py", "**/*.pyi", "**/.gitignore"]
    else:
        await asyncio.sleep(0.05)
        assert client.registrations == []


# -- diagnostics ---------------------------------------------------------------------------------


async def test_diagnostics_ranges_severity_code_and_related(client):
    doc = Doc(client, client.root / "diag" / "train.py", SAMPLE)
    diagnostics = await doc.open_and_wait()
    assert codes(diagnostics) == ["DL203", "DL502"]
    encoding = client.encoding

    dl502 = only(diagnostics, "DL502")
    assert dl502.range == range_of(SAMPLE, '"nvfuser"', encoding)
    assert dl502.range.start == types.Position(line=8, character=DL502_START[encoding])
    dl203 = only(diagnostics, "DL203")
    assert dl203.range == range_of(SAMPLE, "dist.all_gather_object(out, x)", encoding)

    for diagnostic in diagnostics:
        assert diagnostic.severity == types.DiagnosticSeverity.Error
        assert diagnostic.source == "distlint"
        assert diagnostic.code_description.href == rule_url(diagnostic.code)
        assert diagnostic.data["code"] == diagnostic.code
    assert "'nvfuser' is not a torch.compile backend" in dl502.message

    if client.spec == "emacs":  # relatedInformation unsupported: the whole message, named
        assert dl203.related_information is None
        assert dl203.message.endswith("(compiled: line 12)")
        assert len(dl203.message) > HEADLINE_MAX
    else:  # the headline in the list; the whole message first in the related information
        whole, related = dl203.related_information
        assert len(dl203.message) <= HEADLINE_MAX
        assert whole.message.startswith(dl203.message.rstrip(".…"))
        assert len(whole.message) > len(dl203.message)
        assert whole.location.uri == doc.uri and whole.location.range == dl203.range
        assert related.message == "compiled"
        assert related.location.uri == doc.uri
        assert related.location.range == range_of(SAMPLE, "@torch.compile", encoding)
    if client.spec == "emacs":
        assert dl502.related_information is None
        assert headline(dl502.message) != dl502.message  # the whole message
    elif dl502.related_information is None:
        assert headline(dl502.message) == dl502.message  # short: nothing more to show
    else:  # no related locations: only the whole message
        (whole,) = dl502.related_information
        assert whole.message.startswith("'nvfuser' is not a torch.compile backend")


async def test_syntax_error_is_dl000(client):
    text = "import torch\n\ndef broken(:\n    pass\n"
    doc = Doc(client, client.root / "syntax" / "broken.py", text)
    diagnostics = await doc.open_and_wait()
    dl000 = only(diagnostics, "DL000")
    assert dl000.severity == types.DiagnosticSeverity.Error
    assert dl000.range.start.line == 2
    assert "syntax error" in dl000.message
    # No suppression is offered: a noqa comment cannot silence a file that does not parse.
    assert await doc.code_actions([dl000], only=[types.CodeActionKind.QuickFix]) == []


async def test_diagnostics_follow_changes_debounced(client):
    doc = Doc(client, client.root / "change" / "train.py", HEADER)
    assert await doc.open_and_wait() == []
    count = doc.pushed_count()
    # Three quick edits: only the last version is checked and pushed (debounced).
    doc.change(HEADER + 'a = torch.compile(f, backend="nvfuser")\n')
    doc.change(HEADER + 'a = torch.compile(f, backend="nvfuser")\nb = 1\n')
    doc.change(NVFUSER)
    diagnostics = await doc.diagnostics_after(count)  # push: asserts version == last
    assert codes(diagnostics) == ["DL502"]
    assert diagnostics[0].range.start.line == 7
    if not client.pull:
        assert doc.pushed_count() == count + 1
    assert await doc.change_and_wait(HEADER) == []


async def test_pull_unchanged_result_id(client):
    doc = Doc(client, client.root / "pull" / "train.py", NVFUSER)
    doc.open()
    first = await doc.pull()
    assert first.kind == "full" and codes(first.items) == ["DL502"]
    assert first.result_id
    again = await doc.pull(first.result_id)
    assert again.kind == "unchanged"
    assert again.result_id == first.result_id
    doc.change(HEADER)
    changed = await doc.pull(first.result_id)
    assert changed.kind == "full" and list(changed.items) == []
    assert changed.result_id != first.result_id
    doc.change(NVFUSER)  # the same text as before: the same id again
    back = await doc.pull(changed.result_id)
    assert back.kind == "full" and back.result_id == first.result_id


async def test_close_clears_diagnostics(client):
    doc = Doc(client, client.root / "close" / "train.py", NVFUSER)
    assert codes(await doc.open_and_wait()) == ["DL502"]
    count = doc.pushed_count()
    doc.close()
    cleared = await doc.pushed_after(count)
    assert list(cleared.diagnostics) == []


# -- code actions --------------------------------------------------------------------------------


async def test_suppress_action_appends_then_extends_noqa(client):
    doc = Doc(client, client.root / "suppress" / "train.py", SAMPLE)
    diagnostics = await doc.open_and_wait()
    dl502 = only(diagnostics, "DL502")
    actions = await doc.code_actions([dl502], only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in actions] == ["distlint (DL502): Suppress DL502 on this line"]
    (action,) = actions
    assert action.kind == types.CodeActionKind.QuickFix
    assert list(action.diagnostics) == [dl502]
    # A client that drops `data` gets the same actions (the server remembers them).
    stripped = attrs.evolve(dl502, data=None)
    assert [a.edit for a in await doc.code_actions([stripped])] == [action.edit]

    text = doc.edited(action)
    assert 'label = "🚀 ü"; compiled = torch.compile(f, backend="nvfuser")  # noqa: DL502\n' in text
    assert codes(await doc.change_and_wait(text)) == ["DL203"]

    # An existing noqa comment (another tool's code) is extended, not duplicated.
    text = text.replace("(out, x)\n", "(out, x)  # noqa: E501\n")
    dl203 = only(await doc.change_and_wait(text), "DL203")
    (action,) = await doc.code_actions([dl203], only=[types.CodeActionKind.QuickFix])
    text = doc.edited(action)
    assert 'tag = "🚀"; dist.all_gather_object(out, x)  # noqa: E501, DL203\n' in text
    assert await doc.change_and_wait(text) == []


async def test_case_fix_quick_fix(client):
    text = HEADER + 'fast = torch.compile(f, backend="Inductor")\n'
    doc = Doc(client, client.root / "casefix" / "train.py", text)
    dl502 = only(await doc.open_and_wait(), "DL502")
    assert dl502.data["fix"]["applicability"] == "safe"
    actions = await doc.code_actions([dl502])
    titles = [a.title for a in actions]
    assert titles[:2] == [
        "distlint (DL502): Use backend 'inductor'",
        "distlint (DL502): Suppress DL502 on this line",
    ]
    fix = actions[0]
    assert fix.is_preferred is True and fix.kind == types.CodeActionKind.QuickFix
    fixed = doc.edited(fix)
    assert fixed == HEADER + 'fast = torch.compile(f, backend="inductor")\n'
    assert await doc.change_and_wait(fixed) == []


async def test_fix_all_applies_every_safe_fix(client):
    text = (
        HEADER
        + 'a = torch.compile(f, backend="Inductor")\n'
        + 'b = torch.compile(f, backend="nvfuser")\n'
        + 'c = "🚀"; d = torch.compile(f, backend="Eager")\n'
    )
    doc = Doc(client, client.root / "fixall" / "train.py", text)
    diagnostics = await doc.open_and_wait()
    assert codes(diagnostics) == ["DL502", "DL502", "DL502"]
    (action,) = await doc.code_actions([], only=[FIX_ALL])
    assert action.kind == FIX_ALL
    assert action.title == "distlint: Fix all auto-fixable problems"
    fixed = doc.edited(action)
    assert (
        'backend="inductor"' in fixed and 'c = "🚀"; d = torch.compile(f, backend="eager")' in fixed
    )
    assert 'backend="nvfuser"' in fixed  # no safe fix: left alone
    # A "source" request includes fix-all; a quick-fix-only request does not.
    assert [a.kind for a in await doc.code_actions([], only=["source"])] == [FIX_ALL]
    assert await doc.code_actions([], only=[types.CodeActionKind.QuickFix]) == []
    remaining = await doc.change_and_wait(fixed)
    assert codes(remaining) == ["DL502"] and remaining[0].range.start.line == 8
    assert await doc.code_actions([], only=[FIX_ALL]) == []


async def test_fix_all_applies_a_deprecated_api_drop_in(client):
    """DL504's drop-in replacements are safe fixes: fix-all applies them (and nothing unsafe)."""
    text = (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def gather(out, t):\n"
        "    dist._all_gather_base(out, t)\n"
        "    with torch.cuda.amp.autocast():\n"
        "        return out\n"
    )
    doc = Doc(client, client.root / "fixall504" / "train.py", text)
    assert codes(await doc.open_and_wait()) == ["DL504", "DL504"]
    (action,) = await doc.code_actions([], only=[FIX_ALL])
    fixed = doc.edited(action)
    assert fixed == text.replace("dist._all_gather_base", "dist.all_gather_single")
    assert codes(await doc.change_and_wait(fixed)) == ["DL504"]  # autocast: no drop-in


# -- hover ---------------------------------------------------------------------------------------


async def test_hover_on_noqa_code_shows_rule_docs(client):
    text = (
        HEADER
        + 'label = "🚀"; c = torch.compile(f, backend="nvfuser")  # noqa: DL502\n'
        + "# distlint: ignore[DL2]\n"
        + "x = 1\n"
    )
    doc = Doc(client, client.root / "hover" / "train.py", text)
    doc.open()
    encoding = client.encoding

    async def hover(position: types.Position):
        return await asyncio.wait_for(
            client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(doc.uri), position=position
                )
            ),
            TIMEOUT,
        )

    start = position_of(text, "DL502", encoding)
    result = await hover(types.Position(line=start.line, character=start.character + 2))
    assert result.contents.kind == types.MarkupKind.Markdown
    assert "DL502" in result.contents.value
    assert "invalid-compile-option" in result.contents.value
    assert result.range == range_of(text, "DL502", encoding)

    prefix = position_of(text, "DL2]", encoding)
    result = await hover(prefix)
    assert "DL203" in result.contents.value  # a prefix lists the rules it selects

    assert await hover(position_of(text, "label", encoding)) is None
    assert await hover(position_of(text, "noqa", encoding)) is None


async def test_hover_on_a_flagged_range_shows_the_finding(client):
    text = HEADER + 'label = "🚀"; c = torch.compile(f, backend="nvfuser")\n'
    doc = Doc(client, client.root / "hover-finding" / "train.py", text)
    (diagnostic,) = await doc.open_and_wait()
    encoding = client.encoding

    async def hover(position: types.Position):
        return await asyncio.wait_for(
            client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(doc.uri), position=position
                )
            ),
            TIMEOUT,
        )

    inside = position_of(text, "nvfuser", encoding)
    result = await hover(types.Position(line=inside.line, character=inside.character + 3))
    value = result.contents.value
    assert value.startswith("**DL502 invalid-compile-option**: ")
    assert diagnostic.message in value  # the whole message, not only the headline
    assert "DL502.md" in value  # the rule's page
    assert result.range == diagnostic.range
    assert await hover(position_of(text, "label", encoding)) is None


async def test_a_plugin_finding_links_to_the_plugins_own_page(client):
    """A local plugin's rule (examples/plugin) is linked to its ``docs_url``, never to a
    distlint page that does not exist."""
    import shutil
    from pathlib import Path

    folder = client.root / "plugin"
    example = Path(__file__).resolve().parents[2] / "examples" / "plugin" / "lint_rules"
    shutil.copytree(example, folder / "lint_rules")
    (folder / "pyproject.toml").write_text(
        '[tool.distlint]\nplugins = ["lint_rules"]\nextend-select = ["XYZ"]\n', encoding="utf-8"
    )
    text = "from acme import launch\n\nlaunch.launch(main)\n"
    doc = Doc(client, folder / "train.py", text)
    diagnostic = only(await doc.open_and_wait(), "XYZ001")
    assert diagnostic.code_description is not None
    assert diagnostic.code_description.href == "https://example.invalid/lint/XYZ001"
    result = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(doc.uri),
                position=diagnostic.range.start,
            )
        ),
        TIMEOUT,
    )
    value = result.contents.value
    assert value.startswith("**XYZ001 launcher-without-timeout**")
    assert "(https://example.invalid/lint/XYZ001)" in value
    assert rule_url("XYZ001") not in value


# -- configuration -------------------------------------------------------------------------------


async def test_config_reload_on_watched_file_change_and_save(client):
    folder = client.root / "reload"
    doc = Doc(client, folder / "train.py", NVFUSER)
    assert codes(await doc.open_and_wait()) == ["DL502"]

    config = folder / "pyproject.toml"
    config.write_text('[tool.distlint]\nignore = ["DL502"]\n', encoding="utf-8")
    count = doc.pushed_count()
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Created)]
        )
    )
    assert await doc.diagnostics_after(count) == []

    config.write_text("[tool.distlint]\nignore = []\n", encoding="utf-8")
    count = doc.pushed_count()
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(config.as_uri()))
    )
    assert codes(await doc.diagnostics_after(count)) == ["DL502"]


async def test_broken_config_is_shown_and_defaults_are_used(client):
    folder = client.root / "broken"
    config = folder / "distlint.toml"
    folder.mkdir()
    config.write_text('ignroe = ["DL502"]\n', encoding="utf-8")
    doc = Doc(client, folder / "train.py", NVFUSER)
    assert codes(await doc.open_and_wait()) == ["DL502"]  # the defaults still check

    def shown():
        return [m for m in client.messages if "ignroe" in m.message]

    await wait_until(shown, "window/showMessage")
    (message,) = shown()
    assert message.type == types.MessageType.Error
    assert str(config) in message.message
    assert "unknown key 'ignroe'" in message.message and "did you mean 'ignore'" in message.message

    # Fixing the file and telling the server clears the problem; DL502 is now ignored.
    config.write_text('ignore = ["DL502"]\n', encoding="utf-8")
    count = doc.pushed_count()
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    assert await doc.diagnostics_after(count) == []
    assert len(shown()) == 1


async def test_untitled_buffer_and_excluded_file(client):
    untitled = Doc(client, f"untitled:Untitled-{client.spec}", NVFUSER)
    assert codes(await untitled.open_and_wait()) == ["DL502"]  # no file: workspace settings

    folder = client.root / "exclude"
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        '[tool.distlint]\nextend-exclude = ["generated"]\n', encoding="utf-8"
    )
    excluded = Doc(client, folder / "generated" / "train.py", NVFUSER)
    assert await excluded.open_and_wait() == []
    included = Doc(client, folder / "train.py", NVFUSER)
    assert codes(await included.open_and_wait()) == ["DL502"]


# -- latency -------------------------------------------------------------------------------------


async def test_latency_of_a_2000_line_file(client, record_property):
    text = training_script(2000)
    assert text.count("\n") == 2000
    parse = parse_time(text)  # just before: both figures under the same load
    doc = Doc(client, client.root / "latency" / "big_train.py", text)
    started = time.perf_counter()
    diagnostics = await doc.open_and_wait()
    latency = time.perf_counter() - started
    found = codes(diagnostics)
    assert found.count("DL502") == text.count('"nvfuser"') > 0
    assert found.count("DL203") == text.count("all_gather_object") > 0
    record_property("latency_s", latency)
    record_property("parse_s", parse)
    print(
        f"\n[{client.spec}] didOpen->diagnostics {latency * 1000:.0f} ms; "
        f"libcst.parse_module {parse * 1000:.0f} ms; ratio {latency / parse:.1f}x"
    )
    assert latency < 10 * parse + 2.0


HELPER_SYNC = "import torch.distributed as dist\n\n\ndef save(path):\n    dist.barrier()\n"
HELPER_QUIET = "def save(path):\n    return path\n"
TRAIN_CROSS = """\
import torch.distributed as dist
from proj.helpers import save


def finish(path):
    if dist.get_rank() == 0:
        save(path)
"""


def cross_project(client, name: str) -> tuple[Path, Path]:
    """A project (its folder, and the path of its ``proj/helpers.py``, not written) in the
    workspace whose ``proj/train.py`` imports ``proj.helpers``."""
    project = client.root / name
    (project / "proj").mkdir(parents=True)
    (project / "pyproject.toml").write_text(f"[project]\nname = '{name}'\n")
    (project / "proj" / "__init__.py").write_text("")
    return project, project / "proj" / "helpers.py"


async def test_cross_file_findings_reach_the_editor_and_open_buffers_count(client):
    """The buffer is that file of its project: a helper in another module issues the barrier,
    and the finding's related information points there; the helper's unsaved buffer is what
    the check sees (and where related ranges are measured)."""
    project, helpers = cross_project(client, "crossfile")
    helpers.write_text(HELPER_SYNC)
    train = Doc(client, project / "proj" / "train.py", TRAIN_CROSS)
    encoding = client.encoding
    found = await train.open_and_wait()
    assert codes(found) == ["DL201"]
    assert found[0].range == range_of(TRAIN_CROSS, "save(path)", encoding)
    if client.spec == "emacs":  # Emacs 29 cannot show related locations: they are named
        assert found[0].related_information is None
        assert "issues barrier: line 5" in found[0].message
    else:
        (elsewhere,) = [
            r for r in found[0].related_information or [] if r.location.uri != train.uri
        ]
        assert elsewhere.location.uri == helpers.as_uri()
        assert elsewhere.location.range == range_of(HELPER_SYNC, "dist.barrier()", encoding)
        assert elsewhere.message == "issues barrier"

    # The helper open with unsaved edits (the disk keeps its saved text): the call moved two
    # lines down, after a wide character on its line.
    moved = HELPER_SYNC.replace("def save", "# 🚀 moved\n\ndef save").replace(
        "    dist.barrier()", '    tag = "🚀"; dist.barrier()'
    )
    helper_doc = Doc(client, helpers, moved)
    helpers.write_text(HELPER_SYNC)
    assert await helper_doc.open_and_wait() == []
    found = await train.change_and_wait(TRAIN_CROSS + "\n")
    assert codes(found) == ["DL201"]
    if client.spec != "emacs":
        (elsewhere,) = [
            r for r in found[0].related_information or [] if r.location.uri != train.uri
        ]
        assert elsewhere.location.uri == helpers.as_uri()
        assert elsewhere.location.range == range_of(moved, "dist.barrier()", encoding)
    await helper_doc.change_and_wait(HELPER_QUIET)  # unsaved: the disk still syncs
    assert helpers.read_text() == HELPER_SYNC
    assert codes(await train.change_and_wait(TRAIN_CROSS)) == []
    helper_doc.close()
    train.close()


def watches(client) -> bool:
    """Whether the client registers the server's file watchers (VS Code, Emacs)."""
    return bool(client.capabilities.workspace.did_change_watched_files.dynamic_registration)


async def after_disk_change(
    client, doc: Doc, path: Path, change: types.FileChangeType
) -> list[types.Diagnostic]:
    """The buffer's diagnostics once ``path`` changed on disk: a client that watches files
    reports it (the server checks the open documents again); otherwise the buffer is edited,
    and its check finds the change by the files' status."""
    if not watches(client):
        return await doc.change_and_wait(doc.text + "\n")
    count = doc.pushed_count()
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=path.as_uri(), type=change)])
    )
    return await doc.diagnostics_after(count)


async def test_a_helper_changed_on_disk_changes_the_cross_file_finding(client):
    """The workspace index sees a helper's change on disk: told by a watched-file event, or
    (a client without watchers) by the file's status at the buffer's next check."""
    project, helpers = cross_project(client, "ondisk")
    helpers.write_text(HELPER_SYNC)
    train = Doc(client, project / "proj" / "train.py", TRAIN_CROSS)
    assert codes(await train.open_and_wait()) == ["DL201"]
    helpers.write_text(HELPER_QUIET)
    changed = types.FileChangeType.Changed
    assert codes(await after_disk_change(client, train, helpers, changed)) == []
    helpers.write_text(HELPER_SYNC)
    assert codes(await after_disk_change(client, train, helpers, changed)) == ["DL201"]
    train.close()


async def test_a_helper_created_then_deleted_on_disk(client):
    """A helper module that does not exist yet, created on disk, then deleted: the finding
    that depends on it appears, then goes (the project is listed again)."""
    project, helpers = cross_project(client, "created")
    train = Doc(client, project / "proj" / "train.py", TRAIN_CROSS)
    assert codes(await train.open_and_wait()) == []
    helpers.write_text(HELPER_SYNC)
    created = types.FileChangeType.Created
    assert codes(await after_disk_change(client, train, helpers, created)) == ["DL201"]
    helpers.unlink()
    deleted = types.FileChangeType.Deleted
    assert codes(await after_disk_change(client, train, helpers, deleted)) == []
    train.close()
