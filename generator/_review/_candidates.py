"""Which spec paths a review compares, and what each one is at the ref and in the working tree.

Both sides are compared by path, entry by entry, and nothing is resolved: a symlink (KV401) or
any other entry that is not a regular file (KV402), at either side, for a spec or a folder on
its path, is a finding at that path. It is never read, never "added" and never "removed".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import kvgen._review._worktree as worktree
from kvgen._generate.project import SPEC_DIR, SPEC_SUFFIXES
from kvgen._review._git import Entry, GitTree
from kvgen._review._types import Review, ReviewError
from kvgen._spec.loader import MAX_BYTES, display_path
from kvgen._util.codes.reader import FILE_TOO_LARGE, UNREADABLE_FILE
from kvgen._util.codes.review import IRREGULAR_SPEC, SYMLINKED_SPEC
from kvgen._util.diagnostics import Diagnostic

__all__ = ["Candidate", "collect", "new_bytes", "old_bytes"]

_NOT_REGULAR = {
    "submodule": "a submodule (git mode 160000)",
    "dir": "a folder",
    "file": "a file",  # on the path of a spec, where a folder should be (never the spec)
    "other": "neither a regular file nor a folder (a device, FIFO or socket)",
}


@dataclass(frozen=True)
class Candidate:
    """One spec path and its entry on each side (``None``: absent there). An entry whose
    ``path`` is shorter than ``rel`` is what blocks the way there (a symlinked folder)."""

    path: Path  # as the user names it, relative to the current directory
    rel: str  # relative to the repository root
    old: Entry | None
    new: Entry | None


def _refusal(entry: Entry, rel: str, side: str, tree: GitTree) -> Diagnostic | None:
    """The finding for an entry that is not the regular spec file at ``rel`` (``None`` when it
    is); ``side`` prefixes the path: ``"REF:"`` for the old side, ``""`` for the working tree."""
    if entry.kind == "file" and entry.path == rel:
        return None
    where = display_path(f"{side}{tree.display(entry.path)}")
    own = entry.path == rel
    subject = "path" if own else "entry"
    on_path = "" if own else f" on the path of {display_path(tree.display(rel))}"
    if entry.kind == "symlink":
        message = (
            f"this {subject} is a symlink{on_path}; kvgen diff compares files and never "
            "follows a link"
        )
        return SYMLINKED_SPEC.at(where, (1, 1), message)
    what = _NOT_REGULAR[entry.kind]
    message = f"this {subject} is {what}{on_path}; kvgen diff compares regular files only"
    return IRREGULAR_SPEC.at(where, (1, 1), message)


def _spec_entries(tree: GitTree, entry: Entry | None, old: bool) -> dict[str, Entry]:
    """A side's entries named like a spec directly inside the folder ``entry``, by name."""
    if entry is None or entry.kind != "dir":
        return {}
    inside = tree.children(entry) if old else worktree.children(tree.root, entry)
    return {e.path.rsplit("/", 1)[-1]: e for e in inside if Path(e.path).suffix in SPEC_SUFFIXES}


def _missing(tree: GitTree, arg: Path) -> ReviewError:
    from kvgen._util.suggest import did_you_mean

    # Names for "did you mean", from the working tree without following a link either.
    parent = tree.rel(arg.parent)
    folder = None if parent is None else worktree.lookup(tree.root, parent)
    inside = worktree.children(tree.root, folder) if folder and folder.kind == "dir" else []
    names = [
        (arg.parent / e.path.rsplit("/", 1)[-1]).as_posix()
        for e in inside
        if Path(e.path).suffix in SPEC_SUFFIXES
    ]
    return ReviewError(
        f"{arg.as_posix()}: no such spec in the working tree or at {tree.ref}"
        + did_you_mean(arg.as_posix(), names)
    )


def collect(tree: GitTree, args: Sequence[str | Path]) -> list[Candidate]:
    """Every spec path under ``args`` (default: the spec directory; a folder's spec entries
    directly inside it) with its entry at each side, as found: ``old_bytes`` and ``new_bytes``
    refuse what is not a regular spec file when they read it."""
    found: dict[str, Candidate] = {}
    for arg in [Path(a) for a in args or [SPEC_DIR]]:
        rel = tree.rel(arg)
        if rel is None:
            raise ReviewError(f"{arg.as_posix()}: outside the git repository at {tree.root}")
        old, new = tree.lookup(rel), worktree.lookup(tree.root, rel)
        if old is None and new is None:
            raise _missing(tree, arg)
        if not any(e is not None and e.kind == "dir" and e.path == rel for e in (old, new)):
            found.setdefault(rel, Candidate(arg, rel, old, new))
            continue
        # A folder on one side and something else on the other: a link (or else) is refused; a
        # spec that became a folder (or the reverse) is still read on its side.
        if old is not None and not (old.kind == "dir" and old.path == rel):
            found.setdefault(rel, Candidate(arg, rel, old, None))
        if new is not None and not (new.kind == "dir" and new.path == rel):
            found.setdefault(rel, Candidate(arg, rel, None, new))
        before, after = _spec_entries(tree, old, True), _spec_entries(tree, new, False)
        for name in sorted(before.keys() | after.keys()):
            child = f"{rel}/{name}" if rel else name
            found.setdefault(child, Candidate(arg / name, child, before.get(name), after.get(name)))
    return sorted(found.values(), key=lambda candidate: candidate.path)


def _bytes(
    entry: Entry | None,
    rel: str,
    side: str,
    tree: GitTree,
    review: Review,
    read: Callable[[Entry], bytes | None],
) -> bytes | None:
    """A side's spec bytes, or ``None`` (absent, or refused with its finding in ``review``)."""
    if entry is None:
        return None
    refused = _refusal(entry, rel, side, tree)
    if refused is not None:
        if refused not in review.diagnostics:  # a blocking folder, named once for all below
            review.diagnostics.append(refused)
        return None
    where = display_path(f"{side}{tree.display(rel)}")
    assert entry.size is not None
    if entry.size > MAX_BYTES:  # checked before reading, the same limit as the loader's
        message = f"file is {entry.size} bytes, over the {MAX_BYTES}-byte limit"
        review.diagnostics.append(FILE_TOO_LARGE.at(where, (1, 1), message))
        return None
    raw = read(entry)
    if raw is None:
        review.diagnostics.append(UNREADABLE_FILE.at(where, (1, 1), "cannot read file"))
    return raw


def old_bytes(candidate: Candidate, tree: GitTree, review: Review) -> bytes | None:
    """The spec at the ref (diagnostics name it ``REF:path``)."""
    return _bytes(candidate.old, candidate.rel, f"{tree.ref}:", tree, review, tree.read)


def new_bytes(candidate: Candidate, tree: GitTree, review: Review) -> bytes | None:
    """The spec in the working tree."""

    def read(entry: Entry) -> bytes | None:
        return worktree.read(tree.root, entry, MAX_BYTES)

    return _bytes(candidate.new, candidate.rel, "", tree, review, read)
