"""A Hugging Face hub cache repository as a path: ``.../models--ORG--NAME`` (its ``refs/main``
snapshot) or one of its ``snapshots/REV`` folders, with the repository id and revision the
folder names say (``import-hf``'s model name and provenance, ``plan --weights``).

The hub lays a repository out as ``models--ORG--NAME/{refs/main, snapshots/REV/, blobs/}``,
each snapshot file a link to ``../../blobs/HASH``. Nothing here follows a link: ``refs/main``
is read as a regular file inside the repository (bounded), and the callers open a snapshot's
file only where its link lands inside the same repository (``inside``).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

__all__ = ["CacheError", "Snapshot", "inside", "snapshot_of"]

_PREFIX = "models--"
# A ref names a commit (the hub's: 40 hex digits); a snapshot folder is named after one.
_REVISION = re.compile(r"^[0-9a-f]{7,64}$")


class CacheError(ValueError):
    """A cache repository that cannot be read as one; the message says why and what to do."""


class Snapshot(NamedTuple):
    repository: Path  # .../models--ORG--NAME
    folder: Path  # .../models--ORG--NAME/snapshots/REV
    repo_id: str  # ORG/NAME
    revision: str  # REV

    @property
    def name(self) -> str:
        """The model's name in the repository (NAME)."""
        return self.repo_id.rsplit("/", 1)[-1]

    @property
    def provenance(self) -> str:
        return f"{self.repo_id}@{self.revision}"


def _repo_id(repository: Path) -> str:
    """``models--ORG--NAME`` -> ``ORG/NAME`` (the hub writes ``/`` as ``--``)."""
    rest = repository.name[len(_PREFIX) :]
    org, sep, name = rest.partition("--")
    return f"{org}/{name}" if sep and org and name else rest


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)  # a link to a folder is not one
    except OSError:
        return False


def snapshot_of(path: Path) -> Snapshot | None:
    """``path`` as a cache repository (its ``refs/main`` snapshot, else its only one) or a
    snapshot folder of one; None where it is neither. ``CacheError`` for a repository whose
    snapshot cannot be chosen or read."""
    if path.name.startswith(_PREFIX) and _is_folder(path) and _is_folder(path / "snapshots"):
        revision = _main(path)
        folder = path / "snapshots" / revision
        if not _is_folder(folder):
            raise CacheError(
                f"{path}: refs/main names snapshot {revision}, which the cache does not hold "
                "(fetch the model again, or give the snapshot folder)"
            )
        return Snapshot(path, folder, _repo_id(path), revision)
    parent = path.parent
    if parent.name == "snapshots" and parent.parent.name.startswith(_PREFIX) and _is_folder(path):
        return Snapshot(parent.parent, path, _repo_id(parent.parent), path.name)
    return None


def _main(repository: Path) -> str:
    """The revision ``refs/main`` names; without it, the repository's only snapshot."""
    from kvgen._util.files import Refused, read_bytes

    ref = repository / "refs" / "main"
    if os.path.lexists(ref):
        try:
            text = read_bytes(ref, limit=256, root=repository).decode("ascii", "replace").strip()
        except Refused as exc:
            raise CacheError(exc.diagnostic.render()) from None
        if not _REVISION.match(text):
            raise CacheError(f"{ref}: not a commit hash (hex digits); give the snapshot folder")
        return text
    try:
        found = sorted(os.listdir(repository / "snapshots"))
    except OSError as exc:
        raise CacheError(f"{repository}/snapshots: cannot list ({exc.strerror})") from None
    if len(found) != 1:
        held = ", ".join(found[:5]) or "none"
        raise CacheError(
            f"{repository}: no refs/main and {len(found)} snapshots ({held}); give the snapshot "
            "folder (snapshots/REV)"
        )
    return found[0]


def inside(snapshot: Snapshot, name: str) -> Path | None:
    """The file ``name`` of the snapshot, its link resolved; None where it is missing.
    ``CacheError`` where its link lands outside the same repository (never read then)."""
    entry = snapshot.folder / name
    if not os.path.lexists(entry):
        return None
    target = Path(os.path.realpath(entry))
    if not target.is_relative_to(Path(os.path.realpath(snapshot.repository))):
        raise CacheError(
            f"{entry} links outside its repository {snapshot.repository}; kvgen reads "
            "only files inside the cache (fetch the file again, or give a copy's path)"
        )
    return target
