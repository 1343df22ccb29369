"""Cross-attention layers of a config (Llama 3.2 Vision, ``mllama``): which layers, and how
many encoder tokens each request caches in them (docs/cost-model.md §4)."""

from __future__ import annotations

from dataclasses import replace

from kvgen._importhf._config import Abort, HfConfig
from kvgen._importhf._layers import ImportedKind
from kvgen._spec.models import MAX_SEQ_LEN
from kvgen._util.codes import hf as codes

__all__ = ["cross_attention_kinds"]

_VISION_FIELDS = ("image_size", "patch_size", "max_num_tiles")


def _layer_indices(cfg: HfConfig, layers: int) -> list[int]:
    value = cfg.get("cross_attention_layers")
    where = cfg.where("cross_attention_layers")
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in value
    ):
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            "cross_attention_layers",
            f"'{where}' must list layer indices",
            "use the values published with the model",
        )
        raise Abort
    if len(set(value)) != len(value) or any(not 0 <= i < layers for i in value):
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "cross_attention_layers",
            f"'{where}' must list distinct layers in [0, {layers}) (num_hidden_layers {layers})",
            "check it against num_hidden_layers",
        )
        raise Abort
    return sorted(value)


def _encoder_tokens(cfg: HfConfig) -> tuple[int, str]:
    """mllama: ``max_num_tiles x ((image_size / patch_size)^2 + 1)``: per tile one token per
    patch plus the class token (HF MllamaVisionModel num_patches, vLLM mllama.py)."""
    vision = cfg.data.get("vision_config")
    values: dict[str, int] = {}
    for name in _VISION_FIELDS:
        value = vision.get(name) if isinstance(vision, dict) else None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
            values = {}
            break
        values[name] = value
    if not values or values["image_size"] % values["patch_size"]:
        line, col = cfg.reader.keys.get(("vision_config",), (1, 1))
        if isinstance(vision, dict):
            missing = [n for n in _VISION_FIELDS if n not in vision]
            detail = (
                f"vision_config lacks {', '.join(missing)}"
                if missing
                else (
                    "vision_config image_size, patch_size and max_num_tiles must be positive "
                    "integers, patch_size dividing image_size"
                )
            )
        else:
            detail = "the config has no vision_config"
        cfg.diagnostics.append(
            codes.UNKNOWN_ENCODER_TOKENS.at(
                cfg.display,
                (line, col),
                f"cross_attention_layers need the encoder token count: {detail}",
                codes.UNKNOWN_ENCODER_TOKENS.fix,
            )
        )
        raise Abort
    size, patch, tiles = (values[n] for n in _VISION_FIELDS)
    per_tile = (size // patch) ** 2 + 1
    tokens = tiles * per_tile
    if tokens > MAX_SEQ_LEN:
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            None,
            f"{tokens} encoder tokens per request is over the spec's maximum {MAX_SEQ_LEN}",
            "use the values published with the model",
        )
        raise Abort
    note = (
        f"config.json vision_config max_num_tiles {tiles} x ((image_size {size} / "
        f"patch_size {patch})^2 + 1) = {tiles} x {per_tile}"
    )
    return tokens, note


def cross_attention_kinds(
    cfg: HfConfig, kinds: list[ImportedKind], layers: int
) -> tuple[list[ImportedKind], str]:
    """``kinds`` with the layers of ``cross_attention_layers`` made cross-attention (their K/V
    shape is the self-attention one read for them), and the note for the layer count; as is
    without the field."""
    if not cfg.has("cross_attention_layers"):
        return kinds, ""
    indices = _layer_indices(cfg, layers)
    tokens, note = _encoder_tokens(cfg)
    out = list(kinds)
    for i in indices:
        shape = out[i]
        if shape.attention != "full" or shape.kv_heads is None:
            cfg.diag(
                codes.UNSUPPORTED_CONFIG_FEATURE,
                "cross_attention_layers",
                f"layer {i} of '{cfg.where('cross_attention_layers')}' is not a standard "
                "attention layer",
                "describe the model by hand in a spec",
            )
            raise Abort
        notes = (
            ("attention", "config.json cross_attention_layers"),
            *shape.notes,
            ("encoder_tokens", note),
        )
        out[i] = replace(shape, attention="cross", encoder_tokens=tokens, notes=notes, base="cross")
    return out, f"cross-attention at config.json cross_attention_layers {indices}"
