"""Attention layers' shapes: KV heads and head size per layer, windows and chunks, MLA."""

from __future__ import annotations

from dataclasses import replace

from kvgen._importhf._config import Abort, HfConfig, field_spelling
from kvgen._importhf._fields import could_move_cache
from kvgen._importhf._layers import ImportedKind
from kvgen._util.codes import hf as codes

__all__ = ["attention_kinds"]


def _multi_query(
    cfg: HfConfig, kv_heads: list[int] | None, q_heads: list[int] | None
) -> tuple[list[int] | None, str | None]:
    """GPT-BigCode's and Falcon's ``multi_query``: one K/V head for all query heads, unless
    Falcon's ``new_decoder_architecture`` (grouped, num_kv_heads); an old-architecture Falcon
    without multi-query caches every query head (transformers FalconAttention)."""
    multi = cfg.get("multi_query")
    new_arch = cfg.get("new_decoder_architecture")
    if multi is None or new_arch is True or kv_heads is None:
        return kv_heads, None
    if multi is True:
        return [1] * len(kv_heads), "config.json multi_query true: one KV head"
    if new_arch is False and q_heads is not None:  # old Falcon: num_kv_heads unused
        return q_heads, "config.json multi_query false: one KV head per query head"
    return kv_heads, None


_OVERRIDES = ("head_dim", "num_key_value_heads", "num_attention_heads")
# An MLA layer's own latent and RoPE key sizes (Dots3-Note's sliding layers: kv_lora_rank
# 1024 beside the indexed layers' 512); qk_nope_head_dim shapes the query, not the latent.
_MLA_OVERRIDES = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim")


def _per_layer_config(cfg: HfConfig, layers: int) -> dict[int, dict[str, int]]:
    """Gemma 4's ``per_layer_config``: per layer index (a string key), the attention fields
    that layer sets for itself (its global layers' head_dim 512; an MLA model's per-layer
    latent sizes). Keys naming a layer type carry RoPE parameters only; any other cache field
    there is refused."""
    overridable = _OVERRIDES + (_MLA_OVERRIDES if cfg.has("kv_lora_rank") else ())
    block = cfg.get("per_layer_config")
    if block is None:
        return {}
    out: dict[int, dict[str, int]] = {}
    bad = None
    if not isinstance(block, dict):
        bad = "must be an object of layer index -> fields"
    for key, fields in block.items() if isinstance(block, dict) else ():
        if not isinstance(fields, dict):
            bad = f"entry {key!r:.20} is not an object"
            break
        unknown = [f for f in fields if f not in overridable and could_move_cache(f)]
        if unknown:
            bad = f"entry {key!r:.20} sets {unknown[0]!r:.40}, which import-hf cannot place"
            break
        if not key.isdigit():
            if any(f in fields for f in overridable):
                bad = f"entry {key!r:.20} sets a head field for a layer type, not an index"
                break
            continue
        if int(key) >= layers:
            bad = f"entry {key!r:.20} names a layer past num_hidden_layers {layers}"
            break
        values = {f: fields[f] for f in overridable if f in fields}
        if not all(
            isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= cfg.maximum(f)
            for f, v in values.items()
        ):
            bad = f"entry {key!r:.20} must give positive integers"
            break
        out[int(key)] = values
    if bad is not None:
        cfg.diag(
            codes.UNSUPPORTED_CONFIG_FEATURE,
            "per_layer_config",
            f"'{cfg.where('per_layer_config')}' {bad}",
            "describe the model by hand",
        )
        raise Abort
    return out


def _indexer_types(cfg: HfConfig, layers: int, indexed: bool) -> list[str]:
    """DeepSeek-V3.2-style sparse MLA's ``indexer_types`` (GLM-MoE-DSA, HY-V4): a ``full``
    layer runs its own indexer and caches its keys, a ``shared`` one reuses the top-k of the
    layer before it and caches none (transformers HYV4Attention ``skip_topk``)."""
    listed = cfg.get("indexer_types")
    if listed is None:
        return ["full"] * layers
    if (
        not indexed
        or not isinstance(listed, list)
        or len(listed) != layers
        or any(e not in ("full", "shared") for e in listed)
        or listed[:1] == ["shared"]
    ):
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "indexer_types",
            f"'{cfg.where('indexer_types')}' must name {layers} layers full or shared, the "
            "first full, beside an index_head_dim",
            "use the values published with the model",
        )
        raise Abort
    return list(listed)


# Gemma 4's text configs build per_layer_config from the builder-only global_head_dim
# (default 512) and num_global_key_value_heads, for their full-attention layers, unless a
# per_layer_config is given (Gemma4TextConfig.__post_init__): model_type -> (whether the
# KV-head override applies without attention_k_eq_v, its default). The class that declares
# attention_k_eq_v (default false) applies it only when that is true; one that does not
# declare it applies it always.
_GEMMA4_GLOBALS = {
    "gemma4": (False, None),
    "gemma4_text": (False, None),
    "gemma4_unified": (False, None),
    "gemma4_unified_text": (False, None),
    "diffusion_gemma_text": (True, None),
    "embedding_gemma2_text": (True, 1),
}
_Shape = tuple[int | None, str]


def _global_shapes(cfg: HfConfig) -> tuple[_Shape, _Shape]:
    """Full-attention layers' own head size and KV heads ((None, "") where they have none),
    as the config class reads ``global_head_dim`` and ``num_global_key_value_heads``."""
    hd_name, kv_name = "global_head_dim", "num_global_key_value_heads"
    head = cfg.int_(hd_name) if cfg.has(hd_name) else None
    kv = cfg.int_(kv_name) if cfg.has(kv_name) else None
    model_type = cfg.get("model_type")
    if model_type not in _GEMMA4_GLOBALS:
        return (head, f"config.json {hd_name}"), (kv, f"config.json {kv_name}")
    if cfg.has("per_layer_config"):  # the builder fields are dropped: per_layer_config rules
        return (None, ""), (None, "")
    ungated, kv_default = _GEMMA4_GLOBALS[model_type]
    head_note = f"config.json {hd_name}" if head is not None else f"{model_type} default 512"
    kv_note = f"config.json {kv_name}"
    if kv is None and kv_default is not None:
        kv, kv_note = kv_default, f"{model_type} default {kv_default}"
    if not (ungated or cfg.get("attention_k_eq_v") is True):
        kv = None  # gated off: the full layers keep num_key_value_heads
    return (head if head is not None else 512, head_note), (kv, kv_note)


def _window(cfg: HfConfig) -> tuple[int | None, str]:
    """The sliding layers' window, and the field it came from. Qwen2-MoE saves sliding_window
    0 when use_sliding_window is false: no window at all. ModernBERT's decoder derives it from
    its bidirectional ``local_attention`` span: ``local_attention // 2`` tokens back
    (ModernBertDecoderConfig)."""
    name = field_spelling(cfg, "sliding_window")
    local = cfg.int_("local_attention") if cfg.has("local_attention") else None
    if local is not None and cfg.get("model_type") == "modernbert-decoder":
        if cfg.has(name) and cfg.get(name) != local // 2:
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                name,
                f"'{cfg.where(name)}' {cfg.get(name)!r} is not local_attention {local} // 2, "
                "the window ModernBertDecoderConfig derives",
                "make the two agree",
            )
            raise Abort
        if not cfg.has(name):
            return local // 2, f"local_attention {local} // 2"
    if cfg.get("use_sliding_window") is False or cfg.get(name) == 0 or not cfg.has(name):
        return None, name
    return cfg.int_(name), name


def _mla_layer(
    cfg: HfConfig, mla: ImportedKind, kind: str, layer: dict[str, int], seq_len: int
) -> ImportedKind:
    """One layer's MLA kind: the latent sizes its per_layer_config entry ``layer`` sets, and
    on a sliding layer the window (Dots3NoteAttention: a window on the latent and RoPE key,
    no indexer)."""
    rank = layer.get("kv_lora_rank", mla.kv_lora_rank)
    rope = layer.get("qk_rope_head_dim", mla.qk_rope_head_dim)
    if (rank, rope) != (mla.kv_lora_rank, mla.qk_rope_head_dim):
        notes = [(k, "config.json per_layer_config") for k in _MLA_OVERRIDES[:2] if k in layer]
        mla = replace(mla, kv_lora_rank=rank, qk_rope_head_dim=rope,
                      notes=(*dict(mla.notes).items(), *notes))  # fmt: skip
    if kind != "sliding":
        return mla
    window, name = _window(cfg)
    if window is None or window >= seq_len:  # no window, or one that reaches the context
        return mla
    return replace(
        mla, attention="sliding", window=window, index_head_dim=None, base="mla_sliding",
        notes=(*mla.notes, ("window", f"config.json {name}")),
    )  # fmt: skip


def attention_kinds(
    cfg: HfConfig, layers: int, types: list[str | None], seq_len: int
) -> list[ImportedKind | None]:
    if not any(t in ("full", "sliding", "chunked") for t in types):
        return [None] * layers  # a pure state-space model: no attention field is needed
    if cfg.has("kv_lora_rank"):
        rank = cfg.int_("kv_lora_rank")
        rope = cfg.int_(field_spelling(cfg, "qk_rope_head_dim"), required=True, minimum=0)
        index = cfg.int_("index_head_dim") if cfg.has("index_head_dim") else None
        mla = ImportedKind(
            "mla",
            kv_lora_rank=rank,
            qk_rope_head_dim=rope,
            base="mla",
            notes=(
                ("kv_lora_rank", "config.json kv_lora_rank"),
                ("qk_rope_head_dim", "config.json qk_rope_head_dim"),
                (
                    "index_head_dim",
                    "config.json index_head_dim: the sparse-attention indexer's key cache",
                ),
            ),
            index_head_dim=index,
        )
        # MLA beside recurrent layers is a hybrid the spec holds (Kimi Linear: KDA and MLA
        # layers; Ling 2.5 linear), and so is a sliding window on a latent (Dots3-Note); a
        # chunk on one is not
        if "chunked" in types:
            cfg.diag(
                codes.UNSUPPORTED_CONFIG_FEATURE,
                "kv_lora_rank",
                "MLA with chunked layers is not supported",
                "describe the model by hand",
            )
            raise Abort
        indexers = _indexer_types(cfg, layers, index is not None)
        shared = (
            "attention",
            "config.json indexer_types shared: reuses an earlier layer's top-k selection, "
            "no indexer key cache",
        )
        plain = replace(
            mla, index_head_dim=None, base="mla_shared_index", notes=(*mla.notes, shared)
        )
        overrides = _per_layer_config(cfg, layers)
        return [
            _mla_layer(cfg, mla if indexers[i] == "full" else plain, t, overrides.get(i, {}),
                       seq_len)
            if t in ("full", "sliding")
            else None
            for i, t in enumerate(types)
        ]  # fmt: skip
    heads_name = field_spelling(cfg, "num_key_value_heads")
    q_name = field_spelling(cfg, "num_attention_heads")
    q_heads = cfg.per_layer(q_name, layers)
    kv_heads = cfg.per_layer(heads_name, layers) or q_heads
    kv_heads, mq_note = _multi_query(cfg, kv_heads, q_heads)
    if kv_heads is None:
        cfg.diag(
            codes.MISSING_CONFIG_FIELD,
            None,
            "config has neither 'num_key_value_heads' nor 'num_attention_heads'",
            "add num_key_value_heads",
        )
        raise Abort
    hd_name = field_spelling(cfg, "head_dim")
    head_dims = cfg.per_layer(hd_name, layers)
    hd_note = f"config.json {hd_name}"
    if head_dims is None:
        hidden_name = field_spelling(cfg, "hidden_size")
        hidden = cfg.int_(hidden_name, required=True)
        if q_heads is None or len(set(q_heads)) != 1 or hidden < q_heads[0]:
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                q_name,
                f"cannot derive head_dim from hidden_size {hidden} and "
                f"{q_name} {cfg.get(q_name)!r}",
                "add head_dim",
            )
            raise Abort
        head_dims = [hidden // q_heads[0]] * layers
        hd_note = f"config.json {hidden_name} {hidden} / {q_name} {q_heads[0]}"
        if hidden % q_heads[0]:
            # what transformers' and vLLM's attention compute without a head_dim (GLM-4-MoE)
            hd_note += ", rounded down as transformers and vLLM divide (//)"
    for i, (kv, q) in enumerate(zip(kv_heads, q_heads or kv_heads, strict=True)):
        if kv > q or q % kv:
            cfg.diag(
                codes.CONTRADICTORY_CONFIG_FIELDS,
                heads_name,
                f"layer {i}: {kv} KV heads do not divide {q} query heads",
                "check num_key_value_heads against num_attention_heads",
            )
            raise Abort
    window, window_name = _window(cfg)
    chunk = cfg.int_("attention_chunk_size") if cfg.has("attention_chunk_size") else None
    if chunk is None and "chunked" in types:
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "layer_types",
            "layers are chunked_attention but attention_chunk_size is null",
            "set attention_chunk_size",
        )
        raise Abort
    if window is None and "sliding" in types:
        cfg.diag(
            codes.CONTRADICTORY_CONFIG_FIELDS,
            "layer_types" if cfg.has("layer_types") else "sliding_window",
            "layers are sliding but sliding_window is null",
            "set sliding_window",
        )
        raise Abort
    (global_hd, hd_global_note), (global_kv, kv_global_note) = _global_shapes(cfg)
    per_list = isinstance(cfg.get(heads_name), list)
    # V's own head size (MiMo-V2: K 192, V 128; vLLM head_size_v): MLA configs carry a
    # v_head_dim too, but their cache is the latent alone (read above, never here).
    v_hd = cfg.int_("v_head_dim") if cfg.has("v_head_dim") else None
    overrides = _per_layer_config(cfg, layers)
    out: list[ImportedKind | None] = []
    for i, kind in enumerate(types):
        if kind not in ("full", "sliding", "chunked"):
            out.append(None)
            continue
        kv, hd = kv_heads[i], head_dims[i]
        kv_note = mq_note or (
            f"config.json {heads_name}" + (" (per-layer list)" if per_list else "")
            if cfg.has(heads_name)
            else f"config.json {q_name}: no KV-head count given, one KV head per query head"
        )
        this_hd_note = hd_note
        if kind == "full" and global_kv is not None:
            kv, kv_note = global_kv, kv_global_note
        if kind == "full" and global_hd is not None:
            hd, this_hd_note = global_hd, hd_global_note
        if kind == "sliding" and cfg.get("model_type") == "mimo_v2_flash":
            # transformers MiMoV2FlashAttention: is_swa layers hold 2 x num_key_value_heads.
            kv, kv_note = 2 * kv, f"2 x config.json {heads_name} (MiMo-V2-Flash sliding layers)"
        layer = overrides.get(i, {})
        if "num_key_value_heads" in layer:
            kv, kv_note = layer["num_key_value_heads"], "config.json per_layer_config"
        if "head_dim" in layer:
            hd, this_hd_note = layer["head_dim"], "config.json per_layer_config"
        notes = [("kv_heads", kv_note), ("head_dim", this_hd_note)]
        v_dim = v_hd if v_hd is not None and v_hd != hd else None
        if v_dim is not None:
            notes.append(("v_head_dim", "config.json v_head_dim: V's head size differs from K's"))
        # A window or chunk that reaches the context never goes stale: full attention (§1).
        reach = {"sliding": ("sliding_window", window), "chunked": ("attention_chunk_size", chunk)}
        # A sliding (chunked) layer has its window (chunk): a null one was refused above.
        if kind in reach and reach[kind][1] >= seq_len:  # type: ignore[operator]
            field, value = reach[kind]
            notes.append(
                (
                    "attention",
                    f"config.json {field} {value} >= max_position_embeddings {seq_len}: "
                    "full attention (docs/cost-model.md §1)",
                )
            )
            kind = "full"
        if kind == "chunked":
            notes.append(("chunk", "config.json attention_chunk_size"))
            out.append(
                ImportedKind(
                    "chunked",
                    kv_heads=kv,
                    head_dim=hd,
                    v_head_dim=v_dim,
                    notes=tuple(notes),
                    base="chunked",
                    chunk=chunk,
                )
            )
        elif kind == "sliding":
            notes.append(("window", f"config.json {window_name}"))
            out.append(
                ImportedKind(
                    "sliding",
                    window=window,
                    kv_heads=kv,
                    head_dim=hd,
                    v_head_dim=v_dim,
                    notes=tuple(notes),
                    base="sliding",
                )
            )
        else:
            out.append(
                ImportedKind(
                    "full",
                    kv_heads=kv,
                    head_dim=hd,
                    v_head_dim=v_dim,
                    notes=tuple(notes),
                    base="full",
                )
            )
    return out
