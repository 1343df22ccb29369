"""The one way kvgen reads and writes files of a working tree (specs, configs, generated files,
``kvgen init``'s files, Hugging Face configs, plots). Everything a pull request controls is
untrusted, so every access obeys the same rules (docs/security.md):

- no symbolic link is ever followed: the file and every folder between the anchor (the
  project root, else the working directory) and the file are checked with ``lstat``, and the
  file is opened with ``O_NOFOLLOW`` (KV020);
- only regular files are read or replaced; a FIFO is opened with ``O_NONBLOCK`` and refused
  after ``fstat``, so nothing blocks (KV021);
- a read takes at most ``limit + 1`` bytes, never the whole file first (the caller's code);
- a write goes through a temporary file and ``os.replace``; where kvgen decides the place it
  stays below ``inside`` (KV022); a failed write is KV023 and leaves nothing behind.

A refusal is a ``Refused`` exception carrying one positioned diagnostic (``path:1:1``: it is
about the whole file); ``cli.main`` prints it, so no refusal is ever an internal error.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvgen._util.escaping import is_control
from kvgen._util.exits import Exit

if TYPE_CHECKING:  # the code registry loads only when something is refused: `kvgen --version`
    from kvgen._util.codes._registry import Code  # and every command's start-up stay light
    from kvgen._util.diagnostics import Diagnostic
    from matplotlib.figure import Figure

__all__ = [
    "MAX_GENERATED_BYTES",
    "Refused",
    "chain",
    "check_output_dir",
    "check_writable",
    "display_path",
    "exists",
    "make_dirs",
    "not_regular",
    "path_problem",
    "read_bytes",
    "refuse_link",
    "umask",
    "write_bytes",
    "write_failed",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # 0 on Windows: the lstat checks still hold
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_CHUNK = 1 << 16
# A generated module is ~100 KB: the bound of a committed one read (``kvgen._generate.writer``) or
# imported from an output folder (``kvgen plan --generated``).
MAX_GENERATED_BYTES = 32 << 20


class Refused(Exception):
    """A file kvgen will not touch; ``diagnostic`` says which, why and how to fix it."""

    def __init__(self, diagnostic: Diagnostic, exit: Exit = Exit.FINDINGS):
        super().__init__(diagnostic.render())
        self.diagnostic = diagnostic
        self.exit = exit


# --- naming paths in diagnostics ------------------------------------------------------------


def path_problem(path: str | Path) -> str | None:
    """Why a spec path may not be read or named (KV011), ``None`` when it may."""
    text = Path(path).as_posix()
    if text.isprintable():  # str.isprintable: no C* or Z* character but the space (fast path)
        return None
    bad = sorted({char for char in text if is_control(char)})
    if not bad:
        return None
    return "file name contains " + ", ".join(f"U+{ord(char):04X}" for char in bad)


def display_path(path: str | Path) -> str:
    """The path as diagnostics show it: POSIX separators, control characters escaped
    (``\\n``, ``\\x1b``, ``\\u2028``) so that a file name can never break an output line."""
    text = Path(path).as_posix()
    if text.isprintable() or not any(is_control(char) for char in text):
        return text
    return "".join(
        char.encode("unicode_escape").decode("ascii") if is_control(char) else char for char in text
    )


# --- the checks -------------------------------------------------------------------------------


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def chain(path: str | Path, anchor: Path | None) -> list[str]:
    """The folders below ``anchor`` on the way to ``path`` (absolute, not resolved), then
    ``path``; only ``path`` when it is not below the anchor (the user named it). Strings, not
    ``Path``: this runs for every file kvgen reads."""
    absolute = os.path.abspath(path)
    base = os.path.abspath(anchor if anchor is not None else os.getcwd())
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not absolute.startswith(prefix):
        return [absolute]
    found, current = [], base
    for part in absolute[len(prefix) :].split(os.sep):
        current = os.path.join(current, part)
        found.append(current)
    return found


def _shown(component: str | Path, path: Path) -> str:
    """``component`` as the user would name it: relative like ``path`` when ``path`` is."""
    if path.is_absolute():
        return display_path(component)
    return display_path(os.path.relpath(component))


def refuse_link(path: str | Path, component: str | Path) -> Refused:
    """KV020 for ``path``, whose ``component`` (itself, or a folder on the way) is a link."""
    try:  # where it points, escaped: the reviewer sees it; kvgen never goes there
        target = f" to {display_path(os.readlink(component))}"
    except OSError:
        target = ""
    path = Path(path)
    if os.path.abspath(component) == os.path.abspath(path):
        message = f"is a symbolic link{target}; kvgen never follows one"
    else:
        message = (
            f"passes through a symbolic link ({_shown(component, path)}{target}); "
            "kvgen never follows one"
        )
    from kvgen._util.codes import files

    return Refused(files.SYMBOLIC_LINK.at(display_path(path), (1, 1), message))


def _check_folders(path: Path, chain: list[str]) -> None:
    """Every folder on the way must be a real folder (a missing one is left to the caller)."""
    for component in chain[:-1]:
        try:
            mode = os.lstat(component).st_mode
        except FileNotFoundError:
            return
        except OSError:
            continue  # the open below reports it with the file's own words
        if stat.S_ISLNK(mode):
            raise refuse_link(path, component)


def exists(path: Path) -> bool:
    """Whether anything (a link included) is at ``path``; never follows a link."""
    return os.path.lexists(path)


# --- reading ----------------------------------------------------------------------------------


def read_bytes(
    path: str | Path, *, limit: int, too_large: Code | None = None, root: Path | None = None
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them, or ``Refused``.

    ``root`` anchors the folder checks (default: the working directory); ``too_large`` is the
    caller's size code (default KV024).
    """
    path = Path(path)
    display = display_path(path)
    steps = chain(path, root)
    _check_folders(path, steps)
    try:
        before = os.lstat(steps[-1])
        if stat.S_ISLNK(before.st_mode):
            raise refuse_link(path, steps[-1])
        if not stat.S_ISREG(before.st_mode):
            raise not_regular(display, before.st_mode)
        fd = os.open(steps[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | _BINARY)
    except OSError as exc:
        raise _unreadable(display, exc) from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise not_regular(display, now.st_mode, changed=True)
        if now.st_size > limit:
            raise _too_large(display, too_large, now.st_size, limit)
        chunks, total = [], 0
        while total <= limit:  # bound + 1 bytes at most: a file may grow while it is read
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise _unreadable(display, exc) from None
    finally:
        os.close(fd)
    if total > limit:
        raise _too_large(display, too_large, total, limit, grew=True)
    return b"".join(chunks)


def not_regular(display: str, mode: int, changed: bool = False) -> Refused:
    message = f"is {_kind(mode)}, not a regular file; kvgen reads and writes regular files only"
    if changed:
        message = "was replaced while being opened; kvgen reads regular files only"
    from kvgen._util.codes import files

    return Refused(files.NOT_A_REGULAR_FILE.at(display, (1, 1), message))


def _too_large(
    display: str, code: Code | None, size: int, limit: int, grew: bool = False
) -> Refused:
    if code is None:
        from kvgen._util.codes import files

        code = files.OVERSIZED_FILE
    size_text = f"over {limit} bytes" if grew else f"{size} bytes"
    return Refused(code.at(display, (1, 1), f"file is {size_text}, over the {limit}-byte limit"))


def _unreadable(display: str, exc: OSError) -> Refused:
    from kvgen._util.codes import reader

    reason = exc.strerror or type(exc).__name__
    return Refused(reader.UNREADABLE_FILE.at(display, (1, 1), f"cannot read file: {reason}"))


# --- writing ----------------------------------------------------------------------------------


def _outside(path: Path, inside: Path) -> Refused:
    from kvgen._util.codes import files

    return Refused(
        files.OUTSIDE_PROJECT.at(
            display_path(path),
            (1, 1),
            f"is outside {display_path(inside)}; kvgen writes only there",
        )
    )


def write_failed(path: str | Path, exc: OSError) -> Refused:
    """KV023 for ``path``: the operating system's reason, as a finding (exit 2)."""
    reason = exc.strerror or type(exc).__name__
    what = f" {display_path(os.path.relpath(exc.filename))}" if exc.filename else ""
    message = f"cannot write{what}: {reason}; nothing was changed"
    from kvgen._util.codes import files

    return Refused(files.WRITE_FAILED.at(display_path(path), (1, 1), message), Exit.USAGE)


def make_dirs(directory: Path, *, root: Path | None = None, inside: Path | None = None) -> None:
    """Create ``directory`` and its missing parents; none of them may be a link or a file."""
    directory = Path(directory)
    if inside is not None and not _is_below(directory, inside, proper=False):
        raise _outside(directory, inside)
    for component in chain(directory, root):
        try:
            mode = os.lstat(component).st_mode
        except FileNotFoundError:
            try:
                os.mkdir(component)
            except FileExistsError:
                mode = os.lstat(component).st_mode
            except OSError as exc:
                raise write_failed(component, exc) from None
            else:
                continue
        if stat.S_ISLNK(mode):
            raise refuse_link(directory, component)
        if not stat.S_ISDIR(mode):
            raise not_regular(display_path(component), mode)


def check_writable(
    path: str | Path,
    *,
    root: Path | None = None,
    inside: Path | None = None,
    directory: bool = False,
) -> None:
    """``Refused`` when writing ``path`` (a file, or a folder with ``directory``) would break
    a rule; creates and changes nothing, so a command can check every target before it
    writes the first one."""
    path = Path(path)
    if inside is not None and not _is_below(path, inside, proper=not directory):
        raise _outside(path, inside)
    steps = chain(path, root)
    for component in steps:
        try:
            mode = os.lstat(component).st_mode
        except FileNotFoundError:
            return  # this and what follows will be created
        except OSError as exc:
            raise write_failed(component, exc) from None
        if stat.S_ISLNK(mode):
            raise refuse_link(path, component)
        wanted = stat.S_ISREG if component == steps[-1] and not directory else stat.S_ISDIR
        if not wanted(mode):
            raise not_regular(display_path(component), mode)


def _is_below(path: Path, inside: Path, *, proper: bool) -> bool:
    absolute = Path(os.path.abspath(path))
    base = Path(os.path.abspath(inside))
    if absolute == base:
        return not proper
    return base in absolute.parents


def check_output_dir(out: Path, root: Path) -> None:
    """An output tree must be a proper sub-directory of the project root, or outside it: never
    the root itself nor a folder that holds it (a swap would replace the whole project)."""
    absolute, base = Path(os.path.abspath(out)), Path(os.path.abspath(root))
    if absolute == base or absolute in base.parents:
        from kvgen._util.codes import files

        raise Refused(
            files.OUTSIDE_PROJECT.at(
                display_path(out),
                (1, 1),
                f"the output directory may not be the project root {display_path(base)} or hold "
                "it; kvgen replaces its output directory whole",
            )
        )


def umask() -> int:
    mask = os.umask(0)  # the only portable way to read it; restored at once
    os.umask(mask)
    return mask


def write_bytes(
    path: str | Path,
    data: bytes,
    *,
    root: Path | None = None,
    inside: Path | None = None,
) -> None:
    """Replace or create the regular file ``path`` atomically (temporary file, ``os.replace``).

    Folders on the way are created; a link or non-regular file on the way or at ``path`` is
    refused; with ``inside`` the file must lie below it. The mode is what the umask allows.
    """
    path = Path(path)
    check_writable(path, root=root, inside=inside)
    make_dirs(path.parent, root=root)
    import tempfile  # (imports random: only for a write)

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp creates 0600
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise write_failed(path, exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def save_figure(figure: Figure, path: str | Path, **options: Any) -> None:  # savefig's options
    """Render ``figure`` in memory (format from the suffix, PNG by default) and write it with
    ``write_bytes``: a plot path obeys the same rules as every other file kvgen writes."""
    import io

    from kvgen._util.exits import UsageError

    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    supported = figure.canvas.get_supported_filetypes()
    if suffix not in supported:
        raise UsageError(
            f"--plot {display_path(path)}: no image format .{suffix} "
            f"(one of: {', '.join(sorted(supported))})"
        )
    buffer = io.BytesIO()
    figure.savefig(buffer, **{"format": suffix, **options})
    write_bytes(path, buffer.getvalue())
