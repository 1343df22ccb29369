"""Project configuration: ``[tool.kvgen]`` in ``pyproject.toml``, or a ``kvgen.toml``.

Found by walking up from the current directory; the walk stops at the first directory that
holds either file with a kvgen table, or at a repository root (a ``.git`` entry). Paths in the
file are relative to the directory that holds it, so every command behaves the same from any
sub-directory. Command-line flags override the file; the file overrides the built-in defaults.

    [tool.kvgen]                       # in kvgen.toml: the same keys at top level
    specs = "schema/families"          # spec directory
    out = "generated"                  # output package directory (import name: its last part)
    schema = "schema/kvspec.schema.json"

    [tool.kvgen.deployment]            # defaults of `kvgen plan` and `kvgen diff`
    max_batch_size = 8
    max_num_tokens = 8192
    max_seq_len = 32768
    tp_size = 1
    gpu_memory = "40GiB"
    semantics = "trtllm-v2"
    engine = "trtllm"                  # or vllm, sglang; NAME==VERSION for a release

The file is data: it is parsed with ``tomllib`` and nothing in it is ever executed. An unknown
key or a wrong type is a usage error positioned at the key, with a "did you mean".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvgen._util import toml as _toml
from kvgen._util.exits import UsageError
from kvgen._util.suggest import did_you_mean

# The TOML text helpers live in kvgen._util.toml; these names are what the deployment reader
# imports.
decode_toml_text = _toml.decode
toml_error = _toml.error_message
_position = _toml.position
tomllib = _toml.tomllib

__all__ = ["DEPLOYMENT_KEYS", "PROJECT_KEYS", "Config", "current", "find_config", "load_config"]

PYPROJECT = "pyproject.toml"
KVGEN_TOML = "kvgen.toml"
SPEC_DIR = "schema/families"
OUT_DIR = "generated"
SCHEMA_FILE = "schema/kvspec.schema.json"
SEMANTICS = ("trtllm-v2", "exact")

# key -> (type, meaning); the meaning is what `kvgen init` writes as a comment.
PROJECT_KEYS: dict[str, tuple[type, str]] = {
    "specs": (str, "spec directory"),
    "out": (str, "output package directory (import name: its last part)"),
    "schema": (str, "JSON Schema of the spec format, for editors"),
    "deployment": (dict, "defaults of kvgen plan and kvgen diff"),
}
DEPLOYMENT_KEYS: dict[str, type] = {
    "max_batch_size": int,
    "max_num_tokens": int,
    "max_seq_len": int,
    "tp_size": int,
    "gpu_memory": str,
    "semantics": str,
    "engine": str,  # whose terms `kvgen plan` answers in (and `kvgen diff` adds)
}
MAX_CONFIG_BYTES = 1 << 20  # a config is a few lines; refuse anything that is clearly not one


@dataclass(frozen=True)
class Config:
    """Where a project keeps its specs and output, and its reference deployment."""

    root: Path  # the directory the paths below are relative to
    source: Path | None = None  # the file read, or None for the built-in defaults
    specs: Path = Path(SPEC_DIR)
    out: Path = Path(OUT_DIR)
    schema: Path = Path(SCHEMA_FILE)
    deployment: dict[str, Any] = field(default_factory=dict)

    def path(self, relative: Path) -> Path:
        """``relative`` (to the root) as seen from the current directory: short and readable."""
        absolute = self.root / relative
        try:
            return Path(os.path.relpath(absolute, Path.cwd()))
        except ValueError:  # pragma: no cover - another drive on Windows
            return absolute

    @property
    def spec_dir(self) -> Path:
        return self.path(self.specs)

    @property
    def out_dir(self) -> Path:
        return self.path(self.out)

    @property
    def schema_file(self) -> Path:
        return self.path(self.schema)


def _read(path: Path) -> bytes:
    """A config file's bytes through ``kvgen._util.files`` (no link, regular file, bounded)."""
    from kvgen._util.files import Refused, read_bytes

    try:
        return read_bytes(path, limit=MAX_CONFIG_BYTES, root=path.parent)
    except Refused as exc:
        raise UsageError(exc.diagnostic.render()) from None


def has_kvgen_table(raw: bytes) -> bool:
    """Whether a pyproject.toml sets ``tool.kvgen`` in any TOML form: a ``[tool.kvgen]``
    header (the fast path), a dotted key (``kvgen.specs = ...`` under ``[tool]``) or an
    inline table. An invalid file that mentions kvgen counts, so its error is reported."""
    if _HEADER.search(raw):
        return True
    if b"kvgen" not in raw:
        return False
    try:
        data = _toml.loads(PYPROJECT, raw.decode("utf-8"))
    except (UnicodeDecodeError, UsageError):  # load_config reports it at its position
        return True
    tool = data.get("tool")
    return isinstance(tool, dict) and "kvgen" in tool


# `[tool.kvgen]` or `[tool.kvgen.deployment]` at a line start. Blanks are spaces and tabs only
# (TOML's whitespace; a header never spans lines), so the search is linear: `\s*` with re.M
# could cross newlines and retried the whole run of them at every line start (issue 29, D1).
_HEADER = re.compile(rb"^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*kvgen[ \t]*[\].]", re.M)


def find_config(start: Path | None = None) -> Path | None:
    """The config file that applies to ``start`` (default: the current directory), or None."""
    from kvgen._util.files import exists

    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        pyproject = directory / PYPROJECT
        if exists(pyproject) and has_kvgen_table(_read(pyproject)):
            return pyproject
        if exists(directory / KVGEN_TOML):
            return directory / KVGEN_TOML
        if (directory / ".git").exists():
            return None
    return None


def _error(display: str, text: str, table: str, key: str, message: str) -> UsageError:
    line, col = _position(text, key, table)
    return UsageError(f"{display}:{line}:{col}: {message}")


def load_config(path: Path) -> Config:
    """Parse and check one config file; a problem is a positioned ``UsageError``."""
    display = Path(os.path.relpath(path)).as_posix()
    text = _toml.decode(display, _read(path))
    return parse_config(display, path.name, text, root=path.parent.resolve(), source=path)


def parse_config(display: str, name: str, text: str, *, root: Path, source: Path) -> Config:
    """Check the text of a config file named ``name`` (``pyproject.toml`` or ``kvgen.toml``,
    read from the working tree or from a git ref); diagnostics name it ``display``."""
    data = _toml.loads(display, text)  # the line rule, bounded nesting, then tomllib
    table = "tool.kvgen" if name == PYPROJECT else ""
    section = data.get("tool", {}).get("kvgen", {}) if table else data
    if not isinstance(section, dict):
        raise _error(display, text, "tool", "kvgen", "[tool.kvgen] must be a table")
    values = _checked(display, text, table, section, {k: t for k, (t, _) in PROJECT_KEYS.items()})
    deployment_table = f"{table}.deployment" if table else "deployment"
    deployment = _checked(
        display, text, deployment_table, values.pop("deployment", {}), DEPLOYMENT_KEYS
    )
    _check_deployment(display, text, deployment_table, deployment)
    paths = {key: Path(value) for key, value in values.items()}
    for key, value in paths.items():
        if value.is_absolute() or ".." in value.parts:
            raise _error(display, text, table, key, f"{key} must be a path inside the project")
    if "out" in paths and not paths["out"].parts:  # "" and "." name the root itself
        message = (
            f"out = {values['out']!r} is the project root: out must be a proper "
            'sub-directory of it (kvgen replaces its output directory whole), e.g. "generated"'
        )
        raise _error(display, text, table, "out", message)
    return Config(root=root, source=source, deployment=deployment, **paths)


def _checked(
    display: str, text: str, table: str, section: dict[str, Any], known: dict[str, type]
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    where = f"[{table}]" if table else "the top level"
    for key, value in section.items():
        if key not in known:
            hint = did_you_mean(key, known) or f" (known keys: {', '.join(known)})"
            raise _error(display, text, table, key, f"unknown key '{key}' in {where}{hint}")
        expected = known[key]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            kind = {str: "a string", int: "an integer", dict: "a table"}[expected]
            raise _error(display, text, table, key, f"{key} must be {kind}")
        values[key] = value
    return values


def _check_deployment(display: str, text: str, table: str, deployment: dict[str, Any]) -> None:
    from kvgen._util.units import MAX_COUNT, parse_size_with_unit

    for key, value in deployment.items():  # the bounds of the flags (kvgen._util.units.count)
        if isinstance(value, int) and not 1 <= value <= MAX_COUNT:
            message = f"{key} must be a positive integer up to 2**63 - 1"
            raise _error(display, text, table, key, message)
    if "semantics" in deployment and deployment["semantics"] not in SEMANTICS:
        hint = did_you_mean(deployment["semantics"], SEMANTICS)
        message = f"semantics must be one of {', '.join(SEMANTICS)}{hint}"
        raise _error(display, text, table, "semantics", message)
    if "engine" in deployment:
        from kvgen.sizing.engines_registry import release

        try:
            release(deployment["engine"])
        except ValueError as exc:
            raise _error(display, text, table, "engine", str(exc)) from None
    if "gpu_memory" in deployment:
        try:
            deployment["gpu_memory"] = parse_size_with_unit(deployment["gpu_memory"])
        except ValueError as exc:
            raise _error(display, text, table, "gpu_memory", f"gpu_memory: {exc}") from None


def current(start: Path | None = None) -> Config:
    """The configuration that applies here: the file found, or the built-in defaults."""
    found = find_config(start)
    if found is None:  # no config: the project root (pyproject.toml, kvgen.toml or .git) or here
        from kvgen._generate.render_input import project_root

        here = (start or Path.cwd()).resolve()
        return Config(root=project_root(here) or here)
    return load_config(found)
