"""Reading and pre-screening source files before they reach the parser.

Decoding follows Python: a UTF-8 BOM, else a PEP 263 coding cookie, else UTF-8. Binary and
undecodable files are reported, not crashed on. LibCST's native parser overflows its stack
(the process dies with SIGSEGV) on bracket nesting in the thousands; CPython itself rejects
more than 200 levels ("too many nested parentheses"), so deeper files are reported as syntax
errors without being parsed.

LibCST is imported by the functions that parse, not with this module: a re-check answered
from the cache reads and decodes files but parses none, and importing LibCST is most of its
cost.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import io
import os
import re
import sys
import threading
import tokenize
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from distlint.syntax.indentation import IndentColumns, expand_indentation
from distlint.syntax.lexing import NEWLINES as NEWLINES  # re-exported: where callers look
from distlint.syntax.lexing import tokens

if TYPE_CHECKING:
    import libcst as cst

    from distlint.syntax.pieces import ReusedPieces

T = TypeVar("T")

MAX_BRACKET_DEPTH = 200  # CPython's tokenizer limit (MAXLEVEL)
_BINARY_SNIFF = 8192


class SourceError(Exception):
    """The file cannot be analysed; the message says why, for a DL000 finding."""

    def __init__(self, message: str, line: int = 1, column: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def decode_source(data: bytes) -> str:
    """Bytes of a Python file to text, the way the interpreter would decode them."""
    if b"\0" in data[:_BINARY_SNIFF]:
        raise SourceError("binary file (contains NUL bytes); not a Python source file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"bad encoding declaration: {exc.msg}", exc.lineno or 1) from None
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in coding declaration") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(
            f"cannot decode file as {encoding}: byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start} is invalid",
            line,
        ) from None
    except (LookupError, UnicodeError):  # ``rot13``, ``hex``, ``zlib``: codecs, not text
        raise SourceError(
            f"coding declaration names {encoding!r}, which is not a text encoding"
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    nul = text.find("\0")
    if nul >= 0:  # past the first bytes sniffed above
        line = text.count("\n", 0, nul) + 1
        raise SourceError("binary file (contains NUL bytes); not a Python source file", line)
    return text


_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
_INNERMOST_PAIRS = re.compile(r"\(\)|\[\]|\{\}")
_SHALLOW_ROUNDS = 40


def _shallow(text: str) -> bool:
    """Fast path: the brackets (strings included) nest at most 40 deep, peeled in C.

    Each round removes the innermost pairs; a balanced sequence of depth d is empty after d
    rounds. Anything else (deep, or unbalanced through brackets in strings) gets the exact scan.
    """
    brackets = _NOT_BRACKETS.sub("", text)
    for _ in range(_SHALLOW_ROUNDS):
        if not brackets:
            return True
        peeled = _INNERMOST_PAIRS.sub("", brackets)
        if len(peeled) == len(brackets):
            return False
        brackets = peeled
    return not brackets


def _code_only(text: str) -> str:
    """``text`` without its strings and comments, as :func:`tokens` finds them: its brackets
    are exactly the ``open`` and ``close`` tokens the exact scan counts (a bracket is one
    token; strings and comments are found the same way with and without ``structure``). So
    when they are shallow, the exact scan cannot go deep. Brackets in docstrings and comments
    (``1)``, ``:)``) leave many files' text unbalanced, and the exact scan takes 20 times as
    long as this one."""
    pieces = []
    position = 0
    for _, start, end in tokens(text, structure=False):
        pieces.append(text[position:start])
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def check_nesting(text: str) -> None:
    """Raise SourceError when brackets nest deeper than CPython accepts, or when CPython's
    parser refuses the file as too complex (see :func:`_check_chains`)."""
    _check_chains(text)
    if text.count("(") + text.count("[") + text.count("{") <= MAX_BRACKET_DEPTH:
        return
    if _shallow(text) or _shallow(_code_only(text)):
        return
    depth = 0
    for kind, start, _ in tokens(text):
        if kind == "open":
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                line = text.count("\n", 0, start) + 1
                column = start - (text.rfind("\n", 0, start) + 1)
                raise SourceError(
                    f"too many nested parentheses (more than {MAX_BRACKET_DEPTH} levels)",
                    line,
                    column,
                )
        elif kind == "close":
            depth -= 1


# Chains CPython's parser refuses ("Parser stack overflowed - Python source too complex to
# parse", a MemoryError, from about 3,000 chained lambdas or unary operators, on 3.10 to 3.13):
# LibCST parses them, but 6,000 lambdas took 20 s and 6.8 GB, and 20,000 unary minuses 100 s
# and 21 GB. Only text that may hold such a chain is given to CPython's parser first.
_LAMBDAS = 1_000
_UNARY_RUN = re.compile(r"(?:[-+~]\s*){1000}|(?:\*\*\s*\w+\s*){1000}")


def _check_chains(text: str) -> None:
    if text.count("lambda") <= _LAMBDAS and (
        text.count("-") + text.count("+") + text.count("~") + text.count("**") < 1_000
        or _UNARY_RUN.search(text) is None
    ):
        return
    try:
        compile_quietly(text)
    except MemoryError:
        raise SourceError(
            "too complex for Python's parser (CPython refuses it: 'Parser stack overflowed'); "
            "it was not checked"
        ) from None
    except (SyntaxError, ValueError, RecursionError):
        return  # reported by the parse itself, or deep only for AST objects: LibCST decides


_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST, without importing ast


def compile_quietly(source: str | bytes) -> object:
    """CPython's ``ast.Module`` of ``source``; raises what CPython raises (SyntaxError,
    ValueError for a NUL byte, MemoryError when too complex, RecursionError when too deep).
    Its warnings (invalid escapes) are not printed: they are not the user's stderr's business."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(source, "<distlint>", "exec", _ONLY_AST, dont_inherit=True)


def python_ast(source: str | bytes) -> object | None:
    """:func:`compile_quietly`, or None when CPython does not parse ``source``. For reading
    files that are not checked (``setup.py``), or that were."""
    try:
        return compile_quietly(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


# LibCST's native parser recurses once per operand of a long operator chain; on a thread's
# default stack a chain of a few thousand operands spread over short lines (``x = (`` and
# 8,000 lines of ``a +``) kills the process with SIGSEGV. On this stack it parses. The analysis
# runs there too (:func:`on_large_stack`), with a recursion limit to match: LibCST's visitors and
# code generation recurse once per level of a tree, so a 400-link attribute chain, which CPython
# compiles, exceeded Python's default limit of 1,000 frames in rules that visit subtrees.
_PARSER_STACK = 512 * 1024 * 1024
_DEEP_RECURSION = 30_000  # frames; far below what the stack above holds
_DEEP_THREAD = "distlint-deep"
_stack_lock = threading.Lock()
# The recursion limit is the process's: every thread runs under it, not only the deep ones.
# On a normal stack (8 MB for Linux's main thread, about 2 MB for Windows', 512 KB for macOS's
# other threads) a deep pickle under the raised limit does not stop at 1,000 frames with the
# RecursionError that transport.py answers by pickling on the large stack: on CPython 3.10 and
# 3.11 it runs out of stack (SIGSEGV; 6,000 levels of a nested dataclass on 2 MB; from 3.12, C
# recursion has a fixed limit of its own). So the limit is held by the calls that need it
# (``_claims``), and while it is, transport.py pickles on the large stack at once
# (:func:`limit_raised`); a child forked meanwhile gets the normal limit back (``_forked``).
# A call that timed out holds it until its thread ends: lowered under a thread deeper than the
# new limit, CPython 3.11 aborts the process when that thread next calls a function ("Fatal
# Python error: Cannot recover from stack overflow").
_limit_lock = threading.Lock()
_claims: set[_Claim] = set()  # the calls that hold the raised limit
_saved_limit = 0  # the limit before the first of them


class _Claim:
    """One call's hold on the raised limit, from before its thread starts until it ends."""

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread


class StageTimeout(Exception):
    """A function given to :func:`on_large_stack` ran past its ``timeout``."""


def on_large_stack(function: Callable[..., T], *args: object, timeout: float | None = None) -> T:
    """``function(*args)`` on a thread with a large stack and a recursion limit to match; its
    exceptions are raised here. Called from such a thread, it just calls ``function``.

    With ``timeout`` (seconds), :class:`StageTimeout` is raised when the call has not returned
    by then; the thread cannot be stopped, it runs on as a daemon (holding the raised limit,
    see above) and its result is dropped.
    """
    if threading.current_thread().name == _DEEP_THREAD:
        return function(*args)
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(function(*args))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(_Raised(exc))
        finally:
            _let_go(claim)

    with _stack_lock:
        previous = threading.stack_size(_PARSER_STACK)
        try:
            worker = threading.Thread(target=run, name=_DEEP_THREAD, daemon=timeout is not None)
            claim = _Claim(worker)
            _hold(claim)
            try:
                worker.start()
            except BaseException:
                _let_go(claim)
                raise
        finally:
            threading.stack_size(previous)
    worker.join(timeout)
    if worker.is_alive():
        raise StageTimeout(f"did not finish within {timeout:g} s")
    result = outcome[0]
    if isinstance(result, _Raised):
        raise result.exc
    return result  # type: ignore[return-value]


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def limit_raised() -> bool:
    """Whether a call of :func:`on_large_stack` holds the raised recursion limit now: a deep
    recursion on a normal stack is then not stopped by a RecursionError in time."""
    return bool(_claims)


def _hold(claim: _Claim) -> None:
    """Raise the (process-wide) recursion limit for ``claim`` (again, if something lowered
    it meanwhile)."""
    global _saved_limit
    with _limit_lock:
        if not _claims:
            _saved_limit = sys.getrecursionlimit()
        _claims.add(claim)
        if sys.getrecursionlimit() < _DEEP_RECURSION:
            sys.setrecursionlimit(_DEEP_RECURSION)


def _let_go(claim: _Claim) -> None:
    """End ``claim`` (once); the last one to end restores the limit."""
    with _limit_lock:
        if claim not in _claims:
            return
        _claims.discard(claim)
        if not _claims:
            sys.setrecursionlimit(_saved_limit)


def _forked() -> None:
    """In a forked child: only the thread that forked survives, so only its claim (when it is
    a deep thread) still holds the limit; the other claims end, and the locks are new (one
    held by a thread that does not exist here would be held forever)."""
    global _limit_lock, _stack_lock
    _limit_lock, _stack_lock = threading.Lock(), threading.Lock()
    current = threading.current_thread()
    kept = {claim for claim in _claims if claim.thread is current}
    if _claims and not kept:
        with contextlib.suppress(RecursionError):  # forked deeper than the old limit
            sys.setrecursionlimit(_saved_limit)
    _claims.intersection_update(kept)


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(
        before=lambda: _limit_lock.acquire(),
        after_in_parent=lambda: _limit_lock.release(),
        after_in_child=_forked,
    )


def parse_module(text: str, reused: ReusedPieces | None = None) -> cst.Module:
    """``libcst.parse_module`` (its nodes not checked again: :mod:`.unchecked_parse`) on a
    thread with a large stack (see above), a large text in pieces
    (:mod:`distlint.syntax.pieces`: the parser's memory grows with what it parses).
    ``reused``: the pieces of the buffer's earlier text, of which only those an edit changed
    are parsed again (an editor's buffer)."""
    from distlint.syntax.pieces import parse_in_pieces
    from distlint.syntax.unchecked_parse import parse_unchecked

    if len(text) > _LARGE_PARSE:
        release_freed_memory()
    if reused is not None:
        return on_large_stack(reused.parse, text)
    return on_large_stack(parse_in_pieces, text, parse_unchecked)


_LARGE_PARSE = 256 * 1024  # characters: the parse needs 100 MiB or more


def release_freed_memory() -> None:
    """Give the pages the C heap holds free back to the system (glibc's ``malloc_trim``; a
    no-op elsewhere). Freed memory stays resident in the process, and a later allocation does
    not always reuse it: a worker that had checked 2,000 files of torch held 140 MiB more than
    its objects when it parsed the largest one, and its peak was that much higher."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return cast("Callable[[int], int]", ctypes.CDLL(None).malloc_trim)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


def parse_source(
    text: str, reused: ReusedPieces | None = None
) -> tuple[cst.Module, IndentColumns | None]:
    """The tree of ``text`` and, when LibCST could only read it with its indentation written
    as spaces (see :mod:`distlint.syntax.indentation`), the map back to the columns as written.

    Raises what :func:`parse_module` raises on ``text`` when that rewrite does not help or when
    CPython rejects the file (a rewrite must never make "inconsistent use of tabs" readable).
    ``reused``: see :func:`parse_module`."""
    import libcst as cst

    try:
        return (parse_module(text, reused) if reused else parse_module(text)), None
    except cst.ParserSyntaxError as error:
        expanded = expand_indentation(text)
        if expanded is None or python_ast(text) is None:
            raise
        rewritten, columns = expanded
        try:
            return (parse_module(rewritten, reused) if reused else parse_module(rewritten)), columns
        except cst.ParserSyntaxError:
            raise error from None
