"""Documentation of the codes ``kvgen import-hf`` emits (``generator/importhf/``), KV3xx."""

from __future__ import annotations


def _doc(summary: str, what: str, why: str, example: str, fix: str) -> str:
    return (
        f"{summary}\n\n## What it does\n{what}\n\n## Why it matters\n{why}\n\n"
        f"## Example\n```json\n{example}\n```\n\n## Fix\n{fix}\n"
    )


_GUESS = "A wrong guess sizes the KV cache wrong for every deployment of the model."

# (code, name, docstring), like READER_CODES.
IMPORT_DOCS: tuple[tuple[str, str, str], ...] = (
    (
        "KV301",
        "unreadable-config",
        _doc(
            "The config file cannot be read as a JSON object.",
            "Reports invalid JSON, bytes that are not UTF-8, or a top level that is not an object.",
            "Nothing can be imported from it.",
            '[{"num_hidden_layers": 32}]',
            "Pass the model's config.json as published.",
        ),
    ),
    (
        "KV302",
        "unknown-config-field",
        _doc(
            "A config field the importer does not know; it may change the KV cache.",
            "Reports a field that is neither mapped to the spec nor known to be irrelevant.",
            "New attention variants announce themselves through new fields. " + _GUESS,
            '{"num_hidden_layers": 32, "kv_sharing_stride": 2}',
            "Check what the field does; pass `--ignore-field NAME` once reviewed.",
        ),
    ),
    (
        "KV303",
        "contradictory-config-fields",
        _doc(
            "Config fields that contradict each other.",
            "Reports fields that describe the same thing differently, e.g. a `layer_types` list "
            "whose length is not `num_hidden_layers`.",
            _GUESS,
            '{"num_hidden_layers": 4, "layer_types": ["full_attention"]}',
            "Correct the config, or write the spec by hand.",
        ),
    ),
    (
        "KV304",
        "missing-config-field",
        _doc(
            "A field the importer needs is missing.",
            "Reports a field with no safe default, such as `max_position_embeddings`.",
            "Defaults of the model's Python class are not in the file. " + _GUESS,
            '{"num_hidden_layers": 32}',
            "Add the field with the value the model class uses.",
        ),
    ),
    (
        "KV305",
        "unsupported-config-feature",
        _doc(
            "A value or feature the spec format cannot express.",
            "Reports attention variants the spec has no kind for (chunked attention, shared KV "
            "layers, ...).",
            "Importing it as something else would size the cache wrong.",
            '{"attention_chunk_size": 8192}',
            "Write the spec by hand with the nearest exact shape, or file an issue for the kind.",
        ),
    ),
    (
        "KV306",
        "duplicate-config-key",
        _doc(
            "A duplicate key in a JSON object.",
            "Reports a key that appears twice in one object.",
            "JSON readers silently keep the last value; which one the model uses is unclear.",
            '{"num_key_value_heads": 8, "num_key_value_heads": 4}',
            "Remove one of the two.",
        ),
    ),
    (
        "KV307",
        "invalid-config-value",
        _doc(
            "A value of the wrong type or range.",
            "Reports, for example, a negative head count or a string where a number belongs.",
            _GUESS,
            '{"num_key_value_heads": "eight"}',
            "Correct the value.",
        ),
    ),
)
