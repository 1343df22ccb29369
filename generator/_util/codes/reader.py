"""KV0xx (reading the file) and KV1xx (the schema): declared once here, emitted by the loader.

Each ``declare`` is the one declaration of a code: name, severity, default fix and the
documentation served by ``kvgen explain``, SARIF and ``docs/codes.md``.
"""

from __future__ import annotations

from kvgen._util.codes._registry import declare

YAML_SYNTAX = declare(
    "KV001",
    "yaml-syntax-error",
    fix="check indentation and quoting near this position",
    doc="""The file is not valid YAML.

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
)

NOT_UTF8 = declare(
    "KV002",
    "not-utf8",
    fix="save the file as UTF-8",
    doc="""The file is not valid UTF-8.

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
)

NOT_A_MAPPING = declare(
    "KV003",
    "not-a-mapping",
    fix="start from a shipped spec under schema/families/",
    doc="""The file is empty or its top level is not a mapping.

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
)

DUPLICATE_KEY = declare(
    "KV004",
    "duplicate-key",
    fix="remove one of the two; YAML would silently keep the last",
    doc="""A mapping has the same key twice.

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
)

TOO_LARGE = declare(
    "KV005",
    "document-too-large",
    fix="remove anchors and aliases and flatten the document; write values out",
    doc="""The document expands to too many values or nests too deeply.

## What it does
Bounds the number of values built (aliases expanded: 100,000) and the nesting depth of
mappings and sequences (64 levels; a spec needs 6). Depth is measured on the parser's event
stream, before anything below the offending level is built.

## Why it matters
A few lines of anchors and aliases can expand to billions of values (an "alias bomb") and
exhaust memory; tens of thousands of nested brackets crash recursive YAML composers. No real
spec comes close to either bound.

## Example
```yaml
a: &a [x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: [*b, *b, *b, *b, *b, *b, *b, *b, *b]
```

## Fix
Remove anchors and aliases and write the values out; flatten nested lists.
""",
)

UNSUPPORTED_YAML = declare(
    "KV006",
    "unsupported-yaml-feature",
    fix="remove the tag or merge key; specs use plain mappings, lists, strings and numbers",
    doc="""An explicit YAML tag or a merge key (`<<`).

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
)

NON_STRING_KEY = declare(
    "KV007",
    "non-string-key",
    fix="quote the key",
    doc="""A mapping key that is not a string.

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
)

FILE_TOO_LARGE = declare(
    "KV008",
    "file-too-large",
    fix="split the family or remove generated content",
    doc="""The file is larger than the 4 MiB limit.

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
)

UNREADABLE_FILE = declare(
    "KV009",
    "unreadable-file",
    fix="check the path and its permissions",
    doc="""The file cannot be read.

## What it does
Reports a path that does not exist, is not a regular file, or cannot be opened.

## Why it matters
Nothing can be checked.

## Example
`kvgen lint schema/families/gemma.yml` for a file named `gemma3.yaml`.

## Fix
Check the path and its permissions.
""",
)

DUPLICATE_FAMILY = declare(
    "KV010",
    "duplicate-family",
    fix="give each spec file its own family name",
    doc="""Two spec files define the same family.

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
)

UNKNOWN_KEY = declare(
    "KV101",
    "unknown-key",
    fix="remove the key, or check its spelling against the schema",
    doc="""A key that the schema does not define.

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
)

MISSING_KEY = declare(
    "KV102",
    "missing-key",
    fix="add the key",
    doc="""A required key is missing.

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
)

WRONG_TYPE = declare(
    "KV103",
    "wrong-type",
    fix="use a value of the expected type",
    doc="""A value of the wrong type.

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
)

OUT_OF_RANGE = declare(
    "KV104",
    "out-of-range",
    fix="use a value in the allowed range",
    doc="""A number or list length out of its allowed range.

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
)

INVALID_IDENTIFIER = declare(
    "KV105",
    "invalid-identifier",
    fix="use a lowercase identifier: ^[a-z][a-z0-9_]*$",
    doc="""A family, model, profile or layer-kind name that is not a lowercase identifier.

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
)

INVALID_CHOICE = declare(
    "KV106",
    "invalid-choice",
    fix="use one of the allowed values",
    doc="""A value that is not one of the allowed choices.

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
)

INVALID_COMBINATION = declare(
    "KV107",
    "invalid-combination",
    fix="see the message",
    doc="""Fields that cannot be combined, or a name that is a Python keyword.

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
)

CONTROL_CHARACTER_IN_PATH = declare(
    "KV011",
    "control-character-in-path",
    fix="rename the file to printable characters, e.g. lowercase letters, digits and _",
    doc="""A spec's file name contains a control character.

## What it does
Reports a path with a newline, carriage return, escape, NUL or other Unicode control or
format character (categories Cc, Cf, Zl, Zp). The path is shown escaped (`\\n`), and the
file is not read.

## Why it matters
File names are untrusted input in pull requests. Generated modules, CI annotations and
terminal output name the spec they come from; a newline in the name could start a new line of
code or a forged annotation, and an escape sequence could rewrite what a reviewer sees.

## Example
A spec saved as `schema/families/x\\nimport os.yaml`.

## Fix
Rename the file using printable characters only, e.g. `schema/families/gemma3.yaml`.
""",
)

UNREPRESENTABLE_NUMBER = declare(
    "KV012",
    "unrepresentable-number",
    fix="write a finite number in the field's range",
    doc="""A number that no spec field can hold: NaN, an infinity, or too many digits.

## What it does
Reports `.nan`, `.inf`/`-.inf`, a float literal that overflows (`1e400`), and an integer
literal of more than 20 digits (every spec field is far below 2**63).

## Why it matters
NaN compares false with every bound, so range checks would silently pass it; Python refuses
to convert integers of more than 4,300 digits, and huge values only serve to exhaust time and
memory in whatever consumes them.

## Example
```yaml
tokens_per_block: .nan
```

## Fix
Write the finite integer the field expects, e.g. `tokens_per_block: 64`.
""",
)

TAG_VALUE_MISMATCH = declare(
    "KV013",
    "tag-value-mismatch",
    fix="remove the tag, or write a value of that type",
    doc="""An explicit YAML core tag whose value is not of that type.

## What it does
Reports `!!int`, `!!float`, `!!bool` or `!!null` on a value that YAML 1.2's core schema does
not read as that type, such as `!!int name`, `!!float abc` or `!!bool yes`.

## Why it matters
YAML 1.1 loaders turn `!!bool yes` into `true` and others into an error or `false`; kvgen
reads YAML 1.2 only and never changes a value's type behind the author's back, so it refuses
instead of guessing.

## Example
```yaml
family: !!int name
```

## Fix
Remove the tag (specs need none), or write a value of the tagged type (`!!bool true`).
""",
)

UNUSED_NOQA = declare(
    "KV014",
    "unused-noqa",
    severity="warning",
    fix="remove the comment, or name the code reported on that line",
    doc="""A `# kvgen: noqa` comment that suppresses nothing.

## What it does
Warns when a `# kvgen: noqa` or `# kvgen: noqa: KV2xx` comment is on a line where no lint
finding is reported, or names a code that is not a lint rule (KV2xx): findings of reading the
file and of the schema cannot be suppressed, since a spec that does not load is never used.

## Why it matters
A stale suppression hides the next real finding on that line, and a misspelt code suppresses
nothing while looking as if it did.

## Example
```yaml
tokens_per_block: 64  # kvgen: noqa: KV261
```

## Fix
Remove the comment, or name the code that `kvgen lint` reports on that line.
""",
)

OUTPUT_TOO_LARGE = declare(
    "KV016",
    "generated-output-too-large",
    fix="split the models into several families, or give each speculative profile `models:` "
    "so that it applies only to the models that use it",
    doc="""A family whose generated modules could exceed the 32 MiB that kvgen writes.

## What it does
Adds up, from the validated spec and before any other check, an upper bound of what
`kvgen generate` would write to the family's largest module: a share per model, per
speculative profile, per layer kind and pattern entry, and per model-profile pair (a profile
applies to every model unless it has `models:`, and every pair is written out, with the
profile's extra layers repeated for each model). The spec is refused at the model or profile
where the bound passes 32 MiB, the largest generated file `kvgen generate --check` reads back
(KV024). The bound is linear in the spec, so a refused spec costs no more than reading it.

## Why it matters
Generation time and memory grow with what is written. A few hundred lines of spec (1,000
models and 1,000 profiles that apply to all of them: a million pairs) took minutes and
gigabytes to render about 90 MB of Python that `generate --check` then refused. A real family
is far below the bound: the largest shipped family's bound is under 100 KB.

## Example
```yaml
models:       # 1,000 models
  - {name: m0, ...}
speculative:  # 1,000 profiles without `models:`, each written for every model
  - {name: p0, mode: ngram, max_draft_len: 4}
```

## Fix
Split the models into several families (one spec file each), or give each profile a `models:`
list so that it applies only to the models that use it. This check cannot be suppressed.
""",
)
