"""Run each case of ``cases.json`` once under Dynamo and record its graph breaks.

    python bench/realworld/graph_breaks/harness.py --corpus CORPUS [--only ID,ID] [--out FILE]

Needs torch (CPU is enough). For every case it imports the module file from
``CORPUS/<owner>+<name>/<path>`` (the repository root and the file's folder go on
``sys.path``; with ``"defs_only": true`` only the file's imports, classes, functions and simple
assignments are executed, for scripts that train at import time), builds the object with the
case's constructor expression, makes random inputs of the recorded shapes, and runs
``torch._dynamo.explain`` on it (backend: eager). Each break is written with the innermost
user frame that lies inside the corpus repository, Dynamo's graph-break id (``GBnnnn``) and the
first line of its message. Before that it tries
``torch.compile(fullgraph=True, backend="eager")`` on the same inputs and records whether it
fails. Output: one JSON object per case (``--out``), which ``collect.py`` turns into
``observed.jsonl`` and ``runs.jsonl``.

Nothing of the corpus is copied: the code is imported from the corpus folder at run time.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import signal
import sys
import traceback
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
GB = re.compile(r"gb(\d{4})\.html")


def load_module(path: Path, root: Path, defs_only: bool, dotted: str = "") -> types.ModuleType:
    for entry in (str(path.parent), str(root)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if dotted:  # a module of a package: imported by name, so that its relative imports work
        return importlib.import_module(dotted)
    name = "gbreal_" + re.sub(r"\W", "_", str(path.relative_to(root)))[:-3]
    if not defs_only:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    keep = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    body = []
    for node in tree.body:
        if isinstance(node, keep):
            body.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and not any(
            isinstance(n, ast.Call) for n in ast.walk(node)
        ):
            # constants only (e.g. HEAD_SIZE = 64); anything calling code is left out
            body.append(node)
    tree.body = body
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    exec(compile(tree, str(path), "exec"), module.__dict__)
    return module


def make_input(spec, torch):
    if isinstance(spec, dict) and "shape" in spec:
        dtype = getattr(torch, spec.get("dtype", "float32"))
        if "randint" in spec:
            low, high = spec["randint"]
            return torch.randint(low, high, spec["shape"], dtype=dtype)
        if dtype == torch.bool:
            fill = torch.zeros if spec.get("zeros") else torch.ones
            return fill(spec["shape"], dtype=dtype)
        return torch.randn(spec["shape"], dtype=dtype)
    if isinstance(spec, dict) and "value" in spec:
        return spec["value"]
    if isinstance(spec, list):
        return [make_input(item, torch) for item in spec]
    return spec


def frame_in_repo(stack, root: Path):
    inside = [fs for fs in stack if Path(fs.filename).resolve().is_relative_to(root)]
    return inside


LOG_PREFIX = re.compile(r"^[VWIE]\d{4} [^\]]*\] (?:\[[^\]]*\] )?\[__graph_breaks\] ?")
SITE = re.compile(r"^Graph break in user code at (.*):(\d+)$")
FRAME = re.compile(r'^\s*File "(.*)", line (\d+), in (\S+)')


def parse_log(stderr: str, root: Path) -> list[dict]:
    """The breaks that ``TORCH_LOGS=graph_breaks`` logged, with their user tracebacks."""
    blocks: list[list[str]] = []
    for raw in stderr.splitlines():
        match = LOG_PREFIX.match(raw)
        if not match:
            continue
        text = raw[match.end() :]
        if SITE.match(text):
            blocks.append([])
        if blocks:
            blocks[-1].append(text)
    found = []
    for block in blocks:
        site = SITE.match(block[0])
        assert site
        reason = ""
        for index, text in enumerate(block):
            if text.startswith("Graph Break Reason:"):
                reason = text.split(":", 1)[1].strip()
                wrappers = (
                    "Failed to handle graph break gracefully",
                    "Encountered graph break when",
                )
                if reason.startswith(wrappers):
                    rest = [t.strip() for t in block[index + 1 :] if t.strip()]
                    rest = [t for t in rest if not t.startswith(wrappers)]
                    reason = rest[0] if rest else reason
                break
        ids = [f"GB{m}" for m in re.findall(r"gb(\d{4})\.html", "\n".join(block))]
        frames = []
        if "User code traceback:" in block:
            for text in block[block.index("User code traceback:") :]:
                frame = FRAME.match(text)
                if frame and Path(frame.group(1)).resolve().is_relative_to(root):
                    rel = str(Path(frame.group(1)).resolve().relative_to(root))
                    frames.append([rel, int(frame.group(2)), frame.group(3)])
        path = Path(site.group(1)).resolve()
        found.append(
            {
                "path": str(path.relative_to(root)) if path.is_relative_to(root) else str(path),
                "line": int(site.group(2)),
                "gb": ids[0] if ids else None,
                "gb_all": ids,
                "message": reason,
                "stack": frames,
            }
        )
    return found


class Timeout(Exception):
    pass


def fullgraph_outcome(torch, target, args, kwargs, no_grad) -> object:
    try:
        compiled = torch.compile(target, fullgraph=True, backend="eager")
        with torch.no_grad() if no_grad else torch.enable_grad():
            compiled(*args, **kwargs)
        return "ok"
    except Exception as error:  # any failure is the observation
        text = str(error)
        ident = GB.search(text)
        return {
            "gb": f"GB{ident.group(1)}" if ident else None,
            "error": type(error).__name__,
            "message": text.strip().splitlines()[0][:300] if text.strip() else "",
        }


def run_case(case: dict, corpus: Path) -> dict:
    import torch
    import torch._dynamo

    root = (corpus / case["repo"].replace("/", "+")).resolve()
    result: dict = {"id": case["id"], "repo": case["repo"], "breaks": []}
    torch.manual_seed(0)
    module = load_module(
        root / case["path"], root, case.get("defs_only", False), case.get("import", "")
    )
    namespace = dict(vars(module))
    namespace["torch"] = torch
    for line in case.get("setup", []):
        exec(line, namespace)
    target = eval(case["ctor"], namespace)
    if isinstance(target, torch.nn.Module):
        target.eval() if case.get("eval") else target.train()
    if case.get("method"):
        target = getattr(target, case["method"])
    args = [make_input(a, torch) for a in case.get("inputs", [])]
    kwargs = {k: make_input(v, torch) for k, v in case.get("kwargs", {}).items()}
    with torch.no_grad() if case.get("no_grad") else torch.enable_grad():
        target(*args, **kwargs)  # eager first: a failure here is not Dynamo's
    # fullgraph before explain: a frame that explain's run skipped (a break in a loop) stays
    # marked as skipped after reset(), and a fullgraph run after it passes without tracing
    torch._dynamo.reset()
    result["fullgraph"] = fullgraph_outcome(torch, target, args, kwargs, case.get("no_grad"))
    torch._dynamo.reset()
    with torch.no_grad() if case.get("no_grad") else torch.enable_grad():
        torch._dynamo.utils.counters.clear()
        explained = torch._dynamo.explain(target)(*args, **kwargs)
    result["graphs"] = explained.graph_count
    counters = torch._dynamo.utils.counters
    result["counters"] = {
        group: {str(k)[:200]: v for k, v in counters[group].items()}
        for group in ("graph_break", "unimplemented", "frames")
        if counters.get(group)
    }
    result["break_count"] = explained.graph_break_count
    seen = set()
    for reason in explained.break_reasons:
        text = str(reason.reason)
        ident = GB.search(text)
        frames = frame_in_repo(reason.user_stack, root)
        site = frames[-1] if frames else (reason.user_stack[-1] if reason.user_stack else None)
        item = {
            "gb": f"GB{ident.group(1)}" if ident else None,
            "message": text.strip().splitlines()[0] if text.strip() else "",
            "path": str(Path(site.filename).resolve().relative_to(root)) if frames else None,
            "line": site.lineno if site else None,
            "file": site.filename if site else None,
            "stack": [
                [str(Path(fs.filename).resolve().relative_to(root)), fs.lineno, fs.name]
                for fs in frames
            ],
        }
        key = (item["gb"], item["path"], item["line"], item["message"])
        if key in seen:
            continue
        seen.add(key)
        result["breaks"].append(item)
    torch._dynamo.reset()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--cases", type=Path, default=HERE / "cases.json")
    parser.add_argument("--only", default="")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--timeout", type=int, default=240)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    cases = json.loads(options.cases.read_text(encoding="utf-8"))
    wanted = set(filter(None, options.only.split(",")))
    out = open(options.out, "a", encoding="utf-8") if options.out else sys.stdout  # noqa: SIM115

    def on_alarm(signum, frame):
        raise Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    if not options.inner:
        # one process per case: Dynamo's caches must not carry over from one case to the next
        import subprocess

        for case in cases:
            if wanted and case["id"] not in wanted:
                continue
            command = [sys.executable, __file__, "--corpus", str(options.corpus), "--cases"]
            command += [str(options.cases), "--only", case["id"], "--timeout", str(options.timeout)]
            command += ["--inner"]
            env = dict(os.environ, TORCH_LOGS="graph_breaks")
            done = subprocess.run(command, capture_output=True, text=True, env=env)
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            if lines:
                result = json.loads(lines[-1])
                root = (options.corpus / case["repo"].replace("/", "+")).resolve()
                result["logged"] = parse_log(done.stderr, root)
                print(json.dumps(result), file=out, flush=True)
            else:
                skipped = {"id": case["id"], "repo": case["repo"], "skipped": done.stderr[-300:]}
                print(json.dumps(skipped), file=out, flush=True)
        return 0
    for case in cases:
        if case["id"] not in wanted:
            continue
        signal.alarm(options.timeout)
        try:
            result = run_case(case, options.corpus.resolve())
        except Timeout:
            result = {"id": case["id"], "repo": case["repo"], "skipped": "timeout"}
        except BaseException as error:  # record why the case was skipped
            tail = traceback.format_exc().strip().splitlines()[-1]
            why = f"{type(error).__name__}: {tail}"[:400]
            result = {"id": case["id"], "repo": case["repo"], "skipped": why}
        finally:
            signal.alarm(0)
        print(json.dumps(result), file=out, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
