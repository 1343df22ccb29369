"""Load a spec file into a ``Family``, keeping every node's source position.

The YAML layer is deliberately small: compose nodes with the safe (C when present) loader,
then build plain Python values ourselves so that we can reject duplicate keys, bound alias
expansion, refuse tags, and remember where every key and value came from. Only the YAML 1.2
core scalars are recognised (null, true/false, ints, floats); ``yes``, ``on``, ``2024-01-01``
and friends stay strings, so no value changes type behind the author's back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml
from kvgen.diagnostics import Diagnostic, SpecError
from kvgen.spec import Family
from pydantic import ValidationError

try:  # the C composer is several times faster; fall back to pure Python where absent
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader

MAX_NODES = 100_000  # bound on values built, aliases expanded included (alias bombs)
MAX_BYTES = 4 << 20

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _CoreLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that resolves the YAML 1.2 core schema only."""

    yaml_implicit_resolvers: dict = {}  # noqa: RUF012 - PyYAML's class-level registry


_CoreLoader.add_implicit_resolver(_NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), list("~nN"))
_CoreLoader.add_implicit_resolver(
    _BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_CoreLoader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_CoreLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)

Loc = tuple[str | int, ...]


@dataclass
class SourceMap:
    """Positions (1-based line, col) of every value and every mapping key, by path."""

    values: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Loc, tuple[int, int]] = field(default_factory=dict)

    def value(self, loc: Loc) -> tuple[int, int]:
        """Position of the value at ``loc``, or of its nearest existing ancestor."""
        while loc not in self.values and loc:
            loc = loc[:-1]
        return self.values.get(loc, (1, 1))

    def key(self, loc: Loc) -> tuple[int, int]:
        """Position of the key that names ``loc`` (falls back to the value's position)."""
        return self.keys.get(loc) or self.value(loc)


@dataclass
class LoadedSpec:
    path: str
    data: dict[str, Any]
    source: SourceMap
    family: Family | None
    diagnostics: list[Diagnostic]


class _Builder:
    def __init__(self, path: str):
        self.path = path
        self.source = SourceMap()
        self.diagnostics: list[Diagnostic] = []
        self.nodes = 0

    def _diag(self, node: yaml.Node, code: str, message: str, fix: str) -> None:
        mark = node.start_mark
        self.diagnostics.append(
            Diagnostic(self.path, mark.line + 1, mark.column + 1, code, message, fix=fix)
        )

    def build(self, node: yaml.Node, loc: Loc) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLarge(node, loc)
        self.source.values.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loc)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ:
                self._bad_tag(node)
            return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[str, Any]:
        if node.tag != _MAP:
            self._bad_tag(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            # The core schema has no merge resolver, so a plain `<<` arrives as a string key.
            is_merge = key_node.tag == "tag:yaml.org,2002:merge" or (
                isinstance(key_node, yaml.ScalarNode)
                and key_node.value == "<<"
                and not key_node.style
            )
            if is_merge:
                self._diag(
                    key_node,
                    "KV006",
                    "merge keys (<<) are not supported",
                    "write the keys out; specs are read by people in review",
                )
                continue
            key = self._scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                self._diag(
                    key_node,
                    "KV007",
                    f"mapping keys must be strings, found {type(key).__name__}",
                    "quote the key",
                )
                continue
            if key in out:
                first = self.source.keys[(*loc, key)]
                self._diag(
                    key_node,
                    "KV004",
                    f"duplicate key '{key}' (first defined at line {first[0]})",
                    "remove one of the two; YAML would silently keep the last",
                )
                continue
            mark = key_node.start_mark
            self.source.keys[(*loc, key)] = (mark.line + 1, mark.column + 1)
            out[key] = self.build(value_node, (*loc, key))
        return out

    def _scalar(self, node: yaml.Node) -> Any:
        value = node.value
        tag = node.tag
        if tag == _STR:
            return value
        if tag == _NULL:
            return None
        if tag == _BOOL:
            return value.lower() == "true"
        if tag == _INT:
            text = value.replace("_", "")
            if text.startswith("0o"):
                return int(text[2:], 8)
            if text.startswith("0x"):
                return int(text[2:], 16)
            return int(text)
        if tag == _FLOAT:
            return float(value.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf"))
        self._bad_tag(node)
        return value

    def _bad_tag(self, node: yaml.Node) -> None:
        self._diag(
            node,
            "KV006",
            f"unsupported YAML tag {node.tag}",
            "remove the tag; specs use plain mappings, lists, strings and numbers",
        )


class _TooLarge(Exception):
    def __init__(self, node: yaml.Node, loc: Loc):
        self.node = node
        self.loc = loc


def _position_of_offset(raw: bytes, offset: int) -> tuple[int, int]:
    before = raw[:offset]
    line = before.count(b"\n") + 1
    col = offset - (before.rfind(b"\n") + 1) + 1
    return line, col


class _Unreadable(Exception):
    """The file cannot be read as a spec at all; carries the one diagnostic that says why."""

    def __init__(self, diagnostic: Diagnostic):
        self.diagnostic = diagnostic


def _fail(path: str, at: tuple[int, int], code: str, message: str, fix: str) -> NoReturn:
    raise _Unreadable(Diagnostic(path, at[0], at[1], code, message, fix=fix))


_START_FROM = "start from a shipped spec under schema/families/"


def _decode(path: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        _fail(
            path,
            (1, 1),
            "KV008",
            f"file is {len(raw)} bytes, over the {MAX_BYTES}-byte limit",
            "split the family or remove generated content",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(
            path,
            _position_of_offset(raw, exc.start),
            "KV002",
            f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            "save the file as UTF-8",
        )
    return text[1:] if text.startswith("\ufeff") else text


def _compose(path: str, text: str) -> yaml.Node:
    try:
        node = yaml.compose(text, Loader=_CoreLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context:
            problem = f"{exc.problem} ({exc.context})"
        _fail(
            path,
            at,
            "KV001",
            f"YAML syntax error: {problem}",
            "check indentation and quoting near this position",
        )
    except yaml.YAMLError as exc:  # e.g. "expected a single document"
        _fail(path, (1, 1), "KV001", f"YAML error: {exc}", "one document per file")
    if node is None:
        _fail(path, (1, 1), "KV003", "file is empty", _START_FROM)
    return node


def _build(builder: _Builder, node: yaml.Node) -> Any:
    try:
        return builder.build(node, ())
    except _TooLarge as exc:
        # An alias expands to its anchor's node, whose position is elsewhere; point at the
        # top-level entry whose expansion crossed the bound instead.
        where = f" in '{exc.loc[0]}'" if exc.loc else ""
        _fail(
            builder.path,
            builder.source.value(exc.loc[:1]),
            "KV005",
            f"document expands to more than {MAX_NODES} values{where} (alias bomb?)",
            "remove anchors and aliases; write values out",
        )
    except RecursionError:
        _fail(builder.path, (1, 1), "KV005", "document nests too deeply", "flatten the document")


def parse_yaml(path: str, raw: bytes) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Bytes to plain data with positions; never raises on bad input."""
    builder = _Builder(path)
    try:
        node = _compose(path, _decode(path, raw))
        data = _build(builder, node)
    except _Unreadable as exc:
        return None, SourceMap(), [exc.diagnostic]
    if not isinstance(data, dict) and not builder.diagnostics:
        mark = node.start_mark
        builder.diagnostics.append(
            Diagnostic(
                path,
                mark.line + 1,
                mark.column + 1,
                "KV003",
                f"top level must be a mapping, found {type(data).__name__}",
                fix=_START_FROM,
            )
        )
    return data, builder.source, builder.diagnostics


_PYDANTIC_CODES = {
    "extra_forbidden": ("KV101", "remove the key, or check its spelling against the schema"),
    "missing": ("KV102", "add the key"),
    "greater_than_equal": ("KV104", "use a value in the allowed range"),
    "less_than_equal": ("KV104", "use a value in the allowed range"),
    "greater_than": ("KV104", "use a value in the allowed range"),
    "less_than": ("KV104", "use a value in the allowed range"),
    "too_short": ("KV104", "add at least one entry"),
    "too_long": ("KV104", "shorten the list or string"),
    "string_pattern_mismatch": ("KV105", "use a lowercase identifier: ^[a-z][a-z0-9_]*$"),
    "string_too_long": ("KV105", "use an identifier of at most 64 characters"),
    "literal_error": ("KV106", "use one of the allowed values"),
    "value_error": ("KV107", "see the message"),
}


def _message(error: dict[str, Any], loc: Loc) -> str:
    kind = error["type"]
    where = ".".join(str(part) for part in loc) or "<top>"
    if kind == "extra_forbidden":
        return f"unknown key '{loc[-1]}' at {where}"
    if kind == "missing":
        return f"missing required key '{loc[-1]}' in {'.'.join(map(str, loc[:-1])) or '<top>'}"
    msg = error["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{where}: {msg}"


def validation_diagnostics(path: str, exc: ValidationError, source: SourceMap) -> list[Diagnostic]:
    """Map pydantic errors back to YAML nodes."""
    out = []
    for error in exc.errors(include_url=False):
        raw_loc = error["loc"]
        loc = tuple(p for p in raw_loc if p != "[key]" and not str(p).startswith("function-"))
        kind = error["type"]
        code, fix = _PYDANTIC_CODES.get(kind, ("KV103", "use a value of the expected type"))
        if kind == "extra_forbidden" or "[key]" in raw_loc:
            line, col = source.key(loc)
        elif kind == "missing":
            line, col = source.value(loc[:-1])
        else:
            line, col = source.value(loc)
        out.append(Diagnostic(path, line, col, code, _message(error, loc), fix=fix))
    return out


def load_bytes(path: str, raw: bytes) -> LoadedSpec:
    """Parse and validate; structural problems become diagnostics, never exceptions."""
    data, source, diagnostics = parse_yaml(path, raw)
    if diagnostics or not isinstance(data, dict):
        return LoadedSpec(path, data if isinstance(data, dict) else {}, source, None, diagnostics)
    try:
        family = Family.model_validate(data)
    except ValidationError as exc:
        return LoadedSpec(path, data, source, None, validation_diagnostics(path, exc, source))
    return LoadedSpec(path, data, source, family, [])


def load_path(path: str | Path) -> LoadedSpec:
    path = Path(path)
    display = path.as_posix()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return LoadedSpec(
            display,
            {},
            SourceMap(),
            None,
            [
                Diagnostic(
                    display,
                    1,
                    1,
                    "KV009",
                    f"cannot read file: {exc.strerror}",
                    fix="check the path",
                )
            ],
        )
    return load_bytes(display, raw)


def load_family(path: str | Path) -> Family:
    """Load a spec that must be valid; raise ``SpecError`` with every diagnostic otherwise."""
    loaded = load_path(path)
    if loaded.family is None:
        raise SpecError(loaded.diagnostics)
    return loaded.family
