"""Helpers for testing the semantic layer on its own: parsed files, no rules, no engine."""

from __future__ import annotations

import textwrap

import libcst as cst

from distlint.file_settings import FileSettings
from distlint.semantic.collect import Collector
from distlint.semantic.model import ModuleSummary
from distlint.syntax.parsed_file import ParsedFile


def parsed(source: str, name: str = "m", rank_predicates: tuple[str, ...] = ()) -> ParsedFile:
    """``source`` (dedented) as module ``name``, its calls and ordinal nodes indexed."""
    text = textwrap.dedent(source)
    file = ParsedFile(
        f"{name.replace('.', '/')}.py",
        text,
        cst.parse_module(text),
        FileSettings(enabled=frozenset(), rank_predicates=rank_predicates),
        module_name=name,
    )
    file.index()
    return file


def summary(source: str, name: str = "m") -> ModuleSummary:
    return Collector(parsed(source, name)).collect()
