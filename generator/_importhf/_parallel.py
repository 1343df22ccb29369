"""Parallel hybrid layers (Falcon-H1): every decoder layer holds its attention's K/V cache and
a Mamba-2 state side by side (transformers FalconH1DecoderLayer, vLLM FalconH1ParallelHybrid,
SGLang FalconH1Config: every layer in full_attention_layer_ids and in linear_layer_ids)."""

from __future__ import annotations

from dataclasses import replace

from kvgen._codes import hf as codes
from kvgen._importhf._config import Abort, Config
from kvgen._importhf._layers import Kind, state_bytes

__all__ = ["PARALLEL_HYBRIDS", "parallel_kinds"]

# model_type -> the layer class that holds both caches.
PARALLEL_HYBRIDS = {"falcon_h1": "FalconH1DecoderLayer"}


def _mamba_inner(cfg: Config) -> tuple[int, str]:
    """The Mamba-2 mixer's inner size as FalconH1Config reads it: mamba_d_ssm, else
    mamba_expand x hidden_size."""
    if cfg.has("mamba_d_ssm"):
        return cfg.int_("mamba_d_ssm") or 0, "mamba_d_ssm"
    expand = cfg.int_("mamba_expand", required=True) or 0
    hidden = cfg.int_("hidden_size", required=True) or 0
    return expand * hidden, f"mamba_expand {expand} x hidden_size {hidden}"


def _check_head(cfg: Config) -> None:
    """``mamba_d_head`` "auto" (the config class's default) is the inner size over the heads;
    a saved number must agree with it (FalconH1Config.validate_architecture)."""
    heads = cfg.int_("mamba_n_heads", required=True) or 0
    inner, source = _mamba_inner(cfg)
    if cfg.get("mamba_d_head") == "auto":
        if inner % heads:
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                "mamba_n_heads",
                f"mamba_n_heads {heads} does not divide the Mamba inner size {inner} ({source})",
                "use the values published with the model",
            )
            raise Abort
        cfg.inner["mamba_d_head"] = inner // heads  # what __post_init__ resolves it to
        return
    head = cfg.int_("mamba_d_head", required=True) or 0
    if head * heads != inner:
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "mamba_d_head",
            f"mamba_d_head {head} x mamba_n_heads {heads} = {head * heads} is not the Mamba "
            f"inner size {inner} ({source})",
            "use the values published with the model",
        )
        raise Abort


def parallel_kinds(cfg: Config, kinds: list[Kind], dtype_bytes: int) -> list[Kind]:
    """A parallel hybrid's full-attention kinds with the Mamba-2 state each layer also holds;
    other models' kinds unchanged."""
    model_type = cfg.get("model_type")
    if model_type not in PARALLEL_HYBRIDS:
        return kinds
    _check_head(cfg)
    state = state_bytes(cfg, "mamba", dtype_bytes)
    layer_class = PARALLEL_HYBRIDS[model_type]
    note = (("attention", f"{layer_class}: attention and a Mamba-2 mixer in every layer"),)
    return [
        replace(kind, mamba=state.mamba, notes=kind.notes + note + state.notes, base="hybrid")
        if kind.attention == "full"
        else kind
        for kind in kinds
    ]
