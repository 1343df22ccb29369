"""Load a spec file into a ``Family``, keeping every node's source position.

Reading is three steps, each in its own module: bytes to text here (size, encoding, file
name), text to positioned plain values in ``kvgen.composer`` (YAML 1.2 core only, bounded
depth and size), and values to a validated ``Family`` with pydantic, whose errors
``kvgen.schema_errors`` maps back to positions in kvgen's own words.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvgen.codes import reader as codes
from kvgen.composer import MAX_DEPTH, MAX_NODES, SourceMap, Unreadable, compose
from kvgen.diagnostics import Diagnostic, SpecError
from kvgen.escaping import is_control as _is_control
from kvgen.exits import UsageError
from kvgen.lines import line_break_diagnostics
from kvgen.spec import Family
from pydantic import ValidationError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "SPEC_SUFFIXES",
    "LoadedSpec",
    "SourceMap",
    "display_path",
    "expand_paths",
    "load_bytes",
    "load_family",
    "load_path",
    "parse_yaml",
]

MAX_BYTES = 4 << 20
SPEC_SUFFIXES = (".yaml", ".yml")


@dataclass
class LoadedSpec:
    path: str
    data: dict[str, Any]
    source: SourceMap
    family: Family | None
    diagnostics: list[Diagnostic]
    raw: bytes = b""  # the file, for its `# kvgen: noqa` comments (kvgen.noqa); set once valid


def _position_of_offset(raw: bytes, offset: int) -> tuple[int, int]:
    before = raw[:offset]
    line = before.count(b"\n") + 1
    col = offset - (before.rfind(b"\n") + 1) + 1
    return line, col


def _decode(path: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        raise Unreadable(
            codes.FILE_TOO_LARGE.at(
                path, (1, 1), f"file is {len(raw)} bytes, over the {MAX_BYTES}-byte limit"
            )
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            codes.NOT_UTF8.at(
                path,
                _position_of_offset(raw, exc.start),
                f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            )
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def parse_yaml(path: str, raw: bytes) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Bytes to plain data with positions; never raises on bad input."""
    try:
        text = _decode(path, raw)
    except Unreadable as exc:
        return None, SourceMap(), [exc.diagnostic]
    breaks = line_break_diagnostics(path, text)  # before YAML sees them: it would split there
    if breaks:
        return None, SourceMap(), breaks
    try:
        data, source, diagnostics = compose(path, text)
    except Unreadable as exc:
        return None, SourceMap(), [exc.diagnostic]
    if not isinstance(data, dict) and not diagnostics:
        kind = "a list" if isinstance(data, list) else type(data).__name__
        diagnostics.append(
            codes.NOT_A_MAPPING.at(
                path, source.value(()), f"top level must be a mapping, found {kind}"
            )
        )
    return data, source, diagnostics


def load_bytes(path: str, raw: bytes) -> LoadedSpec:
    """Parse and validate; structural problems become diagnostics, never exceptions."""
    data, source, diagnostics = parse_yaml(path, raw)
    if diagnostics or not isinstance(data, dict):
        return LoadedSpec(path, data if isinstance(data, dict) else {}, source, None, diagnostics)
    try:
        family = Family.model_validate(data)
    except ValidationError as exc:
        from kvgen.schema_errors import validation_diagnostics  # only for refused specs

        found = validation_diagnostics(path, exc, source, data)
        return LoadedSpec(path, data, source, None, found)
    return LoadedSpec(path, data, source, family, [], raw)


def path_problem(path: str | Path) -> str | None:
    """Why a spec path may not be read or named (KV011), ``None`` when it may."""
    text = Path(path).as_posix()
    if text.isprintable():  # str.isprintable: no C* or Z* character but the space (fast path)
        return None
    bad = sorted({char for char in text if _is_control(char)})
    if not bad:
        return None
    return "file name contains " + ", ".join(f"U+{ord(char):04X}" for char in bad)


def display_path(path: str | Path) -> str:
    """The path as diagnostics show it: POSIX separators, control characters escaped
    (``\\n``, ``\\x1b``, ``\\u2028``) so that a file name can never break an output line."""
    text = Path(path).as_posix()
    if text.isprintable() or not any(_is_control(char) for char in text):
        return text
    return "".join(
        char.encode("unicode_escape").decode("ascii") if _is_control(char) else char
        for char in text
    )


def load_path(path: str | Path) -> LoadedSpec:
    path = Path(path)
    display = display_path(path)
    problem = path_problem(path)
    if problem is not None:
        found = codes.CONTROL_CHARACTER_IN_PATH.at(display, (1, 1), problem)
        return LoadedSpec(display, {}, SourceMap(), None, [found])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        found = codes.UNREADABLE_FILE.at(display, (1, 1), f"cannot read file: {exc.strerror}")
        return LoadedSpec(display, {}, SourceMap(), None, [found])
    return load_bytes(display, raw)


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files as named; directories expanded recursively to their *.yaml/*.yml files.

    The one path expander of every command that reads specs. A path that does not exist is
    a usage error (``UsageError``), never a diagnostic on a directory.
    """
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(
                child
                for child in path.rglob("*")
                if child.suffix in SPEC_SUFFIXES and child.is_file()
            )
        elif path.exists() or path.is_symlink():
            files.append(path)
        else:
            raise UsageError(f"no such file or directory: {display_path(path)}")
    return list(dict.fromkeys(files))


def load_family(path: str | Path) -> Family:
    """Load a spec that must be valid; raise ``SpecError`` with every diagnostic otherwise."""
    loaded = load_path(path)
    if loaded.family is None:
        raise SpecError(loaded.diagnostics)
    return loaded.family
