"""What a rule sees of the compiled region it is in: the roots that compile it, and how."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distlint.findings import Location, Span

if TYPE_CHECKING:
    from distlint.semantic.model import Options

UNKNOWN = "<expr>"  # how a summary keeps a keyword value that is not a literal


@dataclass(frozen=True)
class CompileOptions:
    """The options of a compile root that change what rules report."""

    fullgraph: bool = False
    dynamic: bool | None = None
    mode: str | None = None
    backend: str | None = None
    cudagraphs: bool = False  # options={"triton.cudagraphs": True}

    @classmethod
    def of(cls, keywords: Mapping[str, object]) -> CompileOptions:
        """The options a compile call's keyword values give (``torch.compile(fullgraph=...,
        dynamic=..., mode=..., backend=..., options=...)``). A value not of the option's type
        (not a literal, or ``UNKNOWN``) leaves the option unknown."""
        dynamic = keywords.get("dynamic")
        mode = keywords.get("mode")
        backend = keywords.get("backend")
        extra = keywords.get("options")
        return cls(
            keywords.get("fullgraph") is True,
            dynamic if isinstance(dynamic, bool) else None,
            mode if isinstance(mode, str) and mode != UNKNOWN else None,
            backend if isinstance(backend, str) and backend != UNKNOWN else None,
            isinstance(extra, tuple) and ("triton.cudagraphs", True) in extra,
        )

    @property
    def text(self) -> str:
        """The options that change what rules report, e.g. ``fullgraph=True, mode=...``."""
        parts = ["fullgraph=True"] if self.fullgraph else []
        if self.mode:
            parts.append(f"mode={self.mode!r}")
        if self.dynamic is not None:
            parts.append(f"dynamic={self.dynamic}")
        if self.backend:
            parts.append(f"backend={self.backend!r}")
        return ", ".join(parts)


@dataclass(frozen=True)
class RootInfo:
    """One compile root that reaches a function: where it compiles and with which options."""

    path: str
    span: Span
    target: str  # the function id the root compiles, e.g. "pkg.model.Net.forward"
    kind: str  # decorator | call | module | method | block
    options: CompileOptions = field(default_factory=CompileOptions)
    # what is known of the compiled instance's ``self.<name>`` attributes, as call arguments
    # ("self.<name>", value) after a starred marker (the function's own parameters stay
    # unknown); see semantic.link._constructed_attributes. Not part of the root's identity.
    binding: Options | None = field(default=None, compare=False)

    @property
    def fullgraph(self) -> bool:
        return self.options.fullgraph

    @property
    def dynamic(self) -> bool | None:
        return self.options.dynamic

    @property
    def mode(self) -> str | None:
        return self.options.mode

    @property
    def backend(self) -> str | None:
        return self.options.backend

    @property
    def options_text(self) -> str:
        """The options that change what rules report, e.g. ``fullgraph=True, mode=...``."""
        return self.options.text

    @property
    def label(self) -> str:
        """Related-location label; the text reporter renders "compiled (...) at path:line"."""
        options = self.options_text
        return f"compiled ({options})" if options else "compiled"


@dataclass(frozen=True)
class Region:
    """The compiled region a function belongs to: every root that reaches it (sorted)."""

    roots: tuple[RootInfo, ...]
    direct: bool = False  # the function is a root itself (not only reached by calls)
    # the function runs every time some fullgraph=True root runs (the root itself, or what it
    # always calls): only there is a break certain to fail that compile
    certain: bool = False
    # the function runs every time some root runs, fullgraph or not
    always: bool = False

    @property
    def fullgraph(self) -> bool:
        """Whether some root compiles with fullgraph=True (rules escalate to errors)."""
        return any(root.fullgraph for root in self.roots)

    @property
    def cudagraphs(self) -> bool:
        """Whether some root replays CUDA graphs (mode="reduce-overhead" or the option)."""
        return any(root.mode == "reduce-overhead" or root.options.cudagraphs for root in self.roots)

    @property
    def related(self) -> tuple[Location, ...]:
        """One related location per root (at most 5): "compiled at path:line"."""
        return tuple(Location(r.path, r.span, r.label) for r in self.roots[:5])

    @property
    def where(self) -> str:
        """Short text for messages: "compiled at a.py:3" (plus a count of further roots)."""
        first = self.roots[0]
        more = len(self.roots) - 1
        text = f"{first.path}:{first.span.start.line}"
        return text + (f" and {more} more" if more else "")
