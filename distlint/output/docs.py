"""Rule docs pages (``docs/rules/DLxxx.md``): the catalog users read, SARIF help, LSP hover.

Installed wheels carry the pages as ``distlint/_rule_docs``; a source checkout reads the
repository's ``docs/rules/`` folder directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REQUIRED_SECTIONS = (
    "What it does",
    "Why is this bad",
    "Example",
    "Use instead",
    "Known limitations",
    "Evidence",
    "References",
)

_HEADING = re.compile(r"^## +(.+?)\s*$", re.MULTILINE)
_TITLE = re.compile(r"^# +(DL\d{3}) +([a-z0-9-]+)\s*$", re.MULTILINE)
_META_ROW = re.compile(r"^\|\s*([A-Za-z ]+?)\s*\|\s*(.+?)\s*\|\s*$", re.MULTILINE)


@dataclass(frozen=True)
class RuleDoc:
    """A parsed docs page."""

    code: str
    name: str
    markdown: str
    metadata: dict[str, str]  # the table under the title: Severity, Default, Fix, ...
    sections: dict[str, str]  # heading -> markdown body

    @property
    def description(self) -> str:
        """The "What it does" text as plain prose (SARIF fullDescription)."""
        return markdown_to_text(self.sections.get("What it does", "")).strip()


def docs_dir() -> Path:
    packaged = Path(__file__).parents[1] / "_rule_docs"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "docs" / "rules"


@cache
def rule_doc(code: str) -> RuleDoc | None:
    """The docs page of ``code``, or None if it has none."""
    path = docs_dir() / f"{code}.md"
    if not path.is_file():
        return None
    return parse_doc(path.read_text(encoding="utf-8"))


def parse_doc(markdown: str) -> RuleDoc:
    title = _TITLE.search(markdown)
    if title is None:
        raise ValueError("a rule docs page must start with '# DLxxx rule-name'")
    headings = list(_HEADING.finditer(markdown))
    preamble = markdown[title.end() : headings[0].start() if headings else len(markdown)]
    metadata = {
        key.strip(): value.strip().strip("`")
        for key, value in _META_ROW.findall(preamble)
        if set(value.strip()) - set("-: ")
    }
    sections: dict[str, str] = {}
    for i, heading in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(markdown)
        name = heading.group(1).rstrip("?").strip()
        sections[name] = markdown[heading.end() : end].strip()
    return RuleDoc(title.group(1), title.group(2), markdown, metadata, sections)


def markdown_to_text(markdown: str) -> str:
    """Plain text for fields that do not render Markdown (SARIF text, terminals)."""
    text = re.sub(r"`([^`]*)`", r"\1", markdown)
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", text)
    return text
