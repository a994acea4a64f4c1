"""The ``distlint`` command line.

Exit codes follow Ruff: 0 no findings (none left after ``--fix``), 1 findings (left after
``--fix``; with ``--diff``: something to fix; with ``--exit-non-zero-on-fix``: something was
fixed), 2 usage, configuration or internal error (or a fixed file that could not be written).
``--fix-only`` and ``--add-noqa`` exit 0 unless something failed; ``--exit-zero`` turns 1 into 0.
Bad input never produces a traceback: it is a DL000 finding or a one-line message on stderr.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from distlint import __version__
from distlint.config.selection import is_valid_selector, normalize_selector, suggest_code
from distlint.config.settings import (
    CliOverrides,
    ConfigError,
    ConfigResolver,
    settings_for,
    torch_range,
)
from distlint.confirm.cli import ConfirmRequest, confirm_options, register
from distlint.findings import Finding, ToolError
from distlint.knowledge.torch_tables import available_versions, span, tables_between
from distlint.meta import FORMATS, OUTPUT_FORMATS
from distlint.output.baseline import BaselineError
from distlint.output.render import render
from distlint.output.report import Report, source_reader
from distlint.output.text import statistics_rows
from distlint.rules.plugins import PluginError
from distlint.rules.registry import all_rules, get_rule, rule_catalog
from distlint.rules.removed import removed_rule

if TYPE_CHECKING:
    from distlint.engine.cache import FirstPassCache
    from distlint.engine.fixes import FixRun
    from distlint.engine.session import CheckSession
    from distlint.semantic.link import ProjectFacts

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageFailure(click.UsageError):
    """A bad option value: exit 2 with a message (click's own convention)."""


def _selectors(values: tuple[str, ...], option: str, problems: list[str]) -> tuple[str, ...]:
    """The valid selectors of a command-line option; each unknown one is added to ``problems``
    (reported with the config files' problems, in one run). A removed rule's code is dropped
    with a warning (:mod:`distlint.rules.removed`)."""
    codes = tuple(rule_catalog())
    selectors = []
    for value in values:
        for part in value.split(","):
            part = normalize_selector(part)
            if not part:
                continue
            removed = removed_rule(part)
            if removed is not None:
                click.echo(f"distlint: warning: {option}: {removed.notice()}", err=True)
                continue
            # A plugin's prefix is known once the configuration loaded its plugins: those
            # selectors are checked then (config.settings.settings_for).
            builtin = part == "ALL" or part.startswith("DL")
            if builtin and not is_valid_selector(part, codes):
                hint = suggest_code(part, codes)
                suggestion = f"; did you mean {hint}?" if hint else ""
                problems.append(f"{option}: unknown rule selector '{part}'{suggestion}")
                continue
            selectors.append(part)
    return tuple(selectors)


_OPTIONS = ("--select", "--extend-select", "--ignore")
T = TypeVar("T")


def _reporting_selectors(
    resolver: ConfigResolver, option_problems: tuple[str, ...], build: Callable[[], T]
) -> T:
    """``build()`` (which reads the configuration), then every problem met in one ConfigError:
    the config files', then the command line's selectors by option. A plugin's selector is
    checked only once the configuration has loaded the plugins (``settings_for`` raises for an
    unknown one), so its problem joins the others here."""
    try:
        built = build()
    except ConfigError as exc:

        def option_index(problem: str) -> int:
            option = problem.split(":", 1)[0]
            return _OPTIONS.index(option) if option in _OPTIONS else -1

        resolver.raise_problems(sorted((*option_problems, *exc.problems), key=option_index))
        raise  # pragma: no cover - raise_problems raised, with exc's problems among them
    resolver.raise_problems(option_problems)
    return built


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
                for problem in exc.problems:
                    click.echo(f"distlint: configuration error: {problem}", err=True)
                sys.exit(EXIT_ERROR)
        return command(*args, **kwargs)

    return wrapper


class _Commands(click.Group):
    """The command group; an installed plugin that cannot load is exit 2, never a traceback
    (a local plugin's failure is a configuration error, reported where the config is read)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PluginError as exc:
            click.echo(f"distlint: plugin error: {exc}", err=True)
            sys.exit(EXIT_ERROR)


# Options of several commands, declared once.
_CONFIG_OPTION = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="Use this config file for every path.",
)
_TEXT_OR_JSON = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
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
@_CONFIG_OPTION
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
    "--project-timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="Budget for linking the project and its cross-file rules; what does not finish is "
    "reported as a tool error (default 300, or project-timeout in the configuration; 0: no "
    "limit).",
)
@click.option(
    "--show-source/--no-show-source", default=True, help="Show the source line of each finding."
)
@click.option(
    "--output-format",
    type=click.Choice(OUTPUT_FORMATS),
    default="full",
    show_default=True,
    help="Text format: 'full' (message, source line, fix) or 'concise' (one line each).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option(
    "--statistics",
    is_flag=True,
    help="Print the number of findings per rule (most frequent first) instead of the findings "
    "(a table, or a JSON list with --format json).",
)
@click.option("--fix/--no-fix", default=False, help="Apply safe fixes, then report what is left.")
@click.option(
    "--unsafe-fixes/--no-unsafe-fixes",
    default=False,
    help="Also apply (with --fix) or offer unsafe fixes, which may change behaviour.",
)
@click.option(
    "--fix-only/--no-fix-only",
    default=False,
    help="Apply fixes and report only what was fixed, not what is left (implies --fix).",
)
@click.option(
    "--diff",
    is_flag=True,
    help="Print the fixes as a unified diff instead of writing them (implies --fix-only).",
)
@click.option(
    "--show-fixes/--no-show-fixes", default=False, help="List the fixes applied, per file."
)
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when something was fixed, even if nothing is left.",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Add '# noqa: CODE' to every line with a finding (keeps existing comments).",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help='Write every current finding to FILE; with baseline = "FILE" in the config, later '
    "runs report only findings it does not hold.",
)
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
    statistics: bool,
    fix: bool,
    unsafe_fixes: bool,
    fix_only: bool,
    diff: bool,
    show_fixes: bool,
    exit_non_zero_on_fix: bool,
    add_noqa: bool,
    baseline_file: Path | None,
    no_cache: bool,
    cache_dir: Path | None,
    confirm: ConfirmRequest | None = None,
    **opts: object,
) -> None:
    """Check PATHS (default: the current directory) for distributed-training bugs.

    With --confirm (never on by default) it also runs the compiled code under Dynamo on CPU,
    which executes your code, and marks each finding confirmed / not observed / not reached.
    """
    # ``opts``: the options that go to _run_check as given (--output, --config, --jobs...).
    modes = _Modes(
        fix=fix or fix_only or diff,
        only=fix_only or diff,
        diff=diff,
        unsafe=unsafe_fixes,
        show_fixes=show_fixes,
        exit_non_zero_on_fix=exit_non_zero_on_fix,
        add_noqa=add_noqa,
    )
    if add_noqa and modes.fix:
        raise UsageFailure("--add-noqa cannot be combined with --fix, --fix-only or --diff")
    if statistics and fmt not in ("text", "json"):
        raise UsageFailure("--statistics works with --format text or json")
    if confirm is not None and (modes.only or add_noqa):
        raise UsageFailure("--confirm cannot be combined with --fix-only, --diff or --add-noqa")
    if baseline_file is not None and (modes.only or add_noqa):
        raise UsageFailure("--baseline cannot be combined with --fix-only, --diff or --add-noqa")
    option_problems: list[str] = []
    overrides = CliOverrides(
        select=_selectors(select, "--select", option_problems) if select else None,
        extend_select=_selectors(extend_select, "--extend-select", option_problems),
        ignore=_selectors(ignore, "--ignore", option_problems),
    )
    try:
        code = _run_check(
            paths or (Path("."),),
            overrides,
            fmt=fmt,
            statistics=statistics,
            modes=modes,
            baseline_file=baseline_file,
            cache=None if no_cache else _open_cache(cache_dir),
            confirm=confirm,
            option_problems=tuple(option_problems),
            **opts,
        )
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"distlint: configuration error: {problem}", err=True)
        code = EXIT_ERROR
    except BaselineError as exc:
        click.echo(f"distlint: {exc}", err=True)
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


@dataclass
class _Modes:
    """What ``check`` does besides reporting: fixing, diffing, noqa, baselines."""

    fix: bool = False  # apply fixes (--fix, --fix-only, --diff)
    only: bool = False  # --fix-only / --diff: no report of what is left
    diff: bool = False
    unsafe: bool = False
    show_fixes: bool = False
    exit_non_zero_on_fix: bool = False
    add_noqa: bool = False


def _run_check(paths: tuple[Path, ...], overrides: CliOverrides, **opts: object) -> int:
    from distlint.config.gitignore import find_repo_root
    from distlint.engine.session import CheckSession

    cwd = Path.cwd()
    config_file = opts["config_file"]
    resolver = ConfigResolver(forced=config_file, collect=True)  # type: ignore[arg-type]
    stdin_mode = paths == (Path("-"),)
    modes: _Modes = opts["modes"]  # type: ignore[assignment]
    if opts["show_settings"]:
        target = Path(opts["stdin_filename"] or ".") if stdin_mode else paths[0]  # type: ignore[arg-type]
        config = resolver.for_path(target.resolve())
        settings = _reporting_selectors(
            resolver,
            opts["option_problems"],  # type: ignore[arg-type]
            lambda: settings_for(config, overrides, target.resolve()),
        )
        lowest, highest, source = torch_range(config, target.resolve())
        judged = [t.version for t in tables_between(lowest, highest)]
        shown = config.as_dict() | {
            "lowest-torch": lowest,
            "highest-torch": highest,
            "lowest-torch-from": source,
            # the shipped torch tables the project's range covers (argument validity is judged
            # against each; deprecations against the first)
            "torch-range": span(judged, available_versions()),
            "enabled-rules": sorted(settings.enabled),
        }
        click.echo(json.dumps(shown, indent=2))
        for warning in resolver.warnings():
            click.echo(f"distlint: warning: {warning}", err=True)
        return EXIT_CLEAN

    cache: FirstPassCache | None = opts["cache"]  # type: ignore[assignment]
    if stdin_mode:
        build = functools.partial(
            CheckSession.for_stdin,
            opts["stdin_filename"],  # type: ignore[arg-type]
            resolver,
            overrides,
            cwd,
            cache,
            file_timeout=opts["file_timeout"],  # type: ignore[arg-type]
            project_timeout=opts["project_timeout"],  # type: ignore[arg-type]
        )
    else:
        build = functools.partial(
            CheckSession.for_paths,
            list(paths),
            resolver,
            overrides,
            cwd,
            force_exclude=bool(opts["force_exclude"]),
            jobs=opts["jobs"],  # type: ignore[arg-type]
            cache=cache,
            file_timeout=opts["file_timeout"],  # type: ignore[arg-type]
            project_timeout=opts["project_timeout"],  # type: ignore[arg-type]
        )
    # every broken config file met, each bad key, and each bad --select/--ignore, in one run
    session = _reporting_selectors(resolver, opts["option_problems"], build)  # type: ignore[arg-type]

    fix_run = None
    problems: list[str] = []  # files a fix or a noqa could not be written to, and why
    if modes.fix:
        from distlint.engine.fixes import fix_project

        fix_run = fix_project(session.check, session.read, unsafe=modes.unsafe)
        findings = fix_run.findings
        if not modes.diff and session.stdin_display is None:
            for display in fix_run.changed():
                reason = session.write(display, fix_run.texts[display])
                if reason is not None:
                    problems.append(f"{display}: fixes not written: {reason}")
    else:
        findings = session.check()
    if modes.add_noqa:
        return _add_noqa(session, findings, stdin_mode)
    overrides_text = session.source_texts()
    if fix_run is not None and session.stdin_display in fix_run.texts:
        overrides_text[session.stdin_display] = fix_run.texts[session.stdin_display]
    on_disk = {d: p for d, p in session.paths().items() if d != session.stdin_display}
    reader = source_reader(on_disk, overrides_text)
    baseline_file = opts.get("baseline_file")
    if isinstance(baseline_file, Path):
        return _write_baseline(session, findings, baseline_file, reader, problems)
    findings, known = _apart_from_baseline(findings, resolver, cwd, reader)

    errors: list[ToolError] = session.errors
    confirm_run = None
    request = opts.get("confirm")
    enabled_union = session.enabled_union
    if isinstance(request, ConfirmRequest):  # only with --confirm / `distlint confirm`
        enabled = frozenset(enabled_union)
        findings, confirm_run = request.run(
            findings, cwd=cwd, enabled=enabled.__contains__, files=[f.path for f in session.files]
        )
        enabled_union |= {f.code for f in findings}  # DL901/DL902 rules for SARIF
    # only SARIF lists the rules; their classes are imported only for it
    writes_sarif = opts["fmt"] == "sarif" or opts["sarif_output"] is not None
    rules = [r for c, r in all_rules().items() if c in enabled_union] if writes_sarif else []
    report = Report(
        findings=findings,
        errors=errors,
        files_checked=len(session.results),
        rules=rules,
        root=find_repo_root(cwd) or cwd,
        cwd=cwd,
        read_source=reader,
        suppressed=session.suppressed,
        notices=session.notices,
        confirm=confirm_run,
        fixed=fix_run.fixed if fix_run is not None else None,
        unsafe_fixes=modes.unsafe,
        baselined=len(known) if known is not None else None,
        files=session.paths(),  # standard input's named file too (its SARIF URI)
    )
    if fix_run is not None and session.stdin_display is not None:
        # the fixed source goes to stdout (as from a formatter); the report to stderr
        if modes.diff:
            _echo_diffs(fix_run, session)
        else:
            fixed_text = fix_run.texts.get(session.stdin_display)
            sys.stdout.flush()
            sys.stdout.buffer.write(session.encoded(session.stdin_display, fixed_text))
            sys.stdout.buffer.flush()
        if not modes.only:
            _emit(report, opts, err=True)
    elif modes.diff:
        _echo_diffs(fix_run, session)  # type: ignore[arg-type]
    elif modes.only:
        _emit_fix_summary(report, opts)
    else:
        _emit(report, opts)
    if modes.diff and fix_run is not None:
        total = fix_run.total
        click.echo(
            f"Would fix {_plural(total, 'finding')}." if total else "No fixes available.", err=True
        )
    for warning in (*resolver.warnings(), *session.skipped):
        click.echo(f"distlint: warning: {warning}", err=True)
    if fix_run is not None:
        for path, why in sorted(fix_run.rolled_back.items()):
            click.echo(f"distlint: warning: {path}: {why}; left unfixed", err=True)
        for path in fix_run.unconverged:
            click.echo(
                f"distlint: warning: {path}: fixes did not settle after {MAX_FIX_ROUNDS} rounds",
                err=True,
            )
    for notice in session.notices:
        click.echo(f"distlint: {notice}", err=True)
    for error in errors:
        click.echo(f"distlint: {error.path}: {error.message}", err=True)
    for problem in problems:
        click.echo(f"distlint: {problem}", err=True)
    return _exit_code(report, modes, fix_run, bool(opts["exit_zero"]), bool(problems))


MAX_FIX_ROUNDS = 10


def _exit_code(
    report: Report, modes: _Modes, fix_run: FixRun | None, exit_zero: bool, failed: bool
) -> int:
    """Ruff's exit codes (README, *Exit codes*)."""
    if report.errors or report.notices or failed:
        return EXIT_ERROR
    if report.confirm is not None and not report.confirm.successful:
        return EXIT_ERROR  # a confirm target timed out, crashed or raised (reported above)
    if exit_zero:
        return EXIT_CLEAN
    fixed = fix_run is not None and fix_run.total > 0
    if modes.diff:
        return EXIT_FINDINGS if fixed else EXIT_CLEAN
    if modes.only:
        return EXIT_FINDINGS if fixed and modes.exit_non_zero_on_fix else EXIT_CLEAN
    if report.findings or (fixed and modes.exit_non_zero_on_fix):
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _echo_diffs(fix_run: FixRun, session: CheckSession) -> None:
    from distlint.engine.fixes import unified_diff

    for display in fix_run.changed():
        sys.stdout.write(unified_diff(display, fix_run.originals[display], fix_run.texts[display]))
    sys.stdout.flush()


def _emit_fix_summary(report: Report, opts: dict[str, object]) -> None:
    """``--fix-only``: what was fixed, not what is left."""
    from distlint.output.text import fix_summary_lines

    if opts["quiet"] or str(opts["fmt"]) != "text":
        return
    lines = fix_summary_lines(report, show_fixes=bool(opts["modes"].show_fixes))  # type: ignore[attr-defined]
    click.echo("\n".join(lines))


def _apart_from_baseline(
    findings: list[Finding],
    resolver: ConfigResolver,
    cwd: Path,
    read: Callable[[str], str | None],
) -> tuple[list[Finding], list[Finding] | None]:
    """(findings to report, findings a configured baseline holds; None when none is set)."""
    from distlint.output.baseline import split

    by_display: dict[str, Path | None] = {}

    def baseline_of(finding: Finding) -> Path | None:
        if finding.path not in by_display:
            config = resolver.for_path(Path(os.path.normpath(cwd / finding.path)))
            by_display[finding.path] = config.baseline_path
        return by_display[finding.path]

    new, known = split(findings, baseline_of, read, cwd)
    used = any(by_display.values()) or resolver.for_path(cwd).baseline_path is not None
    return new, known if used else None


def _write_baseline(
    session: CheckSession,
    findings: list[Finding],
    target: Path,
    read: Callable[[str], str | None],
    problems: list[str],
) -> int:
    """``--baseline FILE``: record every current finding; exit 0 unless something failed."""
    from distlint.output.baseline import write

    count = write(target, findings, read, Path.cwd())
    click.echo(f"Wrote {_plural(count, 'finding')} to the baseline {target}.", err=True)
    for error in session.errors:
        click.echo(f"distlint: {error.path}: {error.message}", err=True)
    for notice in session.notices:
        click.echo(f"distlint: {notice}", err=True)
    for problem in problems:
        click.echo(f"distlint: {problem}", err=True)
    return EXIT_ERROR if session.errors or session.notices or problems else EXIT_CLEAN


def _add_noqa(session: CheckSession, findings: list[Finding], stdin_mode: bool) -> int:
    """``--add-noqa``: write the comments, say how many; exit 0 unless something failed."""
    from distlint.engine.fixes import parse_error
    from distlint.engine.noqa import add_noqa

    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    added = 0
    failed = False
    stdin_text: str | None = None
    for display in sorted(by_path):
        text = session.read(display)
        if text is None:
            continue
        new_text, count = add_noqa(text, by_path[display])
        if not count:
            continue
        broken = parse_error(new_text)
        if broken is not None:  # pragma: no cover - noqa comments go after code, never into it
            click.echo(f"distlint: {display}: noqa comments not added: {broken}", err=True)
            failed = True
            continue
        if stdin_mode:
            stdin_text = new_text
        else:
            reason = session.write(display, new_text)
            if reason is not None:
                click.echo(f"distlint: {display}: noqa comments not added: {reason}", err=True)
                failed = True
                continue
        added += count
    if stdin_mode:  # the source, with the comments, goes to stdout
        sys.stdout.write(stdin_text if stdin_text is not None else session.stdin_text())
    click.echo(f"Added {_plural(added, 'noqa directive')}.", err=True)
    for error in session.errors:
        click.echo(f"distlint: {error.path}: {error.message}", err=True)
    for notice in session.notices:
        click.echo(f"distlint: {notice}", err=True)
    return EXIT_ERROR if failed or session.errors or session.notices else EXIT_CLEAN


def _open_cache(directory: Path | None) -> FirstPassCache | None:
    """The first-pass cache (None when it cannot be created: the run goes on without)."""
    from distlint.config.project_files import project_root
    from distlint.engine.cache import FirstPassCache, default_directory

    if directory is None:
        directory = default_directory(project_root(Path.cwd()) or Path.cwd())
    return FirstPassCache.open(directory)


def _emit(report: Report, opts: dict[str, object], err: bool = False) -> None:
    fmt = str(opts["fmt"])
    output = opts["output"]
    color = False
    modes: _Modes = opts["modes"]  # type: ignore[assignment]
    if fmt == "text":
        stream = (sys.stderr if err else sys.stdout) if output is None else None
        color = stream is not None and _use_color(stream)
        text = render(
            report,
            "text",
            color=color,
            show_source=bool(opts["show_source"]),
            statistics=bool(opts["statistics"]),
            quiet=bool(opts["quiet"]),
            output_format=str(opts["output_format"]),
            show_fixes=modes.show_fixes,
        )
    elif fmt == "json" and opts["statistics"]:
        text = json.dumps(statistics_rows(report), indent=2) + "\n"
    elif fmt == "sarif":
        text = _sarif(report, opts)
    else:
        text = render(report, fmt)
    if output is None:
        # click strips ANSI codes when stdout is not a TTY; FORCE_COLOR asked for them.
        click.echo(text, nl=False, color=True if color else None, err=err)
    else:
        Path(str(output)).write_text(text, encoding="utf-8")
    sarif_output = opts["sarif_output"]
    if sarif_output is not None:
        Path(str(sarif_output)).write_text(_sarif(report, opts), encoding="utf-8")


def _sarif(report: Report, opts: dict[str, object]) -> str:
    from distlint.output.sarif import render_sarif

    return render_sarif(report, category=opts.get("sarif_category"))  # type: ignore[arg-type]


register(main, check)


@main.command("rules")
@_TEXT_OR_JSON
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
    from distlint.output.docs import removed_rule_page, rule_doc

    rule = get_rule(code)
    removed = removed_rule(code)
    if rule is None and removed is not None:
        page = removed_rule_page(removed.code)
        click.echo(page.rstrip("\n") if page is not None else removed.notice())
        return
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
@_TEXT_OR_JSON
@_CONFIG_OPTION
def explain_regions_command(paths: tuple[Path, ...], fmt: str, config_file: Path | None) -> None:
    """Show the compiled roots, the functions they reach, and rank-divergent collectives."""
    from distlint.output.explain import explain, render_text

    _explain_command(paths, fmt, config_file, explain, render_text)


@main.command("explain-ranks")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@_TEXT_OR_JSON
@_CONFIG_OPTION
def explain_ranks_command(paths: tuple[Path, ...], fmt: str, config_file: Path | None) -> None:
    """List every rank-dependent decision around a collective, proven or only possible, for
    review (not findings: exit 0 whatever it lists)."""
    from distlint.output.explain import explain_ranks, render_ranks_text

    _explain_command(paths, fmt, config_file, explain_ranks, render_ranks_text)


def _explain_command(
    paths: tuple[Path, ...],
    fmt: str,
    config_file: Path | None,
    explain: Callable[[ProjectFacts, set[str]], dict[str, Any]],
    render_text: Callable[[dict[str, Any]], str],
) -> None:
    """An ``explain-*`` command: the linked facts of the project view of ``check PATHS``,
    explained for the files named. It is no lint: exit 0 whatever it shows, 2 on a bad
    configuration or a path named that does not exist (or holds no Python file)."""
    from distlint.engine.runner import first_pass, link_results
    from distlint.engine.session import CheckSession

    try:
        resolver = ConfigResolver(forced=config_file)
        # the project view of `check PATHS`: the files named, linked with their project's
        session = CheckSession.for_paths(
            list(paths or (Path("."),)),
            resolver,
            CliOverrides(),
            Path.cwd(),
            force_exclude=False,
            jobs=None,
            cache=None,
        )
    except ConfigError as exc:
        click.echo(f"distlint: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    tasks = session.tasks
    results = first_pass(tasks, session.jobs)
    wrappers = sorted({w for task in tasks for w in task.settings.compile_wrappers})
    reported = {task.display for task in tasks if task.report}
    data = explain(link_results(results, tasks, wrappers), reported)
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(render_text(data))
    for warning in (*resolver.warnings(), *session.skipped):
        click.echo(f"distlint: warning: {warning}", err=True)
    for notice in session.notices:
        click.echo(f"distlint: {notice}", err=True)
    for error in (e for r in results if r.path in reported for e in r.errors):
        click.echo(f"distlint: {error.path}: {error.message}", err=True)
    if session.notices:  # a path named that does not exist or holds no Python file, as `check`
        sys.exit(EXIT_ERROR)


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
