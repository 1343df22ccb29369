"""Compare rendered output with a directory, and swap the whole new tree in at once.

``plan`` is pure (reads only). ``apply`` never edits the output directory in place: under a
lock it builds the complete new tree in a sibling staging directory (unchanged files hard
linked, or copied), then exchanges it with the old tree in one step, so that a run killed at
any point leaves the old tree or the new one, never a mix of families:

- Linux: ``renameat2(RENAME_EXCHANGE)`` swaps the two directories atomically;
- elsewhere: two renames, and the next run finishes or undoes a swap that was cut between
  them (the staging directory is complete once its ``.kvgen-complete`` marker exists).

Staging and backup directories and ``.*.tmp`` files left by a killed run are removed by the
next one. Files are created with ``open``, so they get the mode the umask allows. The tree is
read through ``kvgen._util.files``: a link anywhere in it, or on the way to it, is refused and
nothing is written (docs/security.md, "File access"); a failed write removes the stage.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kvgen._spec.output_size import MAX_GENERATED_BYTES  # bounds a committed file read
from kvgen._util import files
from kvgen._util.diagnostics import Diagnostic

__all__ = ["LockHeld", "WritePlan", "apply", "output_lock", "plan", "write_atomic"]

log = logging.getLogger("kvgen")

COMPLETE = ".kvgen-complete"  # written last into a staging directory
LOCK_WAIT_S = 60.0
# Test hook: pause after staging this many files (kill -9 tests). Set only by the person
# running kvgen, never read from a spec, config or ref.
PAUSE_ENV = "KVGEN_TEST_PAUSE_AFTER_FILES"
# Beside the output tree <out>: .<out>.kvgen.lock, and what a killed run may leave behind.
LOCK_SUFFIX, STAGE_SUFFIX, BACKUP_SUFFIX = ".kvgen.lock", ".kvgen-stage", ".kvgen-old"


class LockHeld(Exception):
    """Another kvgen holds the output directory's lock for longer than we wait."""


@dataclass
class WritePlan:
    out_dir: Path
    rendered: dict[str, str]
    changed: list[str] = field(default_factory=list)  # exists, differs
    missing: list[str] = field(default_factory=list)  # not on disk yet
    orphaned: list[str] = field(default_factory=list)  # carries our header, nothing renders it
    unchanged: list[str] = field(default_factory=list)
    prune: bool = False
    # Links, FIFOs, devices and oversized files in the tree: nothing is read through them,
    # nothing is written while there are any (KV020, KV021, KV024).
    refused: list[Diagnostic] = field(default_factory=list)
    root: Path | None = None  # the project root (see ``plan``)
    on_disk: dict[str, bytes] = field(default_factory=dict)  # what was read, for ``diff``

    @property
    def drift(self) -> bool:
        return bool(self.changed or self.missing or self.orphaned or self.refused)

    def diff(self) -> str:
        """A unified diff from what is on disk to what would be written."""
        import difflib  # only when drift is reported

        chunks: list[str] = []
        for rel in sorted(self.changed + self.missing + self.orphaned):
            try:
                old = self.on_disk.get(rel, b"").decode("utf-8")
            except UnicodeDecodeError:
                old = ""
            new = self.rendered.get(rel, "")
            chunks.extend(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=f"a/{(self.out_dir / rel).as_posix()}",
                    tofile=f"b/{(self.out_dir / rel).as_posix()}",
                )
            )
        return "".join(chunks)


def _tree(out_dir: Path, refused: list[Diagnostic]) -> list[str]:
    """Every regular ``*.py`` under ``out_dir`` (relative, sorted); a link anywhere in the
    tree is refused (KV020) and never entered, so nothing is read or written through it."""
    found = []
    # os.walk, not rglob: it skips a folder that another run's swap or prune just removed,
    # and it never descends into a link.
    for root, folders, names in os.walk(out_dir):
        for name in sorted(folders + names):
            path = Path(root, name)
            if path.is_symlink():
                refused.append(files.refuse_link(path, path).diagnostic)
            elif name in names and name.endswith(".py"):
                found.append(path.relative_to(out_dir).as_posix())
    return sorted(found)


def _check_out_dir(out_dir: Path, root: Path | None) -> None:
    """The output directory: never the project root or above it, no link on the way to it
    or at it, a folder if it exists (``Refused`` otherwise)."""
    if root is not None:
        files.check_output_dir(out_dir, root)
    files.check_writable(out_dir, root=root, directory=True)


def plan(
    rendered: dict[str, str], out_dir: Path, *, prune: bool, root: Path | None = None
) -> WritePlan:
    """What writing ``rendered`` into ``out_dir`` would change; ``prune`` looks for orphans.

    ``root`` is the project root: the output may not be it or hold it, and no folder between
    it and the output may be a link. Everything is read through ``kvgen._util.files``.
    """
    _check_out_dir(out_dir, root)
    result = WritePlan(out_dir, rendered, prune=prune, root=root)
    on_disk = _tree(out_dir, result.refused) if out_dir.is_dir() else []
    if result.refused:
        return result  # a link in the tree: read nothing more, write nothing
    present = set(on_disk)
    for rel, text in sorted(rendered.items()):
        if rel not in present and not files.exists(out_dir / rel):
            result.missing.append(rel)
            continue
        old = _read(out_dir, rel, result)
        if old is not None:
            (result.unchanged if old == text.encode("utf-8") else result.changed).append(rel)
    if prune:
        from kvgen._generate.render import (
            HEADER_PREFIX,  # render pulls in jinja2; keep writer light
        )

        for rel in on_disk:
            if rel in rendered:
                continue
            old = _read(out_dir, rel, result)
            if old is not None and old.startswith(HEADER_PREFIX.encode("utf-8")):
                result.orphaned.append(rel)
    return result


def _read(out_dir: Path, rel: str, result: WritePlan) -> bytes | None:
    try:
        data = files.read_bytes(out_dir / rel, limit=MAX_GENERATED_BYTES, root=out_dir)
    except files.Refused as exc:
        result.refused.append(exc.diagnostic)
        return None
    result.on_disk[rel] = data
    return data


def write_atomic(path: Path, text: str, *, root: Path | None = None) -> None:
    """Write one file through a temporary file and ``os.replace`` (``kvgen._util.files``).

    For single files (``kvgen import-hf``, ``schema``, ``explain``); a generated tree is
    written by ``apply``.
    """
    files.write_bytes(path, text.encode("utf-8"), root=root)  # bytes: "\n" on every platform


# --- the lock ----------------------------------------------------------------------------


def lock_path(out_dir: Path) -> Path:
    """``<parent>/.<out>.kvgen.lock``: beside the tree, so swapping the tree keeps the lock."""
    out = out_dir.resolve()
    return out.parent / f".{out.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def output_lock(out_dir: Path, wait_s: float | None = None) -> Iterator[None]:
    """Hold the output directory's lock (``flock``; ``O_EXCL`` where there is none)."""
    wait_s = LOCK_WAIT_S if wait_s is None else wait_s
    path = lock_path(out_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield from _exclusive_file(path, wait_s)
        return
    try:  # O_NOFOLLOW: a committed link in the lock's place never creates or opens its target
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError:
        if os.path.islink(path):
            raise files.refuse_link(path, path) from None
        raise
    try:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockHeld(_held_message(path, wait_s)) from None
                if not told:
                    log.info("waiting for another kvgen writing %s (lock %s)", out_dir, path)
                    told = True
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _exclusive_file(path: Path, wait_s: float) -> Iterator[None]:  # pragma: no cover - Windows
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise LockHeld(_held_message(path, wait_s)) from None
            time.sleep(0.05)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _held_message(path: Path, wait_s: float) -> str:
    return (
        f"another kvgen is writing the output directory (lock {path} held for more than "
        f"{wait_s:.0f} s); wait for it to finish, or remove the lock file if no kvgen runs"
    )


# --- staging and swapping ------------------------------------------------------------------


def _stage_dir(out: Path) -> Path:
    return out.parent / f".{out.name}{STAGE_SUFFIX}"


def _backup_dir(out: Path) -> Path:
    return out.parent / f".{out.name}{BACKUP_SUFFIX}"


def _rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def recover(out_dir: Path) -> None:
    """Finish or undo a swap cut short by a killed run, then remove what it left behind.

    Call with the lock held.
    """
    out = out_dir.resolve()
    stage, backup = _stage_dir(out), _backup_dir(out)
    if not out.exists():
        if (stage / COMPLETE).exists():
            os.rename(stage, out)  # the new tree was complete: finish the swap
            (out / COMPLETE).unlink()
        elif backup.exists():
            os.rename(backup, out)  # the new tree was not: put the old one back
    (out / COMPLETE).unlink(missing_ok=True)  # killed between the exchange and its cleanup
    for leftover in (stage, backup):
        if leftover.exists() or leftover.is_symlink():
            log.info("removing %s left by an interrupted run", leftover)
            _rmtree(leftover)
    if out.is_dir():
        for tmp in out.rglob(".*.tmp"):
            if tmp.is_file():
                log.info("removing %s left by an interrupted run", tmp)
                tmp.unlink()


def _leftovers(out: Path) -> bool:
    """Whether a killed run left anything for ``recover`` (cheap; no lock needed)."""
    if _stage_dir(out).exists() or _backup_dir(out).exists() or (out / COMPLETE).exists():
        return True
    return out.is_dir() and any(p.is_file() for p in out.rglob(".*.tmp"))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _pause_for_tests(count: int) -> None:
    after = os.environ.get(PAUSE_ENV, "")
    if after.isdigit() and count == int(after):
        marker = os.environ.get(PAUSE_ENV + "_MARKER")
        if marker:
            Path(marker).write_text(str(os.getpid()))
        time.sleep(60)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux ``renameat2``); ``False`` where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # ~3 ms: only when a directory is swapped in

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if result == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False  # old kernel or a filesystem without RENAME_EXCHANGE
    raise OSError(err, os.strerror(err), str(a))


def apply(result: WritePlan) -> list[str]:
    """Write the new tree and swap it in; return the paths that changed (none: no write).

    Takes the output directory's lock for the whole run, so concurrent runs serialise. A tree
    with a link in it is refused (``files.Refused``); a failed write (disk full, read-only)
    is ``files.Refused`` (KV023) too, after the staging directory is removed: the old tree
    stays as it was.
    """
    if result.refused:
        raise files.Refused(result.refused[0])
    out = result.out_dir.resolve()  # no link at or below the root on the way: plan checked
    try:
        return _apply(result, out)
    except OSError as exc:  # the lock, the staging tree or the swap: nothing changed
        raise files.write_failed(result.out_dir, exc) from None


def _apply(result: WritePlan, out: Path) -> list[str]:
    if not result.drift:
        if _leftovers(out):
            with output_lock(out):
                recover(out)
        return []
    with output_lock(out):
        recover(out)
        result = plan(result.rendered, out, prune=result.prune, root=result.root)  # re-read
        if result.refused:
            raise files.Refused(result.refused[0])
        touched = sorted(result.changed + result.missing + result.orphaned)
        if not touched:
            return []
        try:
            _stage_and_swap(result, out)
        except OSError:
            with contextlib.suppress(OSError):  # still under the lock: no other run's stage
                recover(out)  # removes an incomplete stage; a complete one finishes the swap
            raise
    return touched


def _stage_and_swap(result: WritePlan, out: Path) -> None:
    """Build the complete new tree beside ``out``, then swap it in (call with the lock)."""
    stage = _stage_dir(out)
    if out.is_dir():
        shutil.copytree(out, stage, symlinks=True, copy_function=_link_or_copy)
    else:
        stage.mkdir(parents=True)
    orphaned = [rel for rel in result.orphaned if rel not in result.rendered]
    for rel in orphaned:
        (stage / rel).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # the family's folder, once nothing is left
            (stage / rel).parent.rmdir()
    for count, rel in enumerate(sorted(result.changed + result.missing), 1):
        target = stage / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # a hard link: never write through it
        with open(target, "xb") as handle:  # mode: 0o666 & ~umask
            handle.write(result.rendered[rel].encode("utf-8"))  # "\n" on every platform
        _pause_for_tests(count)
    (stage / COMPLETE).touch()
    _swap(stage, out)


def _swap(stage: Path, out: Path) -> None:
    if not out.exists():
        os.rename(stage, out)
    elif _exchange(stage, out):
        pass  # stage now holds the old tree
    else:  # pragma: no cover - not Linux; a cut here is finished by ``recover``
        backup = _backup_dir(out)
        os.rename(out, backup)
        os.rename(stage, out)
        stage = backup
    (out / COMPLETE).unlink()
    _rmtree(stage)
