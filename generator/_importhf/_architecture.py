"""The model class a config names (config.json ``architectures[0]``), which the spec records
as ``architecture``: vLLM and SGLang choose their model class, and with it their support,
cache pools and recurrent mixer, by it (``kvgen._model.engine_rows``)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["architecture"]

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")
# A config saved by its transformers class alone (no checkpoint) has no ``architectures``; for
# the model types whose engine behaviour depends on the class, the class transformers builds
# for them (its AutoModelForCausalLM mapping, or the composite class of a multimodal type).
BY_MODEL_TYPE = {
    "gpt_oss": "GptOssForCausalLM",
    "llama4": "Llama4ForConditionalGeneration",
    "llama4_text": "Llama4ForCausalLM",
    "qwen3_next": "Qwen3NextForCausalLM",
    "kimi_linear": "KimiLinearForCausalLM",
    "mllama": "MllamaForConditionalGeneration",
    "openelm": "OpenELMForCausalLM",
    "jamba": "JambaForCausalLM",
    "minimax": "MiniMaxForCausalLM",
}


def architecture(data: dict[str, Any]) -> tuple[str | None, str]:
    """The config's architecture and where it came from (for the spec's comment); None where
    the config names none the spec can hold and its model_type implies none."""
    listed = data.get("architectures")
    first = listed[0] if isinstance(listed, list) and listed else None
    if isinstance(first, str) and _NAME.fullmatch(first):
        return first, "config.json architectures[0]"
    model_type = data.get("model_type")
    if isinstance(model_type, str) and model_type in BY_MODEL_TYPE:
        return (
            BY_MODEL_TYPE[model_type],
            f"transformers' class of model_type {model_type} (no architectures in the config)",
        )
    return None, ""
