"""Command-line side of confirm mode: ``check --confirm`` options and ``distlint confirm``.

Hooked into :mod:`distlint.cli` with :func:`confirm_options` (a decorator on ``check`` that
adds the options and passes one ``confirm`` argument, a :class:`ConfirmRequest` or None) and
:func:`register` (adds the ``confirm`` command). Nothing here imports torch.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from distlint.confirm import INSTALL_HINT, torch_available
from distlint.confirm.targets import (
    ConfirmConfigError,
    ConfirmSettings,
    Target,
    entry_targets,
    load_settings,
    script_target,
)
from distlint.meta import FORMATS

EXIT_ERROR = 2

# check's confirm parameters (click names) -> ConfirmSettings fields
_SETTINGS = {
    "confirm_timeout": "timeout",
    "confirm_memory": "memory_mb",
    "confirm_backend": "backend",
    "confirm_world_size": "world_size",
    "confirm_rank": "rank",
    "confirm_max_steps": "max_steps",
    "confirm_time_limit": "time_limit",
    "map_cuda_to_cpu": "map_cuda_to_cpu",
}
_PARAMS = ("confirm", "confirm_entry", "confirm_script", "confirm_argv", *_SETTINGS)


@dataclass
class ConfirmRequest:
    """A validated ``--confirm`` request: settings and targets, ready to run."""

    settings: ConfirmSettings
    targets: list[Target]
    progress: bool = True
    notes: list[str] = field(default_factory=list)

    def run(
        self,
        findings: list[Any],
        *,
        cwd: Path,
        enabled: Callable[[str], bool] = lambda code: True,
        files: Sequence[Path] = (),
        read_text: Callable[[str], str | None] | None = None,
    ) -> tuple[list[Any], Any]:
        """Run the targets; the findings with statuses (plus DL901/DL902) and the ConfirmRun."""
        from distlint.confirm.progress import Progress
        from distlint.confirm.run import run_confirm
        from distlint.confirm.sandbox import Interrupted

        progress = Progress(len(self.targets), enabled=None if self.progress else False)
        try:
            findings, run = run_confirm(
                findings,
                self.targets,
                self.settings,
                cwd=cwd,
                enabled=enabled,
                progress=progress,
                read_text=read_text,
                checked_files=list(files),
            )
        except Interrupted as exc:  # not a timeout: nothing is reported, 128 + the signal
            what = f"target {exc.target} was killed" if exc.target else "no target was running"
            click.echo(
                f"distlint: confirm interrupted by {exc.name} ({what}, temporary files "
                "removed): no report",
                err=True,
            )
            sys.exit(exc.exit_code)
        from distlint.confirm.report import notification_lines

        for line in notification_lines(run):
            click.echo(f"distlint: {line}", err=True)
        return findings, run


def _confirm_params(hidden_script: bool) -> list[click.Option]:
    return [
        click.Option(
            ["--confirm"],
            is_flag=True,
            help="Also run the compiled code under Dynamo on CPU (executes your code; needs "
            "torch) and mark each finding confirmed / not observed / not reached.",
        ),
        click.Option(
            ["--confirm-entry"],
            multiple=True,
            metavar="MODULE:FUNCTION",
            help="An entry factory to run (adds to [tool.distlint.confirm] entries).",
        ),
        click.Option(
            ["--confirm-timeout"],
            type=click.FloatRange(min=0, min_open=True),
            help="Seconds each confirm target may run (default 120).",
        ),
        click.Option(
            ["--confirm-memory"],
            type=click.IntRange(min=0),
            metavar="MIB",
            help="Address-space limit per confirm target in MiB (default 8192; 0: none).",
        ),
        click.Option(
            ["--confirm-backend"],
            help="Backend for compiled code in confirm runs (default aot_eager; 'keep' keeps "
            "each torch.compile's own).",
        ),
        click.Option(
            ["--map-cuda-to-cpu"], is_flag=True, default=None, help="Map cuda devices to cpu."
        ),
        click.Option(["--confirm-script"], hidden=True, type=click.Path(path_type=Path)),
        click.Option(["--confirm-argv"], hidden=True, multiple=True),
        click.Option(["--confirm-world-size"], hidden=hidden_script, type=click.IntRange(min=1)),
        click.Option(["--confirm-rank"], hidden=hidden_script, type=click.IntRange(min=0)),
        click.Option(["--confirm-max-steps"], hidden=hidden_script, type=click.IntRange(min=0)),
        click.Option(["--confirm-time-limit"], hidden=hidden_script, type=click.FloatRange(min=0)),
    ]


def confirm_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``check`` (below ``@main.command()``): adds the options, passes ``confirm``."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = {name: kwargs.pop(name, None) for name in _PARAMS}
        request = prepare(values, kwargs.get("config_file"), kwargs.get("fmt"))
        return command(*args, confirm=request, **kwargs)

    params = getattr(wrapper, "__click_params__", [])
    wrapper.__click_params__ = [*params, *reversed(_confirm_params(hidden_script=True))]  # type: ignore[attr-defined]
    return wrapper


def prepare(
    values: dict[str, Any], config_file: Path | None, fmt: str | None = None
) -> ConfirmRequest | None:
    """A ConfirmRequest when ``--confirm`` was given; exits 2 on a bad request."""
    if not values.get("confirm"):
        return None
    if not torch_available():
        _fail(INSTALL_HINT)
    try:
        settings = load_settings(_config_path(config_file), Path.cwd())
        overrides = {
            field_name: values.get(param)
            for param, field_name in _SETTINGS.items()
            if values.get(param) is not None
        }
        settings = settings.with_overrides(**overrides)
        if settings.rank >= settings.world_size:
            raise ConfirmConfigError(
                f"confirm rank {settings.rank} is not below the world size "
                f"{settings.world_size} (ranks are 0 to world size - 1)"
            )
        if values.get("confirm_memory") == 0:
            settings = replace(settings, memory_mb=None)
        if values.get("confirm_time_limit") == 0:
            settings = replace(settings, time_limit=None)
        script = values.get("confirm_script")
        configured = settings.entries if script is None else ()  # `confirm SCRIPT`: the script
        entries = (*configured, *(values.get("confirm_entry") or ()))
        targets = entry_targets(tuple(entries))
        if script is not None:
            if not Path(script).is_file():
                _fail(f"confirm: no such script: {script}")
            targets.append(script_target(Path(script), tuple(values.get("confirm_argv") or ())))
    except ConfirmConfigError as exc:
        _fail(f"configuration error: {exc}")
    if not targets:
        _fail(
            "--confirm has nothing to run: list entry factories in [tool.distlint.confirm] "
            "entries, pass --confirm-entry MODULE:FUNCTION, or use 'distlint confirm SCRIPT'"
        )
    return ConfirmRequest(settings=settings, targets=targets, progress=True)


def _fail(message: str) -> None:
    click.echo(f"distlint: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _config_path(config_file: Path | None) -> Path | None:
    """The config file that governs the working directory (what ``check`` would use)."""
    if config_file is not None:
        return config_file
    directory = Path.cwd().resolve()
    while True:
        for name in ("distlint.toml", "pyproject.toml"):
            candidate = directory / name
            if candidate.is_file() and _has_table(candidate):
                return candidate
        if directory.parent == directory:
            return None
        directory = directory.parent


def _has_table(path: Path) -> bool:
    if path.name != "pyproject.toml":
        return True
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return "[tool.distlint" in text


def register(main: click.Group, check: click.Command) -> None:
    """Add ``distlint confirm SCRIPT [-- ARGS...]`` to ``main``; it runs ``check``."""

    @main.command(
        "confirm",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @click.argument("script", type=click.Path(path_type=Path, exists=True, dir_okay=False))
    @click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
    @click.option(
        "--path",
        "paths",
        multiple=True,
        type=click.Path(path_type=Path),
        help="What to check statically (default: the current directory).",
    )
    @click.option("--world-size", type=click.IntRange(min=1), help="Fake process group size (2).")
    @click.option("--rank", type=click.IntRange(min=0), help="This process's rank (0).")
    @click.option(
        "--max-steps", type=click.IntRange(min=0), help="Optimizer steps before stopping (3)."
    )
    @click.option("--time-limit", type=click.FloatRange(min=0), help="Seconds before stopping.")
    @click.option(
        "--timeout", type=click.FloatRange(min=0, min_open=True), help="Hard limit (120 s)."
    )
    @click.option("--memory", type=click.IntRange(min=0), metavar="MIB", help="Memory limit (MiB).")
    @click.option("--backend", help="Backend for compiled code (aot_eager; 'keep').")
    @click.option("--map-cuda-to-cpu", is_flag=True, default=None, help="Map cuda to cpu.")
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
    @click.option("-o", "--output", type=click.Path(path_type=Path))
    @click.option("--config", "config_file", type=click.Path(path_type=Path))
    @click.option("--select", multiple=True)
    @click.option("--ignore", multiple=True)
    @click.option("--exit-zero", is_flag=True)
    @click.option("-q", "--quiet", is_flag=True)
    @click.pass_context
    def confirm_command(
        ctx: click.Context,
        script: Path,
        script_args: tuple[str, ...],
        paths: tuple[Path, ...],
        **options: Any,
    ) -> None:
        """Run SCRIPT (a training script) under Dynamo on CPU and confirm the findings.

        Arguments after `--` go to the script. Distributed scripts run on a fake process group;
        the script is stopped after --max-steps optimizer steps or --time-limit seconds. This
        executes SCRIPT.
        """
        invoke: dict[str, Any] = {
            "paths": paths or (Path("."),),
            "confirm": True,
            "confirm_script": script,
            "confirm_argv": script_args,
            "confirm_world_size": options.pop("world_size"),
            "confirm_rank": options.pop("rank"),
            "confirm_max_steps": options.pop("max_steps"),
            "confirm_time_limit": options.pop("time_limit"),
            "confirm_timeout": options.pop("timeout"),
            "confirm_memory": options.pop("memory"),
            "confirm_backend": options.pop("backend"),
            "map_cuda_to_cpu": options.pop("map_cuda_to_cpu"),
        }
        invoke.update(options)
        accepted = {param.name for param in check.params}
        ctx.invoke(check, **{k: v for k, v in invoke.items() if k in accepted})

    _ = confirm_command
