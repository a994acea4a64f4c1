"""Generate ``distlint/rules/catalog.json``: the built-in rules' metadata that selecting rules
needs (:func:`distlint.rules.registry.rule_catalog`), read from the rule classes.

Usage::

    python scripts/gen_rule_catalog.py          # write distlint/rules/catalog.json
    python scripts/gen_rule_catalog.py --check  # exit 1 if it is stale

``tests/rules/test_rule_catalog.py`` fails while the file is stale (a rule added, renamed,
moved to another scope or selected by default differently).
"""

from __future__ import annotations

import argparse
import json
import sys

from distlint.rules.registry import CATALOG_FILE, all_rules, catalog_data


def catalog_text() -> str:
    return json.dumps(catalog_data(all_rules()), indent=1) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args()
    text = catalog_text()
    if args.check:
        stale = CATALOG_FILE.read_text(encoding="utf-8") != text
        if stale:
            print(f"{CATALOG_FILE} is stale: run python scripts/gen_rule_catalog.py")
        return int(stale)
    CATALOG_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
