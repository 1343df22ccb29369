"""Which engine releases serve a model import-hf refuses, and why kvgen does not size it yet.

A KV305 refusal of a cache kind (an encoder-decoder model, short-convolution layers,
compressed attention, a parallel hybrid whose state is not Mamba-2's, ...) ends with
:func:`engines_note`: the vLLM and SGLang releases kvgen targets that serve the model (the
architecture they register and the file that implements it), or that none of them does.
``SERVED`` is recorded from the engines' own registries by
``python bench/engines/served_architectures.py`` (tests/fixtures/engines/served_architectures.json,
with provenance); tests/unit/test_served_architectures.py keeps the two equal."""

from __future__ import annotations

__all__ = ["ENGINE_RELEASES", "SERVED", "engines_note"]

# release label -> how a message names it
ENGINE_RELEASES = {"vllm-0.33.0": "vLLM 0.33.0", "vllm-0.34.0": "vLLM 0.34.0",
                   "sglang-0.5.23": "SGLang 0.5.23"}  # fmt: skip
_VLLM_BART_PLUGIN = "the out-of-tree plugin https://github.com/vllm-project/bart-plugin"
_INKLING = "vllm/models/inkling/__init__.py"
_QWEN4_EXP = "vllm/models/qwen4_exp/__init__.py"
_GEMMA4_MM = "vllm/model_executor/models/gemma4_mm.py"
_GEMMA4_UNIFIED = "Gemma4UnifiedForConditionalGeneration"
# model_type -> (release, architecture the release registers, the file that implements it or
# the plugin vLLM's registry names); () where none of the releases serves it.
SERVED: dict[str, tuple[tuple[str, str, str], ...]] = {
    "bart": (
        ("vllm-0.33.0", "BartForConditionalGeneration", _VLLM_BART_PLUGIN),
        ("vllm-0.33.0", "BartModel", _VLLM_BART_PLUGIN),
        ("vllm-0.34.0", "BartForConditionalGeneration", _VLLM_BART_PLUGIN),
        ("vllm-0.34.0", "BartModel", _VLLM_BART_PLUGIN),
    ),
    "bigbird_pegasus": (),
    "blenderbot": (),
    "blenderbot-small": (),
    "blip": (),
    "blt": (),
    "deepseek_v4": (
        ("sglang-0.5.23", "DeepseekV4ForCausalLM", "sglang/srt/models/deepseek_v4.py"),
        ("vllm-0.33.0", "DeepseekV4ForCausalLM", "vllm/models/deepseek_v4/__init__.py"),
        ("vllm-0.34.0", "DeepseekV4ForCausalLM", "vllm/models/deepseek_v4/__init__.py"),
    ),
    # attention_k_eq_v (keys double as values, a KV305 field): vLLM's and SGLang's Gemma 4
    # code reads it
    **{
        gemma: (
            ("sglang-0.5.23", "Gemma4ForCausalLM", "sglang/srt/models/gemma4_causal.py"),
            ("sglang-0.5.23", "Gemma4ForConditionalGeneration", "sglang/srt/models/gemma4_mm.py"),
            ("vllm-0.33.0", "Gemma4ForCausalLM", "vllm/model_executor/models/gemma4.py"),
            ("vllm-0.33.0", "Gemma4ForConditionalGeneration", _GEMMA4_MM),
            ("vllm-0.34.0", "Gemma4ForCausalLM", "vllm/model_executor/models/gemma4.py"),
            ("vllm-0.34.0", "Gemma4ForConditionalGeneration", _GEMMA4_MM),
        )
        for gemma in ("gemma4", "gemma4_text")
    },
    **{
        gemma: (
            ("sglang-0.5.23", _GEMMA4_UNIFIED, "sglang/srt/models/gemma4_unified.py"),
            ("vllm-0.33.0", _GEMMA4_UNIFIED, "vllm/model_executor/models/gemma4_unified.py"),
            ("vllm-0.34.0", _GEMMA4_UNIFIED, "vllm/model_executor/models/gemma4_unified.py"),
        )
        for gemma in ("gemma4_unified", "gemma4_unified_text")
    },
    "glm5_next": (
        ("sglang-0.5.23", "Glm5NextForConditionalGeneration", "sglang/srt/models/glm5_next.py"),
        ("vllm-0.33.0", "Glm5NextForConditionalGeneration", "vllm/models/glm5next/__init__.py"),
        ("vllm-0.34.0", "Glm5NextForConditionalGeneration", "vllm/models/glm5next/__init__.py"),
    ),
    "inkling2_loop_text": (),
    "inkling2_text": (),
    "inkling_text": (
        ("sglang-0.5.23", "InklingForConditionalGeneration", "sglang/srt/models/inkling.py"),
        ("vllm-0.33.0", "InklingForCausalLM", _INKLING),
        ("vllm-0.33.0", "InklingForConditionalGeneration", _INKLING),
        ("vllm-0.34.0", "InklingForCausalLM", _INKLING),
        ("vllm-0.34.0", "InklingForConditionalGeneration", _INKLING),
    ),
    "lfm2": (
        ("sglang-0.5.23", "Lfm2ForCausalLM", "sglang/srt/models/lfm2.py"),
        ("vllm-0.33.0", "Lfm2ForCausalLM", "vllm/model_executor/models/lfm2.py"),
        ("vllm-0.34.0", "Lfm2ForCausalLM", "vllm/model_executor/models/lfm2.py"),
    ),
    "lfm2_moe": (
        ("sglang-0.5.23", "Lfm2MoeForCausalLM", "sglang/srt/models/lfm2_moe.py"),
        ("vllm-0.33.0", "Lfm2MoeForCausalLM", "vllm/model_executor/models/lfm2_moe.py"),
        ("vllm-0.34.0", "Lfm2MoeForCausalLM", "vllm/model_executor/models/lfm2_moe.py"),
    ),
    "lfm3": (("vllm-0.34.0", "Lfm3ForCausalLM", "vllm/model_executor/models/lfm3.py"),),
    "marian": (),
    "mbart": (
        ("vllm-0.33.0", "MBartForConditionalGeneration", _VLLM_BART_PLUGIN),
        ("vllm-0.34.0", "MBartForConditionalGeneration", _VLLM_BART_PLUGIN),
    ),
    "musicgen": (),
    "musicgen_melody": (),
    "mvp": (),
    "pegasus": (),
    "plbart": (),
    "prophetnet": (),
    **{
        qwen: (
            ("sglang-0.5.23", "Qwen4ExpForConditionalGeneration", "sglang/srt/models/qwen4_exp.py"),
            ("vllm-0.33.0", "Qwen4ExpForCausalLM", _QWEN4_EXP),
            ("vllm-0.33.0", "Qwen4ExpForConditionalGeneration", _QWEN4_EXP),
            ("vllm-0.34.0", "Qwen4ExpForCausalLM", _QWEN4_EXP),
            ("vllm-0.34.0", "Qwen4ExpForConditionalGeneration", _QWEN4_EXP),
        )
        for qwen in ("qwen4_exp", "qwen4_exp_text")
    },
    "recurrent_gemma": (),
    "reformer": (),
    "rwkv": (),
    "trocr": (),
    "whisper": (
        ("sglang-0.5.23", "WhisperForConditionalGeneration", "sglang/srt/models/whisper.py"),
        ("vllm-0.33.0", "WhisperForConditionalGeneration", "vllm/model_executor/models/whisper.py"),
        ("vllm-0.34.0", "WhisperForConditionalGeneration", "vllm/model_executor/models/whisper.py"),
    ),
    "xlnet": (),
    "xlstm": (),
    "zamba": (),
    "zaya": (
        ("sglang-0.5.23", "ZayaForCausalLM", "sglang/srt/models/zaya.py"),
        ("vllm-0.34.0", "ZayaForCausalLM", "vllm/model_executor/models/zaya.py"),
    ),
}
# Why kvgen does not size a served model yet, where more can be said than that its spec format
# has no form for the cache (read in the engine's code that allocates it).
_WHY = {
    "glm5_next": "its linear-attention layers take one head count for q, k and v "
    "(Glm5NextTextLinearAttention), a form import-hf reads only for the Kimi Delta Attention "
    "models it knows; describe the state by its dimensions in a spec by hand",
    **dict.fromkeys(
        ("lfm2", "lfm2_moe", "lfm3"),
        "vLLM keeps each conv layer's state in its Mamba state pool (ShortConv, a MambaBase "
        "layer: conv_L_cache - 1 columns of hidden_size channels, "
        "vllm/model_executor/layers/mamba/short_conv.py), a conv-only state kvgen's spec "
        "format has no kind for",
    ),
    "zaya": "vLLM keeps ZayaCCA's conv and delayed-V state in its Mamba state pool (a "
    "MambaBase layer beside each layer's KV cache), a parallel hybrid kvgen's spec format has "
    "only with a Mamba-2 state",
    "deepseek_v4": "vLLM caches a compressed layer's latent once per compress_ratio tokens "
    "(MLAAttentionSpec tokens_per_state) beside fp32 compressor states held as sliding-window "
    "pages (CompressorStateCache, vllm/models/deepseek_v4/compressor.py), kinds kvgen's spec "
    "format has no form for",
    **dict.fromkeys(
        ("whisper", "bart", "mbart"),
        "the decoder's cross-attention cache holds encoder tokens per request (vLLM "
        "CrossAttention), which import-hf does not derive from a config",
    ),
}
_RELEASES = tuple(ENGINE_RELEASES.values())
_NONE = f"none of {', '.join(_RELEASES[:-1])} or {_RELEASES[-1]} serves it"


def engines_note(*model_types: object) -> str:
    """What a KV305 refusal of a cache kind adds: who serves the model and why kvgen does not
    size it yet, for the first of ``model_types`` recorded (a composite's text model type,
    then its own: ``blip_text_model`` is served as ``blip``); where none is, that kvgen has
    not recorded the first."""
    model_type = next((t for t in model_types if isinstance(t, str) and t in SERVED), None)
    if model_type is None:
        first = model_types[0] if model_types else None
        return (
            f"; kvgen has no record of which engine releases serve model_type {str(first)[:40]!r}"
        )
    rows = SERVED[model_type]
    if not rows:
        return f"; {_NONE} (their model registries list none of its architectures)"
    # per release: its architectures, by the file that implements them; then the releases
    # that say the same, together
    served: dict[str, dict[str, list[str]]] = {}
    for release, architecture, where in rows:
        served.setdefault(release, {}).setdefault(where, []).append(architecture)
    said: dict[str, list[str]] = {}
    for release in ENGINE_RELEASES:
        if release in served:
            what = "; ".join(
                f"{', '.join(archs)} in {where}" for where, archs in served[release].items()
            )
            said.setdefault(what, []).append(ENGINE_RELEASES[release])
    parts = [f"{' and '.join(releases)} ({what})" for what, releases in said.items()]
    why = _WHY.get(model_type, "the spec format has no form for this cache")
    return f"; served by {' and by '.join(parts)}; kvgen does not size it yet: {why}"
