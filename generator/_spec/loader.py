"""Load a spec file into a ``Family``, keeping every node's source position.

Reading is three steps, each in its own module: bytes to text here (the file read through
``kvgen._util.files``: no link, regular files only, at most ``MAX_BYTES``; encoding, file name),
text to positioned plain values in ``kvgen._spec.composer`` (YAML 1.2 core only, bounded depth and
size), and values to a validated ``Family`` with pydantic, whose errors
``kvgen._spec.schema_errors`` maps back to positions in kvgen's own words.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvgen._spec.composer import MAX_DEPTH, MAX_NODES, SourceMap, Unreadable, compose
from kvgen._spec.models import Family
from kvgen._util.codes import reader as codes
from kvgen._util.diagnostics import Diagnostic, SpecError
from kvgen._util.exits import UsageError
from kvgen._util.files import Refused, display_path, path_problem, read_bytes
from kvgen._util.lines import line_break_diagnostics
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
    "path_problem",
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
    raw: bytes = b""  # the bytes read: what generate renders from and what `# kvgen: noqa`
    # comments are read from (kvgen._lint.noqa), never read twice


def _position_of_offset(raw: bytes, offset: int) -> tuple[int, int]:
    before = raw[:offset]
    line = before.count(b"\n") + 1
    col = offset - (before.rfind(b"\n") + 1) + 1
    return line, col


def _decode(path: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:  # bytes from git or a test; files are bounded by read_bytes
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
        mapping = data if isinstance(data, dict) else {}
        return LoadedSpec(path, mapping, source, None, diagnostics, raw)
    try:
        family = Family.model_validate(data)
    except ValidationError as exc:
        from kvgen._spec.schema_errors import validation_diagnostics  # only for refused specs

        found = validation_diagnostics(path, exc, source, data)
        return LoadedSpec(path, data, source, None, found, raw)
    too_large = _output_too_large(path, family, source)
    if too_large is not None:  # nothing downstream may iterate its pairs: no family
        return LoadedSpec(path, data, source, None, [too_large], raw)
    return LoadedSpec(path, data, source, family, [], raw)


def _output_too_large(path: str, family: Family, source: SourceMap) -> Diagnostic | None:
    """KV016 where the bound on the generated output first passes ``MAX_GENERATED_BYTES``."""
    from kvgen._spec.output_size import MAX_GENERATED_BYTES, crossing

    found = crossing(family)
    if found is None:
        return None
    limit = MAX_GENERATED_BYTES >> 20
    return codes.OUTPUT_TOO_LARGE.at(
        path,
        source.value(found.loc),
        f"family '{family.family}' could generate more than {limit} MiB of Python in one "
        f"module (a bound from the spec, passed here: {found.models} models, "
        f"{found.profiles} speculative profiles, {found.pairs:,} model-profile pairs so far); "
        f"`kvgen generate --check` reads no module over {limit} MiB",
    )


def load_path(path: str | Path, root: Path | None = None) -> LoadedSpec:
    """Read (``kvgen._util.files``: no links, regular files, at most ``MAX_BYTES``) and load.

    ``root`` anchors the link checks of the folders on the way (default: the working
    directory)."""
    path = Path(path)
    display = display_path(path)
    problem = path_problem(path)
    if problem is not None:
        found = codes.CONTROL_CHARACTER_IN_PATH.at(display, (1, 1), problem)
        return LoadedSpec(display, {}, SourceMap(), None, [found])
    try:
        raw = read_bytes(path, limit=MAX_BYTES, too_large=codes.FILE_TOO_LARGE, root=root)
    except Refused as exc:
        return LoadedSpec(display, {}, SourceMap(), None, [exc.diagnostic])
    return load_bytes(display, raw)


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files as named; directories expanded recursively to their *.yaml/*.yml files.

    The one path expander of every command that reads specs. A path that does not exist is
    a usage error (``UsageError``), never a diagnostic on a directory.
    """
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir() and not path.is_symlink():
            files += sorted(_spec_entries(path))
        elif path.exists() or path.is_symlink():  # a link is listed, and refused by load_path
            files.append(path)
        else:
            raise UsageError(f"no such file or directory: {display_path(path)}")
    return list(dict.fromkeys(files))


def _spec_entries(directory: Path) -> Iterable[Path]:
    """What a spec directory holds, links never followed: every ``*.yaml``/``*.yml`` that is
    not a folder, and every link of any name (each is then refused as KV020 or KV021, so a
    spec replaced by a link to ``/dev/null`` is a finding, not a file that silently vanished).
    """
    for root, folders, names in os.walk(directory):  # os.walk never descends into a link
        for name in folders + names:
            child = Path(root, name)
            if child.is_symlink() or (name in names and child.suffix in SPEC_SUFFIXES):
                yield child


def load_family(path: str | Path) -> Family:
    """Load a spec that must be valid; raise ``SpecError`` with every diagnostic otherwise."""
    loaded = load_path(path)
    if loaded.family is None:
        raise SpecError(loaded.diagnostics)
    return loaded.family
