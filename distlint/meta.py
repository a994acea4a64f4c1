"""Names and addresses that appear in output (one place, so they never drift)."""

from distlint import __version__

TOOL_NAME = "distlint"
VERSION = __version__
HOMEPAGE = "https://github.com/distlint/distlint"
RULES_URL = f"{HOMEPAGE}/blob/main/docs/rules"
FORMATS = ("text", "json", "github", "sarif")
OUTPUT_FORMATS = ("full", "concise")  # the shapes of the text format (Ruff's names)


def rule_url(code: str) -> str:
    """Address of a rule's docs page."""
    return f"{RULES_URL}/{code}.md"
