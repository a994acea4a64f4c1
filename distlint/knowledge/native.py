"""A light scanner for operator registrations in C++/CUDA sources (DL408, DL404).

Finds ``TORCH_LIBRARY(ns, m) { m.def(...); m.impl(...); }``, ``TORCH_LIBRARY_FRAGMENT`` and
``TORCH_LIBRARY_IMPL(ns, Key, m) { m.impl(...); }`` blocks without a C++ compiler: the text
is tokenized (comments, string and character literals, raw strings, preprocessor lines and
line continuations are understood), then the blocks are matched by braces. It never raises on
odd input; what it cannot read it skips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Dispatch keys a ``def`` with a kernel, or an ``impl`` without a key, registers to.
CATCH_ALL = "CompositeImplicitAutograd"
BLOCK_MACROS = frozenset({"TORCH_LIBRARY", "TORCH_LIBRARY_FRAGMENT", "TORCH_LIBRARY_IMPL"})
SCHEMA_MACROS = frozenset({"TORCH_SELECTIVE_SCHEMA", "TORCH_SELECTIVE_NAME"})


@dataclass(frozen=True)
class NativeEntry:
    """One ``m.def(...)`` or ``m.impl(...)`` inside a registration block.

    ``line`` is 1-based; ``column`` / ``end_column`` are 0-based code-point columns of the
    ``m.def(`` (or ``m.impl(``) text on that line.
    """

    kind: str  # "def" | "impl"
    namespace: str
    name: str  # operator name without namespace and overload
    overload: str
    line: int
    column: int
    end_column: int
    block: str  # TORCH_LIBRARY | TORCH_LIBRARY_FRAGMENT | TORCH_LIBRARY_IMPL
    kernel_key: str | None  # the dispatch key a kernel is registered to (None: no kernel)
    namespace_is_macro: bool = False  # e.g. TORCH_EXTENSION_NAME: the real name is unknown


@dataclass(frozen=True)
class _Token:
    kind: str  # "id" | "str" | "num" | "punct"
    text: str  # identifier / punctuation / decoded string value
    offset: int
    end: int


_RAW_PREFIX = re.compile(r'(?:u8|[uUL])?R"')
_QUOTE_PREFIX = re.compile(r"""(?:u8|[uUL])?(["'])""")  # a string or character literal
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"\.?[0-9](?:[0-9A-Za-z_.']|[eEpP][+-])*")
_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z_][A-Za-z0-9_]*)\s*$")


def _tokenize(text: str) -> tuple[list[_Token], dict[str, str]]:
    """Tokens of ``text`` and simple ``#define NAME value`` identifier macros."""
    tokens: list[_Token] = []
    defines: dict[str, str] = {}
    i, n = 0, len(text)
    line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "\\" and text.startswith("\n", i + 1):
            i += 2
            continue
        if c == "#" and line_start:
            end = _directive_end(text, i)
            directive = text[i:end].replace("\\\n", " ")
            match = _DEFINE.match(directive.strip())
            if match:
                defines[match.group(1)] = match.group(2)
            i = end
            continue
        line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            while end != -1 and text[end - 1] == "\\":  # a continued line comment
                end = text.find("\n", end + 1)
            i = n if end == -1 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
            continue
        match = _RAW_PREFIX.match(text, i)
        if match:
            start = match.end()
            paren = text.find("(", start)
            delimiter = text[start:paren] if paren != -1 else None
            if delimiter is not None and len(delimiter) <= 16 and " " not in delimiter:
                close = text.find(")" + delimiter + '"', paren + 1)
                end = n if close == -1 else close + len(delimiter) + 2
                value = text[paren + 1 : close if close != -1 else n]
                tokens.append(_Token("str", value, i, end))
                i = end
                continue
        match = _QUOTE_PREFIX.match(text, i)
        if match:
            quote = match.group(1)
            end, value = _quoted(text, match.end(), quote)
            tokens.append(_Token("str" if quote == '"' else "num", value, i, end))  # 'c': a number
            i = end
            continue
        match = _IDENT.match(text, i)
        if match:
            tokens.append(_Token("id", match.group(), i, match.end()))
            i = match.end()
            continue
        match = _NUMBER.match(text, i)
        if match:
            tokens.append(_Token("num", match.group(), i, match.end()))
            i = match.end()
            continue
        if text.startswith("::", i):
            tokens.append(_Token("punct", "::", i, i + 2))
            i += 2
            continue
        tokens.append(_Token("punct", c, i, i + 1))
        i += 1
    return tokens, defines


def _directive_end(text: str, i: int) -> int:
    """End offset of a preprocessor line starting at ``i`` (continuations and comments)."""
    n = len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end == -1 else end + 2
            continue
        c = text[i]
        if c == "\\" and text.startswith("\n", i + 1):
            i += 2
            continue
        if c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
            continue
        if c == "\n":
            return i
        i += 1
    return n


def _quoted(text: str, i: int, quote: str) -> tuple[int, str]:
    """(end offset, decoded-ish value) of a literal whose body starts at ``i``."""
    out: list[str] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt != "\n":
                out.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            i += 2
            continue
        if c == quote:
            return i + 1, "".join(out)
        if c == "\n":  # unterminated: stop at the end of the line
            return i, "".join(out)
        out.append(c)
        i += 1
    return n, "".join(out)


def _matching(tokens: list[_Token], start: int, open_: str, close: str) -> int:
    """Index of the token closing the bracket at ``start`` (len(tokens) if unbalanced)."""
    depth = 0
    for index in range(start, len(tokens)):
        token = tokens[index]
        if token.kind != "punct":
            continue
        if token.text == open_:
            depth += 1
        elif token.text == close:
            depth -= 1
            if depth == 0:
                return index
    return len(tokens)


def _split_args(tokens: list[_Token], open_index: int, close_index: int) -> list[list[_Token]]:
    """Top-level comma-separated arguments between the parentheses at the two indices."""
    args: list[list[_Token]] = [[]]
    depth = 0
    for token in tokens[open_index + 1 : close_index]:
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
        elif token.kind == "punct" and token.text == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(token)
    return [a for a in args if a] if any(args) else []


def _line_col(line_starts: list[int], offset: int) -> tuple[int, int]:
    lo, hi = 0, len(line_starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1, offset - line_starts[lo]


def _schema_text(arg: list[_Token]) -> str | None:
    """The string of a schema/name argument (concatenated literals, selective macros)."""
    if arg and arg[0].kind == "id" and arg[0].text in SCHEMA_MACROS:
        arg = arg[1:]
    strings = [t.text for t in arg if t.kind == "str"]
    return "".join(strings) if strings else None


def _dispatch_key(arg: list[_Token]) -> str | None:
    """``torch::dispatch(c10::DispatchKey::CPU, ...)`` / ``DispatchKey::Meta`` -> the key."""
    for index, token in enumerate(arg):
        if (
            token.kind == "id"
            and token.text == "DispatchKey"
            and index + 2 < len(arg)
            and arg[index + 1].text == "::"
            and arg[index + 2].kind == "id"
        ):
            return arg[index + 2].text
    for index, token in enumerate(arg):  # torch::dispatch(torch::kCPU, ...)
        if token.kind == "id" and token.text == "dispatch" and index + 2 < len(arg):
            for later in arg[index + 2 : index + 8]:
                if later.kind == "id" and re.fullmatch(r"k[A-Z][A-Za-z]*", later.text):
                    return later.text[1:]
    return None


def _is_tags(arg: list[_Token]) -> bool:
    """``{at::Tag::pt2_compliant_tag}`` or ``at::Tag::...``: tags, not a kernel."""
    if arg[0].kind == "punct" and arg[0].text == "{":
        return True
    return any(t.kind == "id" and t.text == "Tag" for t in arg)


def scan_native(text: str) -> list[NativeEntry]:
    """Every ``def``/``impl`` registration in C++/CUDA source ``text``, in source order."""
    try:
        tokens, defines = _tokenize(text)
    except RecursionError:  # pragma: no cover - the tokenizer does not recurse
        return []
    line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    entries: list[NativeEntry] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if not (token.kind == "id" and token.text in BLOCK_MACROS):
            index += 1
            continue
        if index + 1 >= len(tokens) or tokens[index + 1].text != "(":
            index += 1
            continue
        close = _matching(tokens, index + 1, "(", ")")
        args = _split_args(tokens, index + 1, close)
        brace = close + 1
        if brace >= len(tokens) or tokens[brace].text != "{" or len(args) < 2:
            index = close + 1
            continue
        end = _matching(tokens, brace, "{", "}")
        block = token.text
        namespace_token = args[0][0].text if args[0] else ""
        namespace = defines.get(namespace_token, namespace_token)
        is_macro = namespace == "TORCH_EXTENSION_NAME" or (
            namespace_token not in defines and namespace.isupper() and "_" in namespace
        )
        block_key = args[1][0].text if block == "TORCH_LIBRARY_IMPL" and len(args) > 2 else None
        var = args[-1][-1].text if args[-1] else "m"
        entries.extend(
            _block_entries(
                tokens[brace + 1 : end], var, block, namespace, is_macro, block_key, line_starts
            )
        )
        index = end + 1
    return entries


def _block_entries(
    body: list[_Token],
    var: str,
    block: str,
    namespace: str,
    is_macro: bool,
    block_key: str | None,
    line_starts: list[int],
) -> list[NativeEntry]:
    found: list[NativeEntry] = []
    for i in range(len(body) - 3):
        head, dot, method, paren = body[i], body[i + 1], body[i + 2], body[i + 3]
        if not (head.kind == "id" and head.text == var and dot.text == "."):
            continue
        if method.kind != "id" or method.text not in ("def", "impl") or paren.text != "(":
            continue
        close = _matching(body, i + 3, "(", ")")
        args = _split_args(body, i + 3, close)
        if not args:
            continue
        schema = _schema_text(args[0])
        if schema is None:
            continue
        head_text = schema.split("(", 1)[0].strip()
        if "::" in head_text:
            head_text = head_text.split("::", 1)[1]
        name, _, overload = head_text.partition(".")
        if not name:
            continue
        if method.text == "def":
            kernel = args[1] if len(args) > 1 and not _is_tags(args[1]) else None
            key = None if kernel is None else (_dispatch_key(kernel) or CATCH_ALL)
        else:
            key = _dispatch_key(args[1]) if len(args) > 1 else None
            key = key or block_key or CATCH_ALL
        line, column = _line_col(line_starts, head.offset)
        end_line, end_column = _line_col(line_starts, paren.end)
        found.append(
            NativeEntry(
                kind=method.text,
                namespace=namespace,
                name=name,
                overload=overload,
                line=line,
                column=column,
                end_column=end_column if end_line == line else column + len(var),
                block=block,
                kernel_key=key,
                namespace_is_macro=is_macro,
            )
        )
    return found
