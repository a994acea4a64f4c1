"""The ``distlint`` command line.

Exit codes follow Ruff: 0 no findings, 1 findings, 2 usage, configuration or internal error.
Bad input never produces a traceback: it is a DL000 finding or a one-line message on stderr.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from distlint import __version__
from distlint.config import CliOverrides, ConfigError, ConfigResolver, settings_for
from distlint.confirm.cli import ConfirmRequest, confirm_options, register
from distlint.findings import ToolError
from distlint.registry import all_rules, get_rule
from distlint.reporters import FORMATS, Report, render, source_reader
from distlint.selection import is_valid_selector, normalize_selector, suggest_code

if TYPE_CHECKING:
    from distlint.cache import FirstPassCache
    from distlint.discovery import DiscoveredFile

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageFailure(click.UsageError):
    """A bad option value: exit 2 with a message (click's own convention)."""


def _selectors(values: tuple[str, ...], option: str) -> tuple[str, ...]:
    codes = tuple(all_rules())
    selectors = []
    for value in values:
        for part in value.split(","):
            part = normalize_selector(part)
            if not part:
                continue
            if not is_valid_selector(part, codes):
                hint = suggest_code(part, codes)
                suggestion = f"; did you mean {hint}?" if hint else ""
                raise UsageFailure(f"{option}: unknown rule selector '{part}'{suggestion}")
            selectors.append(part)
    return tuple(selectors)


def _use_color(stream: object) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def _config_before_confirm(command: Callable[..., Any]) -> Callable[..., Any]:
    """Validate the configuration before ``--confirm`` reads its ``[tool.distlint.confirm]``.

    ``confirm_options`` prepares the confirm run before ``check`` starts; loading the config
    first reports a bad value (confirm table included) the way every config error is reported:
    exit 2, naming the file and the key.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("confirm") and not kwargs.get("show_settings"):
            try:
                ConfigResolver(forced=kwargs.get("config_file")).for_path(Path.cwd())
            except ConfigError as exc:
                click.echo(f"distlint: configuration error: {exc}", err=True)
                sys.exit(EXIT_ERROR)
        return command(*args, **kwargs)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="distlint")
def main() -> None:
    """Find torch.compile and distributed-training bugs before the job hangs."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--select", multiple=True, help="Rules to run (codes, prefixes or ALL); replaces the config's."
)
@click.option("--extend-select", multiple=True, help="Rules to run in addition to the selection.")
@click.option("--ignore", multiple=True, help="Rules not to run (codes or prefixes).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the report to FILE.")
@click.option(
    "--sarif-output",
    type=click.Path(path_type=Path),
    help="Also write a SARIF report to FILE (keeps --format for the console).",
)
@click.option("--sarif-category", help="SARIF automationDetails category (one per monorepo part).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="Use this config file for every path.",
)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: CPU count)."
)
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Give up on a file whose analysis takes longer (reported as DL000; default 20, "
    "or file-timeout in the configuration; 0: no limit).",
)
@click.option(
    "--show-source/--no-show-source", default=True, help="Show the source line of each finding."
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule.")
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply excludes and .gitignore to files named on the command line too.",
)
@click.option("--stdin-filename", help="The file name to use for source read from '-'.")
@click.option(
    "--show-settings", is_flag=True, help="Print the resolved settings for the first path and exit."
)
@click.option(
    "--no-cache",
    is_flag=True,
    envvar="DISTLINT_NO_CACHE",
    help="Neither read nor write the cache of per-file analyses.",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where to keep the cache (default: DISTLINT_CACHE_DIR, else .distlint_cache at the "
    "project root).",
)
@_config_before_confirm
@confirm_options
def check(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    fmt: str,
    output: Path | None,
    sarif_output: Path | None,
    sarif_category: str | None,
    exit_zero: bool,
    config_file: Path | None,
    jobs: int | None,
    file_timeout: float | None,
    show_source: bool,
    quiet: bool,
    statistics: bool,
    force_exclude: bool,
    stdin_filename: str | None,
    show_settings: bool,
    no_cache: bool,
    cache_dir: Path | None,
    confirm: ConfirmRequest | None = None,
) -> None:
    """Check PATHS (default: the current directory) for distributed-training bugs.

    With --confirm (never on by default) it also runs the compiled code under Dynamo on CPU,
    which executes your code, and marks each finding confirmed / not observed / not reached.
    """
    overrides = CliOverrides(
        select=_selectors(select, "--select") if select else None,
        extend_select=_selectors(extend_select, "--extend-select"),
        ignore=_selectors(ignore, "--ignore"),
    )
    try:
        code = _run_check(
            paths or (Path("."),),
            overrides,
            fmt=fmt,
            output=output,
            sarif_output=sarif_output,
            sarif_category=sarif_category,
            exit_zero=exit_zero,
            config_file=config_file,
            jobs=jobs,
            file_timeout=file_timeout,
            show_source=show_source,
            quiet=quiet,
            statistics=statistics,
            force_exclude=force_exclude,
            stdin_filename=stdin_filename,
            show_settings=show_settings,
            cache=None if no_cache else _open_cache(cache_dir),
            confirm=confirm,
        )
    except ConfigError as exc:
        click.echo(f"distlint: configuration error: {exc}", err=True)
        code = EXIT_ERROR
    except OSError as exc:
        click.echo(f"distlint: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        code = EXIT_ERROR
    except Exception as exc:  # never a traceback; DISTLINT_DEBUG=1 shows it
        if os.environ.get("DISTLINT_DEBUG"):
            raise
        click.echo(
            f"distlint: internal error: {type(exc).__name__}: {exc} "
            "(set DISTLINT_DEBUG=1 for a traceback, and please report it)",
            err=True,
        )
        code = EXIT_ERROR
    sys.exit(code)


def _run_check(paths: tuple[Path, ...], overrides: CliOverrides, **opts: object) -> int:
    from distlint.discovery import Discovery, display_path
    from distlint.gitignore import find_repo_root
    from distlint.imports import module_name_for
    from distlint.runner import (
        Task,
        check_alone,
        context_tasks,
        default_jobs,
        file_budget,
        native_sources,
        run,
    )

    cwd = Path.cwd()
    config_file = opts["config_file"]
    resolver = ConfigResolver(forced=config_file)  # type: ignore[arg-type]
    stdin_mode = paths == (Path("-"),)
    if opts["show_settings"]:
        target = Path(opts["stdin_filename"] or ".") if stdin_mode else paths[0]  # type: ignore[arg-type]
        config = resolver.for_path(target.resolve())
        settings = settings_for(config, overrides, target.resolve())
        shown = config.as_dict() | {"enabled-rules": sorted(settings.enabled)}
        click.echo(json.dumps(shown, indent=2))
        return EXIT_CLEAN

    notices: list[str] = []
    unreadable: list[str] = []  # directories skipped (warnings: the rest is still checked)
    overrides_text: dict[str, str] = {}
    if stdin_mode:
        name = opts["stdin_filename"] or "-"
        target = (cwd / name).resolve()
        display = display_path(target, cwd) if name != "-" else "-"
        settings = settings_for(resolver.for_path(target), overrides, target)
        data = sys.stdin.buffer.read()
        module_name, is_package = module_name_for(target) if name != "-" else (None, False)
        budget = file_budget(opts["file_timeout"], resolver.for_path(target))  # type: ignore[arg-type]
        if name == "-":
            results = [check_alone(data, display, settings, module_name, is_package, budget)]
        else:  # the buffer stands for that file of its project (as in an editor)
            tasks = [Task(target, display, settings, data=data)]
            tasks += context_tasks([target], [target], resolver, overrides, cwd, {target: data})
            results = run(tasks, 1, cache=opts["cache"], file_timeout=budget)  # type: ignore[arg-type]
        files: list[DiscoveredFile] = []
        enabled_union = set(settings.enabled)
        with contextlib.suppress(UnicodeDecodeError):
            overrides_text[display] = data.decode("utf-8-sig")
    else:
        discovery = Discovery(resolver, cwd, force_exclude=bool(opts["force_exclude"]))
        files, notices = discovery.files(list(paths))
        unreadable = discovery.unreadable
        tasks = []
        enabled_union = set()
        for file in files:
            settings = settings_for(resolver.for_path(file.path), overrides, file.path)
            enabled_union |= settings.enabled
            tasks.append(Task(file.path, file.display, settings))
        native = native_sources(discovery.native_files(), resolver, overrides)
        tasks += context_tasks([f.path for f in files], list(paths), resolver, overrides, cwd)
        jobs = opts["jobs"] or default_jobs()
        first = Path(os.path.abspath(paths[0]))
        budget = file_budget(opts["file_timeout"], resolver.for_path(first))  # type: ignore[arg-type]
        results = run(tasks, jobs, native, opts["cache"], budget)  # type: ignore[arg-type]

    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    errors: list[ToolError] = [e for r in results for e in r.errors]
    confirm_run = None
    request = opts.get("confirm")
    if isinstance(request, ConfirmRequest):  # only with --confirm / `distlint confirm`
        enabled = frozenset(enabled_union)
        findings, confirm_run = request.run(
            findings, cwd=cwd, enabled=enabled.__contains__, files=[f.path for f in files]
        )
        enabled_union |= {f.code for f in findings}  # DL901/DL902 rules for SARIF
    rules = [rule for code, rule in all_rules().items() if code in enabled_union]
    report = Report(
        findings=findings,
        errors=errors,
        files_checked=len(results),
        rules=rules,
        root=find_repo_root(cwd) or cwd,
        cwd=cwd,
        read_source=source_reader({f.display: f.path for f in files}, overrides_text),
        suppressed=sum(r.suppressed for r in results),
        notices=notices,
        confirm=confirm_run,
    )
    _emit(report, opts)
    for warning in unreadable:
        click.echo(f"distlint: warning: {warning}", err=True)
    for notice in notices:
        click.echo(f"distlint: {notice}", err=True)
    for error in errors:
        click.echo(f"distlint: {error.path}: {error.message}", err=True)
    if errors or notices:
        return EXIT_ERROR
    if confirm_run is not None and not confirm_run.successful:
        return EXIT_ERROR  # a confirm target timed out, crashed or raised (reported above)
    if findings and not opts["exit_zero"]:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _open_cache(directory: Path | None) -> FirstPassCache | None:
    """The first-pass cache (None when it cannot be created: the run goes on without)."""
    from distlint.cache import FirstPassCache, default_directory
    from distlint.project_files import project_root

    if directory is None:
        directory = default_directory(project_root(Path.cwd()) or Path.cwd())
    return FirstPassCache.open(directory)


def _emit(report: Report, opts: dict[str, object]) -> None:
    fmt = str(opts["fmt"])
    output = opts["output"]
    color = False
    if fmt == "text":
        stream = sys.stdout if output is None else None
        color = stream is not None and _use_color(stream)
        text = render(
            report,
            "text",
            color=color,
            show_source=bool(opts["show_source"]),
            statistics=bool(opts["statistics"]),
            quiet=bool(opts["quiet"]),
        )
    elif fmt == "sarif":
        text = _sarif(report, opts)
    else:
        text = render(report, fmt)
    if output is None:
        # click strips ANSI codes when stdout is not a TTY; FORCE_COLOR asked for them.
        click.echo(text, nl=False, color=True if color else None)
    else:
        Path(str(output)).write_text(text, encoding="utf-8")
    sarif_output = opts["sarif_output"]
    if sarif_output is not None:
        Path(str(sarif_output)).write_text(_sarif(report, opts), encoding="utf-8")


def _sarif(report: Report, opts: dict[str, object]) -> str:
    from distlint.reporters.sarif import render_sarif

    return render_sarif(report, category=opts.get("sarif_category"))  # type: ignore[arg-type]


register(main, check)


@main.command("rules")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules_command(fmt: str) -> None:
    """List every rule: code, name, severity, default on/off, fix availability."""
    rows = [
        {
            "code": rule.code,
            "name": rule.name,
            "severity": rule.severity.value,
            "default": "on" if rule.default_enabled else "off",
            "fix": rule.fix_availability.value,
            "summary": rule.summary,
        }
        for rule in all_rules().values()
    ]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    name_width = max(len(row["name"]) for row in rows)
    click.echo(f"{'code':<6} {'name':<{name_width}} {'severity':<8} {'default':<7} fix")
    for row in rows:
        click.echo(
            f"{row['code']:<6} {row['name']:<{name_width}} {row['severity']:<8} "
            f"{row['default']:<7} {row['fix']}"
        )


@main.command("rule")
@click.argument("code")
def rule_command(code: str) -> None:
    """Print the documentation of rule CODE (e.g. DL201)."""
    from distlint.docs import rule_doc

    rule = get_rule(code)
    if rule is None:
        hint = suggest_code(code, list(all_rules()))
        suggestion = f"; did you mean {hint}?" if hint else ""
        click.echo(f"distlint: unknown rule '{code}'{suggestion}", err=True)
        sys.exit(EXIT_ERROR)
    doc = rule_doc(rule.code)
    if doc is None:  # pragma: no cover - a test guarantees every rule has a page
        click.echo(f"# {rule.code} {rule.name}\n\n{rule.summary}")
        return
    click.echo(doc.markdown.rstrip("\n"))


@main.command("explain-regions")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="Use this config file for every path.",
)
def explain_regions_command(paths: tuple[Path, ...], fmt: str, config_file: Path | None) -> None:
    """Show the compiled roots, the functions they reach, and rank-divergent collectives."""
    from distlint.discovery import Discovery
    from distlint.explain import explain, render_text
    from distlint.runner import Task, default_jobs, first_pass, link_results

    try:
        resolver = ConfigResolver(forced=config_file)
        discovery = Discovery(resolver, Path.cwd(), force_exclude=False)
        files, notices = discovery.files(list(paths or (Path("."),)))
        tasks = []
        wrappers: set[str] = set()
        for file in files:
            settings = settings_for(resolver.for_path(file.path), CliOverrides(), file.path)
            wrappers |= set(settings.compile_wrappers)
            tasks.append(Task(file.path, file.display, settings))
    except ConfigError as exc:
        click.echo(f"distlint: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    results = first_pass(tasks, default_jobs())
    data = explain(link_results(results, tasks, sorted(wrappers)))
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_text(data))
    for warning in discovery.unreadable:
        click.echo(f"distlint: warning: {warning}", err=True)
    for notice in notices:
        click.echo(f"distlint: {notice}", err=True)
    for error in (e for r in results for e in r.errors):
        click.echo(f"distlint: {error.path}: {error.message}", err=True)


# -- language server (distlint/lsp) ----------------------------------------------------------------


@main.command("server")
@click.option(
    "--tcp",
    "tcp_port",
    type=click.IntRange(1, 65535),
    metavar="PORT",
    help="Listen on TCP 127.0.0.1:PORT instead of stdio.",
)
def server_command(tcp_port: int | None) -> None:
    """Run the language server (LSP) for editors; stdio unless --tcp is given."""
    from distlint.lsp import INSTALL_HINT, missing_dependencies, run

    if missing_dependencies():
        click.echo(f"distlint: {INSTALL_HINT}", err=True)
        sys.exit(EXIT_ERROR)
    run(tcp_port)
