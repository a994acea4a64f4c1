"""Output formats. Each reporter turns one :class:`Report` into text; none does any I/O."""

from __future__ import annotations

from distlint.output.report import Report


def render(report: Report, fmt: str, **options: object) -> str:
    """Render ``report`` in one of :data:`distlint.meta.FORMATS`."""
    if fmt == "text":
        from distlint.output.text import render_text

        return render_text(report, **options)  # type: ignore[arg-type]
    if fmt == "json":
        from distlint.output.json_format import render_json

        return render_json(report)
    if fmt == "github":
        from distlint.output.github import render_github

        return render_github(report)
    if fmt == "sarif":
        from distlint.output.sarif import render_sarif

        return render_sarif(report)
    raise ValueError(f"unknown format {fmt!r}")
