"""Layers as a cache manager holds them on one rank, and their life cycles (§1, §3)."""

from __future__ import annotations

import math

import torch
from kvgen.runtime._kinds import Buffer, Cycle, Layer, LifeCycle, layer_rule
from kvgen.runtime._pages import ceil_div
from kvgen.runtime._tables import LayerKind, LayerStack
from kvgen.sizing import facts
from kvgen.sizing.facts import DS_MLA_SCALE_BLOCK, INDEX_SCALE_BLOCK, MX_BLOCK, NVFP4_BLOCK

__all__ = ["Buffer", "Cycle", "Layer", "cycles", "resolve_layers"]

TORCH_DTYPES = {
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp8": torch.float8_e4m3fn,
}
NVFP4_SCALE = torch.float8_e4m3fn  # one FP8 block scale per 16 NVFP4 elements
# OCP MX: one power-of-two (e8m0) scale byte per 32 elements; raw bytes before torch 2.7.
MX_SCALE: torch.dtype = getattr(torch, "float8_e8m0fnu", torch.uint8)
# Per (token, head) scales: one fp32 beside each head's row of 8-bit elements.
PER_TOKEN_HEAD = {"fp8_per_token_head": torch.float8_e4m3fn, "int8_per_token_head": torch.int8}


def _blocks(shape: tuple[int, ...], block: int) -> tuple[int, ...]:
    """Scale shape of one block scale per ``block`` elements (per row when rows divide)."""
    if shape[-1] % block == 0:
        return (*shape[:-1], shape[-1] // block)
    return (ceil_div(math.prod(shape), block),)


def _typed(name: str, dtype: str, shape: tuple[int, ...]) -> list[Buffer]:
    if dtype in TORCH_DTYPES:
        return [(name, TORCH_DTYPES[dtype], shape)]
    if dtype in PER_TOKEN_HEAD:
        # 8-bit elements and one fp32 scale per (token, head) row.
        return [(name, PER_TOKEN_HEAD[dtype], shape), (name + "_scale", torch.float32, shape[:-1])]
    if dtype == "mxfp8":
        scale = _blocks(shape, MX_BLOCK)
        return [(name, torch.float8_e4m3fn, shape), (name + "_scale", MX_SCALE, scale)]
    # NVFP4 / MXFP4: two elements per byte, plus a separate block scale per 16 / 32 elements.
    n, last = math.prod(shape), shape[-1]
    data = (*shape[:-1], last // 2) if last % 2 == 0 else (ceil_div(n, 2),)
    if dtype == "mxfp4":
        return [(name, torch.uint8, data), (name + "_scale", MX_SCALE, _blocks(shape, MX_BLOCK))]
    if dtype != "nvfp4":
        raise ValueError(f"{name}: {dtype} is not a per-element layout (fp8_ds_mla is MLA-only)")
    return [(name, torch.uint8, data), (name + "_scale", NVFP4_SCALE, _blocks(shape, NVFP4_BLOCK))]


def _latent(kind: LayerKind) -> list[Buffer]:
    """An MLA layer's latent: fp8_ds_mla splits it into an fp8 no-RoPE part with its fp32
    scales and a bf16 RoPE part (512 + 16 + 128 = 656 B for DeepSeek-V3.2)."""
    if kind.dtype != "fp8_ds_mla":
        return _typed("latent", kind.dtype, (kind.kv_lora_rank + kind.qk_rope_head_dim,))
    scales = (ceil_div(kind.kv_lora_rank, DS_MLA_SCALE_BLOCK),)
    return [
        ("latent", torch.float8_e4m3fn, (kind.kv_lora_rank,)),
        ("latent_scale", torch.float32, scales),
        ("rope", torch.bfloat16, (kind.qk_rope_head_dim,)),
    ]


def _buffers(kind: LayerKind, tp_size: int) -> tuple[Buffer, ...]:
    """The typed per-token buffers of a layer that caches tokens, on one rank."""
    out: list[Buffer] = []
    if kind.bytes_per_token:
        out.append(("raw", torch.uint8, (kind.bytes_per_token,)))
    elif kind.kv_lora_rank:
        # MLA: one latent buffer, never split by tensor parallelism.
        out += _latent(kind)
        if kind.index_head_dim:
            scales = (ceil_div(kind.index_head_dim, INDEX_SCALE_BLOCK),)
            out.append(("index_k", torch.float8_e4m3fn, (kind.index_head_dim,)))
            out.append(("index_k_scale", torch.float32, scales))
    else:
        heads = ceil_div(kind.kv_heads, tp_size)  # replicated when fewer heads than ranks
        out += _typed("k", kind.dtype, (heads, kind.head_dim))
        out += _typed("v", kind.dtype, (heads, kind.v_head_dim or kind.head_dim))
    if kind.extra_bytes_per_token:
        out.append(("extra", torch.uint8, (kind.extra_bytes_per_token,)))
    return tuple(out)


def _element_bytes(dtype: str, count: int) -> int:
    if dtype == "nvfp4":
        return ceil_div(count, 2) + ceil_div(count, NVFP4_BLOCK)
    return count * int(TORCH_DTYPES[dtype].itemsize)


def mamba_bytes(kind: LayerKind, tp_size: int) -> tuple[int, int, int]:
    """(conv window, SSM state, replay step) bytes per slot of a recurrent kind given by its
    dimensions at ``tp_size`` (§8); ValueError naming tp_size where the engine cannot split."""
    conv_dim = kind.ssm_heads * kind.ssm_head_dim + 2 * kind.n_groups * kind.d_state
    heads_name = facts.state_heads_name(kind.n_groups, kind.d_conv)
    for what, value in ((heads_name, kind.ssm_heads), ("conv_dim", conv_dim)):
        if value % tp_size:
            raise ValueError(facts.uneven_state(tp_size, what, value))
    heads = kind.ssm_heads // tp_size
    conv = _element_bytes(kind.dtype, conv_dim // tp_size * (kind.d_conv - 1))
    ssm = _element_bytes(kind.ssm_dtype or kind.dtype, heads * kind.ssm_head_dim * kind.d_state)
    x_and_b = heads * kind.ssm_head_dim + kind.n_groups // tp_size * kind.d_state
    step = _element_bytes(kind.dtype, x_and_b) + 2 * heads * 4
    return conv, ssm, step


def resolve_layers(
    stack: LayerStack,
    prefix: str,
    indices: range,
    tp_size: int,
    max_seq_len: int,
    backoff: int,
    cacheless: dict[str, str],
    shared: dict[str, str] | None = None,
    encoder_tokens: int | None = None,
    pipeline: tuple[int, int] = (1, 0),
) -> list[Layer]:
    """The layers ``indices`` of ``stack`` that hold a cache; ``attention: none`` layers keep
    their index (so pipeline ranks split the model as it is) and go to ``cacheless``; layers
    that read another layer's cache (KV sharing) keep theirs too, get no pages, and go to
    ``shared`` as reader -> the layer read. ValueError when that layer is on another rank
    (``pipeline``: this rank's (pp_size, pp_rank), for the refusal). Cross-attention layers
    hold ``encoder_tokens`` tokens per request (the spec's count when None)."""
    layers = []
    for index in indices:
        name = stack.pattern[index % len(stack.pattern)]
        kind = stack.kinds[name]
        rule = layer_rule(kind)
        if not rule.holds_cache:
            cacheless[f"{prefix}.{index}"] = name
            continue
        if kind.reads is not None:
            if kind.reads < indices.start:
                raise ValueError(facts.kv_sharing_rank(*pipeline, index, kind.reads))
            if shared is not None:
                shared[f"{prefix}.{index}"] = f"{prefix}.{kind.reads}"
            continue
        window, chunk = rule.window(kind, max_seq_len, backoff)
        buffers = () if rule.recurrent_state else _buffers(kind, tp_size)
        size = sum(math.prod(shape) * dtype.itemsize for _n, dtype, shape in buffers)
        state, mamba = 0, (0, 0, 0)
        if rule.recurrent_state:
            state = ceil_div(kind.state_bytes, tp_size)
        if kind.ssm_heads:  # a recurrent layer's Mamba, or a parallel hybrid's beside its K/V
            mamba = mamba_bytes(kind, tp_size)
            state = mamba[0] + mamba[1]
        sinks = kind.sink_tokens if window is not None else 0
        layer = Layer(
            f"{prefix}.{index}",
            name,
            window,
            sinks,
            buffers,
            size,
            state,
            mamba,
            encoder_tokens=rule.encoder_tokens(kind, encoder_tokens),
            chunk=chunk,
        )
        layers.append(layer._replace(lives=rule.lives(layer)))
    return layers


def cycles(layers: list[Layer]) -> list[Cycle]:
    """The life cycles of a manager's layers: full, one per (window, sinks, chunk), state,
    and cross (encoder K/V: pages taken at admission, held until the request leaves), each
    life cycle's layers grouped by its key."""
    groups: dict[tuple[type[LifeCycle], tuple[int, int, int]], list[Layer]] = {}
    for lay in layers:
        for life in lay.lives:
            groups.setdefault((life, life.key(lay)), []).append(lay)
    out = []
    for (life, key), members in sorted(groups.items(), key=lambda g: (g[0][0].order, g[0][1])):
        window, sinks, chunk = key
        # One encoder output per request: lint (KV232) keeps a model's counts equal.
        tokens = max(lay.encoder_tokens for lay in members)
        out.append(
            Cycle(
                life.name(key),
                life,
                window if life.windowed else None,
                sinks,
                tuple(members),
                tokens,
                chunk,
            )
        )
    return out
