"""The working-tree side of a review, read like the ref side: no symlink is ever followed.

``lookup`` and ``read`` are the only two places ``kvgen diff`` touches the checkout (a pull
request's files); both use ``os.lstat`` / ``O_NOFOLLOW`` locally, so that they can move onto a
shared file-access layer without changing their callers.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kvgen.review._git import Entry

__all__ = ["children", "lookup", "read"]


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "symlink" if stat.S_ISLNK(mode) else "other"


def lookup(root: Path, rel: str) -> Entry | None:
    """Like ``GitTree.lookup`` in the working tree under ``root``: the entry at ``rel``, the
    first non-directory on the way (a symlinked folder), or ``None`` when absent."""
    if rel == "":
        return Entry("", "dir", "", None)
    path = ""
    for name in rel.split("/"):
        path = f"{path}/{name}" if path else name
        try:
            info = os.lstat(root / path)
        except OSError:  # absent, or not reachable: nothing to compare on this side
            return None
        kind = _kind(info.st_mode)
        if kind != "dir" or path == rel:
            return Entry(path, kind, "", info.st_size if kind == "file" else None)
    return None  # pragma: no cover - the loop returns at the last part


def children(root: Path, directory: Entry) -> list[Entry]:
    """The entries directly inside a ``dir`` entry, links not followed."""
    found = []
    try:
        with os.scandir(root / directory.path) as listing:
            for item in listing:
                path = f"{directory.path}/{item.name}" if directory.path else item.name
                info = item.stat(follow_symlinks=False)
                kind = _kind(info.st_mode)
                found.append(Entry(path, kind, "", info.st_size if kind == "file" else None))
    except OSError:
        return []
    return found


def read(root: Path, entry: Entry, limit: int) -> bytes | None:
    """At most ``limit + 1`` bytes of a regular file entry (the caller refuses more), without
    following a link; ``None`` if it is no longer a regular file or cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(root / entry.path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit + 1)
