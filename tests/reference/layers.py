"""Per-layer shapes and page counts of the layer-by-layer reference (docs/cost-model.md §1, §3).

Bytes per token of each layer kind on one rank, the layers one pipeline rank holds as
``Layer`` rows after window and chunk resolution, and the peak pages of one request on a
sliding-window, chunked or cross-attention life cycle. ``tests.reference.costmodel`` builds
the cost of each cache manager from these. A second opinion for the tests, not part of kvgen:
kvgen's one static model is the sizing interpreter (``kvgen.sizing.sizing_core``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kvgen._model.geometry import kind_head_dim, kind_v_head_dim, mla_bytes
from kvgen._model.quant import layout_bytes
from kvgen._model.recurrent import RecurrentState, recurrent_state
from kvgen._spec.models import LayerKind, LayerStack, Speculative

# --------------------------------------------------------------------------- shapes (§1)


def kind_bytes_per_token(
    kind: LayerKind, stack: LayerStack, dtype: str, tp_size: int, *, shape_of: LayerStack
) -> int:
    """Bytes per token of one layer of ``kind`` on one rank (K and V plus extra buffers)."""
    if kind.attention in ("recurrent", "none") or kind.reads is not None:
        return 0
    dtype = kind.dtype or dtype
    if kind.bytes_per_token is not None:
        base = kind.bytes_per_token
    elif kind.kv_lora_rank is not None:
        base = mla_bytes(kind, dtype)
    elif kind.kv_heads is not None:
        # ceil: with fewer KV heads than ranks, heads are replicated.
        heads = -(-kind.kv_heads // tp_size)
        base = layout_bytes(dtype, heads, kind_head_dim(kind, shape_of))  # K
        base += layout_bytes(dtype, heads, kind_v_head_dim(kind, shape_of))  # V, its own size
    else:
        raise ValueError("layer kind has no shape (kv_heads, kv_lora_rank or bytes_per_token)")
    return base + kind.extra_bytes_per_token


def pp_layer_range(count: int, pp_size: int, pp_rank: int) -> range:
    """Layers held by one pipeline rank: contiguous, the first ``count % pp`` ranks one more."""
    base, rem = divmod(count, pp_size)
    start = pp_rank * base + min(pp_rank, rem)
    return range(start, start + base + (1 if pp_rank < rem else 0))


# --------------------------------------------------------------------------- layers


@dataclass(frozen=True)
class Layer:
    """One layer as a cache manager sees it, after window resolution."""

    index: int
    kind: str
    window: int | None  # resolved: None is full attention
    sinks: int
    bytes_per_token: int
    state_bytes: int  # recurrent layers: fixed bytes per request
    mamba: RecurrentState | None = None  # the state's buffers when the spec gives dimensions
    encoder_tokens: int = 0  # cross-attention: encoder tokens cached per request (§4)
    chunk: int = 0  # chunked local attention: the chunk (then ``window`` is the chunk too)

    @property
    def is_swa(self) -> bool:
        return self.window is not None and self.state_bytes == 0

    @property
    def is_full(self) -> bool:
        return self.window is None and self.state_bytes == 0 and not self.encoder_tokens

    @property
    def is_cross(self) -> bool:
        return self.encoder_tokens > 0


def stack_layers(
    stack: LayerStack,
    dtype: str,
    layer_indices: range,
    *,
    tp_size: int,
    max_seq_len: int,
    backoff: int,
    shape_of: LayerStack,
    encoder_tokens: int | None = None,
) -> list[Layer]:
    """Resolve the layers ``layer_indices`` of ``stack`` (pattern phase kept across pp ranks).

    Layers of an ``attention: none`` kind hold no cache, and layers of a kind that ``reads``
    another layer's cache hold none of their own: they take their index (and so their place on
    a pipeline rank) but no cache manager sees them."""
    dtype = stack.kv_cache_dtype or dtype
    out = []
    pattern = stack.layers.pattern
    for index in layer_indices:
        name = pattern[index % len(pattern)]
        kind = stack.layer_kinds[name]
        if kind.attention == "none":
            continue
        if kind.reads is not None:
            # KV sharing: the layer reads the cache of an earlier layer and holds none (§1);
            # that layer must be on this pipeline rank, as the engines require.
            if kind.reads < layer_indices.start:
                raise ValueError(
                    f"layer {index} reads the cache of layer {kind.reads}, held by an earlier "
                    "pipeline rank; a layer reads only a cache on its own rank (choose a "
                    "pp_size that keeps the shared layers with the layers they read)"
                )
            continue
        dims = kind.recurrent_dims  # mamba:, or mamba1: in Mamba-2 dimensions (§8)
        if kind.attention == "recurrent" and dims is not None:
            mamba = recurrent_state(dims, kind.dtype or dtype, tp_size)
            out.append(Layer(index, name, None, 0, 0, mamba.conv + mamba.ssm, mamba))
            continue
        if kind.attention == "recurrent":
            state = -(-(kind.state_bytes or 0) // tp_size)
            out.append(Layer(index, name, None, 0, 0, state))
            continue
        if kind.attention == "cross":
            # The K/V of the request's encoder tokens, written once (§4); the runtime keyword
            # encoder_tokens overrides the spec's count.
            bpt = kind_bytes_per_token(kind, stack, dtype, tp_size, shape_of=shape_of)
            tokens = encoder_tokens or kind.encoder_tokens or 0
            out.append(Layer(index, name, None, 0, bpt, 0, encoder_tokens=tokens))
            continue
        window = None
        chunk = 0
        if kind.attention == "chunked" and kind.chunk is not None and kind.chunk < max_seq_len:
            # A chunk reaching max_seq_len never goes stale: full attention (§1). Block reuse
            # does not extend a chunk: the chunk start does not move with a re-matched block.
            window = chunk = kind.chunk
        elif kind.attention == "sliding" and kind.window is not None:
            # A window reaching max_seq_len is full attention (§1), also after the
            # block-reuse backoff extension (§5). A natively full layer never becomes SWA.
            extended = kind.window + backoff
            window = extended if extended < max_seq_len else None
        sinks = kind.sink_tokens if window is not None else 0
        bpt = kind_bytes_per_token(kind, stack, dtype, tp_size, shape_of=shape_of)
        out.append(Layer(index, name, window, sinks, bpt, 0, None, chunk=chunk))
        if kind.parallel_state and dims is not None:
            # A parallel hybrid layer (Falcon-H1): its Mamba-2 state beside the K/V (§8).
            mamba = recurrent_state(dims, kind.dtype or dtype, tp_size)
            out.append(Layer(index, name, None, 0, 0, mamba.conv + mamba.ssm, mamba))
    return out


# --------------------------------------------------------------------------- pages (§3)


def cross_pages(encoder_tokens: int, tokens_per_block: int) -> int:
    """Pages one request holds on a cross-attention life cycle at every step: its encoder
    tokens in whole pages, allocated at admission and never grown (§4)."""
    return -(-encoder_tokens // tokens_per_block)


def pages_per_window(window: int, head: int, tokens_per_block: int, sinks: int = 0) -> int:
    """Peak live pages of one request on an SWA life cycle (§3): the boundary page
    included. ``ceil((w + H - 2) / tpb) + 1`` plus the sink blocks."""
    sink_blocks = -(-sinks // tokens_per_block)
    return -(-(window + head - 2) // tokens_per_block) + 1 + sink_blocks


def pages_per_chunk(chunk: int, head: int, tokens_per_block: int) -> int:
    """Peak live pages of one request on a chunked life cycle (§3): with ``g = gcd(C, tpb)``,
    ``ceil((C + H - 1 + tpb - g) / tpb)``. History ``h = qC + r`` holds pages from
    ``floor(qC/tpb)`` to ``ceil((h+H)/tpb)``: ``ceil((qC mod tpb + r + H)/tpb)``, largest at
    ``r = C - 1`` and ``qC mod tpb = tpb - g``; ``ceil((C + H - 1)/tpb)`` when tpb divides C."""
    tpb = tokens_per_block
    return -(-(chunk + head - 1 + tpb - math.gcd(chunk, tpb)) // tpb)


def cycle_pages(window: int, sinks: int, chunk: int, head: int, tokens_per_block: int) -> int:
    """Peak live pages of one request on an SWA (``chunk`` 0) or chunked life cycle (§3)."""
    if chunk:
        return pages_per_chunk(chunk, head, tokens_per_block)
    return pages_per_window(window, head, tokens_per_block, sinks)


# --------------------------------------------------------------------------- recurrent rows (§8)

MAMBA_STATE_UPDATES = ("default", "replay")
# The replay path keeps at least this many steps of x, B, dt and dA_cumsum: its kernels pad the
# token dimension to a tensor-core tile of 16.
MIN_REPLAY_HISTORY = 16


def state_terms(
    layers: Sequence[tuple[int, RecurrentState | None]],
    batch: int,
    profile: Speculative | None,
    *,
    attention_dp: bool,
    mamba_state_update: str,
) -> dict[str, int]:
    """The recurrent rows the engine keeps beyond one per request (§8): the reserved rows
    (one slot shared by the CUDA-graph padding dummies, one more for the attention-DP dummy)
    and, under speculative decoding, the intermediate states of every step (default path)
    or the conv windows plus the replay history (replay path). Empty without recurrent
    layers. ``layers``: (state bytes per slot, buffers by dimensions or None) of each layer.
    The raw ``state_bytes`` form has no dimensions, so no intermediate states."""
    state = sum(state_bytes for state_bytes, _ in layers)
    if not state:
        return {}
    reserved = 1 + attention_dp
    terms = {"state_reserved_rows": reserved * state}
    if profile is None:
        return terms
    step = 1 + (profile.tree_draft_tokens or profile.max_draft_len)  # T = K + 1
    mambas = [mamba for _, mamba in layers if mamba is not None]
    if mamba_state_update == "replay":
        history = max(MIN_REPLAY_HISTORY, step)
        terms["spec_intermediate_states"] = batch * step * sum(m.conv for m in mambas)
        per_slot = sum(2 * history * (m.replay_step + m.replay_scalars) for m in mambas)
        terms["spec_replay_history"] = (batch + reserved) * per_slot
    else:
        terms["spec_intermediate_states"] = batch * step * sum(m.conv + m.ssm for m in mambas)
    return terms
