"""Whether a quantized cache layout fits the imported shapes (KV312, docs/cost-model.md §1)."""

from __future__ import annotations

from collections.abc import Sequence

from kvgen._importhf._layers import ImportedKind
from kvgen.sizing.facts import DS_MLA_SCALE_BLOCK, INDEX_SCALE_BLOCK, MX_BLOCK, SCALED_DTYPES

__all__ = ["layout_misfit"]


def layout_misfit(kinds: Sequence[ImportedKind], dtype: str) -> tuple[str, str] | None:
    """(config field, why) when ``dtype`` cannot hold one of ``kinds``; None when it fits."""
    for kind in kinds:
        if kind.index_head_dim is not None and kind.index_head_dim % INDEX_SCALE_BLOCK:
            return "index_head_dim", (
                f"index_head_dim {kind.index_head_dim} is not a multiple of the indexer "
                f"cache's {INDEX_SCALE_BLOCK}-element scale block"
            )
        if dtype not in SCALED_DTYPES:
            continue
        if kind.attention == "recurrent":  # nvfp4 too: KV239 refuses any scaled state
            return "layer_types", f"{dtype} is an attention layout; recurrent states stay plain"
        if dtype == "nvfp4":
            continue  # nvfp4's own rule (KV212) keeps its historical place in lint
        if dtype == "fp8_ds_mla":
            if kind.kv_lora_rank is None:
                if kind.attention == "none":
                    continue
                return "kv_lora_rank", "fp8_ds_mla is an MLA-only layout; the model has no MLA"
            if kind.kv_lora_rank % DS_MLA_SCALE_BLOCK:
                return "kv_lora_rank", (
                    f"fp8_ds_mla needs kv_lora_rank a multiple of {DS_MLA_SCALE_BLOCK}, "
                    f"got {kind.kv_lora_rank}"
                )
        elif dtype in ("mxfp8", "mxfp4"):
            if kind.kv_lora_rank is not None:
                row, field = kind.kv_lora_rank + (kind.qk_rope_head_dim or 0), "kv_lora_rank"
            elif kind.head_dim is not None:
                row, field = kind.head_dim, "head_dim"
            else:
                continue
            if row % MX_BLOCK:
                return field, f"{dtype} needs rows of a multiple of {MX_BLOCK} elements, got {row}"
    return None
