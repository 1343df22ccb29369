"""Architectures import-hf refuses as a whole, and which unknown fields may move a cache.

A refusal names the feature the spec format cannot express (one diagnostic, at the field that
shows it), never a missing field that follows from it. An unknown field blocks the import only
when its name says it could change a cache's shape, count, window, dtype or state; any other
unknown field is noted (a KV302 warning) and the import goes on."""

from __future__ import annotations

from kvgen._importhf._config import HfConfig
from kvgen._importhf._served import engines_note
from kvgen._util.codes import hf as codes

__all__ = ["PARALLEL_STATES", "UNSUPPORTED_ARCHITECTURES", "architecture_refusal"]

# model_type -> the cache the spec format cannot express (transformers' modelling code).
UNSUPPORTED_ARCHITECTURES = {
    "rwkv": "RWKV time-mix recurrent state (no KV cache, no Mamba/DeltaNet state)",
    "xlstm": "xLSTM matrix-memory recurrent state",
    "recurrent_gemma": "Griffin RG-LRU recurrent blocks with local attention",
    # Each application of the shared attention block keeps a K/V cache of its own beside the
    # layer's Mamba state (transformers ZambaHybridDynamicCache / Zamba2HybridDynamicCache).
    "zamba": "hybrid layers hold a K/V cache (the shared attention block's) beside a Mamba-1 "
    "state, a parallel hybrid the spec format has only with a Mamba-2 state",
    "deepseek_v4": "compressed attention layers (heavily_compressed_attention)",
    "blt": "Byte Latent Transformer: a local byte encoder and decoder around a global "
    "patch transformer, joined by cross-attention",
    "reformer": "Reformer's LSH and chunked local attention, whose cache holds hash buckets",
    "xlnet": "XLNet's memory of past hidden states (mem_len), not a per-layer K/V cache",
    # BlipTextLayer adds a cross-attention over the image encoder's states to every layer of
    # a decoder (is_decoder), cached beside its self-attention (EncoderDecoderCache).
    "blip_text_model": "BLIP's text decoder: every layer holds a self-attention cache and a "
    "cross-attention cache over the image encoder's states, a per-layer pair the spec format "
    "has no form for (its cross kinds are layers of their own)",
}
# Parallel hybrids whose per-layer state is not Mamba-2's (what the spec's `mamba:` beside
# `kv_heads` says): model_type -> layer type -> the state, read in transformers' modelling code.
_INKLING = (
    "a {kv}KV cache and four short-convolution states (a parallel hybrid; "
    "InklingShortConvolution: over K, V "
    "and twice over the hidden states, conv_kernel_size / sconv_kernel_size columns each; no "
    "SSM state), a conv-only state the spec format has no form for beside attention"
)
PARALLEL_STATES = {
    "zaya": {
        "hybrid": "each layer holds (a parallel hybrid) a KV cache, ZAYA's Compressed "
        "Convolutional Attention "
        "conv window over q and k ((cca_time0 - 1) + (cca_time1 - 1) columns of (heads + KV "
        "heads) x head_dim channels) and the previous token's delayed V projection "
        "(ZayaCCAProjection): a state that is not Mamba-2's, which the spec format has no "
        "form for beside attention",
    },
    **{
        inkling: {
            "hybrid": "each layer holds " + _INKLING.format(kv=""),
            "hybrid_sliding": "each layer holds " + _INKLING.format(kv="sliding-window "),
        }
        for inkling in ("inkling_text", "inkling2_text", "inkling2_loop_text")
    },
}
# A config class of an encoder-decoder model saves one of these.
_ENCODER_DECODER_FIELDS = (
    "is_encoder_decoder",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
)


# LFM2: layers outside full_attn_idxs are short convolutions (a conv state the spec has no
# kind for); Lfm2Config builds layer_types from it when a config saves none.
_SHORT_CONV_MODELS = ("lfm2", "lfm2_moe")


def _short_conv_refusal(cfg: HfConfig) -> bool:
    """An LFM2 config without ``layer_types`` whose ``full_attn_idxs`` leaves conv layers
    (with ``layer_types``, their ``conv`` entries are refused like any layer type; with
    neither, Lfm2Config makes every layer full attention)."""
    idxs = cfg.get("full_attn_idxs")
    if cfg.get("model_type") not in _SHORT_CONV_MODELS or cfg.has("layer_types"):
        return False
    if cfg.get("model_type") == "lfm2_moe":  # Lfm2MoeConfig has no default for it
        cfg.diag(
            codes.UNSUPPORTED_CONFIG_FEATURE,
            "model_type",
            "model_type 'lfm2_moe' without layer_types: Lfm2MoeModel reads each layer's kind "
            "there (Lfm2MoeConfig has no default), short-convolution 'conv' layers holding a "
            "conv state (a kind the spec format has no form for) or attention"
            + engines_note("lfm2_moe"),
            "add layer_types as published with the model; kvgen refuses its conv layers",
        )
        return True
    if idxs is None:
        return False
    layers = cfg.get("num_hidden_layers")
    if isinstance(idxs, list) and isinstance(layers, int) and set(range(layers)) <= set(idxs):
        return False
    cfg.diag(
        codes.UNSUPPORTED_CONFIG_FEATURE,
        "full_attn_idxs",
        f"'{cfg.where('full_attn_idxs')}': the layers it leaves out are short-convolution "
        "layers holding a conv state (Lfm2Config layer_types 'conv'), a kind the spec format "
        "has no form for" + engines_note(cfg.get("model_type"), cfg.data.get("model_type")),
        "describe the model by hand in a spec if an engine runs it; "
        "kvgen import-hf cannot express it",
    )
    return True


def architecture_refusal(cfg: HfConfig) -> bool:
    """Report (one KV305 diagnostic) a model whose cache the spec format cannot express."""
    if _short_conv_refusal(cfg):
        return True
    model_type = cfg.get("model_type")
    if isinstance(model_type, str) and model_type in UNSUPPORTED_ARCHITECTURES:
        cfg.diag(
            codes.UNSUPPORTED_CONFIG_FEATURE,
            "model_type",
            f"model_type {model_type!r}: {UNSUPPORTED_ARCHITECTURES[model_type]}"
            + engines_note(model_type, cfg.data.get("model_type")),
            "describe the model by hand in a spec if an engine runs it; "
            "kvgen import-hf cannot express it",
        )
        return True
    for name in _ENCODER_DECODER_FIELDS:
        if name in cfg.aliases:  # MossTranscribeDiarize: encoder_layers is its layer count
            continue
        value = cfg.get(name)
        if value is not None and value is not False:
            cfg.diag(
                codes.UNSUPPORTED_CONFIG_FEATURE,
                name,
                f"'{cfg.where(name)}' = {value!r}: an encoder-decoder model (decoder self- and "
                "cross-attention caches); import-hf models decoder-only language models"
                + engines_note(cfg.get("model_type"), cfg.data.get("model_type")),
                "describe the decoder's caches by hand in a spec (a cross kind with "
                "encoder_tokens)",
            )
            return True
    return False
