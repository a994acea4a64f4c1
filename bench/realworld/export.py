"""Export the real-code corpus: each repository of ``repos.txt`` at its pinned commit.

Only what distlint reads is written, from a bare clone of each repository: Python sources,
the configuration files (``pyproject.toml``, ``distlint.toml``, ``setup.cfg``, ``.gitignore``)
and the files the project's torch range is read from (``requirements*.txt`` / ``.in``, those
under a ``requirements/`` folder, ``environment.yml``; see distlint/config/torch_version.py),
so that the corpus is judged against the torch the project declares. The corpus lives
outside this repository: we keep the list of repositories and our labels, never their code.

    python bench/realworld/export.py --clones DIR --out CORPUS
        DIR/<owner>+<name>/repo (or DIR/<owner>+<name>.git): bare clones
        CORPUS/<owner>+<name>/: the exported files

A clone can be made with ``git clone --bare https://github.com/<owner>/<name>``; the commit
must be reachable in it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_KEEP_SUFFIXES = (".py", ".pyi")
_KEEP_NAMES = (
    "pyproject.toml",
    "setup.cfg",
    "distlint.toml",
    ".gitignore",
    "environment.yml",
    "environment.yaml",
)
# requirements*.txt / .in in any folder, and any .txt / .in under a requirements/ folder
_REQUIREMENTS = re.compile(r"(?:^|/)(?:requirements[^/]*|requirements/(?:.+/)?[^/]+)\.(?:txt|in)$")


def keep(path: str) -> bool:
    """Whether distlint reads the file at ``path`` (relative, with ``/``)."""
    base = path.rsplit("/", 1)[-1]
    return path.endswith(_KEEP_SUFFIXES) or base in _KEEP_NAMES or bool(_REQUIREMENTS.search(path))


def read_repos(path: Path = HERE / "repos.txt") -> list[tuple[str, str]]:
    """(owner/name, commit) pairs; blank lines and ``#`` comments are skipped."""
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            repo, commit = line.split()
            found.append((repo, commit))
    return found


def _git_dir(clones: Path, repo: str) -> Path | None:
    slug = repo.replace("/", "+")
    for candidate in (clones / slug / "repo", clones / f"{slug}.git", clones / slug):
        if (candidate / "HEAD").exists():
            return candidate
    return None


def export(git_dir: Path, commit: str, out: Path) -> int:
    listing = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", commit],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    count = 0
    for entry in listing:
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, blob = meta.split()
        path = name.decode("utf-8", "replace")
        if kind != b"blob" or mode == b"120000" or not keep(path):
            continue
        data = subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "blob", blob.decode()],
            capture_output=True,
        )
        if data.returncode != 0:
            continue  # a blob the clone lacks (large files): skip it
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.stdout)
        count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clones", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repos", type=Path, default=HERE / "repos.txt")
    args = parser.parse_args(argv)
    missing = 0
    for repo, commit in read_repos(args.repos):
        git_dir = _git_dir(args.clones, repo)
        if git_dir is None:
            print(f"{repo}: no bare clone under {args.clones}", file=sys.stderr)
            missing += 1
            continue
        target = args.out / repo.replace("/", "+")
        if target.exists() and any(target.iterdir()):
            print(f"{repo}: already exported")
            continue
        print(f"{repo}: {export(git_dir, commit, target)} files")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
