"""KV3xx: ``kvgen import-hf`` (``kvgen._importhf``), declared once here."""

from __future__ import annotations

from kvgen._util.codes._registry import declare

UNREADABLE_CONFIG = declare(
    "KV301",
    "unreadable-config",
    fix="pass the model's config.json as published",
    doc="""The config file cannot be read as a JSON object.

## What it does
Reports invalid JSON, bytes that are not UTF-8, or a top level that is not an object.

## Why it matters
Nothing can be imported from it.

## Example
```json
[{"num_hidden_layers": 32}]
```

## Fix
Pass the model's config.json as published.
""",
)

UNKNOWN_CONFIG_FIELD = declare(
    "KV302",
    "unknown-config-field",
    fix="check what the field does; pass --ignore-field NAME once reviewed",
    doc="""A config field the importer does not know and whose name says it may move a cache.

## What it does
Reports, as an error, an unknown field whose name holds a word that describes a cache
(head, kv, key, value, window, cache, dtype, state, conv, ssm, chunk, compress, sparse,
index, mamba, linear, recurrent, lora, sink, swa), or a word about the layout of layers
(layer, block, seq, position, context, global, local, mtp, group, channels, kernel, stride,
memory, share) unless the name is about the MLP or the experts (mlp, dense, moe, expert,
ffn, norm, router, gate). Any other unknown field (`dropout`, `type_vocab_size`,
`clip_qkv`, `swiglu_alpha`, `num_shared_experts`, ...) is reported as a warning and kept
as a `# note:` in the imported spec's header: the import goes on. Fields whose names hold
such a word but were reviewed against their model's code as not moving a cache (Doge's
`keep_window_size`, Gated DeltaNet's `linear_a_log_max`, ...) import silently;
docs/import-hf-coverage.md lists each with the reason. When the layers behind an unknown
field hold a cache the spec format cannot express (LFM's `conv_L_cache` of its conv layers),
the refusal is that feature's KV305, not KV302.

## Why it matters
New attention variants announce themselves through new fields that name what they change:
a wrong guess sizes the KV cache wrong for every deployment of the model. Blocking every
unknown field, though, blocks most architectures for fields that only touch weights,
training or the tokenizer, which cannot change a cache's shape, count, window, dtype or
state.

## Example
```json
{"num_hidden_layers": 32, "kv_sharing_stride": 2}
```

## Fix
Check what the field does; pass `--ignore-field NAME` once reviewed. A noted field that does
change the cache means the import is wrong: describe the model by hand.
""",
)

CONTRADICTORY_CONFIG_FIELDS = declare(
    "KV303",
    "contradictory-config-fields",
    fix="make the fields agree, or write the spec by hand",
    doc="""Config fields that contradict each other.

## What it does
Reports fields that describe the same thing differently, e.g. a `layer_types` list
whose length is not `num_hidden_layers`.

## Why it matters
A wrong guess sizes the KV cache wrong for every deployment of the model.

## Example
```json
{"num_hidden_layers": 4, "layer_types": ["full_attention"]}
```

## Fix
Correct the config, or write the spec by hand.
""",
)

MISSING_CONFIG_FIELD = declare(
    "KV304",
    "missing-config-field",
    fix="add the field with the value the model class uses",
    doc="""A field the importer needs is missing.

## What it does
Reports a field with no safe default, such as `max_position_embeddings`.

## Why it matters
Defaults of the model's Python class are not in the file. A wrong guess
sizes the KV cache wrong for every deployment of the model.

## Example
```json
{"num_hidden_layers": 32}
```

## Fix
Add the field with the value the model class uses.
""",
)

UNSUPPORTED_CONFIG_FEATURE = declare(
    "KV305",
    "unsupported-config-feature",
    fix="describe the model by hand in a spec",
    doc="""A value or feature the spec format cannot express.

## What it does
Reports attention variants the spec has no kind for (chunked attention, shared KV layers, ...).

## Why it matters
Importing it as something else would size the cache wrong.

## Example
```json
{"attention_chunk_size": 8192}
```

## Fix
Write the spec by hand with the nearest exact shape, or file an issue for the kind.
""",
)

DUPLICATE_CONFIG_KEY = declare(
    "KV306",
    "duplicate-config-key",
    fix="remove one of the two",
    doc="""A duplicate key in a JSON object.

## What it does
Reports a key that appears twice in one object.

## Why it matters
JSON readers silently keep the last value; which one the model uses is unclear.

## Example
```json
{"num_key_value_heads": 8, "num_key_value_heads": 4}
```

## Fix
Remove one of the two.
""",
)

INVALID_CONFIG_VALUE = declare(
    "KV307",
    "invalid-config-value",
    fix="use the value published with the model",
    doc="""A value of the wrong type or range.

## What it does
Reports, for example, a negative head count or a string where a number belongs.

## Why it matters
A wrong guess sizes the KV cache wrong for every deployment of the model.

## Example
```json
{"num_key_value_heads": "eight"}
```

## Fix
Correct the value.
""",
)

CONFIG_TOO_LARGE = declare(
    "KV308",
    "config-too-large",
    fix="pass the model's config.json as published",
    doc="""The config file is larger or nests deeper than any model config.

## What it does
Refuses, before parsing, a config of more than 4 MiB or with objects and arrays nested more
than 32 levels deep (published configs are a few KiB and nest 3 or 4 levels).

## Why it matters
Configs are untrusted input in pull requests. Deeply nested JSON exhausts the parser's stack
and huge files its memory; refusing them up front keeps `kvgen import-hf` a diagnostic, not
a crash.

## Example
```json
{"num_hidden_layers": 32,
 "rope_scaling": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}
```

## Fix
Pass the model's config.json as published.
""",
)

UNKNOWN_ENCODER_TOKENS = declare(
    "KV310",
    "unknown-encoder-tokens",
    fix="give vision_config image_size, patch_size and max_num_tiles as published",
    doc="""Cross-attention layers whose encoder token count cannot be derived.

## What it does
Reports a config with `cross_attention_layers` (Llama 3.2 Vision, `mllama`) whose
`vision_config` does not give `image_size`, `patch_size` and `max_num_tiles` as positive
integers, or whose `patch_size` does not divide `image_size`.

## Why it matters
A cross-attention layer caches the K/V of every encoder token of the request, once:
`max_num_tiles x ((image_size / patch_size)^2 + 1)` tokens for mllama (one class token per
tile). Without the count the layer's cost per request is unknown, and guessing it sizes every
deployment of the model wrong.

## Example
```json
{"text_config": {"cross_attention_layers": [3, 8]},
 "vision_config": {"image_size": 560}}
```

## Fix
Pass the model's config.json as published (its `vision_config` gives all three), or write
the spec by hand with `attention: cross` and `encoder_tokens`.
""",
)


SHARED_LAYER_WITHOUT_OWNER = declare(
    "KV311",
    "shared-layer-without-owner",
    fix="use the num_kv_shared_layers and layer_types published with the model",
    doc="""A KV-shared layer (`num_kv_shared_layers`) has no earlier layer whose cache it can read.

## What it does
Reports a config whose last `num_kv_shared_layers` layers include one with no earlier,
non-shared layer of the same attention type (full or sliding), or one that is not an
attention layer at all, or a `num_kv_shared_layers` that leaves no layer with its own cache.

## Why it matters
A shared layer computes no keys or values: it attends over the cache of the last earlier
layer of its own type (Gemma 3n). Without such a layer the model cannot run (transformers
fails to find the layer; vLLM's `validate_kv_sharing_target` refuses it), and guessing a
layer to read would size a cache the model does not have.

## Example
```json
{"num_hidden_layers": 4, "num_kv_shared_layers": 2,
 "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "full_attention"]}
```

## Fix
Use the `num_kv_shared_layers` and `layer_types` published with the model, or write the
spec by hand with `reads:` on the shared kinds.
""",
)

KV_CACHE_LAYOUT_MISMATCH = declare(
    "KV312",
    "kv-cache-layout-mismatch",
    fix="pick a --kv-cache-dtype that fits the model's cache shape",
    doc="""A quantized cache layout that does not fit the config's cache shape.

## What it does
Refuses `--kv-cache-dtype` layouts the imported shape cannot hold: `fp8_ds_mla` for a model
without MLA (`kv_lora_rank`) or with a `kv_lora_rank` that is not a multiple of 128, `mxfp8` /
`mxfp4` when a head (or the MLA latent) is not a multiple of the 32-element MX block, any
scaled layout for a model with recurrent (Mamba / linear-attention) layers, and an
`index_head_dim` that is not a multiple of the indexer cache's 128-element scale block.

## Why it matters
Each layout stores scales per head or per block beside its elements (docs/cost-model.md §1);
on a shape that does not divide, no engine allocates what the spec would charge. The written
spec would only fail `kvgen lint` later (KV237-KV239), far from the flag that caused it.

## Example
```console
$ kvgen import-hf llama-3.1-8b.json --kv-cache-dtype fp8_ds_mla
```

## Fix
Pick a `--kv-cache-dtype` that fits (`fp8_per_token_head` fits every attention shape), or
leave the flag out to keep the config's `torch_dtype`.
""",
)


AMBIGUOUS_MAMBA_VERSION = declare(
    "KV313",
    "ambiguous-mamba-version",
    fix="keep the fields of the model's one Mamba version, as published",
    doc="""A config that describes its recurrent layers both as Mamba-1 and as Mamba-2.

## What it does
Reports a config whose Mamba layers are placed the Jamba way (`attn_layer_period`, Mamba-1:
`mamba_expand` x `hidden_size` inner channels, one state vector per channel) but that also
gives Mamba-2 head fields (`mamba_n_heads`, `mamba_num_heads`, `mamba_d_head`, `n_groups`).

## Why it matters
The two versions keep different state per layer (docs/cost-model.md §8): Mamba-1 keeps
`d_inner x d_state` SSM elements and a conv window of `d_inner` channels; Mamba-2 keeps
`num_heads x head_dim x d_state` and a conv window that also holds the B/C groups. Jamba's
Mamba-1 layer is 311,296 B at bf16; read as Mamba-2 with 128 heads of 64 it would be over
2 MB. Guessing either way sizes the cache wrong.

## Example
```json
{"model_type": "jamba", "attn_layer_period": 8, "attn_layer_offset": 4,
 "mamba_expand": 2, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_heads": 128}
```

## Fix
Remove the fields that do not belong to the model's Mamba version (compare with the
published config.json), or describe the model by hand.
""",
)

IMPORT_NOTE = declare(
    "KV314",
    "import-note",
    severity="warning",
    fix="check the noted choice against how you deploy the model",
    doc="""A choice the importer made from the config that a deployment may not share.

## What it does
Notes, without stopping the import, a config value read into the spec that engines often
serve differently: a `torch_dtype` of float32 (the cache imports as fp32, the checkpoint's;
`kvgen plan` sizes each engine in the dtype it serves such a checkpoint in: vLLM bf16, SGLang
fp16, TensorRT-LLM fp32), or a `rope_scaling` block (the spec keeps the native
`max_position_embeddings`; the scaled context is a deployment choice). Each note is printed
to stderr and kept as a `# note:` line in the spec's header.

## Why it matters
A float32 cache is twice the bytes of bf16: the engine that serves it in bf16 holds twice the
tokens a float32 plan says; a RoPE-scaled deployment runs past the native context. Neither is
wrong in the config, but both change what a deployment allocates.

## Example
```json
{"torch_dtype": "float32", "rope_scaling": {"type": "yarn", "factor": 4.0}}
```

## Fix
Pass `--kv-cache-dtype` for one dtype on every engine (`kvgen plan` then emits the engine's
dtype setting, or refuses where it has none); size a scaled context at deploy time.
""",
)
