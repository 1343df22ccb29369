"""Where a review looks: the configuration committed at the ref as well as the working tree's.

In pull-request CI ``pyproject.toml`` and ``kvgen.toml`` are pull-request content like the specs
(docs/security.md). A pull request that moved a family's spec to another folder and pointed
``[tool.kvgen] specs`` there made the old spec invisible to the review ("1 added" for a halved
capacity), and one that pointed ``out`` at a fresh folder left a hand-edited module where
consumers import it (issue 29, G1 and G2). So the review reads the ref's configuration too:

- specs: the spec directories of both sides are compared (families pair by name, so a moved
  spec is compared with its old self);
- the reference deployment: the ref's ``[tool.kvgen.deployment]``, a change to it applies once
  merged (flags still win: the person who runs kvgen is trusted);
- output: when ``out`` moved, the ref's output folder, if the working tree still has it, must be
  what this kvgen generates from the specs (KV403), or be deleted.

The ref's configuration is found as ``kvgen._generate.config.find_config`` finds the working tree's
(walking up from the current directory to the repository root), read by object id through
``GitTree`` (a link or a non-regular entry there is refused, the size checked before reading),
and checked by the same code as the working tree's.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import kvgen._review._worktree as worktree
from kvgen._generate.config import (
    KVGEN_TOML,
    MAX_CONFIG_BYTES,
    PYPROJECT,
    Config,
    has_kvgen_table,
    parse_config,
)
from kvgen._review._git import GitTree
from kvgen._util import toml as _toml
from kvgen._util.diagnostics import Diagnostic
from kvgen._util.exits import UsageError

__all__ = ["ReviewLayout", "config_at", "layout", "output_drift"]

log = logging.getLogger("kvgen")


def config_at(tree: GitTree) -> Config:
    """The configuration that applied at the ref to the current directory: the built-in
    defaults (rooted where the working tree's defaults are) when the ref has none."""
    from kvgen._generate.render_input import project_root
    from kvgen._spec.loader import display_path

    parts = [] if tree.base in ("", ".") else tree.base.split("/")
    for depth in range(len(parts), -1, -1):
        folder = "/".join(parts[:depth])
        for name in (PYPROJECT, KVGEN_TOML):
            rel = f"{folder}/{name}" if folder else name
            entry = tree.lookup(rel)
            if entry is None:
                continue
            display = display_path(f"{tree.ref}:{tree.display(rel)}")
            if entry.kind != "file" or entry.path != rel:
                raise UsageError(
                    f"{display}:1:1: the configuration at the ref is not a regular file "
                    f"({entry.kind}); kvgen reads configuration from regular files only"
                )
            assert entry.size is not None
            if entry.size > MAX_CONFIG_BYTES:
                raise UsageError(
                    f"{display}:1:1: {entry.size} bytes, over the {MAX_CONFIG_BYTES}-byte limit "
                    "of a configuration file"
                )
            raw = tree.read(entry)
            if name == PYPROJECT and not has_kvgen_table(raw):
                continue
            text = _toml.decode(display, raw)
            return parse_config(display, name, text, root=tree.root / folder, source=Path(rel))
    here = Path.cwd().resolve()
    return Config(root=project_root(here) or here)


@dataclass(frozen=True)
class ReviewLayout:
    """What a review compares when no PATH is named, and where the output lives."""

    base: Config  # the configuration at the ref
    head: Config  # the working tree's
    spec_dirs: list[str]  # the working tree's spec directory, then the ref's if it differs

    @property
    def out_moved(self) -> bool:
        return self.base.root / self.base.out != self.head.root / self.head.out


def layout(tree: GitTree, head: Config) -> ReviewLayout:
    """Both sides' layouts; a spec directory is compared where it exists on either side."""
    base = config_at(tree)
    spec_dirs = [head.spec_dir.as_posix()]
    if base.root / base.specs != head.root / head.specs:
        rel = tree.rel(base.spec_dir)
        present = rel is not None and (
            tree.lookup(rel) is not None or worktree.lookup(tree.root, rel) is not None
        )
        if present:
            spec_dirs.append(base.spec_dir.as_posix())
        log.warning(
            "the spec directory moved: %s at %s, %s in the working tree; both are compared",
            base.spec_dir.as_posix(),
            tree.ref,
            head.spec_dir.as_posix(),
        )
    return ReviewLayout(base, head, spec_dirs)


def output_drift(paths: list[str], out_dir: Path, root: Path) -> list[Diagnostic]:
    """KV403 for each file under ``out_dir`` (the ref's output folder, which the working tree's
    configuration no longer names) that differs from what this kvgen generates from the specs
    under ``paths`` in the working tree; links and other refused entries as their own codes.
    ``[]`` when the folder is gone, or when the specs do not lint (the review reports them)."""
    from kvgen._generate.project import expand_paths, load_specs
    from kvgen._generate.render import render
    from kvgen._generate.writer import plan
    from kvgen._spec.loader import display_path
    from kvgen._util.codes.review import STALE_OUTPUT
    from kvgen._util.diagnostics import has_errors
    from kvgen._util.files import Refused

    if worktree.lookup(root, _relative(out_dir, root)) is None:
        return []
    present = [p for p in paths if Path(p).exists()]
    inputs, diagnostics = load_specs(expand_paths(present), root=root) if present else ([], [])
    if has_errors(diagnostics):
        return []
    try:
        result = plan(render(inputs), out_dir, prune=True, root=root)
    except Refused as exc:  # the folder itself is a link or not a folder: a finding too
        return [exc.diagnostic]
    found = list(result.refused)
    for rel, state in [
        *((rel, "differs from what kvgen generates") for rel in result.changed),
        *((rel, "is missing") for rel in result.missing),
        *((rel, "is generated from no spec (orphaned)") for rel in result.orphaned),
    ]:
        where = display_path((out_dir / rel).as_posix())
        message = (
            f"this file {state} from the specs, and the working tree's [tool.kvgen] out no longer "
            "names this folder, so `kvgen generate --check` does not check it"
        )
        found.append(STALE_OUTPUT.at(where, (1, 1), message))
    return sorted(found)


def _relative(path: Path, root: Path) -> str:
    """``path`` (from the current directory) relative to ``root``, joined lexically: a link on
    the way is looked up as what it is, never followed."""
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
