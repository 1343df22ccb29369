"""The working-tree side of a review, read like the ref side: no symlink is ever followed.

``lookup`` and ``children`` list the checkout (a pull request's files) with ``os.lstat``, and
``read`` reads a file through ``kvgen._util.files``, the one file-access layer.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kvgen._review._git import Entry

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
    """At most ``limit`` bytes of a regular file entry, read through ``kvgen._util.files`` (no link
    followed, regular files only); ``None`` if it is no longer one or cannot be read (the
    caller reports it; it checked the size before)."""
    from kvgen._util.files import Refused, read_bytes

    try:
        return read_bytes(root / entry.path, limit=limit, root=root)
    except Refused:
        return None
