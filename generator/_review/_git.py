"""The git side of a review: which ref to compare, and the entries of that commit.

The ref and everything committed at it are untrusted. A ref is checked before git sees it
(never empty, never an option), and the commit's trees are read by object id only, with
NUL-separated, unquoted ``git ls-tree -z`` output: no pathspec, no quoting of non-ASCII names
(``core.quotePath``), and no symlink ever followed. A path is looked up component by component,
so a symlink or submodule on the way is reported as what it is, never resolved.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kvgen._review._types import ReviewError

__all__ = ["Entry", "GitTree", "default_ref"]

# Git's modes, as ``ls-tree`` prints them, in the words a diagnostic uses.
_KINDS = {
    "100644": "file",
    "100755": "file",
    "040000": "dir",
    "120000": "symlink",
    "160000": "submodule",
}


def default_ref(environ: dict[str, str]) -> str:
    """``origin/$GITHUB_BASE_REF`` in a GitHub pull-request job, ``HEAD`` anywhere else."""
    base = environ.get("GITHUB_BASE_REF", "").strip()
    return f"origin/{base}" if base else "HEAD"


@dataclass(frozen=True)
class Entry:
    """One entry of a tree at the commit: ``kind`` is file, dir, symlink, submodule or other."""

    path: str  # relative to the repository root, POSIX
    kind: str
    oid: str
    size: int | None  # blobs only


class GitTree:
    """Read-only access to the entries of one commit, with paths relative to ``cwd``."""

    def __init__(self, ref: str, cwd: Path):
        self.cwd = cwd.resolve()
        top = self._git("rev-parse", "--show-toplevel")
        if top.returncode:
            raise ReviewError(f"{self.cwd} is not in a git repository; kvgen diff compares a ref")
        self.root = Path(os.fsdecode(top.stdout.rstrip(b"\n"))).resolve()
        try:
            self.base = self.cwd.relative_to(self.root).as_posix()  # "." at the root
        except ValueError:  # inside .git, or a checkout reached another way: no work tree here
            raise ReviewError(f"{self.cwd} is not inside the work tree at {self.root}") from None
        bad = not ref or ref.startswith("-")
        commit = None if bad else self._git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if commit is None or commit.returncode:
            hint = " (in CI, fetch it: actions/checkout with fetch-depth: 0)" if "/" in ref else ""
            raise ReviewError(f"unknown git ref {ref!r}{hint}")
        self.ref = ref
        self.commit = commit.stdout.decode().strip()
        tree = self._git("rev-parse", "--verify", "--quiet", f"{self.commit}^{{tree}}")
        self._root_tree = tree.stdout.decode().strip()
        self._listings: dict[str, dict[str, Entry]] = {}

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        cwd = getattr(self, "root", self.cwd)
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)

    def rel(self, path: Path) -> str | None:
        """``path`` (relative to ``cwd``, or absolute) relative to the repository root, joined
        lexically: a symlink in the working tree must not decide which path is read at the
        ref. ``""`` is the root itself; ``None`` a path outside the repository."""
        if path.is_absolute():
            try:
                joined = PurePosixPath(os.path.normpath(path)).relative_to(self.root).as_posix()
            except ValueError:
                return None
        else:
            joined = posixpath.normpath(posixpath.join(self.base, path.as_posix()))
        if joined == ".":
            return ""
        return None if joined == ".." or joined.startswith("../") else joined

    def display(self, rel: str) -> str:
        """A repository path as the user named it: relative to ``cwd``."""
        return posixpath.relpath(rel or ".", self.base)

    def _listing(self, tree: str, prefix: str) -> dict[str, Entry]:
        """The entries of the tree object ``tree`` (at ``prefix``), by name: ``ls-tree -z``."""
        if tree not in self._listings:
            out = self._git("ls-tree", "-z", "--long", tree)
            entries = {}
            for record in out.stdout.split(b"\0") if out.returncode == 0 else []:
                meta, tab, raw_name = record.partition(b"\t")
                fields = meta.split()
                if not tab or len(fields) != 4:
                    continue
                mode, _type, oid, size = (field.decode() for field in fields)
                name = os.fsdecode(raw_name)
                path = f"{prefix}/{name}" if prefix else name
                kind = _KINDS.get(mode, "other")
                entries[name] = Entry(path, kind, oid, int(size) if size.isdigit() else None)
            self._listings[tree] = entries
        return self._listings[tree]

    def lookup(self, rel: str) -> Entry | None:
        """The entry at ``rel``, or the first entry on the way that is not a directory (a
        symlinked folder: its ``path`` is then a prefix of ``rel``), or ``None`` when absent."""
        if rel == "":
            return Entry("", "dir", self._root_tree, None)
        tree, prefix = self._root_tree, ""
        parts = rel.split("/")
        for i, name in enumerate(parts):
            entry = self._listing(tree, prefix).get(name)
            if entry is None or i == len(parts) - 1 or entry.kind != "dir":
                return entry
            tree, prefix = entry.oid, entry.path
        return None  # pragma: no cover - the loop returns at the last part

    def children(self, directory: Entry) -> list[Entry]:
        """The entries directly inside a ``dir`` entry."""
        return list(self._listing(directory.oid, directory.path).values())

    def read(self, entry: Entry) -> bytes:
        """The bytes of a regular file entry (by object id: nothing is resolved)."""
        assert entry.kind == "file", entry
        return self._git("cat-file", "blob", entry.oid).stdout

    def read_file(self, path: Path) -> bytes | None:
        """The bytes of ``path`` at the commit if it is a regular file there, else ``None``."""
        rel = self.rel(path)
        entry = None if rel is None else self.lookup(rel)
        if entry is None or entry.kind != "file" or entry.path != rel:
            return None
        return self.read(entry)
