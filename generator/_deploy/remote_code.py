"""Config fields vLLM reads unlike the checkpoint unless it is served with --trust-remote-code.

vLLM 0.33.0 loads a checkpoint's config.json through the transformers class of its
``model_type`` unless ``trust_remote_code`` is set (then through the checkpoint's own
configuration class). Where transformers' class rewrites a field that vLLM's model class sizes
a cache or a recurrent state from, vLLM allocates something other than what the checkpoint,
and kvgen's spec of it, say. ``plan --emit vllm`` passes those fields back as vLLM's
``hf_overrides`` (applied once the config is loaded, before the model class reads it), so the
engine allocates the plan whichever class loads the config, without running the checkpoint's
code; the golden runner and the closed loop (``bench/engines/vllm_from_config.py``,
``closed_loop_vllm.py``) serve the fixtures' configs the same way.

Stdlib only and a leaf module: the vLLM golden runner loads this file by its path inside the
engine's environment, where kvgen is not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvgen.sizing.engines_rows import EngineLayer

__all__ = ["LIGHTNING_ARCHITECTURE", "REMOTE_CODE_FIELDS", "REWRITTEN_BY", "vllm_hf_overrides"]

# Architecture -> the config.json fields vLLM must read as the checkpoint has them.
REMOTE_CODE_FIELDS = {
    # transformers 5.24.0's BailingHybridConfig (model_type bailing_hybrid, written for Ling
    # V3's KDA layers) sets head_dim = qk_rope_head_dim in __post_init__ (the linear head size
    # moves to linear_head_dim), while vLLM's BailingMoeV25ForCausalLM
    # (models/bailing_moe_linear.py: get_mamba_state_shape_from_config and its lightning
    # attention layer) reads config.head_dim: Ling 2.5's state would shrink from
    # heads x 128 x 128 to heads x 64 x 64. Ling 2.5's own configuration class (and SGLang's
    # vendored BailingHybridConfig) keeps head_dim.
    "BailingMoeV2_5ForCausalLM": ("head_dim",),
}
# Architecture -> the class that rewrites those fields and how, for the emitted note.
REWRITTEN_BY = {
    "BailingMoeV2_5ForCausalLM": "transformers' BailingHybridConfig sets head_dim = "
    "qk_rope_head_dim",
}
# vLLM 0.33.0's one model class with lightning (linear) attention layers, a state of
# head_dim x head_dim per head and no conv window (a spec's ``linear:`` kinds; the engine
# rows' mixer "linear"): MiniMax's, the other such architecture, vLLM no longer runs.
LIGHTNING_ARCHITECTURE = "BailingMoeV2_5ForCausalLM"


def vllm_hf_overrides(layers: tuple[EngineLayer, ...]) -> tuple[dict[str, int], str] | None:
    """``hf_overrides`` that make vLLM read the fields of ``REMOTE_CODE_FIELDS`` as the model's
    own config (``layers``: its engine rows, ``EngineLayer``), and the note saying why; None
    where the model's architecture needs none."""
    linear = [layer for layer in layers if layer.mixer == "linear"]
    if not linear:
        return None
    architecture = LIGHTNING_ARCHITECTURE
    # A lightning layer's head_dim is its state's d_state (head_dim x head_dim per head).
    values = {"head_dim": linear[0].d_state}
    overrides = {name: values[name] for name in REMOTE_CODE_FIELDS[architecture]}
    kept = ", ".join(f"{name} {value}" for name, value in overrides.items())
    note = (
        f"hf_overrides keeps {kept}, as the checkpoint's config.json and kvgen's plan have it: "
        f"unless served with --trust-remote-code, vLLM loads a {architecture} config through "
        f"the transformers class of its model_type, and {REWRITTEN_BY[architecture]}, which "
        "would size the lightning-attention state other than planned"
    )
    return overrides, note
