"""Compare rendered output with a directory, and write it atomically.

``plan`` is pure (reads only); ``apply`` writes each changed file through a temporary file
and ``os.replace`` so that a reader never sees half a module, and skips unchanged files.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Plan:
    out_dir: Path
    rendered: dict[str, str]
    changed: list[str] = field(default_factory=list)  # exists, differs
    missing: list[str] = field(default_factory=list)  # not on disk yet
    orphaned: list[str] = field(default_factory=list)  # carries our header, nothing renders it
    unchanged: list[str] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return bool(self.changed or self.missing or self.orphaned)

    def diff(self) -> str:
        """A unified diff from what is on disk to what would be written."""
        chunks = []
        for rel in sorted(self.changed + self.missing + self.orphaned):
            path = self.out_dir / rel
            old = path.read_text(encoding="utf-8") if path.exists() else ""
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


def _generated_files(out_dir: Path) -> list[str]:
    from kvgen.render import HEADER_PREFIX  # render pulls in jinja2; keep writer light

    if not out_dir.is_dir():
        return []
    found = []
    for path in sorted(out_dir.rglob("*.py")):
        try:
            with path.open(encoding="utf-8") as handle:
                first = handle.readline()
        except (OSError, UnicodeDecodeError):
            continue
        if first.startswith(HEADER_PREFIX):
            found.append(path.relative_to(out_dir).as_posix())
    return found


def plan(rendered: dict[str, str], out_dir: Path, *, prune: bool) -> Plan:
    """What writing ``rendered`` into ``out_dir`` would change; ``prune`` looks for orphans."""
    result = Plan(out_dir, rendered)
    for rel, text in sorted(rendered.items()):
        path = out_dir / rel
        if not path.exists():
            result.missing.append(rel)
        elif path.read_bytes() != text.encode("utf-8"):
            result.changed.append(rel)
        else:
            result.unchanged.append(rel)
    if prune:
        result.orphaned = [rel for rel in _generated_files(out_dir) if rel not in rendered]
    return result


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))  # bytes: "\n" line endings on every platform
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply(result: Plan) -> list[str]:
    """Write changed and missing files, remove orphans; return the paths touched."""
    touched = []
    for rel in result.changed + result.missing:
        write_atomic(result.out_dir / rel, result.rendered[rel])
        touched.append(rel)
    for rel in result.orphaned:
        (result.out_dir / rel).unlink()
        touched.append(rel)
    return sorted(touched)
