"""Rule docs pages (``docs/rules/DLxxx.md``): the catalog users read, SARIF help, LSP hover.

Installed wheels carry the pages as ``distlint/_rule_docs``; a source checkout reads the
repository's ``docs/rules/`` folder directly. A page holds the prose; its metadata table
(severity, default, fix, family) is rendered from the rule class under the title, so the
metadata is written once, on the class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distlint.rules.base import Rule

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
# The families of built-in codes, by the code's first digit (DL303 is a wrapping rule).
FAMILIES = {
    "DL0": "the tool itself",
    "DL1": "graph breaks and compile failures",
    "DL2": "collectives and replicas",
    "DL3": "compile × DDP/FSDP wrapping",
    "DL4": "custom ops and autograd",
    "DL5": "invalid torch API use",
    "DL6": "CUDA graphs",
    "DL9": "observed by confirm mode",
}
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
    from distlint.rules.registry import get_rule

    path = docs_dir() / f"{code}.md"
    rule = get_rule(code)
    if not path.is_file() or rule is None:
        return None
    return parse_doc(render_page(rule, path.read_text(encoding="utf-8")))


def removed_rule_page(code: str) -> str | None:
    """The "Removed" page of a removed rule's code (what it did, why it went, what to use
    instead), or None if the code names no removed rule or its page is missing."""
    from distlint.rules.removed import removed_rule

    removed = removed_rule(code)
    path = docs_dir() / f"{removed.code}.md" if removed is not None else None
    return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None


def metadata_table(rule: type[Rule]) -> str:
    """The table shown under a page's title, from the rule's class attributes."""
    rows = [
        ("Severity", rule.severity.value),
        ("Default", "enabled" if rule.default_enabled else "disabled"),
        ("Fix", rule.fix_availability.value),
        ("Family", f"{rule.code[:3]} {FAMILIES.get(rule.code[:3], 'plugin')}"),
    ]
    return "| | |\n|---|---|\n" + "".join(f"| {key} | {value} |\n" for key, value in rows)


def render_page(rule: type[Rule], page: str) -> str:
    """A page as shown: the title, the metadata table rendered from ``rule``, the prose."""
    title, _, rest = page.partition("\n")
    return f"{title}\n\n{metadata_table(rule)}\n{rest.lstrip(chr(10))}"


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
