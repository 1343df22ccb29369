"""KV sharing across layers in a config (Gemma 3n ``num_kv_shared_layers``)."""

from __future__ import annotations

from dataclasses import replace

from kvgen._importhf._config import Abort, HfConfig
from kvgen._importhf._layers import ImportedKind
from kvgen._util.codes import hf as codes

__all__ = ["shared_kinds"]


def shared_kinds(
    cfg: HfConfig, kinds: list[ImportedKind], types: list[str | None]
) -> list[ImportedKind]:
    """Gemma 3n ``num_kv_shared_layers``: the last n layers compute no K/V and read the cache
    of the last earlier layer of their own type (transformers Gemma3nTextAttention
    ``kv_shared_layer_index``; vLLM ``kv_sharing_target_layer_name``), so they become kinds
    with ``reads:`` (docs/cost-model.md §1: no cost, their index kept). The type is the
    config's (``types``), before a window reaching the context makes a sliding layer full."""
    if not cfg.has("num_kv_shared_layers"):
        return kinds
    shared = cfg.int_("num_kv_shared_layers", minimum=0) or 0
    if not shared:
        return kinds
    first = len(kinds) - shared
    if first < 1:
        cfg.diag(
            codes.SHARED_LAYER_WITHOUT_OWNER,
            "num_kv_shared_layers",
            f"num_kv_shared_layers {shared} leaves no layer with its own cache "
            f"({len(kinds)} layers)",
            "use the value published with the model",
        )
        raise Abort
    out = list(kinds)
    for i in range(first, len(kinds)):
        kind, kind_type = kinds[i], types[i]
        owner = next((j for j in range(first - 1, -1, -1) if types[j] == kind_type), None)
        if kind_type not in ("full", "sliding") or owner is None:
            cfg.diag(
                codes.SHARED_LAYER_WITHOUT_OWNER,
                "num_kv_shared_layers",
                f"layer {i} ({kind_type}) is one of the last {shared} shared layers, but "
                f"no layer before {first} has its attention type to own the cache it reads",
                "check num_kv_shared_layers and layer_types against the published config",
            )
            raise Abort
        note = (
            f"config.json num_kv_shared_layers {shared}: the last earlier {kind_type} "
            f"layer before layer {first} (num_hidden_layers - num_kv_shared_layers)"
        )
        out[i] = replace(
            kind, reads=owner, notes=(*kind.notes, ("reads", note)), base=f"shared_{kind.base}"
        )
    return out
