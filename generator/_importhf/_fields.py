"""The config fields the importer knows: read, aliased, unsupported, or known to be harmless."""

from __future__ import annotations

import re

__all__ = [
    "ALIASES",
    "CACHE_FIELDS",
    "IGNORED_FIELDS",
    "IGNORED_PREFIXES",
    "IGNORED_SUFFIXES",
    "MODEL_ALIASES",
    "MTP_ONLY_FIELDS",
    "PURE_SSM",
    "REVIEWED_FIELDS",
    "UNSUPPORTED_FIELDS",
    "could_move_cache",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Fields the importer reads.
CACHE_FIELDS = _words(
    """num_hidden_layers num_key_value_heads num_attention_heads head_dim hidden_size
    max_position_embeddings sliding_window layer_types sliding_window_pattern use_sliding_window
    max_window_layers kv_lora_rank qk_rope_head_dim torch_dtype dtype model_type text_config
    hybrid_override_pattern layers_block_type full_attention_interval mamba_num_heads
    mamba_head_dim ssm_state_size n_groups conv_kernel mamba_ssm_dtype mamba_ssm_cache_dtype
    linear_num_key_heads
    linear_key_head_dim linear_num_value_heads linear_value_head_dim linear_conv_kernel_dim
    global_head_dim num_global_key_value_heads num_nextn_predict_layers
    mtp_num_hidden_layers index_head_dim num_kv_shared_layers cross_attention_layers
    attn_layer_period attn_layer_offset mamba_expand
    attention_chunk_size no_rope_layers no_rope_layer_interval multi_query
    new_decoder_architecture per_layer_config v_head_dim attn_layer_indices attention_layers
    attention_types local_attention prefix_dense_sliding_window_pattern
    indexer_types num_layers_per_stack H_cycles L_cycles first_k_dense_replace layer_group_size
    linear_num_heads linear_head_dim linear_attn_config full_attn_idxs short_conv_kernel_size"""
)
# Other spellings of the same field (OpenELM, Mamba configs): alias -> canonical.
ALIASES = {
    "num_transformer_layers": "num_hidden_layers",
    "num_kv_heads": "num_key_value_heads",
    "num_query_heads": "num_attention_heads",
    "max_context_length": "max_position_embeddings",
    "model_dim": "hidden_size",
    "attention_head_dim": "head_dim",
    "state_size": "ssm_state_size",
    "mamba_d_state": "ssm_state_size",
    "mamba_n_groups": "n_groups",
    "mamba_d_conv": "conv_kernel",
    "mamba_n_heads": "mamba_num_heads",  # Granite 4.0 (granitemoehybrid)
    "mamba_d_head": "mamba_head_dim",
    # transformers' attribute_map spellings (the names config classes save): GPT-2 style,
    # MPT/DBRX, JetMoE and ChatGLM kv_channels.
    "n_layer": "num_hidden_layers",
    "n_layers": "num_hidden_layers",
    "num_layers": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "n_heads": "num_attention_heads",
    "n_embd": "hidden_size",
    "d_model": "hidden_size",
    "n_positions": "max_position_embeddings",
    "max_seq_len": "max_position_embeddings",
    "seq_length": "max_position_embeddings",
    "kv_channels": "head_dim",
    "n_head_kv": "num_key_value_heads",
    "multi_query_group_num": "num_key_value_heads",
    # AFMoE: every n-th layer global, the others sliding (transformers AfmoeConfig)
    "global_attn_every_n_layers": "sliding_window_pattern",
    # DeepSeek-V3, GLM-4-MoE, Sarvam, Mellum, Bailing: attribute_map num_mtp_layers
    "num_mtp_layers": "num_nextn_predict_layers",
}
# Spellings whose meaning depends on the model (``num_heads`` is a Mamba-2 config's SSM
# heads but GPT-Neo's attention heads): model_type -> alias -> canonical.
# MambaConfig / FalconMambaConfig: d_inner = expand x hidden_size
_MAMBA1 = {"expand": "mamba_expand"}
MODEL_ALIASES = {
    "gpt_neo": {"num_heads": "num_attention_heads", "window_size": "sliding_window"},
    "xglm": {"attention_heads": "num_attention_heads"},
    # Kosmos2TextConfig / Kosmos2_5TextConfig attribute_map (a composite's text_config):
    # attention_heads, layers and embed_dim are num_attention_heads, num_hidden_layers and
    # hidden_size
    **{
        kosmos: {
            "attention_heads": "num_attention_heads",
            "layers": "num_hidden_layers",
            "embed_dim": "hidden_size",
        }
        for kosmos in ("kosmos_2_text_model", "kosmos_2_5_text_model")
    },
    "mamba": _MAMBA1,
    "falcon_mamba": _MAMBA1,
    # Mamba2Config: num_heads x head_dim are the SSM heads (no attention at all)
    "mamba2": {"num_heads": "mamba_num_heads", "head_dim": "mamba_head_dim"},
    "cpmant": {"dim_head": "head_dim"},
    # the other attribute_map spellings of transformers' causal-LM config classes that name
    # a field the importer reads (bench/hf_corpus.py's corpus; test_import_hf_reviewed.py)
    "glm4_moe_lite": {"head_dim": "qk_rope_head_dim"},
    "moss_transcribe_diarize": {
        "encoder_layers": "num_hidden_layers",
        "encoder_attention_heads": "num_attention_heads",
    },
    "bailing_hybrid": {"model_max_length": "max_position_embeddings"},
    "nemotron_h": {"layer_types": "layers_block_type"},
    "bamba": {"layer_types": "layers_block_type"},
    **{
        inkling: {
            "model_max_length": "max_position_embeddings",
            "sliding_window_size": "sliding_window",
        }
        for inkling in ("inkling_text", "inkling2_text", "inkling2_loop_text")
    },
    "kimi_linear": {"model_max_length": "max_position_embeddings"},  # KimiLinearConfig
    # Zamba2Config: its Mamba-2 spellings; kv_channels is hidden_size / num_attention_heads,
    # not the cache's head size (attention_head_dim, twice that): read as itself, not head_dim
    "zamba2": {
        "n_mamba_heads": "mamba_num_heads",
        "mamba_headdim": "mamba_head_dim",
        "mamba_ngroups": "n_groups",
        "layer_types": "layers_block_type",
        "kv_channels": "kv_channels",
    },
    "xlm": {"emb_dim": "hidden_size"},
    # LongcatFlashConfig: num_layers decoder layers of two attention sublayers each, not the
    # cache's layer count (read by layer_count)
    "longcat_flash": {"num_layers": "num_layers"},
}
# Pure state-space models: every layer is one recurrent kind (model_type -> layer type).
PURE_SSM = {"mamba": "mamba1", "falcon_mamba": "mamba1", "mamba2": "mamba"}
# The kinds of MTP layers: they matter only when the config has MTP layers at all (Nemotron-H
# saves a default list either way).
MTP_ONLY_FIELDS = ("mtp_layers_block_type", "mtp_layer_types")
# Fields that change the cache in ways the spec cannot express yet.
UNSUPPORTED_FIELDS = {
    "attention_k_eq_v": "layers whose keys double as values",
    "compress_ratios": "compressed per-layer caches",
    "swa_num_key_value_heads": "separate sliding-layer head counts",
    "swa_head_dim": "separate sliding-layer head sizes",
    "add_cross_attention": "cross-attention layers over an encoder's states",
}
# Fields whose names say they might move a cache (KV302 would block them), each reviewed
# against the modelling code of the transformers model that saves it: field -> (the model
# types it was reviewed on, None for any; why it cannot change a cache's shape, count,
# window, dtype or state). docs/import-hf-coverage.md lists them with the reason.
REVIEWED_FIELDS: dict[str, tuple[frozenset[str] | None, str]] = {
    "keep_window_size": (
        frozenset({"doge"}),
        "Doge's dynamic mask keeps the top keep_window_size keys per query out of a full "
        "cache (DynamicLayer): it selects, it does not evict",
    ),
    "learnable_sink_init": (None, "the initial value of a per-head attention-sink weight"),
    "num_attention_heads_per_layer": (
        frozenset({"laguna"}),
        "query heads per layer; the cache holds num_key_value_heads K/V heads on every layer",
    ),
    "index_block_size": (
        frozenset({"minimax_m3_vl", "minimax_m3_vl_text"}),
        "the granularity of the sparse layers' block selection over a full cache; the "
        "indexer key cache itself belongs to minimax_m3_sparse layer types (refused)",
    ),
    "index_topk_blocks": (
        frozenset({"minimax_m3_vl", "minimax_m3_vl_text"}),
        "how many key blocks a sparse layer reads from its full cache",
    ),
    "index_local_blocks": (
        frozenset({"minimax_m3_vl", "minimax_m3_vl_text"}),
        "how many preceding key blocks a sparse layer always reads from its full cache",
    ),
    "linear_a_log_min": (None, "the clamp of a Gated DeltaNet decay parameter (a weight)"),
    "linear_a_log_max": (None, "the clamp of a Gated DeltaNet decay parameter (a weight)"),
    "linear_allow_neg_eigval": (None, "the value range of a Gated DeltaNet beta gate, no shape"),
    "linear_dt_min": (None, "the init range of a Gated DeltaNet time step (a weight)"),
    "linear_dt_max": (None, "the init range of a Gated DeltaNet time step (a weight)"),
    "linear_dt_init_floor": (None, "the init floor of a Gated DeltaNet time step (a weight)"),
    "rotary_value": (
        frozenset({"roformer"}),
        "whether RoFormer rotates values too: the V cache keeps its shape",
    ),
    "block_size": (
        frozenset({"big_bird", "minimax"}),
        "BigBird's block-sparse attention blocks, an encoder pattern: as a decoder with a "
        "cache BigBird attends in full (attention_type original_full); MiniMax's chunk of "
        "prefill tokens its lightning attention computes at once: the cache is one "
        "head_dim x head_dim matrix per head whatever the chunk",
    ),
    **{
        f"{which}_attn_{factor}_factor": (
            frozenset({"minimax"}),
            "MiniMaxDecoderLayer's residual scaling (residual * alpha + attention output * "
            "beta), a constant on hidden states, no cache",
        )
        for which in ("full", "linear")
        for factor in ("alpha", "beta")
    },
    "mtp_loss_scaling_factor": (
        frozenset({"bailing_hybrid"}),
        "the training loss weight of the MTP head; its layers are num_nextn_predict_layers",
    ),
    "num_random_blocks": (
        frozenset({"big_bird"}),
        "BigBird's random blocks of its block-sparse encoder attention (no cache)",
    ),
    "num_channels": (
        frozenset({"fuyu"}),
        "the image's colour channels of Fuyu's patch embedding",
    ),
    "mask_index": (frozenset({"xlm"}), "XLM's mask token id"),
    # Zamba2 (modeling_zamba2.py): the cache is one K/V per "hybrid" layer of
    # layers_block_type beside its Mamba-2 state, whatever these say
    "add_bias_linear": (
        frozenset({"zamba2"}),
        "whether Zamba2's Mamba-2 in/out and MLP projections have a bias: weights, no cache",
    ),
    "hybrid_layer_ids": (
        frozenset({"zamba2"}),
        "Zamba2Config.__post_init__ recomputes it from layers_block_type's 'hybrid' entries, "
        "which the importer reads",
    ),
    "num_mem_blocks": (
        frozenset({"zamba2"}),
        "how many distinct shared attention blocks Zamba2 cycles over its hybrid layers "
        "(weights); every hybrid layer keeps its own K/V cache whichever block it applies",
    ),
    "num_query_groups": (
        frozenset({"zamba2"}),
        "Zamba2Config sets it to num_attention_heads and its modelling code never reads it; "
        "the K/V heads are num_key_value_heads",
    ),
    **{
        name: (
            frozenset({"lfm2", "lfm2_moe"}),
            "Lfm2MLP's feed-forward size rounding (block_auto_adjust_ff_dim, "
            "block_ffn_dim_multiplier, block_multiple_of): weights, no cache",
        )
        for name in ("block_auto_adjust_ff_dim", "block_multiple_of", "block_ffn_dim_multiplier")
    },
    "conv_L_cache": (
        frozenset({"lfm2", "lfm2_moe"}),
        "the kernel of LFM2's short-convolution layers (Lfm2ShortConv), whose conv state only "
        "'conv' layer types hold, and those are refused (KV305): the attention layers of an "
        "import keep a plain K/V cache",
    ),
    "unk_index": (frozenset({"xlm"}), "XLM's unknown token id"),
    "max_state_dim": (
        frozenset({"pi0"}),
        "the padded size of PI0's robot state vector (its state projection's input), no cache",
    ),
}
# Fields known not to change the KV cache (weights, training, tokenizer, rope, routing).
IGNORED_FIELDS = _words(
    """architectures transformers_version vocab_size intermediate_size tie_word_embeddings
    initializer_range hidden_act hidden_activation pretraining_tp query_pre_attn_scalar
    cache_implementation num_experts_per_tok num_local_experts n_routed_experts n_shared_experts
    routed_scaling_factor topk_method n_group topk_group norm_topk_prob scoring_func
    ep_size seq_aux q_lora_rank qk_nope_head_dim
    decoder_sparse_step mlp_only_layers num_experts experts_per_token swiglu_limit
    initial_context_length logit_scale partial_rotary_factor attn_output_gate expand chunk_size
    residual_in_fp32 rescale_prenorm_residual num_logits_to_keep model_max_length ffn_multipliers
    qkv_multipliers ffn_dim_divisor normalization_layer_name normalize_qk_projections
    share_input_output_layers activation_fn_name num_gqa_groups mm_tokens_per_image
    is_encoder_decoder qk_layernorm aux_loss_alpha qk_norm ffn_with_glu
    original_max_position_embeddings logits_scaling embedding_multiplier pad_vocab_size_multiple
    hidden_size_per_layer_input layer_norm_type norm_type position_embedding_type dropout
    index_topk index_n_heads laurel_rank activation_sparsity_pattern vocab_size_per_layer_input
    expert_layer_period expert_layer_offset
    attn_scale attn_temperature_tuning floor_scale interleave_moe_layer_step
    intermediate_size_mlp for_llm_compressor qk_head_dim position_bias_max_distance
    position_bias_num_buckets scale_attn_by_inverse_layer_idx attention_value_scale"""
)
IGNORED_PREFIXES = (
    "_",
    "vision_",
    "audio_",
    "image_",
    "rope_",
    "moe_",
    "router_",
    "mamba_",
    "time_step",
    "output_",
    "use_",
    "num_experts",
    "auto_",
    "altup_",  # Gemma 3n AltUp: weights and routing
)
IGNORED_SUFFIXES = (
    "_token_id",
    "_token_ids",
    "_token_index",
    "_dropout",
    "_pdrop",
    "_eps",
    "_epsilon",
    "_bias",
    "_softcapping",
    "_range",
    "_act",
    "_multiplier",
    "_multipliers",  # Falcon-H1 ssm_multipliers, mlp_multipliers: scales of weights' outputs
    "_intermediate_size",
    "_config",
    "_theta",
    "_scaling",
    "_coef",
)

# Words of a field name that describe a cache (shape, count, window, dtype, state) ...
_CACHE_WORDS = _words(
    """head heads kv key keys value values window cache dtype state states conv ssm chunk
    chunks compress compressed compression sparse index indexer mamba
    linear recurrent lora sink sinks swa"""
)
# ... words that may, unless the name is about the MLP or the experts ...
_LAYOUT_WORDS = _words(
    """layer layers block blocks seq position positions context global local mtp nextn group
    groups channels kernel stride memory share shared sharing"""
)
# ... which hold no cache.
_WEIGHT_WORDS = _words("mlp dense moe expert experts ffn norm router gate gated")


def could_move_cache(name: str) -> bool:
    """Whether an unknown field's name says it may describe a cache: such a field blocks an
    import (KV302) until reviewed; any other is noted."""
    words = set(re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name.lower()))
    if words & _CACHE_WORDS:
        return True
    return bool(words & _LAYOUT_WORDS) and not words & _WEIGHT_WORDS
