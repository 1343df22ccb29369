"""Export ``schema/kvspec.schema.json`` (JSON Schema draft 2020-12) from the spec models.

The export is deterministic (sorted keys, two-space indent, trailing newline) so the committed
file can be compared byte for byte with a fresh export (``kvgen schema --check``).

Pydantic cannot express its ``model_validator``/``AfterValidator`` checks in JSON Schema, so
``_add_validator_constraints`` writes them out by hand, making editors (yaml-language-server)
and ``jsonschema`` reject the same structures as pydantic. Keep it in step with
``generator/_spec/models.py``; ``tests/rules/test_schema_export.py`` compares both validators on a
corpus.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from kvgen._spec.models import SCHEMA_ID, Family

__all__ = ["DRAFT", "MODELINE_PREFIX", "export_schema", "schema_diff"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
MODELINE_PREFIX = "# yaml-language-server: $schema="

# spec._check_identifier rejects Python keywords; the lowercase ones are the only ones that can
# match the identifier pattern. Fixed here (not read from `keyword`) so the export is the same on
# every Python version; "type" is a soft keyword from 3.12 on.
_KEYWORDS = (
    "_", "and", "as", "assert", "async", "await", "break", "case", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
    "is", "lambda", "match", "nonlocal", "not", "or", "pass", "raise", "return", "try", "type",
    "while", "with", "yield",
)  # fmt: skip
_SHAPES = ("kv_heads", "kv_lora_rank", "bytes_per_token", "state_bytes", "mamba")


def _present(field: str) -> dict[str, Any]:
    """Matches an object where ``field`` is given and not null (pydantic's "is not None")."""
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


def _needs(field: str, other: str) -> dict[str, Any]:
    return {"if": _present(field), "then": _present(other)}


def _add_validator_constraints(schema: dict[str, Any]) -> None:
    defs = schema["$defs"]
    pairs = [
        {"allOf": [_present(a), _present(b)]}
        for i, a in enumerate(_SHAPES)
        for b in _SHAPES[i + 1 :]
    ]
    full = {"properties": {"attention": {"const": "full"}}, "required": ["attention"]}
    # A parallel hybrid layer (Falcon-H1): a full kind holds kv_heads and mamba together.
    both = pairs.index({"allOf": [_present("kv_heads"), _present("mamba")]})
    pairs[both]["allOf"].append({"not": full})
    defs["LayerKind"]["allOf"] = [
        {"not": {"anyOf": pairs}},  # at most one shape
        _needs("kv_lora_rank", "qk_rope_head_dim"),
        _needs("qk_rope_head_dim", "kv_lora_rank"),
        _needs("head_dim", "kv_heads"),
        _needs("v_head_dim", "kv_heads"),
        {"if": {"allOf": [_present("mamba"), full]}, "then": _present("kv_heads")},
        # KV sharing: a reading layer computes full or sliding attention.
        {
            "if": _present("reads"),
            "then": {"properties": {"attention": {"enum": ["full", "sliding"]}}},
        },
        _needs("index_head_dim", "kv_lora_rank"),
    ]
    not_keyword = {"not": {"enum": list(_KEYWORDS)}}
    schema["properties"]["family"].update(not_keyword)
    defs["Model"]["properties"]["name"].update(not_keyword)
    defs["Speculative"]["properties"]["name"].update(not_keyword)
    models = defs["Speculative"]["properties"]["models"]["anyOf"]
    next(option for option in models if option.get("type") == "array")["items"].update(not_keyword)
    # pydantic validates dict keys; JSON Schema's patternProperties alone lets others through.
    for stack in ("LayerStack", "Model"):
        kinds = defs[stack]["properties"]["layer_kinds"]
        kinds["additionalProperties"] = False
        kinds.setdefault("propertyNames", {})["pattern"] = next(iter(kinds["patternProperties"]))


def export_schema() -> str:
    """The JSON Schema of spec format v1, as the exact text of ``schema/kvspec.schema.json``."""
    schema = Family.model_json_schema(mode="validation")
    schema["$schema"] = DRAFT
    schema["$id"] = SCHEMA_ID
    _add_validator_constraints(schema)
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def schema_diff(path: Path, fresh: str) -> str:
    """Unified diff from the file at ``path`` (empty if missing) to ``fresh``; "" if equal."""
    from kvgen._spec.loader import MAX_BYTES
    from kvgen._util.files import exists, read_bytes

    try:  # kvgen._util.files: a committed link here is refused (KV020), never printed in the diff
        current = read_bytes(path, limit=MAX_BYTES).decode("utf-8") if exists(path) else ""
    except UnicodeDecodeError:
        current = ""
    if current == fresh:
        return ""
    return "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True),
            fresh.splitlines(keepends=True),
            fromfile=f"{path.as_posix()} (committed)",
            tofile=f"{path.as_posix()} (fresh export)",
        )
    )
