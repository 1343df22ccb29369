"""Which cache each layer holds: layer types, per-layer shapes, and the cache dtype."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvgen._importhf._config import Abort, HfConfig, field_spelling
from kvgen._importhf._dtype import DTYPES as _DTYPES
from kvgen._importhf._fields import PURE_SSM
from kvgen._importhf._patterns import attention_index_kinds, local_global_kinds, pattern_kinds
from kvgen._importhf._refusals import PARALLEL_STATES
from kvgen._importhf._served import engines_note
from kvgen._spec.models import MAX_STATE_BYTES
from kvgen._util.codes import hf as codes

__all__ = [
    "NO_CACHE",
    "RECURRENT_TYPES",
    "ImportedKind",
    "lightning_state",
    "mamba1_state",
    "per_layer_types",
    "state_bytes",
]


_LAYER_TYPES = {
    "full_attention": "full",
    "attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",
    "mamba": "mamba",
    "mamba2": "mamba",
    # DeepSeek-V3.2-style sparse attention: an MLA layer with an indexer key cache
    # (index_head_dim); attention_kinds refuses it without MLA.
    "indexed_attention": "full",
}
# Layer types transformers names whose cache the spec format cannot express: the reason.
_UNSUPPORTED_LAYER_TYPES = {
    "hybrid": "each layer holds both a KV cache and a recurrent state of its own (parallel "
    "hybrid; the spec has one only for a Mamba-2 state beside full attention)",
    "hybrid_sliding": "each layer holds both a sliding-window KV cache and a recurrent state "
    "(parallel hybrid; the spec has one only for a Mamba-2 state beside full attention)",
    "minimax_m3_sparse": "sparse attention with a lightning-indexer key cache (index_head_dim) "
    "beside its K/V cache, which the spec format has only for MLA",
    "heavily_compressed_attention": "compressed attention (a cache of pooled tokens)",
    "compressed_attention": "compressed attention (a cache of pooled tokens)",
    "conv": "a short-convolution layer holding a conv state",
    "short_conv": "a short-convolution layer holding a conv state",
    "lightning_attention": "lightning (linear) attention with its own state",
    "kda": "Kimi Delta Attention with its own conv and recurrent state",
}
# Kinds held by a recurrent state rather than a per-token cache.
RECURRENT_TYPES = ("linear", "mamba", "mamba1", "lightning")
# Model types whose "linear_attention" layers are lightning attention (one head_dim x head_dim
# matrix per query head, no conv window: transformers' MiniMaxLightningAttention and
# MiniMaxCache.linear_cache) rather than Gated DeltaNet.
_LIGHTNING_MODEL_TYPES = frozenset({"minimax", "bailing_hybrid"})
# Nemotron-H hybrid_override_pattern: M Mamba-2, * attention, - MLP, E MoE. MLP and MoE
# blocks hold no cache but count in num_hidden_layers (pipeline ranks split by layer index),
# so they become an `attention: none` kind rather than being dropped.
_HYBRID_CHARS = {"M": "mamba", "*": "full", "-": "none", "E": "none"}
_BLOCK_TYPES = {
    "attention": "full",
    "mamba": "mamba",
    "mlp": "none",
    "moe": "none",
    # transformers-5 saved form (Nemotron-H): Mamba-2 layers named linear_attention
    "full_attention": "full",
    "linear_attention": "linear",
}
# Mamba-2 fields: a config with these and no Gated-DeltaNet field calls its Mamba-2 layers
# "linear_attention" (transformers-5 Nemotron-H, Granite 4.0 granitemoehybrid).
_MAMBA2_FIELDS = (
    "mamba_num_heads", "mamba_n_heads", "mamba_d_head", "mamba_head_dim", "n_mamba_heads"
)  # fmt: skip
# layers_block_type entries of a parallel hybrid layer (attention and a Mamba-2 mixer, whose
# state _parallel.py adds): model_type -> the entry
_PARALLEL_BLOCKS = {"zamba2": "hybrid"}


def _linear_is_mamba2(cfg: HfConfig, kinds: list[str | None]) -> list[str | None]:
    if cfg.get("model_type") in _LIGHTNING_MODEL_TYPES:
        if (
            cfg.get("model_type") == "bailing_hybrid"
            and cfg.get("short_conv_kernel_size") is not None
        ):
            return kinds  # Ling V3: Kimi Delta Attention (_kda.py), not lightning
        return ["lightning" if k == "linear" else k for k in kinds]
    if cfg.has("linear_num_key_heads") or not any(cfg.has(f) for f in _MAMBA2_FIELDS):
        return kinds
    return ["mamba" if k == "linear" else k for k in kinds]


@dataclass(frozen=True)
class ImportedKind:
    """One cache shape; ``notes`` maps a spec field to the comment naming its source."""

    attention: str  # full | sliding | mla | recurrent | none | cross
    window: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    state_bytes: int | None = None
    # A recurrent state by dimensions (docs/cost-model.md §8): (field, value, source note).
    mamba: tuple[tuple[str, int | str, str], ...] = ()
    notes: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    base: str = ""
    index_head_dim: int | None = None  # MLA: a sparse-attention indexer's key cache
    reads: int | None = None  # KV sharing: the layer whose cache this one reads
    encoder_tokens: int | None = None  # cross-attention (docs/cost-model.md §4)
    mamba_key: str = "mamba"  # the spec key of ``mamba``: mamba (Mamba-2) or mamba1
    chunk: int | None = None  # chunked local attention: tokens per attention chunk
    v_head_dim: int | None = None  # V's head size where it differs from K's head_dim


# An MLP-only or MoE-only block: no cache, but it keeps its layer index.
NO_CACHE = ImportedKind("none", notes=(("attention", "MLP/MoE block: no KV cache"),), base="ffn")


# --------------------------------------------------------------------------- layer types


def per_layer_types(cfg: HfConfig, layers: int) -> tuple[list[str | None], str]:
    """Per layer: full | sliding | linear | mamba | none (no cache); and the source note."""
    window = cfg.get(field_spelling(cfg, "sliding_window"))
    layer_types = cfg.get("layer_types")
    # NemotronH/Bamba configs map layer_types onto layers_block_type (attribute_map)
    blocks_name = field_spelling(cfg, "layers_block_type")
    if blocks_name == "layer_types":
        layer_types = None
    pattern_name = field_spelling(cfg, "sliding_window_pattern")
    pattern_every = cfg.int_(pattern_name) if cfg.has(pattern_name) else None
    if pattern_every is None and cfg.get("model_type") == "modernbert-decoder":
        pattern_every = 3  # ModernBertDecoderConfig's global_attn_every_n_layers default
    use_swa = cfg.get("use_sliding_window")
    model_type = cfg.get("model_type")
    if layer_types is None and isinstance(model_type, str) and model_type in PURE_SSM:
        return [PURE_SSM[model_type]] * layers, f"model_type {model_type}: every layer a state"
    if layer_types is None and cfg.get("attention_chunk_size") is not None:
        return _chunked_layer_types(cfg, layers)
    if layer_types is None and model_type == "bailing_hybrid":
        # vLLM bailing_moe_linear.is_linear_layer / SGLang BailingHybridConfig
        # .layers_block_type: every layer_group_size-th layer is full (MLA), the rest lightning
        group = cfg.int_("layer_group_size", required=True)
        kinds: list[str | None] = [
            "full" if (i + 1) % group == 0 else "lightning" for i in range(layers)
        ]
        return kinds, f"config.json layer_group_size {group} (every {group}th layer full)"
    if layer_types is not None:
        if not isinstance(layer_types, list) or len(layer_types) != layers:
            count = len(layer_types) if isinstance(layer_types, list) else "no"
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                "layer_types",
                f"'{cfg.where('layer_types')}' has {count} entries for {layers} layers "
                f"(num_hidden_layers)",
                "give one entry per layer",
            )
            raise Abort
        kinds = []
        for entry in layer_types:
            if entry not in _LAYER_TYPES:
                why = PARALLEL_STATES.get(model_type, _UNSUPPORTED_LAYER_TYPES).get(
                    entry,
                    _UNSUPPORTED_LAYER_TYPES.get(entry, "a layer kind the spec has no form for"),
                )
                cfg.diag(
                    codes.UNSUPPORTED_CONFIG_FEATURE,
                    "layer_types",
                    f"layer type {str(entry)[:40]!r} in '{cfg.where('layer_types')}': {why}"
                    + engines_note(model_type, cfg.data.get("model_type")),
                    "supported: " + ", ".join(sorted(_LAYER_TYPES)),
                )
                raise Abort
            kinds.append(_LAYER_TYPES[entry])
        if "indexed_attention" in layer_types and not cfg.has("kv_lora_rank"):
            cfg.diag(
                codes.UNSUPPORTED_CONFIG_FEATURE,
                "layer_types",
                "indexed_attention layers without MLA (kv_lora_rank): an indexer key cache "
                "beside a plain K/V cache, which the spec format has only for MLA"
                + engines_note(model_type, cfg.data.get("model_type")),
                "describe the model by hand",
            )
            raise Abort
        kinds = _linear_is_mamba2(cfg, kinds)
        if pattern_every is not None:
            expected = pattern_kinds(cfg, layers, pattern_every)
            attention = [k for k in kinds if k in ("full", "sliding")]
            if attention != [
                e for e, k in zip(expected, kinds, strict=True) if k in ("full", "sliding")
            ]:
                cfg.diag(
                    codes.CONTRADICTORY_CONFIG_FIELDS,
                    "layer_types",
                    f"'{cfg.where('layer_types')}' disagrees with {pattern_name} "
                    f"{pattern_every} (every {pattern_every}th layer global)",
                    "remove the stale field, or fix the list",
                )
                raise Abort
        if use_swa is False and "sliding" in kinds:
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                "layer_types",
                "layer_types names sliding layers but use_sliding_window is false",
                "make the two agree",
            )
            raise Abort
        return kinds, "config.json layer_types"
    if cfg.get("model_type") == "gpt_neo" or cfg.has("attention_layers"):
        return local_global_kinds(cfg, layers), "config.json attention_layers (local: sliding)"
    if "attn_layer_indices" in cfg.inner or (
        cfg.get("model_type") == "bamba" and not cfg.has(blocks_name)
    ):
        kinds = attention_index_kinds(cfg, layers)
        return kinds, "config.json attn_layer_indices (the other layers Mamba-2)"
    hybrid = cfg.get("hybrid_override_pattern")
    if hybrid is not None:
        if not isinstance(hybrid, str) or len(hybrid) != layers or set(hybrid) - set(_HYBRID_CHARS):
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                "hybrid_override_pattern",
                f"'{cfg.where('hybrid_override_pattern')}' must be {layers} characters of "
                "M * - E (num_hidden_layers)",
                "check the pattern against num_hidden_layers",
            )
            raise Abort
        return [_HYBRID_CHARS[c] for c in hybrid], "config.json hybrid_override_pattern"
    blocks = cfg.get(blocks_name)
    if blocks is not None:
        known = dict(_BLOCK_TYPES)
        if model_type in _PARALLEL_BLOCKS:
            known[_PARALLEL_BLOCKS[model_type]] = "full"
        if not isinstance(blocks, list) or len(blocks) != layers or set(blocks) - set(known):
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                blocks_name,
                f"'{cfg.where(blocks_name)}' must list {layers} of " + ", ".join(sorted(known)),
                "check it against num_hidden_layers",
            )
            raise Abort
        kinds = _linear_is_mamba2(cfg, [known[b] for b in blocks])
        return kinds, f"config.json {blocks_name}"
    if cfg.has("attn_layer_period"):
        return _jamba_layer_types(cfg, layers)
    interval = cfg.int_("full_attention_interval") if cfg.has("full_attention_interval") else None
    if interval is not None:  # Qwen3-Next: every interval-th layer full, the rest linear
        kinds = ["full" if (i + 1) % interval == 0 else "linear" for i in range(layers)]
        return kinds, f"config.json full_attention_interval {interval}"
    if pattern_every is not None:
        kinds = pattern_kinds(cfg, layers, pattern_every)
        return kinds, f"config.json {pattern_name} {pattern_every}"
    if use_swa is False or window is None or window == 0:
        return ["full"] * layers, "full attention"
    if cfg.get("model_type") == "gemma2":  # Gemma 2 hard-codes even layers local
        return ["sliding" if i % 2 == 0 else "full" for i in range(layers)], "gemma2 alternation"
    if use_swa is True:
        first = cfg.int_("max_window_layers", minimum=0)
        if first is None:
            cfg.diag(
                codes.MISSING_CONFIG_FIELD,
                "use_sliding_window",
                "use_sliding_window is true but max_window_layers is missing",
                "add max_window_layers (Qwen2: layers from it on use the window)",
            )
            raise Abort
        kinds = ["sliding" if i >= first else "full" for i in range(layers)]
        return kinds, f"config.json use_sliding_window, layers >= max_window_layers {first}"
    return ["sliding"] * layers, "config.json sliding_window on every layer"


def _jamba_layer_types(cfg: HfConfig, layers: int) -> tuple[list[str | None], str]:
    """Jamba: attention where ``i % attn_layer_period == attn_layer_offset``, Mamba-1 elsewhere
    (transformers' JambaConfig.layers_block_type). Mamba-2 head fields beside them are
    refused: the two versions keep different state (KV313)."""
    period = cfg.int_("attn_layer_period", required=True)
    offset = cfg.int_("attn_layer_offset", minimum=0) or 0
    assert period is not None
    if offset >= period:
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "attn_layer_offset",
            f"attn_layer_offset {offset} is not below attn_layer_period {period}: no layer "
            "would be attention",
            "use the published attn_layer_offset and attn_layer_period",
        )
        raise Abort
    mamba2 = [
        name
        for name in ("mamba_n_heads", "mamba_num_heads", "mamba_d_head", "mamba_head_dim")
        if cfg.has(name)
    ]
    if mamba2:
        cfg.diag(
            codes.AMBIGUOUS_MAMBA_VERSION,
            mamba2[0],
            f"'{cfg.where(mamba2[0])}' is a Mamba-2 field, but attn_layer_period places "
            "Mamba-1 layers (Jamba)",
            "keep the fields of the model's one Mamba version, as published",
        )
        raise Abort
    kinds: list[str | None] = ["full" if i % period == offset else "mamba1" for i in range(layers)]
    return kinds, f"config.json attn_layer_period {period}, attn_layer_offset {offset}"


def _chunked_layer_types(cfg: HfConfig, layers: int) -> tuple[list[str | None], str]:
    """Llama 4: RoPE layers attend within chunks of attention_chunk_size, NoPE layers are full
    attention. ``no_rope_layers`` lists 1 (RoPE: chunked) or 0 (NoPE: full) per layer; when
    it is empty or absent, transformers' Llama4TextConfig places a NoPE layer every
    ``no_rope_layer_interval`` (default 4) layers, and vLLM's llama4.py gives only RoPE layers
    the chunk."""
    flags = cfg.get("no_rope_layers")
    if flags:
        if not isinstance(flags, list) or len(flags) != layers or set(flags) - {0, 1}:
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                "no_rope_layers",
                f"'{cfg.where('no_rope_layers')}' must list {layers} flags of 0 or 1 "
                "(num_hidden_layers)",
                "give one flag per layer (1: RoPE, chunked; 0: NoPE, full)",
            )
            raise Abort
        kinds: list[str | None] = ["chunked" if flag else "full" for flag in flags]
        return kinds, "config.json no_rope_layers (1: RoPE, chunked)"
    interval = 4  # transformers Llama4TextConfig.no_rope_layer_interval default
    note = "no_rope_layer_interval 4 (transformers default)"
    if cfg.has("no_rope_layer_interval"):
        interval = cfg.int_("no_rope_layer_interval") or 4
        note = f"config.json no_rope_layer_interval {interval}"
    kinds = ["full" if (i + 1) % interval == 0 else "chunked" for i in range(layers)]
    return kinds, f"{note}: every {interval}th layer NoPE full attention, the rest chunked"


# --------------------------------------------------------------------------- per-layer shapes


def _mamba1_channels(cfg: HfConfig) -> tuple[int, str]:
    """d_inner as the model's mixer reads it: MambaMixer (mamba, falcon_mamba) its config's
    intermediate_size, Jamba's mixer mamba_expand x hidden_size."""
    if cfg.get("model_type") in PURE_SSM and cfg.has("intermediate_size"):
        inner = cfg.int_("intermediate_size", required=True)  # present (has)
        return inner, "config.json intermediate_size (MambaMixer)"
    hidden_name = field_spelling(cfg, "hidden_size")
    hidden = cfg.int_(hidden_name, required=True)
    expand_name = field_spelling(cfg, "mamba_expand")
    expand = cfg.int_(expand_name, required=True)
    return expand * hidden, f"config.json {expand_name} {expand} * {hidden_name} {hidden}"


def mamba1_state(cfg: HfConfig, dtype_bytes: int) -> ImportedKind:
    """A Mamba-1 kind (Jamba, §8): ``d_inner = mamba_expand * hidden_size`` channels, each
    with a conv window of ``d_conv - 1`` and an SSM state of ``d_state`` (vLLM
    ``MambaStateShapeCalculator.mamba1_state_shape``)."""
    state_name = field_spelling(cfg, "ssm_state_size")
    state = cfg.int_(state_name, required=True)
    width_name = field_spelling(cfg, "conv_kernel")
    width = cfg.int_(width_name, required=True)
    inner, inner_note = _mamba1_channels(cfg)
    ssm_dtype = cfg.get("mamba_ssm_dtype")
    ssm_bytes = _DTYPES[ssm_dtype][1] if ssm_dtype in _DTYPES else dtype_bytes
    total = inner * (width - 1) * dtype_bytes + inner * state * ssm_bytes
    if total > MAX_STATE_BYTES:
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            "mamba_expand",
            f"recurrent state of {total} bytes per layer is over the spec's maximum "
            f"{MAX_STATE_BYTES}",
            "use the values published with the model",
        )
        raise Abort
    dims: tuple[tuple[str, int | str, str], ...] = (
        ("d_inner", inner, inner_note),
        ("d_state", state, f"config.json {state_name}"),
        ("d_conv", width, f"config.json {width_name}"),
    )
    if ssm_dtype in _DTYPES and ssm_bytes != dtype_bytes:
        dims += (("ssm_dtype", _DTYPES[ssm_dtype][0], "config.json mamba_ssm_dtype"),)
    note = (
        f"{total} B per request at tp=1: conv {inner} * (d_conv {width} - 1) * {dtype_bytes} B "
        f"+ ssm {inner} * d_state {state} * {ssm_bytes} B"
    )
    return ImportedKind(
        "recurrent", mamba=dims, mamba_key="mamba1", notes=(("mamba", note),), base="mamba1"
    )


def _check_grouped(
    cfg: HfConfig, heads: int | None, groups: int | None, heads_name: str, groups_name: str
) -> None:
    """Refuse SSM heads that do not divide into their B/C groups (what KV226 refuses in the
    spec): no engine can split such a state, not even at tp=1."""
    if heads and groups and heads % groups:
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            groups_name,
            f"{heads_name} {heads} is not a multiple of {groups_name} {groups}: each B/C group "
            "serves a whole number of SSM heads",
            "use the values published with the model",
        )
        raise Abort


def lightning_state(cfg: HfConfig, dtype_bytes: int) -> ImportedKind:
    """A lightning-attention kind (MiniMax-Text-01, §8): one ``head_dim x head_dim`` matrix per
    query head in the model dtype, as transformers' MiniMaxLightningAttention caches it
    (``head_dim`` or ``hidden_size / num_attention_heads``)."""
    heads = cfg.int_(field_spelling(cfg, "num_attention_heads"), required=True)
    if cfg.get("head_dim") is not None:
        head_dim, source = cfg.int_("head_dim", required=True), "config.json head_dim"
    else:
        hidden_name, heads_name = (
            field_spelling(cfg, "hidden_size"),
            field_spelling(cfg, "num_attention_heads"),
        )
        hidden = cfg.int_(hidden_name, required=True)
        head_dim = hidden // heads
        source = f"config.json {hidden_name} {hidden} / {heads_name} {heads}"
    total = heads * head_dim * head_dim * dtype_bytes
    note = (
        f"{total} B per request at tp=1: num_attention_heads {heads} matrices of head_dim "
        f"{head_dim} x {head_dim} * {dtype_bytes} B, no conv window"
    )
    dims: tuple[tuple[str, int | str, str], ...] = (
        ("num_heads", heads, "config.json num_attention_heads"),
        ("head_dim", head_dim, source),
    )
    return ImportedKind("recurrent", mamba=dims, mamba_key="linear", notes=(("mamba", note),),
                base="lightning")  # fmt: skip


# Architectures whose vLLM config hook resolves mamba_ssm_cache_dtype "auto" to the config's
# mamba_ssm_cache_dtype, else float32 (vllm/model_executor/models/config.py
# NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE, registered for both).
_FP32_SSM_CACHE_ARCHITECTURES = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")


def _ssm_cache_dtype(cfg: HfConfig) -> tuple[tuple[str, str, str], ...]:
    """The spec's ``mamba_ssm_cache_dtype`` (the SSM state dtype vLLM gives the model): the
    config's own field, or float32 for an architecture whose vLLM hook defaults to it."""
    given = cfg.get("mamba_ssm_cache_dtype")
    if given in _DTYPES:
        return (("mamba_ssm_cache_dtype", _DTYPES[given][0], "config.json mamba_ssm_cache_dtype"),)
    architectures = cfg.data.get("architectures")
    if isinstance(architectures, list) and any(
        name in _FP32_SSM_CACHE_ARCHITECTURES for name in architectures
    ):
        return (("mamba_ssm_cache_dtype", "fp32", "config.json has none: vLLM's NemotronH "
                 "default float32 (NemotronHForCausalLMConfig)"),)  # fmt: skip
    return ()


def state_bytes(cfg: HfConfig, kind: str, dtype_bytes: int) -> ImportedKind:
    """A recurrent kind by its dimensions (Mamba-2 or Gated DeltaNet, §8), each number with
    the config field it came from."""
    ssm_dtype = cfg.get("mamba_ssm_dtype")
    ssm_bytes = _DTYPES[ssm_dtype][1] if ssm_dtype in _DTYPES else dtype_bytes
    if kind == "linear" and not cfg.has("linear_num_key_heads") and cfg.has("linear_num_heads"):
        # one head count for q, k and v (GLM-5-Next's Glm5NextTextLinearAttention): Kimi Delta
        # Attention's form, read only for the KDA models import-hf knows (_kda.KDA_MODELS)
        cfg.diag(
            codes.UNSUPPORTED_CONFIG_FEATURE,
            "linear_num_heads",
            f"'{cfg.where('linear_num_heads')}': linear-attention layers of one head count "
            "for q, k and v (linear_num_heads x linear_head_dim, Kimi Delta Attention's form) "
            f"in model_type {cfg.get('model_type')!r:.40}, which import-hf reads only for the "
            "Kimi Delta Attention models it knows; Gated DeltaNet's form needs "
            "linear_num_key_heads and linear_num_value_heads"
            + engines_note(cfg.get("model_type"), cfg.data.get("model_type")),
            "describe the model by hand in a spec (a `mamba:` state by its dimensions)",
        )
        raise Abort
    if kind == "linear":  # Gated DeltaNet (Qwen3-Next)
        kh, kd = (
            cfg.int_("linear_num_key_heads", required=True),
            cfg.int_("linear_key_head_dim", required=True),
        )
        vh, vd = (
            cfg.int_("linear_num_value_heads", required=True),
            cfg.int_("linear_value_head_dim", required=True),
        )
        width = cfg.int_("linear_conv_kernel_dim", required=True)
        _check_grouped(cfg, vh, kh, "linear_num_value_heads", "linear_num_key_heads")
        conv = (width - 1) * (2 * kh * kd + vh * vd)
        ssm = vh * kd * vd
        dims: tuple[tuple[str, int | str, str], ...] = (
            ("num_heads", vh, "config.json linear_num_value_heads"),
            ("head_dim", vd, "config.json linear_value_head_dim"),
            ("d_state", kd, "config.json linear_key_head_dim"),
            ("n_groups", kh, "config.json linear_num_key_heads"),
            ("d_conv", width, "config.json linear_conv_kernel_dim"),
        )
        note = (
            f"config.json: conv (linear_conv_kernel_dim {width} - 1) * (2 * linear_num_key_heads "
            f"{kh} * linear_key_head_dim {kd} + linear_num_value_heads {vh} * "
            f"linear_value_head_dim {vd}) * {dtype_bytes} B + state {vh} * {kd} * {vd} "
            f"* {ssm_bytes} B"
        )
    else:  # Mamba-2
        names = [
            field_spelling(cfg, name)
            for name in ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups")
        ]
        heads, head_dim, state, groups = (cfg.int_(name, required=True) for name in names)
        _check_grouped(cfg, heads, groups, names[0], names[3])
        width_name = field_spelling(cfg, "conv_kernel")
        width = cfg.int_(width_name, required=True)
        dims = (
            *(
                (field, value, f"config.json {name}")
                for field, value, name in zip(
                    ("num_heads", "head_dim", "d_state", "n_groups"),
                    (heads, head_dim, state, groups),
                    names,
                    strict=True,
                )
            ),
            ("d_conv", width, f"config.json {width_name}"),
        )
        conv = (width - 1) * (heads * head_dim + 2 * groups * state)
        ssm = heads * head_dim * state
        note = (
            f"config.json: conv (conv_kernel {width} - 1) * (mamba_num_heads {heads} * "
            f"mamba_head_dim {head_dim} + 2 * n_groups {groups} * ssm_state_size {state}) * "
            f"{dtype_bytes} B + ssm {heads} * {head_dim} * {state} * {ssm_bytes} B"
        )
    total = conv * dtype_bytes + ssm * ssm_bytes
    if total > MAX_STATE_BYTES:
        first = "linear_num_value_heads" if kind == "linear" else "mamba_num_heads"
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            first,
            f"recurrent state of {total} bytes per layer is over the spec's maximum "
            f"{MAX_STATE_BYTES}",
            "use the values published with the model",
        )
        raise Abort
    if ssm_dtype in _DTYPES and ssm_bytes != dtype_bytes:
        dims += (("ssm_dtype", _DTYPES[ssm_dtype][0], "config.json mamba_ssm_dtype"),)
    if kind != "linear":
        dims += _ssm_cache_dtype(cfg)
    return ImportedKind(
        "recurrent",
        mamba=dims,
        notes=(("mamba", f"{total} B per request at tp=1: " + note.removeprefix("config.json: ")),),
        base=kind,
    )
