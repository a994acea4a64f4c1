"""Which rules run: Ruff's selector semantics for ``select`` / ``extend-select`` / ``ignore``.

A selector is a full code (``DL201``), a code prefix (``DL2``, ``DL20``, ``DL``) or ``ALL``.
When selectors disagree about a rule, the most specific one wins (``ignore DL2`` +
``extend-select DL201`` keeps DL201); on a tie, ignore wins. DL000 (the file does not parse)
is always on: a file that was not checked must never look clean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ALWAYS_ON = frozenset({"DL000"})
_SELECTOR = re.compile(r"ALL|[A-Z]{2,5}\d{0,3}")  # DL..., or a plugin's prefix


def normalize_selector(raw: str) -> str:
    return raw.strip().upper()


def is_valid_selector(selector: str, known_codes: Iterable[str]) -> bool:
    """A selector is valid if it is ALL or the prefix of at least one known code."""
    if not _SELECTOR.fullmatch(selector):
        return False
    return selector == "ALL" or any(code.startswith(selector) for code in known_codes)


def specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector) - 1


def matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def enabled_codes(
    rules: dict[str, bool],
    select: Iterable[str] | None,
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
) -> frozenset[str]:
    """Codes to run, from ``rules`` (code -> enabled by default) and the selectors.

    ``select=None`` means "the default set"; an explicit ``select`` replaces it.
    """
    select_list = None if select is None else [normalize_selector(s) for s in select]
    extend_list = [normalize_selector(s) for s in extend_select]
    ignore_list = [normalize_selector(s) for s in ignore]
    enabled = set()
    for code, default_on in rules.items():
        best: tuple[int, bool] | None = None  # (specificity, is_ignore)
        for selector in (*(select_list or ()), *extend_list):
            if matches(selector, code):
                best = _stronger(best, (specificity(selector), False))
        for selector in ignore_list:
            if matches(selector, code):
                best = _stronger(best, (specificity(selector), True))
        if best is None:
            on = default_on if select_list is None else False
        else:
            on = not best[1]
        if on or code in ALWAYS_ON:
            enabled.add(code)
    return frozenset(enabled)


def _stronger(current: tuple[int, bool] | None, candidate: tuple[int, bool]) -> tuple[int, bool]:
    if current is None or candidate[0] > current[0]:
        return candidate
    if candidate[0] == current[0] and candidate[1]:
        return candidate
    return current


def suggest_code(text: str, known: list[str] | tuple[str, ...]) -> str | None:
    """The rule code (or code prefix) a mistyped selector most likely meant, among the known
    codes of its letter prefix (``DL``, or a plugin's ``XYZ``).

    Swapped digits first (DL230 -> DL203); then the code or prefix with the fewest edits, of
    the closest length, then numerically closest (DL2011 -> DL201, DL9999 -> DL901 is not
    preferred over a one-edit match). A selector whose letters no known code has gets none.
    """
    wanted = normalize_selector(text)
    letters = wanted[: len(wanted) - len(wanted.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))]
    same_prefix = [code for code in known if code.rstrip("0123456789") == letters]
    if not letters or not same_prefix:
        return None
    for code in same_prefix:
        if len(code) == len(wanted) and sorted(code) == sorted(wanted):
            return code
    candidates = {
        code[:end] for code in same_prefix for end in range(len(letters) + 1, len(code) + 1)
    }
    return min(candidates, key=lambda candidate: _distance_key(wanted, candidate, len(letters)))


def _distance_key(wanted: str, candidate: str, letters: int) -> tuple[int, int, int, str]:
    digits = "".join(ch for ch in wanted[letters:] if ch.isdigit())[: len(candidate) - letters]
    number = int(digits or 0)
    return (
        _edits(wanted, candidate),
        abs(len(wanted) - len(candidate)),
        abs(number - int(candidate[letters:] or 0)),
        candidate,
    )


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]
