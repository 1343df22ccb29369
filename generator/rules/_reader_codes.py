"""Documentation of the codes the loader emits (``generator/loader.py``).

KV0xx: reading the file (encoding, YAML syntax, duplicate keys, aliases, tags).
KV1xx: the schema (types, ranges, unknown and missing keys), mapped from pydantic errors.
They have no ``check`` function here; the docs serve ``kvgen explain`` and SARIF.
"""

from __future__ import annotations

# (code, name, docstring); the first docstring line is the summary.
READER_CODES: tuple[tuple[str, str, str], ...] = (
    (
        "KV001",
        "yaml-syntax-error",
        """The file is not valid YAML.

## What it does
Reports the first YAML syntax error (bad indentation, an unclosed quote or bracket, a tab
used for indentation, several documents in one file) at the position the parser stopped.

## Why it matters
Nothing after the error can be read, so no other check runs on the file.

## Example
```yaml
models:
  - name: gemma3_27b
   max_seq_len: 131072
```

## Fix
Check the indentation and quoting near the reported position; one document per file.
""",
    ),
    (
        "KV002",
        "not-utf8",
        """The file is not valid UTF-8.

## What it does
Reports the first byte that is not part of a valid UTF-8 sequence.

## Why it matters
Specs are text read by people and tools on every platform; kvgen reads UTF-8 only, so a
Latin-1 or UTF-16 file cannot be decoded reliably.

## Example
A file saved as Latin-1 with `reason: "caf\\xe9"`.

## Fix
Save the file as UTF-8 (a UTF-8 byte-order mark is accepted and ignored).
""",
    ),
    (
        "KV003",
        "not-a-mapping",
        """The file is empty or its top level is not a mapping.

## What it does
Reports a file with no YAML document (empty, or only comments) or whose top level is a list
or a scalar.

## Why it matters
A spec is a mapping of `schema_version`, `family`, `models`, ...; anything else is not a spec.

## Example
```yaml
- schema_version: 1
```

## Fix
Start from a shipped spec under `schema/families/`.
""",
    ),
    (
        "KV004",
        "duplicate-key",
        """A mapping has the same key twice.

## What it does
Reports the second occurrence of a key in one mapping (including layer-kind names).

## Why it matters
YAML loaders silently keep the last value, so the first definition is ignored without a trace;
in review both look authoritative.

## Example
```yaml
local: {attention: sliding, window: 1024, kv_heads: 8, head_dim: 128}
local: {attention: sliding, window: 4096, kv_heads: 8, head_dim: 128}
```

## Fix
Remove one of the two.
""",
    ),
    (
        "KV005",
        "document-too-large",
        """The document expands to too many values or nests too deeply.

## What it does
Bounds the number of values built (aliases expanded) and the nesting depth.

## Why it matters
A few lines of anchors and aliases can expand to billions of values (an "alias bomb") and
exhaust memory; no real spec comes close to the bound.

## Example
```yaml
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: [*b, *b, *b, *b, *b, *b, *b, *b, *b]
```

## Fix
Remove anchors and aliases; write the values out.
""",
    ),
    (
        "KV006",
        "unsupported-yaml-feature",
        """An explicit YAML tag or a merge key (`<<`).

## What it does
Reports tags (`!!python/object`, `!custom`, `!!set`, ...) and merge keys.

## Why it matters
Tags can construct arbitrary objects in unsafe loaders and change types in safe ones; merge
keys hide where a value comes from. Specs are read by people in review.

## Example
```yaml
family: !!python/name:os.system
```

## Fix
Remove the tag; write merged keys out.
""",
    ),
    (
        "KV007",
        "non-string-key",
        """A mapping key that is not a string.

## What it does
Reports keys such as `1`, `true`, `null` or a nested mapping used as a key.

## Why it matters
Every key of a spec is a field or a layer-kind name; a non-string key is always a mistake and
is not representable in JSON.

## Example
```yaml
layer_kinds:
  1: {attention: full, kv_heads: 8, head_dim: 128}
```

## Fix
Use a lowercase identifier, or quote the key.
""",
    ),
    (
        "KV008",
        "file-too-large",
        """The file is larger than the 4 MiB limit.

## What it does
Refuses files over 4 MiB before parsing them.

## Why it matters
A family spec is a few kilobytes; a huge file is generated content or the wrong file, and
parsing it would only waste time and memory.

## Example
A layer pattern written out for every layer of thousands of models.

## Fix
Split the family, or use cyclic patterns instead of writing every layer out.
""",
    ),
    (
        "KV009",
        "unreadable-file",
        """The file cannot be read.

## What it does
Reports a path that does not exist, is not a regular file, or cannot be opened.

## Why it matters
Nothing can be checked.

## Example
`kvgen lint schema/families/gemma.yml` for a file named `gemma3.yaml`.

## Fix
Check the path and its permissions.
""",
    ),
    (
        "KV101",
        "unknown-key",
        """A key that the schema does not define.

## What it does
Reports keys that no model of spec format v1 accepts at that position (unknown keys are
rejected, not ignored).

## Why it matters
A misspelt key (`windw`, `kv_head`) would otherwise be silently ignored and the value it was
meant to set would take its default.

## Example
```yaml
local: {attention: sliding, windw: 1024, kv_heads: 8, head_dim: 128}
```

## Fix
Remove the key, or correct its spelling against `schema/kvspec.schema.json`.
""",
    ),
    (
        "KV102",
        "missing-key",
        """A required key is missing.

## What it does
Reports a mapping that lacks a required key (e.g. `tokens_per_block`, a model's
`max_seq_len`, a kind's `attention`, a profile's `mode`).

## Why it matters
Required keys have no safe default; guessing one would size the wrong cache.

## Example
```yaml
models:
  - name: tiny
    layer_kinds: {g: {attention: full, kv_heads: 8, head_dim: 128}}
    layers: {count: 2, pattern: [g]}
```

## Fix
Add the key; the message names it.
""",
    ),
    (
        "KV103",
        "wrong-type",
        """A value of the wrong type.

## What it does
Reports a value whose type does not match the schema: a string where an integer is expected,
`64.0` or `true` for an integer (types are strict), a scalar where a list or mapping is expected.

## Why it matters
Strict types keep a spec meaning one thing: no quoted numbers, no floats silently truncated.

## Example
```yaml
tokens_per_block: "64"
```

## Fix
Write the value with the expected type.
""",
    ),
    (
        "KV104",
        "out-of-range",
        """A number or list length out of its allowed range.

## What it does
Reports numbers below their minimum or above their maximum (e.g. `tokens_per_block: 0`,
`max_draft_len: 100`) and lists that are empty where at least one entry is needed.

## Why it matters
Ranges catch unit mistakes (bytes versus KiB, pages versus tokens) before they reach sizing.

## Example
```yaml
max_draft_len: 0
```

## Fix
Use a value in the range the message gives.
""",
    ),
    (
        "KV105",
        "invalid-identifier",
        """A family, model, profile or layer-kind name that is not a lowercase identifier.

## What it does
Checks names against `^[a-z][a-z0-9_]*$` (at most 64 characters).

## Why it matters
Names become Python names and module paths in generated code; anything else would need
escaping or could inject code.

## Example
```yaml
- name: Gemma3-27B
```

## Fix
Use lowercase letters, digits and underscores, starting with a letter: `gemma3_27b`.
""",
    ),
    (
        "KV106",
        "invalid-choice",
        """A value that is not one of the allowed choices.

## What it does
Reports values outside an enumeration: `attention` (full, sliding, recurrent, none), dtypes
(fp32, bf16, fp16, fp8, nvfp4), speculative `mode`, `schema_version` (1).

## Why it matters
Each choice selects different sizing formulas; an unknown one cannot be sized.

## Example
```yaml
kv_cache_dtype: int8
```

## Fix
Use one of the values the message lists.
""",
    ),
    (
        "KV107",
        "invalid-combination",
        """Fields that cannot be combined, or a name that is a Python keyword.

## What it does
Reports a layer kind with more than one shape (`kv_heads`, `kv_lora_rank`, `bytes_per_token`,
`state_bytes`; e.g. an MLA or `bytes_per_token` kind that also gives `kv_heads`), an MLA
field without its partner (`kv_lora_rank` / `qk_rope_head_dim`), `head_dim` without
`kv_heads`, and family, model or profile names that are Python keywords.

## Why it matters
Each kind must have exactly one way to compute its bytes; names become Python identifiers.

## Example
```yaml
mla: {attention: full, kv_lora_rank: 512, qk_rope_head_dim: 64, kv_heads: 128}
```

## Fix
Keep exactly one shape per kind; rename keyword names (e.g. `lambda_` instead of `lambda`).
""",
    ),
    (
        "KV010",
        "duplicate-family",
        """Two spec files define the same family.

## What it does
Reports the second file (in path order) whose `family:` repeats one already defined.

## Why it matters
Each family becomes one package `generated/<family>/`; two specs would overwrite each
other's output, and which one wins would depend on file order.

## Example
```yaml
# schema/families/gemma3_new.yaml
family: gemma3   # also defined in schema/families/gemma3.yaml
```

## Fix
Give each spec file its own family name, or merge the models into one spec.
""",
    ),
)
