"""One line per target with elapsed time, rewritten in place on a TTY (stderr)."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    """Shows ``confirm [i/n] target ... 3.2 s`` while a target runs, then its outcome.

    Off when the stream is not a terminal: piped and CI output stays clean.
    """

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.total = total
        self.index = 0
        self.name = ""
        self._last = -1.0

    def start(self, name: str) -> None:
        self.index += 1
        self.name = name
        self._last = -1.0
        self._write(f"confirm [{self.index}/{self.total}] {name} ...", final=False)

    def tick(self, elapsed: float) -> None:
        if elapsed - self._last >= 0.5:
            self._last = elapsed
            self._write(
                f"confirm [{self.index}/{self.total}] {self.name} ... {elapsed:.1f} s", final=False
            )

    def done(self, outcome: str, elapsed: float) -> None:
        self._write(
            f"confirm [{self.index}/{self.total}] {self.name}: {outcome} ({elapsed:.1f} s)",
            final=True,
        )

    def _write(self, text: str, final: bool) -> None:
        if not self.enabled:
            return
        self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
        self.stream.flush()
