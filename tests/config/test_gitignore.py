"""Tests for distlint.config.gitignore: git's ignore rules, with git itself as the oracle.

The table below states the expected answer for each rule of ``git help gitignore``; where git
is installed, ``test_table_agrees_with_git`` checks every row against ``git check-ignore``, and
the repository-level tests compare whole trees with ``git check-ignore`` and ``git ls-files``.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from distlint.config.gitignore import (
    GitIgnore,
    find_repo_root,
    glob_to_regex,
    info_exclude_path,
    parse_ignore_file,
    parse_pattern,
    trim_trailing_spaces,
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

# (id, .gitignore text, path relative to the .gitignore's directory, is_dir, ignored?)
CASES: list[tuple[str, str, str, bool, bool]] = [
    # blank lines and comments
    ("comment-line", "#foo.py\n", "#foo.py", False, False),
    ("escaped-hash", "\\#foo.py\n", "#foo.py", False, True),
    ("hash-inside-pattern", "foo#.py\n", "foo#.py", False, True),
    ("blank-lines", "\n\n   \nfoo.py\n\n", "foo.py", False, True),
    ("blank-lines-other", "\n\n   \nfoo.py\n\n", "bar.py", False, False),
    ("leading-space-significant", "  foo.py\n", "foo.py", False, False),
    ("leading-space-match", "  foo.py\n", "  foo.py", False, True),
    ("no-final-newline", "foo.py", "foo.py", False, True),
    ("crlf-lines", "foo.py\r\nbar.py\r\n", "bar.py", False, True),
    ("utf8-bom", "\ufefffoo.py\n", "foo.py", False, True),
    # trailing spaces
    ("trailing-spaces-trimmed", "foo.py   \n", "foo.py", False, True),
    ("escaped-trailing-space", "foo\\ \n", "foo ", False, True),
    ("escaped-trailing-space-not-bare", "foo\\ \n", "foo", False, False),
    ("escaped-then-bare-space", "foo\\  \n", "foo ", False, True),
    ("trailing-tab-kept", "foo.py\t\n", "foo.py", False, False),
    # negation
    ("negation-reincludes", "*.py\n!keep.py\n", "keep.py", False, False),
    ("negation-others-stay", "*.py\n!keep.py\n", "other.py", False, True),
    ("last-match-wins", "!keep.py\n*.py\n", "keep.py", False, True),
    ("escaped-bang", "\\!bang.py\n", "!bang.py", False, True),
    ("bare-bang-matches-nothing", "!\n", "!", False, False),
    ("negation-unmatched-is-not-ignored", "!foo.py\n", "foo.py", False, False),
    # a file cannot be re-included below an excluded directory
    ("excluded-dir-blocks-negation", "build/\n!build/keep.py\n", "build/keep.py", False, True),
    ("excluded-name-blocks-negation", "build\n!build/keep.py\n", "build/keep.py", False, True),
    ("dir-contents-allow-negation", "build/*\n!build/keep.py\n", "build/keep.py", False, False),
    ("dir-contents-still-ignored", "build/*\n!build/keep.py\n", "build/other.py", False, True),
    ("dir-contents-dir-itself-not", "build/*\n", "build", True, False),
    ("double-star-contents-negation", "/build/**\n!build/keep.py\n", "build/keep.py", False, False),
    ("double-star-subdir-blocks", "/build/**\n!build/sub/k.py\n", "build/sub/k.py", False, True),
    ("deep-file-in-excluded-dir", "node_modules/\n", "node_modules/a/b/c.py", False, True),
    # trailing slash: directories only
    ("dir-only-matches-dir", "logs/\n", "logs", True, True),
    ("dir-only-skips-file", "logs/\n", "logs", False, False),
    ("dir-only-any-depth", "logs/\n", "a/b/logs", True, True),
    ("dir-only-anchored", "a/logs/\n", "a/logs", True, True),
    ("dir-only-anchored-not-deeper", "a/logs/\n", "x/a/logs", True, False),
    ("no-slash-matches-file-and-dir", "logs\n", "logs", False, True),
    # anchoring
    ("leading-slash-anchors", "/foo.py\n", "foo.py", False, True),
    ("leading-slash-not-deeper", "/foo.py\n", "sub/foo.py", False, False),
    ("name-matches-any-depth", "foo.py\n", "sub/deep/foo.py", False, True),
    ("middle-slash-anchors", "sub/foo.py\n", "sub/foo.py", False, True),
    ("middle-slash-not-deeper", "sub/foo.py\n", "x/sub/foo.py", False, False),
    ("star-any-depth", "*.py\n", "a/b/c.py", False, True),
    ("anchored-star-one-level", "a/*.py\n", "a/b.py", False, True),
    ("anchored-star-not-across-slash", "a/*.py\n", "a/b/c.py", False, False),
    # * ? [...]
    ("question-one-char", "?.py\n", "a.py", False, True),
    ("question-not-two", "?.py\n", "ab.py", False, False),
    ("question-not-slash", "x/a?b\n", "x/a/b", False, False),
    ("star-not-slash", "x/a*b\n", "x/a/b", False, False),
    ("star-within-name", "x/a*b\n", "x/aqqb", False, True),
    ("bracket-set", "[abc].py\n", "b.py", False, True),
    ("bracket-set-miss", "[abc].py\n", "d.py", False, False),
    ("bracket-negated-bang", "[!abc].py\n", "d.py", False, True),
    ("bracket-negated-caret", "[^abc].py\n", "a.py", False, False),
    ("bracket-range", "[a-c]x\n", "bx", False, True),
    ("bracket-range-miss", "[a-c]x\n", "dx", False, False),
    ("bracket-reversed-range", "[c-a]x\n", "bx", False, False),
    ("bracket-leading-close", "[]]x\n", "]x", False, True),
    ("bracket-trailing-dash", "[a-]x\n", "-x", False, True),
    ("bracket-class", "[[:digit:]]x\n", "5x", False, True),
    ("bracket-class-miss", "[[:digit:]]x\n", "ax", False, False),
    ("bracket-unknown-class", "[[:bogus:]]x\n", "bx", False, False),
    ("bracket-unclosed", "[abc\n", "[abc", False, False),
    ("bracket-not-slash", "x/a[/]b\n", "x/a/b", False, False),
    ("question-is-one-byte", "?.py\n", "é.py", False, False),
    ("two-questions-one-accent", "??.py\n", "é.py", False, True),
    ("non-ascii-literal", "é.py\n", "é.py", False, True),
    # ** forms
    ("leading-double-star", "**/foo\n", "foo", False, True),
    ("leading-double-star-deep", "**/foo\n", "a/b/foo", False, True),
    ("leading-double-star-path", "**/foo/bar\n", "a/foo/bar", False, True),
    ("leading-double-star-path-top", "**/foo/bar\n", "foo/bar", False, True),
    ("trailing-double-star", "abc/**\n", "abc/x/y", False, True),
    ("trailing-double-star-not-dir", "abc/**\n", "abc", True, False),
    ("middle-double-star-zero", "a/**/b\n", "a/b", False, True),
    ("middle-double-star-one", "a/**/b\n", "a/x/b", False, True),
    ("middle-double-star-many", "a/**/b\n", "a/x/y/b", False, True),
    ("middle-double-star-not-partial", "a/**/b\n", "a/xb", False, False),
    ("double-star-alone", "**\n", "any/thing.py", False, True),
    ("double-star-inside-name", "x/a**b\n", "x/a/b", False, False),
    ("double-star-inside-name-match", "x/a**b\n", "x/aqqb", False, True),
    ("double-star-after-literal-quirk", "foo**/bar\n", "foobar", False, True),
    ("double-star-after-literal-deep", "foo**/bar\n", "fooX/Y/bar", False, True),
    # backslash escapes
    ("escaped-star", "\\*.py\n", "*.py", False, True),
    ("escaped-star-literal-only", "\\*.py\n", "a.py", False, False),
    ("escaped-question", "\\?.py\n", "?.py", False, True),
    ("escaped-bracket", "\\[a].py\n", "[a].py", False, True),
    ("escaped-bracket-literal-only", "\\[a].py\n", "a.py", False, False),
    ("escaped-letter", "\\foo.py\n", "foo.py", False, True),
    ("trailing-backslash-matches-nothing", "foo\\\n", "foo\\", False, False),
]


@pytest.mark.parametrize(
    ("ignore_text", "relative_path", "is_dir", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_rule_table(
    tmp_path: Path, ignore_text: str, relative_path: str, is_dir: bool, expected: bool
) -> None:
    (tmp_path / ".gitignore").write_text(ignore_text, encoding="utf-8", newline="")
    assert GitIgnore(tmp_path).is_ignored(tmp_path / relative_path, is_dir) is expected


@needs_git
def test_table_agrees_with_git(tmp_path: Path) -> None:
    # Each row gets its own sandbox directory in one repository; a sandbox's .gitignore
    # governs only paths below it, exactly as the repository root's would.
    repo = _init_repo(tmp_path / "repo")
    rows = {}
    for index, (case_id, ignore_text, relative_path, is_dir, expected) in enumerate(CASES):
        sandbox = f"case{index}"
        (repo / sandbox).mkdir()
        (repo / sandbox / ".gitignore").write_text(ignore_text, encoding="utf-8", newline="")
        _create(repo / sandbox / relative_path, is_dir)
        rows[f"{sandbox}/{relative_path}"] = (case_id, expected)
    git_ignored = _git_check_ignore(repo, list(rows))
    disagreements = [
        case_id for path, (case_id, expected) in rows.items() if (path in git_ignored) != expected
    ]
    assert disagreements == []


# ----- ignore files across directories --------------------------------------------------


def test_deeper_gitignore_overrides_shallower(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".gitignore": "*.log\n", "sub/.gitignore": "!keep.log\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "keep.log", False)
    assert not ignore.is_ignored(tmp_path / "sub/keep.log", False)
    assert not ignore.is_ignored(tmp_path / "sub/deeper/keep.log", False)
    assert ignore.is_ignored(tmp_path / "sub/other.log", False)


def test_deeper_gitignore_can_ignore_what_parent_reincludes(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".gitignore": "*.py\n!main.py\n", "pkg/.gitignore": "main.py\n"})
    ignore = GitIgnore(tmp_path)
    assert not ignore.is_ignored(tmp_path / "main.py", False)
    assert ignore.is_ignored(tmp_path / "pkg/main.py", False)


def test_nested_patterns_are_relative_to_their_directory(tmp_path: Path) -> None:
    _write_tree(tmp_path, {"sub/.gitignore": "/local.py\nx/y.py\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "sub/local.py", False)
    assert not ignore.is_ignored(tmp_path / "local.py", False)
    assert not ignore.is_ignored(tmp_path / "sub/deeper/local.py", False)
    assert ignore.is_ignored(tmp_path / "sub/x/y.py", False)
    assert not ignore.is_ignored(tmp_path / "x/y.py", False)


def test_gitignore_inside_excluded_directory_cannot_reinclude(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".gitignore": "build/\n", "build/.gitignore": "!*\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "build", True)
    assert ignore.is_ignored(tmp_path / "build/keep.py", False)


def test_directory_only_pattern_on_files_and_directories(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".gitignore": "cache/\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "cache", True)
    assert ignore.is_ignored(tmp_path / "cache/mod.py", False)
    assert not ignore.is_ignored(tmp_path / "cache", False)
    assert ignore.is_ignored(tmp_path / "src/cache", True)


# ----- .git/info/exclude ----------------------------------------------------------------


def test_info_exclude_is_applied(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".git/info/exclude": "secret.py\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "secret.py", False)
    assert ignore.is_ignored(tmp_path / "a/secret.py", False)
    assert not ignore.is_ignored(tmp_path / "public.py", False)


def test_gitignore_negation_beats_info_exclude(tmp_path: Path) -> None:
    # info/exclude is consulted only when no .gitignore line matches at all.
    _write_tree(tmp_path, {".git/info/exclude": "*.py\n", ".gitignore": "!keep.py\n"})
    ignore = GitIgnore(tmp_path)
    assert not ignore.is_ignored(tmp_path / "keep.py", False)
    assert ignore.is_ignored(tmp_path / "other.py", False)


def test_info_exclude_of_linked_worktree_is_the_main_repository_one(tmp_path: Path) -> None:
    main_git = tmp_path / "main/.git"
    _write_tree(
        tmp_path,
        {
            "main/.git/info/exclude": "secret.py\n",
            "main/.git/worktrees/wt/commondir": "../..\n",
            "wt/.git": f"gitdir: {main_git / 'worktrees/wt'}\n",
        },
    )
    assert info_exclude_path(tmp_path / "wt") == main_git / "worktrees/wt/../../info/exclude"
    assert GitIgnore(tmp_path / "wt").is_ignored(tmp_path / "wt/secret.py", False)


def test_info_exclude_of_submodule_uses_its_relative_gitdir(tmp_path: Path) -> None:
    _write_tree(
        tmp_path,
        {
            ".git/modules/sub/info/exclude": "secret.py\n",
            "sub/.git": "gitdir: ../.git/modules/sub\n",
        },
    )
    assert GitIgnore(tmp_path / "sub").is_ignored(tmp_path / "sub/secret.py", False)


def test_without_git_directory_only_gitignore_counts(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".gitignore": "*.tmp\n"})
    assert info_exclude_path(tmp_path) is None
    assert GitIgnore(tmp_path).is_ignored(tmp_path / "x.tmp", False)


# ----- robustness and caching -----------------------------------------------------------


def test_gitignore_that_cannot_be_read_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "sub/.gitignore").mkdir(parents=True)  # a directory, so reading it fails
    _write_tree(tmp_path, {".gitignore": "*.tmp\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "sub/x.tmp", False)
    assert not ignore.is_ignored(tmp_path / "sub/x.py", False)


def test_undecodable_gitignore_bytes_are_replaced(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_bytes(b"\xff\xfe\x80garbage\n*.tmp\n")
    assert GitIgnore(tmp_path).is_ignored(tmp_path / "x.tmp", False)


@needs_git
def test_symlinked_gitignore_is_not_followed_like_git(tmp_path: Path) -> None:
    repo = _init_repo(tmp_path / "repo")
    (tmp_path / "target").write_text("*.py\n")
    (repo / ".gitignore").symlink_to(tmp_path / "target")
    (repo / "x.py").write_text("")
    assert _git_check_ignore(repo, ["x.py"]) == set()
    assert not GitIgnore(repo).is_ignored(repo / "x.py", False)


def test_root_itself_and_paths_outside_root_are_not_ignored(tmp_path: Path) -> None:
    _write_tree(tmp_path, {"repo/.gitignore": "*\n"})
    ignore = GitIgnore(tmp_path / "repo")
    assert not ignore.is_ignored(tmp_path / "repo", True)
    assert not ignore.is_ignored(tmp_path / "elsewhere.py", False)
    assert not ignore.is_ignored(tmp_path / "repo-sibling/x.py", False)
    assert ignore.is_ignored(tmp_path / "repo/x.py", False)


def test_paths_are_normalised_before_matching(tmp_path: Path, monkeypatch) -> None:
    _write_tree(tmp_path, {".gitignore": "/build/\n"})
    monkeypatch.chdir(tmp_path)
    ignore = GitIgnore(Path("."))
    assert ignore.is_ignored(Path("build/x.py"), False)
    assert ignore.is_ignored(tmp_path / "src/../build/x.py", False)
    assert not ignore.is_ignored(tmp_path / "build/../src/x.py", False)


def test_root_given_through_a_symlink(tmp_path: Path) -> None:
    _write_tree(tmp_path, {"real/.gitignore": "*.tmp\n"})
    (tmp_path / "link").symlink_to(tmp_path / "real")
    ignore = GitIgnore(tmp_path / "link")
    assert ignore.is_ignored(tmp_path / "link/x.tmp", False)
    assert ignore.is_ignored(tmp_path / "real/x.tmp", False)
    assert not ignore.is_ignored(tmp_path / "real/x.py", False)


def test_each_gitignore_is_read_once(tmp_path: Path) -> None:
    _write_tree(tmp_path, {".gitignore": "*.tmp\n", "sub/.gitignore": "*.log\n"})
    ignore = GitIgnore(tmp_path)
    assert ignore.is_ignored(tmp_path / "sub/a.log", False)
    (tmp_path / ".gitignore").unlink()
    (tmp_path / "sub/.gitignore").unlink()
    assert ignore.is_ignored(tmp_path / "sub/b.log", False)
    assert ignore.is_ignored(tmp_path / "sub/c.tmp", False)


# ----- find_repo_root -------------------------------------------------------------------


def test_find_repo_root_with_git_directory(tmp_path: Path) -> None:
    _write_tree(tmp_path, {"repo/.git/HEAD": "ref: refs/heads/main\n", "repo/a/b/x.py": ""})
    assert find_repo_root(tmp_path / "repo/a/b") == tmp_path / "repo"
    assert find_repo_root(tmp_path / "repo/a/b/x.py") == tmp_path / "repo"
    assert find_repo_root(tmp_path / "repo") == tmp_path / "repo"


def test_find_repo_root_with_git_file(tmp_path: Path) -> None:
    _write_tree(tmp_path, {"outer/.git/HEAD": "", "outer/sub/.git": "gitdir: ../.git/x\n"})
    assert find_repo_root(tmp_path / "outer/sub/pkg") == tmp_path / "outer/sub"


def test_find_repo_root_relative_start(tmp_path: Path, monkeypatch) -> None:
    _write_tree(tmp_path, {"repo/.git/HEAD": "", "repo/a/x.py": ""})
    monkeypatch.chdir(tmp_path / "repo/a")
    assert find_repo_root(Path("..") / "a") == tmp_path / "repo"


def test_find_repo_root_outside_any_repository(tmp_path: Path) -> None:
    if any((parent / ".git").exists() for parent in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary directory is inside a git repository")
    assert find_repo_root(tmp_path) is None


# ----- parsing helpers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "trimmed"),
    [
        ("foo", "foo"),
        ("foo   ", "foo"),
        ("foo\\ ", "foo\\ "),
        ("foo\\  ", "foo\\ "),
        ("foo\\\\ ", "foo\\\\"),
        ("foo\t", "foo\t"),
        ("foo \t", "foo \t"),
        ("   ", ""),
        ("foo\\", "foo\\"),
    ],
)
def test_trim_trailing_spaces(line: str, trimmed: str) -> None:
    assert trim_trailing_spaces(line) == trimmed


def test_parse_ignore_file_skips_comments_and_blank_lines() -> None:
    patterns = parse_ignore_file("# c\n\n*.py\n   \n!keep.py\n/build/\n")
    assert [(p.line, p.negated, p.dir_only, p.matches_name) for p in patterns] == [
        ("*.py", False, False, True),
        ("!keep.py", True, False, True),
        ("/build/", False, True, False),
    ]


@pytest.mark.parametrize("line", ["/", "!", "!/", "[abc", "foo\\", "[[:nope:]]"])
def test_lines_that_can_never_match(line: str) -> None:
    pattern = parse_pattern(line)
    assert pattern is None or pattern.regex is None


@pytest.mark.parametrize(
    ("glob", "regex"),
    [
        (b"*.py", rb"[^/]*\.py"),
        (b"**/x", rb"(?:.*/)?x"),
        (b"a/**", rb"a/.*"),
        (b"a/**/b", rb"a/(?:.*/)?b"),
        (b"a**b", rb"a[^/]*b"),
        (b"[a-c]", rb"[\x61-\x63]"),
    ],
)
def test_glob_to_regex(glob: bytes, regex: bytes) -> None:
    assert glob_to_regex(glob) == regex


# ----- whole repositories against git ---------------------------------------------------

_ORACLE_IGNORE_FILES = {
    ".gitignore": (
        "# top level\n"
        "*.pyc\n"
        "/build/\n"
        "dist\n"
        "!dist/keep.py\n"
        "logs/*\n"
        "!logs/important.log\n"
        "docs/**/generated\n"
        "**/tmp/\n"
        "*.log\n"
        "!keep.log\n"
        "vendor/**\n"
        "!vendor/allowed/\n"
        "!vendor/allowed/**\n"
        "\\#hash.py\n"
        "\\!bang.py\n"
        "space\\ \n"
        "trailing.py   \n"
        "a/**/b.py\n"
        "[abc]x.py\n"
        "[!a-c]y.py\n"
        "data[0-9]/\n"
        "*.tmp\n"
        "!/src/*.tmp\n"
        "?.cfg\n"
        "foo**/bar.py\n"
    ),
    "src/.gitignore": (
        "!*.pyc\ngenerated/\n/local.py\nsub/*.py\n!sub/keep.py\n*.py[cod]\n!ok.pyo\n"
    ),
    "src/pkg/.gitignore": "*.py\n!__init__.py\n!/api.py\n!**/models/*.py\n",
    "docs/.gitignore": "!generated\n*.md\n!README.md\n",
    "build/.gitignore": "!*\n",
    ".git/info/exclude": "secret.py\n*.bak\n!src/pkg/keep.bak\n",
}

_ORACLE_PATHS = [
    "main.py", "main.pyc", "keep.log", "x.log", "secret.py", "notes.bak", "x.tmp",
    "#hash.py", "!bang.py", "space ", "space", "trailing.py", "ax.py", "dx.py", "ay.py",
    "dy.py", "a.cfg", "ab.cfg", "foobar.py", "fooX/Y/bar.py", "foo/bar.py",
    "build/keep.py", "build/sub/x.py", "sub/build/x.py",
    "dist/keep.py", "dist/other.py", "lib/dist", "lib/dist/x.py",
    "logs/important.log", "logs/other.txt", "logs/sub/important.log",
    "docs/generated/x.py", "docs/a/generated/y.py", "docs/a/b/generated", "docs/README.md",
    "docs/guide.md", "docs/a/guide.md",
    "tmp/x.py", "a/tmp/x.py", "a/tmp", "tmpfile/x.py",
    "vendor/lib.py", "vendor/allowed/ok.py", "vendor/allowed/deep/ok.py", "vendor/other/x.py",
    "a/b.py", "a/x/b.py", "a/x/y/b.py", "x/a/b.py",
    "data1/x.py", "data1", "dataX/x.py", "lib/data2/x.py",
    "src/x.tmp", "src/sub/y.tmp", "src/main.pyc", "src/lib.pyo", "src/ok.pyo", "src/local.py",
    "src/a/local.py", "src/sub/mod.py", "src/sub/keep.py", "src/sub/deep/mod.py",
    "src/generated/x.py", "src/pkg/__init__.py", "src/pkg/api.py", "src/pkg/core.py",
    "src/pkg/sub/api.py", "src/pkg/sub/__init__.py", "src/pkg/models/user.py",
    "src/pkg/a/models/user.py", "src/pkg/keep.bak", "src/pkg/other.bak",
    "src/secret.py", "src/pkg/secret.py", "é.py", "ü/x.cfg",
]  # fmt: skip

_DIRECTORIES = {"lib/dist", "a/tmp", "docs/a/b/generated", "data1"}


@needs_git
def test_repository_agrees_with_git_check_ignore(tmp_path: Path) -> None:
    repo = _init_repo(tmp_path / "repo")
    _write_tree(repo, _ORACLE_IGNORE_FILES)
    for relative in _ORACLE_PATHS:
        _create(repo / relative, relative in _DIRECTORIES)
    every_path = _all_paths(repo)
    ignore = GitIgnore(repo)
    ours = {rel for rel in every_path if ignore.is_ignored(repo / rel, (repo / rel).is_dir())}
    git_ignored = _git_check_ignore(repo, every_path)
    assert sorted(ours - git_ignored) == []
    assert sorted(git_ignored - ours) == []
    assert len(git_ignored) > 40  # the tree really exercises the rules


@needs_git
def test_repository_files_agree_with_git_ls_files(tmp_path: Path) -> None:
    repo = _init_repo(tmp_path / "repo")
    _write_tree(repo, _ORACLE_IGNORE_FILES)
    for relative in _ORACLE_PATHS:
        _create(repo / relative, relative in _DIRECTORIES)
    listed = _git(repo, "ls-files", "--others", "--ignored", "--exclude-standard", "-z")
    git_ignored_files = {path for path in listed.split("\0") if path}
    ignore = GitIgnore(repo)
    files = [rel for rel in _all_paths(repo) if (repo / rel).is_file()]
    ours = {rel for rel in files if ignore.is_ignored(repo / rel, False)}
    assert sorted(ours ^ git_ignored_files) == []


@needs_git
@pytest.mark.parametrize("seed", range(4))
def test_random_patterns_agree_with_git(tmp_path: Path, seed: int) -> None:
    # Awkward pattern fragments and names, assembled at random: each sandbox gets a small
    # tree and a few .gitignore files, and every path is compared with git's verdict.
    rng = random.Random(seed)
    repo = _init_repo(tmp_path / "repo")
    for sandbox_index in range(15):
        _random_sandbox(repo / f"s{sandbox_index}", rng)
    every_path = _all_paths(repo)
    ignore = GitIgnore(repo)
    ours = {rel for rel in every_path if ignore.is_ignored(repo / rel, (repo / rel).is_dir())}
    git_ignored = _git_check_ignore(repo, every_path)
    assert sorted(ours ^ git_ignored) == []


@needs_git
def test_character_classes_agree_with_git(tmp_path: Path) -> None:
    classes = ["alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print"]
    classes += ["punct", "space", "upper", "xdigit"]
    repo = _init_repo(tmp_path / "repo")
    names = ["x" + chr(code) for code in range(1, 128) if chr(code) != "/"] + ["xé"]
    for class_name in classes:
        for negation in ("", "!"):
            sandbox = repo / f"{class_name}{negation and '-not'}"
            sandbox.mkdir()
            (sandbox / ".gitignore").write_text(f"x[{negation}[:{class_name}:]]\n")
            for name in names:
                (sandbox / name).write_bytes(b"")
    every_path = _all_paths(repo)
    ignore = GitIgnore(repo)
    ours = {rel for rel in every_path if ignore.is_ignored(repo / rel, (repo / rel).is_dir())}
    assert sorted(ours ^ _git_check_ignore(repo, every_path)) == []


@needs_git
@pytest.mark.parametrize("seed", [None, 0, 1])
def test_entries_asked_per_directory_agree_with_git(tmp_path: Path, seed: int | None) -> None:
    # what a walk asks: in_directory, once per directory, then each entry by name and kind
    repo = _init_repo(tmp_path / "repo")
    if seed is None:
        _write_tree(repo, _ORACLE_IGNORE_FILES)
        for relative in _ORACLE_PATHS:
            _create(repo / relative, relative in _DIRECTORIES)
    else:
        rng = random.Random(seed)
        for sandbox_index in range(10):
            _random_sandbox(repo / f"s{sandbox_index}", rng)
    (repo / ".git/info/exclude").write_text("*.bak\n!keep.bak\n")
    every_path = _all_paths(repo)
    ignore = GitIgnore(repo)
    asked = {}
    ours = set()
    for rel in every_path:
        directory = (repo / rel).parent
        ignored = asked.setdefault(directory, ignore.in_directory(directory))
        if ignored(Path(rel).name, (repo / rel).is_dir()):
            ours.add(rel)
    assert sorted(ours ^ _git_check_ignore(repo, every_path)) == []


def test_entries_of_a_directory_reached_through_a_symlink_or_outside_root(tmp_path: Path) -> None:
    _write_tree(tmp_path, {"real/.gitignore": "*.tmp\nout/\n", "real/sub/.gitignore": "/x.py\n"})
    (tmp_path / "link").symlink_to(tmp_path / "real")
    ignore = GitIgnore(tmp_path / "real")
    entries = [("x.py", False), ("a.tmp", False), ("y.py", False), ("out", True), ("d", True)]
    for directory in ["real", "real/sub", "link/sub", "link", ".", "real/out"]:
        ignored = ignore.in_directory(tmp_path / directory)
        for name, is_dir in entries:
            path = tmp_path / directory / name
            assert ignored(name, is_dir) == ignore.is_ignored(path, is_dir), (directory, name)
    assert ignore.in_directory(tmp_path / "link/sub")("x.py", False)
    assert ignore.in_directory(tmp_path / "real/out")("y.py", False)  # inside an ignored dir
    assert not ignore.in_directory(tmp_path)("a.tmp", False)  # outside root


# ----- helpers --------------------------------------------------------------------------

_RANDOM_PIECES = [
    *["*", "**", "?", "a", "b", "c", "/", "x", "**/", "/**", "!", " ", "\\ ", "]", "-"],
    *["[a-b]", "[!a]", "[]a]", "\\*", "[[:alpha:]]", "[a", "[z-a]", "\\", "a**", "**a"],
    *["[:]", "[[:", "[^b]", "[-a]", "[a-]", "\\[", "[[:x]", "[\\a-c]"],
]
_RANDOM_NAMES = ["a", "b", "c", "ab", "ba", "abc", "x", "*", "a b", "ax", "[", "]", "\\", "-"]
_RANDOM_NAMES += ["!a", "[a]", "a]", ":", "é"]


def _random_sandbox(sandbox: Path, rng: random.Random) -> None:
    sandbox.mkdir()
    directories = [sandbox]

    def grow(directory: Path, depth: int) -> None:
        for name in rng.sample(_RANDOM_NAMES, rng.randint(1, 4)):
            path = directory / name
            if depth < 3 and rng.random() < 0.5:
                path.mkdir(exist_ok=True)
                directories.append(path)
                grow(path, depth + 1)
            elif not path.exists():
                path.write_bytes(b"")

    grow(sandbox, 0)
    for directory in rng.sample(directories, min(len(directories), 3)):
        lines = [_random_pattern(rng) for _ in range(rng.randint(1, 5))]
        (directory / ".gitignore").write_text("\n".join(lines) + "\n")


def _random_pattern(rng: random.Random) -> str:
    pattern = "".join(rng.choice(_RANDOM_PIECES) for _ in range(rng.randint(1, 4)))
    if rng.random() < 0.2:
        pattern = "!" + pattern
    if rng.random() < 0.15:
        pattern += "/"
    return pattern


def _git_env(home: Path) -> dict[str, str]:
    """Keep the user's and the system's git configuration (and global excludes) out."""
    return {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
    }


def _git(repo: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    # Bytes in and out: text mode would turn a CR inside a file name into a LF.
    completed = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=None if stdin is None else os.fsencode(stdin),
        capture_output=True,
        env=_git_env(repo.parent),
        check=False,
    )
    if check and completed.returncode != 0:
        raise AssertionError(f"git {args} failed: {completed.stderr!r}")
    return os.fsdecode(completed.stdout)


def _init_repo(repo: Path) -> Path:
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    return repo


def _git_check_ignore(repo: Path, relative_paths: list[str]) -> set[str]:
    """Paths git reports ignored; "./" keeps a leading ":" from reading as pathspec magic."""
    stdin = "".join(f"./{path}\0" for path in relative_paths)
    # Exit status 1 only means that nothing was ignored.
    output = _git(repo, "check-ignore", "--no-index", "--stdin", "-z", stdin=stdin, check=False)
    return {path.removeprefix("./") for path in output.split("\0") if path}


def _all_paths(repo: Path) -> list[str]:
    """Every file and directory below `repo` except .git, as posix relative paths."""
    paths = []
    for directory, dirnames, filenames in os.walk(repo):
        dirnames[:] = [name for name in dirnames if name != ".git"]
        for name in [*dirnames, *filenames]:
            paths.append(Path(directory, name).relative_to(repo).as_posix())
    return paths


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8", newline="")


def _create(path: Path, is_dir: bool) -> None:
    if is_dir:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
