"""Layer counts and placements that transformers' config classes derive from fields of their
own: how many cache layers a model has (looped stacks, paired sublayers), which layers are
global, which slide, which are attention among Mamba layers. Each reads the fields the way
its config class does."""

from __future__ import annotations

from kvgen._importhf._config import Abort, HfConfig, field_spelling
from kvgen._spec.models import MAX_LAYERS
from kvgen._util.codes import hf as codes

__all__ = [
    "attention_index_kinds",
    "layer_count",
    "local_global_kinds",
    "pattern_kinds",
    "stacked_layer_count",
]


def pattern_kinds(cfg: HfConfig, layers: int, every: int) -> list[str | None]:
    """Every ``every``-th layer global, the rest sliding, as the config class places them:
    layers 0, n, 2n ... global in ModernBERT's decoder (``i % n == 0``), layers n-1, 2n-1 ...
    everywhere else (``(i + 1) % n == 0``); Cohere2-MoE restarts the count after its
    ``first_k_dense_replace`` dense layers, which follow ``prefix_dense_sliding_window_pattern``
    (transformers Cohere2MoeConfig)."""
    if cfg.get("model_type") == "modernbert-decoder":
        return ["full" if i % every == 0 else "sliding" for i in range(layers)]
    prefix = (
        cfg.int_("prefix_dense_sliding_window_pattern")
        if cfg.has("prefix_dense_sliding_window_pattern")
        else None
    )
    dense = cfg.int_("first_k_dense_replace", minimum=0) if prefix is not None else None
    dense = min(dense or 0, layers)
    head: list[str | None] = [
        "full" if (i + 1) % prefix == 0 else "sliding"  # type: ignore[operator]  # dense 0 if None
        for i in range(dense)
    ]
    return head + ["full" if (i + 1) % every == 0 else "sliding" for i in range(layers - dense)]


_LOCAL_GLOBAL = {"global": "full", "local": "sliding"}


def local_global_kinds(cfg: HfConfig, layers: int) -> list[str | None]:
    """GPT-Neo: ``attention_layers`` (or ``attention_types``, the ``[[["global", "local"], 12]]``
    form GPTNeoConfig expands into it) names each layer global or local; a local layer attends
    to the last ``window_size`` tokens (GPTNeoSelfAttention's banded mask), a sliding window."""
    listed = cfg.get("attention_layers")
    name = "attention_layers"
    if listed is None:
        name, listed = "attention_types", _expand(cfg.get("attention_types"))
    if (
        not isinstance(listed, list)
        or len(listed) != layers
        or any(not isinstance(e, str) or e not in _LOCAL_GLOBAL for e in listed)
    ):
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            name,
            f"'{cfg.where(name)}' must name {layers} layers global or local (num_layers)",
            "give one entry per layer, as GPTNeoConfig saves them",
        )
        raise Abort
    return [_LOCAL_GLOBAL[e] for e in listed]


def _expand(types: object) -> list[object] | None:
    """GPTNeoConfig.expand_attention_types_params: ``[[pattern, repeats], ...]``."""
    if not isinstance(types, list):
        return None
    out: list[object] = []
    for item in types:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], list)
            or isinstance(item[1], bool)
            or not isinstance(item[1], int)
            or not 0 <= item[1] * len(item[0]) <= 1 << 16
        ):
            return None
        out += item[0] * item[1]
    return out


def attention_index_kinds(cfg: HfConfig, layers: int) -> list[str | None]:
    """Bamba: attention at ``attn_layer_indices``, Mamba-2 everywhere else (BambaConfig
    layers_block_type); none listed (the class default) is a pure Mamba-2 stack."""
    indices = cfg.get("attn_layer_indices") or []
    if (
        not isinstance(indices, list)
        or any(
            isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers for i in indices
        )
        or len(set(indices)) != len(indices)
    ):
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "attn_layer_indices",
            f"'{cfg.where('attn_layer_indices')}' must list distinct layers in [0, {layers}) "
            "(num_hidden_layers)",
            "check it against num_hidden_layers",
        )
        raise Abort
    return ["full" if i in indices else "mamba" for i in range(layers)]


def stacked_layer_count(cfg: HfConfig, layers: int, name: str) -> tuple[int, str]:
    """HRM: one stack of ``num_layers_per_stack`` layers run ``H_cycles * (L_cycles + 1)``
    times, each run with cache slots of its own; HrmTextConfig rewrites num_hidden_layers to
    that product, and a legacy config without num_layers_per_stack gives the stack's size in
    num_hidden_layers (HrmTextConfig.__post_init__)."""
    high = cfg.int_("H_cycles", required=True) if cfg.has("H_cycles") else 2
    low = cfg.int_("L_cycles", required=True) if cfg.has("L_cycles") else 3
    runs = high * (low + 1)
    if not cfg.has("num_layers_per_stack"):
        note = f"config.json {name} {layers} per stack x H_cycles {high} x (L_cycles {low} + 1)"
        return layers * runs, note
    stack = cfg.int_("num_layers_per_stack", required=True)  # present (has)
    if stack * runs != layers:
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "num_layers_per_stack",
            f"num_layers_per_stack {stack} x H_cycles {high} x (L_cycles {low} + 1) is not "
            f"{name} {layers}, the cache slots HrmTextConfig counts",
            "use the values HrmTextConfig saves",
        )
        raise Abort
    return layers, f"config.json {name} (num_layers_per_stack {stack} x {runs} runs)"


def layer_count(cfg: HfConfig) -> tuple[int, str]:
    """num_hidden_layers, or (transformers-5 saved forms without it) the length of the
    per-layer type list the config class reads instead."""
    name = field_spelling(cfg, "num_hidden_layers")
    if not cfg.has(name):
        for listed in ("layer_types", "layers_block_type"):
            value = cfg.get(listed)
            if isinstance(value, list) and value:
                if len(value) > MAX_LAYERS:
                    break
                return len(value), f"{listed} ({len(value)} entries)"
    if cfg.get("model_type") == "longcat_flash":
        name = "num_layers" if cfg.has("num_layers") else "num_hidden_layers"
    count = cfg.int_(name, required=True)
    if cfg.get("model_type") == "hrm_text":
        count, note = stacked_layer_count(cfg, count, name)
    elif cfg.get("model_type") == "longcat_flash":
        # LongcatFlashDecoderLayer holds two MLA sublayers, each with its own cache:
        # num_hidden_layers is 2 x num_layers (and num_layers a given num_hidden_layers // 2)
        blocks = count if name == "num_layers" else count // 2
        count, note = 2 * blocks, f"config.json {name}: {blocks} layers x 2 attention sublayers"
    else:
        return count, name
    if count > MAX_LAYERS:
        cfg.diag(
            codes.INVALID_CONFIG_VALUE,
            name,
            f"{count} cache slots ({note}) is over the spec's maximum {MAX_LAYERS}",
            "use the values published with the model",
        )
        raise Abort
    return count, note.removeprefix("config.json ")
