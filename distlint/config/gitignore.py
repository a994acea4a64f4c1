"""Decide whether git ignores a path, so that file discovery can skip what git skips.

A user expects ``distlint check .`` to lint the files git tracks and not the virtualenv, build
output or vendored trees listed in ``.gitignore``. This reimplements git's own rules (``git
help gitignore``; ``dir.c`` and ``wildmatch.c`` in git's source) rather than approximating
them with ``fnmatch``, because the corners (``**``, negation, directory-only patterns,
anchoring, escapes) are exactly where approximations silently lint the wrong files.

Rules followed, each checked against ``git check-ignore`` in the tests:

- Every ``.gitignore`` from the root down to the path's directory counts; the deeper file
  wins, then ``.git/info/exclude``. Within one file the last matching line wins, and a ``!``
  line that matches re-includes.
- Nothing can be re-included inside a directory that is itself ignored: git never looks
  inside it.
- A pattern without a slash (other than a trailing one) matches the name at any depth; one
  with a leading or inner slash matches the path relative to its ``.gitignore``'s directory.
- Matching is on bytes, as git does, so ``?`` is one byte of a UTF-8 name, not one character.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from distlint.syntax.regular_files import read_regular_file, read_regular_text

IGNORE_FILE_NAME = ".gitignore"

_SLASH = ord("/")
_BACKSLASH = ord("\\")
_STAR = ord("*")
_QUESTION = ord("?")
_OPEN_BRACKET = ord("[")
_CLOSE_BRACKET = ord("]")
_DASH = ord("-")
_COLON = ord(":")
_GLOB_SPECIAL = frozenset(b"*?[\\")
_ALL_BYTES = frozenset(range(1, 256))


def _ascii(chars: str) -> frozenset[int]:
    return frozenset(chars.encode("ascii"))


# git's wildmatch uses its own locale-free ctype (git-compat-util.h): ASCII only, and its
# isspace() knows neither \v nor \f.
_CHARACTER_CLASSES: dict[bytes, frozenset[int]] = {
    b"alnum": _ascii(string.ascii_letters + string.digits),
    b"alpha": _ascii(string.ascii_letters),
    b"blank": _ascii(" \t"),
    b"cntrl": frozenset([*range(0x20), 0x7F]),
    b"digit": _ascii(string.digits),
    b"graph": frozenset(range(0x21, 0x7F)),
    b"lower": _ascii(string.ascii_lowercase),
    b"print": frozenset(range(0x20, 0x7F)),
    b"punct": _ascii(string.punctuation),
    b"space": _ascii(" \t\n\r"),
    b"upper": _ascii(string.ascii_uppercase),
    b"xdigit": _ascii(string.hexdigits),
}


@dataclass(frozen=True)
class IgnorePattern:
    """One pattern line of an ignore file, compiled once."""

    line: str
    """The line as written after trimming, kept for messages and debugging."""
    regex: re.Pattern[bytes] | None
    """Matches the whole subject; None for a line git can never match (bad bracket, ...)."""
    negated: bool
    """A ``!`` line: a match re-includes instead of ignoring."""
    dir_only: bool
    """Written with a trailing ``/``: only directories match."""
    matches_name: bool
    """No slash in it: matched against the last path component at any depth."""

    def matches(self, relative_path: bytes, name: bytes, is_dir: bool) -> bool:
        """Whether this line matches; `relative_path` is relative to the ignore file's dir."""
        if self.regex is None or (self.dir_only and not is_dir):
            return False
        subject = name if self.matches_name else relative_path
        return self.regex.fullmatch(subject) is not None


class GitIgnore:
    """All .gitignore files from `root` down, loaded lazily per directory."""

    def __init__(self, root: Path) -> None:
        self._root = Path(os.path.abspath(root))
        self._root_prefix = os.path.join(str(self._root), "")
        self._real_root_prefix = os.path.join(os.path.realpath(self._root), "")
        self._patterns_by_dir: dict[tuple[str, ...], list[IgnorePattern]] = {}
        self._excluded_dirs: dict[tuple[str, ...], bool] = {}
        exclude_file = info_exclude_path(self._root)
        self._info_exclude = (
            [] if exclude_file is None else _read_patterns(exclude_file, follow_symlink=True)
        )

    def is_ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether git would ignore `path` (absolute, under root); False outside root."""
        parts = self._relative_parts(path)
        if not parts:
            return False
        if is_dir:
            return self._is_excluded_dir(parts)
        return self._is_excluded_dir(parts[:-1]) or self._last_match_ignores(parts, is_dir)

    def in_directory(
        self, directory: Path, names: Collection[str] | None = None
    ) -> Callable[[str, bool], bool]:
        """:meth:`is_ignored` for the entries of ``directory`` (absolute), told their name and
        kind: a walk asks this for every entry, so what depends on the directory alone (where
        it is below root, whether git skips it, which ignore files apply) is worked out once.
        ``names``: the names in the directory, when the caller listed it (an ignore file that
        is not among them is not looked for)."""
        absolute = os.path.abspath(directory)
        if absolute == str(self._root):
            dir_parts: tuple[str, ...] = ()
        elif absolute.startswith(self._root_prefix):
            dir_parts = tuple(absolute[len(self._root_prefix) :].split(os.sep))
        else:  # reached through a symlink, or outside root: entry by entry, as is_ignored does
            return lambda name, is_dir: self.is_ignored(Path(absolute, name), is_dir)
        if names is not None and IGNORE_FILE_NAME not in names:
            self._patterns_by_dir.setdefault(dir_parts, [])
        if self._is_excluded_dir(dir_parts):
            return lambda name, is_dir: True
        layers = self._layers(dir_parts)
        if not layers:
            return lambda name, is_dir: False

        def ignored(name: str, is_dir: bool) -> bool:
            if is_dir:
                return self._is_excluded_dir((*dir_parts, name))
            return _decision(layers, os.fsencode(name), is_dir)

        return ignored

    def _relative_parts(self, path: Path) -> tuple[str, ...]:
        """Components of `path` below root, or () for root itself and paths outside it.

        Symlinks are resolved only when the plain path is not under root (say root was given
        through a symlink and the caller resolved the path): git does not follow symlinks
        inside the tree, so an in-tree link must keep its own name.
        """
        absolute = os.path.abspath(path)
        if absolute.startswith(self._root_prefix):
            return tuple(absolute[len(self._root_prefix) :].split(os.sep))
        resolved = os.path.realpath(absolute)
        if resolved.startswith(self._real_root_prefix):
            return tuple(resolved[len(self._real_root_prefix) :].split(os.sep))
        return ()

    def _is_excluded_dir(self, dir_parts: tuple[str, ...]) -> bool:
        """Whether git would not descend into this directory: it or an ancestor is ignored."""
        if not dir_parts:
            return False
        excluded = self._excluded_dirs.get(dir_parts)
        if excluded is None:
            parent_excluded = self._is_excluded_dir(dir_parts[:-1])
            excluded = parent_excluded or self._last_match_ignores(dir_parts, True)
            self._excluded_dirs[dir_parts] = excluded
        return excluded

    def _last_match_ignores(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        """Apply the ignore files, deepest first, to the path itself (not its parents)."""
        return _decision(self._layers(parts[:-1]), os.fsencode(parts[-1]), is_dir)

    def _layers(self, dir_parts: tuple[str, ...]) -> list[tuple[list[IgnorePattern], bytes]]:
        """The ignore files that apply to the entries of a directory, deepest first, then
        ``info/exclude``: each one's patterns and the prefix (the path from its directory, with
        a trailing slash) that makes an entry's name its subject. Those without patterns are
        left out."""
        encoded = [os.fsencode(part) for part in dir_parts]
        layers = []
        for depth in range(len(dir_parts), -1, -1):
            patterns = self._patterns_in(dir_parts[:depth])
            if patterns:
                layers.append((patterns, b"".join(part + b"/" for part in encoded[depth:])))
        if self._info_exclude:
            layers.append((self._info_exclude, b"".join(part + b"/" for part in encoded)))
        return layers

    def _patterns_in(self, dir_parts: tuple[str, ...]) -> list[IgnorePattern]:
        """The parsed .gitignore of one directory below root, read on first use."""
        patterns = self._patterns_by_dir.get(dir_parts)
        if patterns is None:
            ignore_file = self._root.joinpath(*dir_parts, IGNORE_FILE_NAME)
            # git refuses to follow a symlinked in-tree .gitignore (it warns and skips it).
            patterns = _read_patterns(ignore_file, follow_symlink=False)
            self._patterns_by_dir[dir_parts] = patterns
        return patterns


def find_repo_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds ``.git``, or None.

    ``.git`` may be a directory or, in linked worktrees and submodules, a file.
    """
    here = Path(os.path.abspath(start))
    for directory in (here, *here.parents):
        if holds_git(directory):
            return directory
    return None


def holds_git(directory: Path) -> bool:
    """Whether ``directory`` holds ``.git`` (a directory, or a file in a linked worktree)."""
    try:
        return (directory / ".git").exists()
    except OSError:  # a directory we may not look into
        return False


def info_exclude_path(root: Path) -> Path | None:
    """Where the repository at `root` keeps ``info/exclude``, or None if it has no ``.git``.

    In a linked worktree or a submodule ``.git`` is a file naming the real git directory, and
    a worktree shares ``info/exclude`` with its main repository (its ``commondir``).
    """
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git / "info" / "exclude"
    git_dir = _read_gitdir_link(dot_git)
    if git_dir is None:
        return None
    try:
        common_dir = git_dir / read_regular_text(git_dir / "commondir").strip()
    except (OSError, UnicodeDecodeError):
        common_dir = git_dir  # a submodule's own git dir, or an old-style worktree
    return common_dir / "info" / "exclude"


def _read_gitdir_link(dot_git: Path) -> Path | None:
    """The directory a ``.git`` file points to (``gitdir: <path>``), relative to its dir."""
    try:
        first_line = read_regular_text(dot_git).splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    prefix = "gitdir:"
    if not first_line.startswith(prefix):
        return None
    return dot_git.parent / first_line[len(prefix) :].strip()


def _decision(layers: list[tuple[list[IgnorePattern], bytes]], name: bytes, is_dir: bool) -> bool:
    """Whether the first layer (see ``GitIgnore._layers``) with a line matching the entry
    ``name`` ignores it; not ignored if none has."""
    for patterns, prefix in layers:
        decision = _last_decision(patterns, prefix + name, name, is_dir)
        if decision is not None:
            return decision
    return False


def _last_decision(
    patterns: list[IgnorePattern], relative_path: bytes, name: bytes, is_dir: bool
) -> bool | None:
    """True (ignore) or False (re-include) from the last matching line; None if none match."""
    for pattern in reversed(patterns):
        if pattern.matches(relative_path, name, is_dir):
            return not pattern.negated
    return None


def _read_patterns(ignore_file: Path, *, follow_symlink: bool) -> list[IgnorePattern]:
    """Parse one ignore file; a missing, unreadable or non-regular file contributes nothing."""
    try:
        if not follow_symlink and ignore_file.is_symlink():
            return []
        content = read_regular_file(ignore_file)
    except OSError:
        return []
    return parse_ignore_file(content.decode("utf-8", errors="replace"))


def parse_ignore_file(text: str) -> list[IgnorePattern]:
    """Parse the lines of a .gitignore-format file into patterns, in file order.

    Like git: a UTF-8 BOM is skipped, empty lines and lines starting with ``#`` are
    skipped, one CR before each LF is dropped, then unescaped trailing spaces.
    """
    patterns: list[IgnorePattern] = []
    for raw_line in text.removeprefix("\ufeff").split("\n"):
        if not raw_line or raw_line.startswith("#"):
            continue
        pattern = parse_pattern(trim_trailing_spaces(raw_line.removesuffix("\r")))
        if pattern is not None:
            patterns.append(pattern)
    return patterns


def trim_trailing_spaces(line: str) -> str:
    """Drop trailing spaces (not tabs) unless escaped: ``"a\\ "`` keeps its last space."""
    first_trailing_space: int | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if char == " ":
            if first_trailing_space is None:
                first_trailing_space = index
        else:
            first_trailing_space = None
            if char == "\\":
                index += 1  # the escaped character is never trimmed
        index += 1
    return line if first_trailing_space is None else line[:first_trailing_space]


def parse_pattern(line: str) -> IgnorePattern | None:
    """Compile one trimmed, non-comment line; None if it can never match anything."""
    negated = line.startswith("!")
    body = line[1:] if negated else line
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    matches_name = "/" not in body
    if not matches_name:
        body = body.removeprefix("/")
    if not body:
        return None
    glob = body.encode("utf-8")
    # git compares an anchored pattern's leading literal part as plain text and hands only
    # the rest to wildmatch, which then treats that rest's start like a path-component start.
    wildcard_start = 0 if matches_name else _literal_prefix_length(glob)
    regex_source = glob_to_regex(glob, wildcard_start)
    regex = None if regex_source is None else re.compile(regex_source, re.DOTALL)
    return IgnorePattern(line, regex, negated, dir_only, matches_name)


def _literal_prefix_length(glob: bytes) -> int:
    """How many leading bytes have no glob meaning (git's ``simple_length``)."""
    for index, byte in enumerate(glob):
        if byte in _GLOB_SPECIAL:
            return index
    return len(glob)


def glob_to_regex(glob: bytes, wildcard_start: int = 0) -> bytes | None:
    """Translate a wildmatch pattern (with git's WM_PATHNAME) to a bytes regex source.

    `wildcard_start` is where git starts calling wildmatch; ``**`` right there counts as
    starting a path component even without a slash before it (so ``foo**/bar`` matches
    ``foobar``, a real git quirk). Returns None when git's matcher would abort on the
    pattern (trailing backslash, unclosed bracket, unknown ``[:class:]``): it matches nothing.
    """
    pieces = [re.escape(glob[:wildcard_start])]
    index = wildcard_start
    while index < len(glob):
        byte = glob[index]
        if byte == _BACKSLASH:
            if index + 1 == len(glob):
                return None
            pieces.append(re.escape(glob[index + 1 : index + 2]))
            index += 2
        elif byte == _STAR:
            piece, index = _star_run_regex(glob, index, wildcard_start)
            pieces.append(piece)
        elif byte == _QUESTION:
            pieces.append(b"[^/]")
            index += 1
        elif byte == _OPEN_BRACKET:
            bracket = parse_bracket(glob, index)
            if bracket is None:
                return None
            matched_bytes, index = bracket
            pieces.append(_byte_set_regex(matched_bytes - {_SLASH}))
        else:
            pieces.append(re.escape(glob[index : index + 1]))
            index += 1
    return b"".join(pieces)


def _star_run_regex(glob: bytes, start: int, wildcard_start: int) -> tuple[bytes, int]:
    """Regex for the run of ``*`` at `start`, and the index just after what it consumed.

    ``**`` is special only as a whole path component: ``**/`` is zero or more directories,
    a trailing ``**`` is everything below. Any other run of stars stays inside one component.
    """
    end = start
    while end < len(glob) and glob[end] == _STAR:
        end += 1
    at_component_start = start == wildcard_start or glob[start - 1] == _SLASH
    at_component_end = end == len(glob) or glob[end] == _SLASH or glob[end : end + 2] == b"\\/"
    if end - start < 2 or not (at_component_start and at_component_end):
        return b"[^/]*", end
    if end == len(glob):
        return b".*", end
    if glob[end] == _SLASH:
        return b"(?:.*/)?", end + 1
    return b".*", end  # "**\/": the escaped slash that follows is matched literally


def parse_bracket(glob: bytes, open_at: int) -> tuple[frozenset[int], int] | None:
    """Bytes matched by the ``[...]`` opening at `open_at`, and the index after its ``]``.

    Follows wildmatch: ``!`` or ``^`` negates; a ``]`` right after the opening (or after the
    negation) is literal; ``a-z`` ranges (a reversed one matches nothing); ``[:alpha:]``
    classes; backslash escapes. Returns None where wildmatch aborts.
    """
    index = open_at + 1
    negated = index < len(glob) and glob[index] in b"!^"
    if negated:
        index += 1
    matched: set[int] = set()
    previous = 0  # the last single byte, the start of a possible range; 0 for none
    while True:
        if index >= len(glob):
            return None
        byte = glob[index]
        if byte == _BACKSLASH:
            index += 1
            if index >= len(glob):
                return None
            byte = glob[index]
            matched.add(byte)
        elif byte == _DASH and previous and _range_end_follows(glob, index):
            index += 1
            if glob[index] == _BACKSLASH:
                index += 1
                if index >= len(glob):
                    return None
            matched.update(range(previous, glob[index] + 1))
            byte = 0  # a range cannot start another range
        elif byte == _OPEN_BRACKET and glob[index + 1 : index + 2] == b":":
            class_end = glob.find(b"]", index + 2)
            if class_end == -1:
                return None
            if class_end - (index + 2) < 1 or glob[class_end - 1] != _COLON:
                matched.add(byte)  # no ":]": the "[" is an ordinary member
            else:
                members = _CHARACTER_CLASSES.get(glob[index + 2 : class_end - 1])
                if members is None:
                    return None
                matched.update(members)
                index = class_end
                byte = 0
        else:
            matched.add(byte)
        previous = byte
        index += 1
        if index < len(glob) and glob[index] == _CLOSE_BRACKET:
            break
    members = _ALL_BYTES - matched if negated else frozenset(matched)
    return members, index + 1


def _range_end_follows(glob: bytes, dash_at: int) -> bool:
    """A ``-`` makes a range only when something other than the closing ``]`` follows it."""
    return dash_at + 1 < len(glob) and glob[dash_at + 1] != _CLOSE_BRACKET


def _byte_set_regex(byte_values: frozenset[int]) -> bytes:
    """A regex character class matching exactly these byte values (never matches if empty)."""
    if not byte_values:
        return b"(?!)"
    ranges: list[bytes] = []
    ordered = sorted(byte_values)
    low = high = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == high + 1:
            high = value
            continue
        ranges.append(b"\\x%02x" % low if low == high else b"\\x%02x-\\x%02x" % (low, high))
        if value is not None:
            low = high = value
    return b"[" + b"".join(ranges) + b"]"
