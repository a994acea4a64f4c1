"""A finding's one-line headline, for ``--output-format concise`` and editor lists.

Messages say what happens, on which torch, and what to write instead, often in several
sentences. The headline is the message's first sentence when it fits in
:data:`HEADLINE_MAX` characters; otherwise its leading clauses (split at ``:``, ``;`` and
dashes) that fit, then without parenthesised asides, and as a last resort cut at a word
boundary with an ellipsis. Backticked code is never split. The full message stays the
finding's message: every other format shows it.
"""

from __future__ import annotations

import re

HEADLINE_MAX = 100
_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "cf")
_INITIALS = re.compile(r"[a-z](?:\.[a-z])+")  # "e.g", "i.e", "a.k.a" before their last period


def _top_level(text: str) -> list[bool]:
    """For each index: whether it is outside backticks, brackets and quotes of prose."""
    outside = []
    tick = False
    depth = 0
    for char in text:
        if char == "`":
            tick = not tick
            outside.append(False)
            continue
        if not tick:
            if char in "([{":
                depth += 1
            elif char in ")]}" and depth:
                depth -= 1
                outside.append(False)
                continue
        outside.append(not tick and depth == 0)
    return outside


def _sentence_end(text: str, outside: list[bool]) -> int:
    """Index just after the first sentence's period (or the text's length)."""
    for i, char in enumerate(text):
        if char != "." or not outside[i] or i + 1 >= len(text):
            continue
        if text[i + 1] != " " or i + 2 >= len(text):
            continue
        follower = text[i + 2]
        if not (follower.isupper() or follower in "`'\"(*"):
            continue
        word = text[:i].rsplit(" ", 1)[-1].lower()
        if word.endswith(_ABBREVIATIONS) or _INITIALS.fullmatch(word):
            continue
        return i + 1
    return len(text)


def _clause_ends(text: str, outside: list[bool]) -> list[int]:
    """Indices where a clause ends: before ': ', '; ' and ' — ' at the top level."""
    ends = []
    for i, char in enumerate(text):
        if not outside[i]:
            continue
        if char in ":;" and text[i + 1 : i + 2] == " ":
            ends.append(i)
        elif char == "—" and i > 0 and text[i - 1] == " ":
            ends.append(i - 1)
    return ends


def _without_asides(text: str) -> str:
    """``text`` without its top-level parenthesised parts (`` (GB0170, ...)``)."""
    out: list[str] = []
    depth = 0
    tick = False
    for char in text:
        if char == "`" and depth == 0:
            tick = not tick
        if not tick and char == "(":
            depth += 1
            if depth == 1:
                while out and out[-1] == " ":
                    out.pop()
            continue
        if not tick and char == ")" and depth:
            depth -= 1
            continue
        if depth == 0:
            out.append(char)
    return "".join(out)


def _cut(text: str, limit: int) -> str:
    """``text`` cut at a word boundary outside backticks, with an ellipsis, within ``limit``."""
    outside = _top_level(text)
    best = 0
    for i in range(1, min(len(text), limit - 1)):
        if text[i] == " " and outside[i] and text.count("`", 0, i) % 2 == 0:
            best = i
    if best == 0:
        best = limit - 1
    return text[:best].rstrip(" ,;:—") + "…"


def headline(message: str, limit: int = HEADLINE_MAX) -> str:
    """The message's headline: one line of at most ``limit`` characters."""
    text = " ".join(message.split())
    if not text:
        return ""
    outside = _top_level(text)
    sentence = text[: _sentence_end(text, outside)].rstrip()
    if sentence.endswith(".") and not sentence.endswith(".."):
        sentence = sentence[:-1]
    if len(sentence) <= limit:
        return sentence
    short = _without_asides(sentence)
    if len(short) <= limit:
        return short
    best = ""
    for candidate in (sentence, short):
        for end in _clause_ends(candidate, _top_level(candidate)):
            if end > limit:
                break
            if end > len(best):
                best = candidate[:end]
    if len(best) >= 40:
        return best
    return _cut(short, limit)
