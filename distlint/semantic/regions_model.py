"""What a rule sees of the compiled region it is in: the roots that compile it, and how."""

from __future__ import annotations

from dataclasses import dataclass

from distlint.findings import Location
from distlint.semantic.compile_sites import RootInfo


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
