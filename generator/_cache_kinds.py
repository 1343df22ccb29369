"""The cache kinds of a spec as values: one class per kind, chosen from a kind -> class map.

Generation reads a layer kind's fields through its class instead of branching on
``kind.attention``: the sizing rows (``sizing_context.kind_row``), the allocator's layer kinds
(``allocator_context.layer_kind_fields``) and the engine rows (``engines._layers``, through
:meth:`CacheKind.engine_layers`) ask the same class what the kind keeps (heads, a window and
its sinks, a chunk, encoder tokens) and what the engine models refuse of it. The
interpreter's own classes (in ``sizing_core``: rows, bytes per token at a tp, pages under a
headroom) answer the static cost from those rows; the runtime derives its own from the
allocator's tables (``kvgen.runtime._kinds``). A shared reader (``reads``) keeps the class of
its attention here: it is a full or sliding kind whose cache is another layer's, which both
tables carry as ``reads`` and the engine rows leave out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from kvgen._quant import ds_mla_bytes, index_k_bytes
from kvgen._recurrent import recurrent_state
from kvgen._spec import LayerKind
from kvgen.engines_rows import UNMODELLED, VLLM_PER_TOKEN_HEAD, NotModelled
from kvgen.facts import DTYPE_BYTES

if TYPE_CHECKING:
    from kvgen._spec import Model

__all__ = ["SPEC_KINDS", "CacheKind", "CachedLayer", "spec_kind"]


class CachedLayer(NamedTuple):
    """One layer that holds cache, as every engine model reads it (``attention: none``
    layers and KV-sharing readers are left out)."""

    position: int  # index in the model (pattern phase)
    attention: str  # "full", "sliding", "chunked", "mla" or "recurrent"
    kv_heads: int  # 1 for MLA (one latent), 0 for recurrent
    head_dim: int  # K head size; MLA: kv_lora_rank + qk_rope_head_dim
    value_dim: int  # V head size; 0 for MLA (no separate V)
    window: int | None  # sliding layers only (chunked: the chunk)
    state_bytes: int  # recurrent layers only, at tp=1
    dtype: str
    # Recurrent layers with dimensions: (mixer, conv channels, conv rows, SSM heads, elements
    # per SSM head, B/C groups, d_state), mixer "mamba2", "mamba1" or "linear"; () for raw
    # state_bytes.
    recurrent: tuple[object, ...] = ()
    token_bytes: int = 0  # a packed layout's bytes per token (fp8_ds_mla, an indexer key)


def _unmodelled(model: Model, reason: str) -> NotModelled:
    return NotModelled(f"{model.name}: {UNMODELLED[reason]}", reason)


def _head_dim(kind: LayerKind, model: Model) -> int:
    if kind.head_dim is not None:
        return kind.head_dim
    if model.hidden_size is None or model.num_attention_heads is None:
        raise ValueError(f"{model.name}: head_dim cannot be derived (no hidden_size/heads)")
    return model.hidden_size // model.num_attention_heads


def _mla_layers(kind: LayerKind, index: int, dtype: str) -> tuple[CachedLayer, ...]:
    """An MLA latent (packed under fp8_ds_mla) and, with a sparse indexer, its key cache
    (vLLM DeepseekV32IndexerCache): its own layer of the same full-attention kind, fp8 with a
    scale per 128 elements."""
    assert kind.kv_lora_rank is not None
    rope = kind.qk_rope_head_dim or 0
    packed = ds_mla_bytes(kind.kv_lora_rank, rope) if dtype == "fp8_ds_mla" else 0
    latent = kind.kv_lora_rank + rope
    out = [CachedLayer(index, "mla", 1, latent, 0, None, 0, dtype, (), packed)]
    if kind.index_head_dim is not None:
        key = index_k_bytes(kind.index_head_dim)
        out.append(CachedLayer(index, "mla", 1, kind.index_head_dim, 0, None, 0, "fp8", (), key))
    return tuple(out)


class CacheKind:
    """Full attention, the base: K/V heads of every token of history, no window or chunk."""

    cached_heads = True  # K/V heads (or an MLA latent) per token
    recurrent = False  # a state per request instead (its SSM share: ``ssm_state_bytes``)
    encoder_cache = False  # the K/V of encoder tokens, in the engines' own encoder managers
    windowed_mla = False  # an MLA latent with a window or chunk: no engine models it

    @staticmethod
    def window(kind: LayerKind) -> int | None:
        return None

    @staticmethod
    def sink_tokens(kind: LayerKind) -> int:
        return 0

    @staticmethod
    def chunk(kind: LayerKind) -> int:
        return 0

    @staticmethod
    def encoder_fields(kind: LayerKind) -> dict[str, Any]:
        return {}

    @classmethod
    def engine_layers(
        cls, kind: LayerKind, index: int, dtype: str, model: Model
    ) -> tuple[CachedLayer, ...]:
        """The engine rows of layer ``index`` of this kind in pool dtype ``dtype`` (its
        missing head_dim derives from ``model``); NotModelled where no engine model holds it."""
        cls._check_engine_layout(kind, dtype, model)
        if kind.kv_lora_rank is not None:
            return _mla_layers(kind, index, dtype)
        if kind.index_head_dim is not None:
            raise _unmodelled(model, "index_cache")
        head = _head_dim(kind, model)
        value = kind.v_head_dim or head  # vLLM head_size_v, SGLang v_head_dim
        window = cls.window(kind)
        attention = "sliding" if window is not None else "full"
        row = CachedLayer(index, attention, kind.kv_heads or 0, head, value, window, 0, dtype)
        if kind.parallel_state:
            # A parallel hybrid layer (Falcon-H1) is two cache layers to both engines: vLLM's
            # FalconH1ParallelHybrid builds an Attention, then a MambaMixer2 (at index L + i);
            # SGLang lists every layer in full_attention_layer_ids and in linear_layer_ids.
            return (row, _state_layer(kind, index, dtype))
        return (row,)

    @classmethod
    def _check_engine_layout(cls, kind: LayerKind, dtype: str, model: Model) -> None:
        """NotModelled for what the engine models refuse of any cache of heads per token."""
        # vLLM's per-token-head dtypes on plain full attention only (SGLang refuses them:
        # engines._rows); a window, a latent or a parallel state with them is not modelled.
        per_token_head = (
            dtype in VLLM_PER_TOKEN_HEAD and cls is CacheKind and kind.kv_lora_rank is None
            and not kind.parallel_state
        )  # fmt: skip
        ds_mla = dtype == "fp8_ds_mla" and kind.kv_lora_rank
        if dtype not in DTYPE_BYTES and not ds_mla and not per_token_head:
            raise _unmodelled(model, "dtype")
        if kind.bytes_per_token is not None or kind.extra_bytes_per_token:
            raise _unmodelled(model, "synthetic")
        if kind.sink_tokens:
            raise _unmodelled(model, "sinks")
        if cls.windowed_mla and kind.kv_lora_rank is not None:
            raise _unmodelled(model, "sliding_mla")


class Sliding(CacheKind):
    """Sliding-window attention: the last ``window`` tokens, ``sink_tokens`` kept besides."""

    windowed_mla = True

    @staticmethod
    def window(kind: LayerKind) -> int | None:
        return kind.window

    @staticmethod
    def sink_tokens(kind: LayerKind) -> int:
        return kind.sink_tokens


class Chunked(CacheKind):
    """Chunked attention: the tokens of the current chunk of ``chunk``."""

    windowed_mla = True

    @staticmethod
    def chunk(kind: LayerKind) -> int:
        return kind.chunk or 0

    @classmethod
    def engine_layers(
        cls, kind: LayerKind, index: int, dtype: str, model: Model
    ) -> tuple[CachedLayer, ...]:
        # vLLM: ChunkedLocalAttentionSpec; SGLang sizes it as a sliding window of the chunk.
        cls._check_engine_layout(kind, dtype, model)
        head = _head_dim(kind, model)
        heads = kind.kv_heads or 0
        value = kind.v_head_dim or head
        return (CachedLayer(index, "chunked", heads, head, value, kind.chunk, 0, dtype),)


class Cross(CacheKind):
    """Cross-attention: the K/V of ``encoder_tokens`` encoder tokens per request."""

    encoder_cache = True

    @staticmethod
    def encoder_fields(kind: LayerKind) -> dict[str, Any]:
        return {"encoder_tokens": kind.encoder_tokens or 0}

    @classmethod
    def engine_layers(
        cls, kind: LayerKind, index: int, dtype: str, model: Model
    ) -> tuple[CachedLayer, ...]:
        raise _unmodelled(model, "cross")  # the engines' own encoder-cache pools


class Recurrent(CacheKind):
    """A recurrent state per request (Mamba, linear attention): no heads per token."""

    cached_heads = False
    recurrent = True

    @classmethod
    def engine_layers(
        cls, kind: LayerKind, index: int, dtype: str, model: Model
    ) -> tuple[CachedLayer, ...]:
        return (_state_layer(kind, index, dtype),)


def _state_layer(kind: LayerKind, index: int, dtype: str) -> CachedLayer:
    """The recurrent state of layer ``index`` (a recurrent kind, or the ``mamba:`` of a parallel
    hybrid), one slot per request as both engines allocate it."""
    dims = kind.recurrent_dims
    if dims is None:  # a state known by its bytes only
        return CachedLayer(index, "recurrent", 0, 0, 0, None, kind.state_bytes or 0, dtype)
    # One request's state at tp=1: the conv and SSM buffers in their own dtypes (§8).
    state = recurrent_state(dims, dtype, 1)
    mixer = "mamba1" if kind.mamba1 is not None else "mamba2"
    shape = (mixer, dims.conv_dim, dims.d_conv - 1, dims.num_heads,
             dims.head_dim * dims.d_state, dims.n_groups, dims.d_state)  # fmt: skip
    return CachedLayer(index, "recurrent", 0, 0, 0, None, state.conv + state.ssm, dtype, shape)


class LinearAttention(Recurrent):
    """Linear (lightning) attention: one ``head_dim x head_dim`` matrix per head per request,
    no conv window (``linear:``). Its sizing and allocator fields are its Mamba-2 lowering
    (``LinearState.as_mamba2``); the engines read it as their own linear-attention state:
    vLLM's MambaStateShapeCalculator.linear_attention_state_shape (heads/tp, head_dim,
    head_dim) in mamba_cache_dtype (never the SSM dtype), SGLang's Mamba2StateShape with no
    conv channels and state_size head_dim in its SSM dtype."""

    @classmethod
    def engine_layers(
        cls, kind: LayerKind, index: int, dtype: str, model: Model
    ) -> tuple[CachedLayer, ...]:
        assert kind.linear is not None
        if dtype not in DTYPE_BYTES:
            raise _unmodelled(model, "dtype")
        heads, head_dim = kind.linear.num_heads, kind.linear.head_dim
        state = heads * head_dim * head_dim * DTYPE_BYTES[dtype]  # one request at tp=1
        shape = ("linear", 0, 0, heads, head_dim * head_dim, 0, head_dim)
        return (CachedLayer(index, "recurrent", 0, 0, 0, None, state, dtype, shape),)


class CacheLess(CacheKind):
    """A layer without a cache (attention "none"): it only takes its index."""

    cached_heads = False

    @classmethod
    def engine_layers(
        cls, kind: LayerKind, index: int, dtype: str, model: Model
    ) -> tuple[CachedLayer, ...]:
        return ()


SPEC_KINDS: dict[str, type[CacheKind]] = {
    "full": CacheKind,
    "sliding": Sliding,
    "chunked": Chunked,
    "cross": Cross,
    "recurrent": Recurrent,
    "none": CacheLess,
}


def spec_kind(kind: LayerKind) -> type[CacheKind]:
    """The class of ``kind``'s attention (a recurrent kind's by its state's form)."""
    if kind.linear is not None:
        return LinearAttention
    return SPEC_KINDS[kind.attention]
