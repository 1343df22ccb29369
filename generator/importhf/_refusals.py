"""Architectures import-hf refuses as a whole, and which unknown fields may move a cache.

A refusal names the feature the spec format cannot express (one diagnostic, at the field that
shows it), never a missing field that follows from it. An unknown field blocks the import only
when its name says it could change a cache's shape, count, window, dtype or state; any other
unknown field is noted (a KV302 warning) and the import goes on."""

from __future__ import annotations

from kvgen.codes import hf as codes
from kvgen.importhf._config import Config

__all__ = ["UNSUPPORTED_ARCHITECTURES", "architecture_refusal"]

# model_type -> the cache the spec format cannot express (transformers' modelling code).
UNSUPPORTED_ARCHITECTURES = {
    "rwkv": "RWKV time-mix recurrent state (no KV cache, no Mamba/DeltaNet state)",
    "xlstm": "xLSTM matrix-memory recurrent state",
    "recurrent_gemma": "Griffin RG-LRU recurrent blocks with local attention",
    "kimi_linear": "Kimi Delta Attention (KDA) layers with their own conv and recurrent state",
    "zamba": "one shared attention block applied between Mamba layers",
    "zamba2": "shared attention blocks applied between Mamba-2 layers",
    "deepseek_v4": "compressed attention layers (heavily_compressed_attention)",
    "lfm2": "short-convolution layers holding a conv state",
    "lfm2_moe": "short-convolution layers holding a conv state",
    "bailing_hybrid": "Kimi Delta Attention linear-attention layers (transformers' "
    "BailingHybridConfig is Ling V3's) with their own conv and recurrent state",
    "blt": "Byte Latent Transformer: a local byte encoder and decoder around a global "
    "patch transformer, joined by cross-attention",
    "reformer": "Reformer's LSH and chunked local attention, whose cache holds hash buckets",
    "xlnet": "XLNet's memory of past hidden states (mem_len), not a per-layer K/V cache",
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


def architecture_refusal(cfg: Config) -> bool:
    """Report (one KV305 diagnostic) a model whose cache the spec format cannot express."""
    model_type = cfg.get("model_type")
    if model_type == "bailing_hybrid" and cfg.get("short_conv_kernel_size") is None:
        # A Ling 2.5 lightning checkpoint (BailingMoeV2_5ForCausalLM): no short conv, which
        # the checkpoint's own config class (as SGLang vendors it) reads as use_kda False.
        model_type = None
    if isinstance(model_type, str) and model_type in UNSUPPORTED_ARCHITECTURES:
        cfg.diag(
            codes.UNSUPPORTED_CONFIG_FEATURE,
            "model_type",
            f"model_type {model_type!r}: {UNSUPPORTED_ARCHITECTURES[model_type]}",
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
                "cross-attention caches); import-hf models decoder-only language models",
                "describe the decoder's caches by hand in a spec (a cross kind with "
                "encoder_tokens)",
            )
            return True
    return False
