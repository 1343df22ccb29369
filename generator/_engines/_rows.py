"""The engine rows of a loaded spec (``kvgen.engines_rows``' row types), built here for both
``kvgen._engines`` (at call time) and generation (the tables of ``generated/<f>/sizing.py``).

What an engine needs beyond the layers is decided here, once: which speculative profiles vLLM
runs in the target's pool (and how), whether SGLang sizes the architecture as hybrid SWA, and
the SSM share of a recurrent state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvgen._cache_kinds import CacheKind, spec_kind
from kvgen._engines._layers import (
    CachedLayer,
    NotModelled,
    cached_layers,
    ssm_state_bytes,
    stack_layers,
)
from kvgen.engines_rows import VLLM_PER_TOKEN_HEAD, EngineDraft, EngineLayer, EngineModel

if TYPE_CHECKING:
    from kvgen._spec import Family, Model, Speculative

# Drafters whose layers live in vLLM's one pool beside the target's (EAGLE-family, MTP; and a
# separate draft model, draft_target or PARD, whose own layers join the pool); ngram has no
# layers. DFlash is not modelled; the two-model modes are TensorRT-LLM's, which vLLM cannot run.
VLLM_SPECULATIVE_MODES = ("eagle3", "mtp", "mtp_eagle")
# kvgen modes vLLM runs as its "draft_model" method: PARD is draft_model with
# parallel_drafting (vllm/config/speculative.py), whose K extra query slots per request
# (max_num_new_slots_for_drafting) are scheduler token budget, not KV blocks.
VLLM_DRAFT_MODEL_MODES = ("draft_target", "pard")
# TensorRT-LLM's two-model modes (a second engine for the drafter, with its own KV cache), which
# vLLM has no form of, and the one-model modes whose profiles vLLM runs in their place.
VLLM_ONE_MODEL = {
    "eagle3_two_model": ("eagle3",),
    "mtp_eagle_two_model": ("mtp_eagle", "mtp"),
    "draft_target_two_model": ("draft_target",),
}
# kvgen families whose architecture SGLang 0.5.23 sizes as hybrid SWA (configs/model_config.py
# is_hybrid_swa_model: gpt-oss is in SWA_SINK_ARCHS).
# Llama4ForConditionalGeneration is on the list too: its chunked layers become the SWA pool.
SGLANG_HYBRID_SWA_FAMILIES = frozenset({"gpt_oss", "llama4_scout", "llama4_maverick"})
# kvgen families whose recurrent layers vLLM builds as Gated DeltaNet (QwenGatedDeltaNetAttention
# in models/qwen3_next.py), not MambaMixer2: no group replication in vLLM (SGLang replicates
# key heads fewer than tp), and in align mode a prefill checkpoint block only under the
# FlashInfer GDN prefill.
VLLM_GDN_FAMILIES = frozenset({"qwen3_next"})
# kvgen families whose recurrent layers are Kimi Delta Attention (vllm/models/kimi_k3
# KimiDecoderLayer: KimiGatedDeltaNetAttention, a GatedDeltaNetAttention without Qwen's prefill
# checkpoint export): kda_state_shape splits the conv channels by divide() (no group
# replication), widens the conv window by the draft tokens, and in align mode keeps no prefill
# checkpoint block (MambaBase.get_kv_cache_spec).
VLLM_KDA_FAMILIES = frozenset({"kimi_linear"})
# kvgen families whose SSM state vLLM keeps in fp32 by default: Kimi Linear
# (MambaStateDtypeCalculator.kda_state_dtype reads mamba_ssm_cache_dtype "auto" as float32;
# the spec says ssm_dtype: fp32 as well). Nemotron-H's is the spec's own
# mamba_ssm_cache_dtype (_vllm_ssm_dtype), which import-hf writes from its config.
VLLM_FP32_SSM_FAMILIES = frozenset({"kimi_linear"})
# kvgen families an engine cannot run at all, with the UNMODELLED key naming its refusal.
VLLM_UNSUPPORTED = {
    "llama3_2_vision": "vllm_no_mllama",
    "openelm": "vllm_no_openelm",
    "minimax": "vllm_no_minimax",  # kvgen import-hf's default family of a MiniMax config
}
SGLANG_UNSUPPORTED = {
    "jamba": "sglang_no_jamba", "minimax": "sglang_no_minimax", "openelm": "sglang_no_openelm",
}  # fmt: skip
# kvgen families SGLang 0.5.23 runs as encoder-decoder models in its one token pool
# (configs/model_config.py is_encoder_decoder_model): Mllama.
SGLANG_ENCODER_DECODER = frozenset({"llama3_2_vision"})
# kvgen speculative modes SGLang 0.5.23 cannot run, with the UNMODELLED key naming why.
SGLANG_REFUSED_MODES = {"pard": "sglang_no_pard", "eagle3_two_model": "sglang_two_model_eagle3"}


def layer_rows(layers: tuple[CachedLayer, ...], mixer: str = "") -> tuple[EngineLayer, ...]:
    """One row per distinct shape with its layer count, in order of first appearance;
    ``mixer``: what the Mamba-2-form recurrent layers are ("gdn": Gated DeltaNet,
    VLLM_GDN_FAMILIES; "kda": Kimi Delta Attention, VLLM_KDA_FAMILIES; "": Mamba-2)."""
    counts: dict[tuple[object, ...], int] = {}
    for lay in layers:
        shape = (lay.attention, lay.kv_heads, lay.head_dim, lay.value_dim, lay.window,
                 lay.state_bytes, lay.dtype, lay.recurrent, lay.token_bytes)  # fmt: skip
        counts[shape] = counts.get(shape, 0) + 1
    rows = []
    for (
        attention,
        heads,
        head,
        value,
        window,
        state,
        dtype,
        dims,
        packed,
    ), count in counts.items():
        row = EngineLayer(attention, count, heads, head, value, window, state, dtype)  # type: ignore[arg-type]
        if packed:
            row = EngineLayer(attention, count, heads, head, value, window, state, dtype,  # type: ignore[arg-type]
                              token_bytes=packed)  # type: ignore[arg-type]  # fmt: skip
        if dims:
            kind, channels, rows_, ssm_heads, elements, groups, d_state = dims
            row = EngineLayer(
                attention, count, heads, head, value, window, state, dtype,  # type: ignore[arg-type]
                (mixer or kind) if kind == "mamba2" else kind, channels, rows_, ssm_heads,  # type: ignore[arg-type]
                elements, groups, d_state,  # type: ignore[arg-type]
            )  # fmt: skip
        rows.append(row)
    return tuple(rows)


def vllm_draft(family: Family, model: Model, profile: Speculative) -> EngineDraft:
    """A profile as vLLM runs it: drafter layers in the target's pool, tokens retained below
    each sliding window, Mamba state blocks per request added by the draft tokens.

    vLLM keeps an EAGLE/MTP drafter's layers in the one KV pool beside the target's; a
    multi-module MTP drafter re-prefills K - 1 tokens below each sliding window, so those stay
    retained; every Mamba layer keeps one state block per draft token (``num_speculative_tokens``).
    """
    k = profile.max_draft_len
    if profile.mode == "ngram":
        # SGLang's NGRAM: no draft layers, a chain of k verifying k + 1 tokens (kvgen emits
        # bfs breadth 1), whose intermediate states a recurrent hybrid keeps.
        return EngineDraft((), 0, k, "", 0, k + 1)
    if profile.mode in VLLM_DRAFT_MODEL_MODES and profile.draft is not None:
        # SGLang: a separate draft model runs as STANDALONE, the draft config's layers at the
        # target's per-layer size (spec_aux_hidden_state.py draft_kv_num_layers,
        # pool_configurator.py), whatever its vocabulary; PARD it cannot run.
        sglang: dict[str, Any] = (
            {"sglang_layers": profile.draft.layers.count, "sglang_draft_tokens": k + 1}
            if profile.mode == "draft_target"
            else {"sglang_unmodelled": SGLANG_REFUSED_MODES[profile.mode]}
        )
        # vLLM's "draft_model" method: the draft model's layers join the target's one pool
        # (their specs marked is_draft), nothing retained below a window (it is no EAGLE
        # drafter: num_prefill_lookahead_tokens 0). A draft of another vocabulary (where the
        # spec gives both sizes) keeps its layers, marked: vLLM refuses it unless
        # use_heterogeneous_vocab is set, which maps tokens and changes no cache spec.
        vocabs = {model.vocab_size, profile.draft.vocab_size}
        differs = "vllm_draft_vocab" if None not in vocabs and len(vocabs) > 1 else ""
        try:
            rows = layer_rows(stack_layers(family, profile.draft, model))
        except NotModelled as exc:
            return EngineDraft((), 0, 0, exc.reason, **sglang, draft_model=True)
        return EngineDraft(rows, 0, k, differs, **sglang, draft_model=True)
    if profile.mode in VLLM_ONE_MODEL:
        # vLLM's drafters always share the pool: name the one-model profile it runs instead.
        instead = [
            other.name
            for other in family.speculative
            if other.mode in VLLM_ONE_MODEL[profile.mode] and other.applies_to(model.name)
        ]
        return EngineDraft(
            (), 0, 0, "vllm_two_model", instead=instead[0] if instead else "",
            sglang_unmodelled=SGLANG_REFUSED_MODES.get(profile.mode, ""),
        )  # fmt: skip
    if profile.mode in SGLANG_REFUSED_MODES:
        return EngineDraft((), 0, 0, "separate_draft",
                           sglang_unmodelled=SGLANG_REFUSED_MODES[profile.mode])  # fmt: skip
    if profile.mode not in VLLM_SPECULATIVE_MODES:
        return EngineDraft((), 0, 0, "separate_draft")
    extra = profile.extra_layers
    try:
        draft = stack_layers(family, extra, model) if extra is not None else ()
    except NotModelled as exc:
        return EngineDraft((), 0, 0, exc.reason)
    modules = extra.layers.count if extra is not None else 1
    lookahead = k if profile.mode == "mtp" and min(modules, k) > 1 else 1
    if profile.mode not in ("eagle3", "mtp", "mtp_eagle"):
        return EngineDraft(layer_rows(draft), max(0, lookahead - 1), k)
    # SGLang's EAGLE/MTP path: a chain of k steps verifying k + 1 tokens (what kvgen emits),
    # the drafter's layers charged at the target's per-layer size, except on a recurrent
    # hybrid: a path-less MTP head there counts only if the target's config.json names
    # num_nextn_predict_layers (spec_aux_hidden_state.py), which Qwen3-Next's does not.
    recurrent = any(spec_kind(kind).recurrent for kind in model.layer_kinds.values())
    sglang = 0 if recurrent else len({lay.position for lay in draft})  # an indexer: its layer's
    return EngineDraft(layer_rows(draft), max(0, lookahead - 1), k, "", sglang, k + 1)


def _shares_kv(model: Model) -> bool:
    """Whether a layer of the model reads another layer's cache (vLLM gives the reading layer
    no cache; SGLang 0.5.23 allocates it a buffer all the same: resolve_layer_indices sizes
    the pool for every hidden layer, and Gemma 3n's shared layers only skip writing to it,
    models/gemma3n_causal.py save_kv_cache=not is_kv_shared_layer)."""
    return any(kind.reads is not None for kind in model.layer_kinds.values())


def _sglang_encoder_decoder(family: Family, model: Model) -> dict[str, object]:
    """SGLang 0.5.23's rows of an encoder-decoder model: every text layer, cross-attention
    ones included, is a layer of its one token pool (ModelConfig.num_attention_layers,
    layer_setup._compute_model_num_layers), sized like a self-attention layer; a request's
    encoder tokens (models/mllama.py pad_input_ids: images x tiles x patches) take slots of
    that pool before its text (schedule_batch.py encoder_lens), and the cross layers write
    their K/V there (memory_pool.py KVWriteLoc.for_layer: encoder_out_cache_loc)."""
    pattern = model.layers.pattern
    pool_dtype = model.kv_cache_dtype or family.kv_cache_dtype
    layers: list[CachedLayer] = []
    for index in range(model.layers.count):
        kind = model.layer_kinds[pattern[index % len(pattern)]]
        cls = spec_kind(kind)
        if cls.encoder_cache:  # a cross layer: SGLang sizes it like a self-attention layer
            cls = CacheKind
        layers += cls.engine_layers(kind, index, kind.dtype or pool_dtype, model)
    tokens = max(kind.encoder_tokens or 0 for kind in model.layer_kinds.values())
    return {"sglang_layers": layer_rows(tuple(layers)), "sglang_encoder_tokens": tokens}


def _vllm_ssm_dtype(family: Family, model: Model) -> str:
    """The SSM state dtype vLLM's mamba_ssm_cache_dtype "auto" resolves to ("": the conv
    dtype): the spec's ``mamba_ssm_cache_dtype`` (models/config.py
    NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype: the config's value, else float32),
    fp32 for Kimi Delta Attention."""
    if family.family in VLLM_FP32_SSM_FAMILIES:
        return "fp32"
    for kind in model.layer_kinds.values():
        dims = kind.recurrent_dims
        dtype = getattr(dims, "mamba_ssm_cache_dtype", None)
        if dtype:
            return str(dtype)
    return ""


def engine_model(family: Family, model: Model) -> EngineModel:
    """The engine rows of one model of a loaded spec."""
    drafts = {
        profile.name: vllm_draft(family, model, profile)
        for profile in family.speculative
        if profile.applies_to(model.name)
    }
    hybrid_swa = family.family in SGLANG_HYBRID_SWA_FAMILIES
    ssm = ssm_state_bytes(family, model)
    vllm = {
        "query_heads": model.num_attention_heads or 0,
        "vllm_ssm_dtype": _vllm_ssm_dtype(family, model),
        "vllm_unmodelled": VLLM_UNSUPPORTED.get(family.family, ""),
        "sglang_unmodelled": SGLANG_UNSUPPORTED.get(family.family, ""),
    }
    try:
        layers = cached_layers(family, model)
        if _shares_kv(model):
            vllm["sglang_layers"] = layer_rows(stack_layers(family, model, model, shared=True))
    except NotModelled as exc:
        if exc.reason == "cross" and family.family in SGLANG_ENCODER_DECODER:
            try:
                vllm.update(_sglang_encoder_decoder(family, model))
            except NotModelled as sglang:  # a layer SGLang's rows cannot hold either: its reason
                vllm["sglang_unmodelled"] = vllm["sglang_unmodelled"] or sglang.reason
        return EngineModel(model.max_seq_len, (), drafts, hybrid_swa, ssm, exc.reason, **vllm)
    if not vllm["sglang_unmodelled"] and any(lay.dtype in VLLM_PER_TOKEN_HEAD for lay in layers):
        vllm["sglang_unmodelled"] = "sglang_no_per_token_head"
    mixer = "gdn" if family.family in VLLM_GDN_FAMILIES else ""
    rows = layer_rows(layers, "kda" if family.family in VLLM_KDA_FAMILIES else mixer)
    return EngineModel(model.max_seq_len, rows, drafts, hybrid_swa, ssm, "", **vllm)


def engine_tables(family: Family) -> dict[str, EngineModel]:
    """Every model's engine rows, as generation writes them."""
    return {model.name: engine_model(family, model) for model in family.models}
