"""Parallel hybrid layers (Falcon-H1): every decoder layer holds its attention's K/V cache and
a Mamba-2 state side by side (transformers FalconH1DecoderLayer, vLLM FalconH1ParallelHybrid,
SGLang FalconH1Config: every layer in full_attention_layer_ids and in linear_layer_ids).

Zamba2's "hybrid" layers are the same pair: a shared attention block, applied before the
layer's Mamba-2 mixer, keeps a K/V cache of its own at each layer it is applied to
(transformers Zamba2HybridLayer, Zamba2HybridDynamicCache); its other layers are Mamba-2 only."""

from __future__ import annotations

from dataclasses import replace

from kvgen._importhf._config import Abort, HfConfig
from kvgen._importhf._layers import ImportedKind, state_bytes
from kvgen._util.codes import hf as codes

__all__ = ["PARALLEL_HYBRIDS", "parallel_kinds", "zamba2_post_init"]

# model_type -> the layer class that holds both caches.
PARALLEL_HYBRIDS = {"falcon_h1": "FalconH1DecoderLayer", "zamba2": "Zamba2HybridLayer"}


def zamba2_post_init(cfg: HfConfig) -> None:
    """The fields Zamba2Config.__post_init__ derives whatever config.json says, written where
    the importer reads them: the attention head size 2 x hidden_size / num_attention_heads
    (the shared block attends over the hidden state concatenated with the embeddings), the
    Mamba-2 head size mamba_expand x hidden_size / n_mamba_heads, and a 16,384-token context
    under use_long_context. A saved value that disagrees is a contradiction."""
    if cfg.get("model_type") != "zamba2":
        return
    if not cfg.has("layers_block_type"):
        cfg.diag(
            codes.MISSING_CONFIG_FIELD,
            "model_type",
            "model_type 'zamba2' without layers_block_type: Zamba2Config's default list is "
            "for its 54-layer model only, and names which layers hold attention ('hybrid')",
            "add layers_block_type as published with the model",
        )
        raise Abort
    hidden = cfg.int_("hidden_size", required=True) or 0
    heads = cfg.int_("num_attention_heads", required=True) or 0
    mamba_heads = cfg.int_("n_mamba_heads", required=True) or 0
    expand = cfg.int_("mamba_expand", required=True) or 0
    derived = {
        "attention_head_dim": (2 * hidden // heads, f"2 x hidden_size {hidden} // {heads}"),
        "mamba_headdim": (
            expand * hidden // mamba_heads,
            f"mamba_expand {expand} x hidden_size {hidden} // n_mamba_heads {mamba_heads}",
        ),
    }
    if cfg.get("use_long_context") is True:
        derived["max_position_embeddings"] = (16384, "use_long_context")
    for name, (value, source) in derived.items():
        saved = cfg.get(name)
        if saved is not None and saved != value and name != "max_position_embeddings":
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                name,
                f"'{cfg.where(name)}' {saved!r} is not {value} ({source}, as Zamba2Config "
                "derives it)",
                "use the values published with the model",
            )
            raise Abort
        cfg.inner[name] = value


def _mamba_inner(cfg: HfConfig) -> tuple[int, str]:
    """The Mamba-2 mixer's inner size as FalconH1Config reads it: mamba_d_ssm, else
    mamba_expand x hidden_size."""
    if cfg.has("mamba_d_ssm"):
        return cfg.int_("mamba_d_ssm") or 0, "mamba_d_ssm"
    expand = cfg.int_("mamba_expand", required=True) or 0
    hidden = cfg.int_("hidden_size", required=True) or 0
    return expand * hidden, f"mamba_expand {expand} x hidden_size {hidden}"


def _check_head(cfg: HfConfig) -> None:
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


def parallel_kinds(
    cfg: HfConfig, kinds: list[ImportedKind], dtype_bytes: int
) -> list[ImportedKind]:
    """A parallel hybrid's full-attention kinds with the Mamba-2 state each layer also holds;
    other models' kinds unchanged."""
    model_type = cfg.get("model_type")
    if model_type not in PARALLEL_HYBRIDS:
        return kinds
    if model_type == "falcon_h1":
        _check_head(cfg)
    state = state_bytes(cfg, "mamba", dtype_bytes)
    layer_class = PARALLEL_HYBRIDS[model_type]
    note = (("attention", f"{layer_class}: attention and a Mamba-2 mixer in the one layer"),)
    return [
        replace(kind, mamba=state.mamba, notes=kind.notes + note + state.notes, base="hybrid")
        if kind.attention == "full"
        else kind
        for kind in kinds
    ]
