"""The sizing interpreter's tables: the row types a family's tables are written in, the
family's tables (empty here: kvgen's own copy sizes no model), and one class per cache kind
(docs/cost-model.md §1, §3, §8). Part of the interpreter ``sizing_core`` binds (docs/api.md, "The
interpreter"); a new cache kind is a class here and an entry of ``_KIND_CLASSES``.
"""

# No `from __future__ import annotations`: NamedTuple would turn every string annotation into
# a compiled ForwardRef at import, which costs more than the rest of the import together.
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from .facts import DS_MLA, DTYPE_BYTES, SCALED_LAYOUTS, ds_mla_bytes, index_k_bytes

__all__ = ["CacheCost", "Kind", "Model", "Profile", "SizingTables", "Stack", "kind_row"]


class CacheCost(NamedTuple):
    """``cost(T) = slope * T + intercept``: bytes per token of full-attention history, bytes."""

    slope: int
    intercept: int


class _Record:
    """Named fields compared, hashed and printed by value like a NamedTuple's, for the engine
    rows of ``engines_core``; rows are never changed after they are built."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()  # in the constructor's order, as NamedTuple's

    def _values(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Record) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._fields])
        return f"{type(self).__name__}({fields})"


class Kind(NamedTuple):
    """One layer kind of a stack and how many of the stack's layers have it (§1, §8; the
    fields are described in docs/api.md, "Interpreter tables")."""

    attention: str  # "full", "sliding", "recurrent", "none", "cross" or "chunked"
    layers: int
    window: int | None = None  # None for full attention
    sink_tokens: int = 0
    kv_heads: int = 0  # 0: a shape tp does not split (MLA latent, raw bytes): bytes_per_token
    head_dim: int = 0
    dtype: str = ""
    bytes_per_token: int = 0
    extra_bytes_per_token: int = 0
    state_bytes: int = 0  # a recurrent state known by its bytes, per request per layer at tp=1
    ssm_heads: int = 0  # a recurrent state by its dimensions (§8)
    ssm_head_dim: int = 0
    d_state: int = 0
    n_groups: int = 0
    d_conv: int = 0
    ssm_dtype: str = ""
    reads: int | None = None  # KV sharing: the layer whose cache these read; none own (§1)
    encoder_tokens: int = 0  # cross-attention: encoder tokens cached per request (§4)
    chunk: int = 0  # chunked local attention: tokens per attention chunk (§3)
    v_head_dim: int = 0  # V's head size where it differs from K's head_dim (0: the same)
    # A recurrent state's form, a key of the engines' mixer table: "mamba2", "mamba1" or
    # "linear" (the fields above are its Mamba-2 lowering, §8).
    state_form: str = "mamba2"
    # MLA (kv_heads 0): the latent the engines cache, whose bytes per token the interpreter
    # derives (§1); a sparse indexer's key cache beside it.
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    index_head_dim: int = 0


class Stack(NamedTuple):
    """``layer_count`` layers whose kinds repeat ``pattern`` cyclically; layer i keeps its
    kind on every pipeline rank (§1)."""

    layer_count: int
    pattern: tuple[str, ...]
    kinds: dict[str, Kind]


class Model(NamedTuple):
    """A model: native context length, target layers, the profiles that apply ("none" first)
    and, per EAGLE3/MTP one-model profile, the draft layers the target manager holds; what the
    engine policies read beyond the layers: the attention query heads (0: unknown) and, per
    profile, how each engine runs it (``engines_rows.EngineDraft`` rows, their layers left to
    ``bind``, which derives every engine row from the layers here)."""

    max_seq_len: int
    layers: Stack
    profiles: tuple[str, ...]
    extra_layers: Mapping[str, Stack] = MappingProxyType({})  # none (a read-only default)
    query_heads: int = 0
    drafts: Mapping[str, Any] = MappingProxyType({})
    vllm_ssm_dtype: str = ""  # vLLM's SSM state dtype ("": the conv dtype)


class Profile(NamedTuple):
    """Speculative headroom terms (§2, §5): K, E, G, the block-reuse backoff D, and the
    separate draft pool of a one-model external drafter (§6)."""

    mode: str
    draft_len: int
    extra: int
    step: int
    backoff: int
    draft: Stack | None = None


class SizingTables(NamedTuple):
    """A family's tables, the one value its sizing module writes (``TABLES``) and ``bind``
    installs the runtime over: the spec's family name, hash, page size and cache dtype, its
    models and speculative profiles, and what the engines read of the architecture as a whole
    (an ``engines_rows.EngineArch``). Part of the interface between generated code and its
    consumers (docs/api.md, "The interface of a sizing module")."""

    family: str
    spec_sha256: str
    tokens_per_block: int
    kv_cache_dtype: str
    models: Mapping[str, Model]
    profiles: Mapping[str, Profile]
    engines: Any = None


# ---- a family's tables: each generated module defines ``TABLES``, then calls ``bind`` ----
# The values here are an empty family's: kvgen's own copy of the interpreter sizes no model.
# ``bind`` installs TABLES' fields as these names, which the interpreter reads.
TABLES = SizingTables("", "", 1, "", {}, {})
FAMILY = ""
SPEC_SHA256 = ""
TOKENS_PER_BLOCK = 1
KV_CACHE_DTYPE = ""
_MODELS: Mapping[str, Model] = {}
_PROFILES: Mapping[str, Profile] = {}
# Derived from the tables by ``_derive_tables`` when a family binds the interpreter.
MODELS: tuple[str, ...] = ()
SPECULATIVE: tuple[str, ...] = ()
MAX_SEQ_LEN: dict[str, int] = {}
PROFILES: dict[str, tuple[str, ...]] = {}  # profiles that apply to each model, "none" first
MANAGERS: dict[str, tuple[str, ...]] = {}  # a separate draft pool is its own manager (§6)
_new = tuple.__new__  # builds a row without NamedTuple.__new__'s Python frame

# A row's element code: bytes per element (a plain dtype), or <= 0 for a layout that stores
# scales beside its elements (§1), a key of ``_SCALED``: that layout's row of
# ``facts.SCALED_LAYOUTS``. NVFP4 is 0, which is also the code of a row with no dtype.
_ELEMENT_CODES = {**DTYPE_BYTES, **{name: -i for i, name in enumerate(SCALED_LAYOUTS)}}
_SCALED = {-i: layout for i, layout in enumerate(SCALED_LAYOUTS.values())}


def _scaled_bytes(heads: int, count: int, element: int) -> int:
    """Bytes of ``count`` elements over ``heads`` heads in a scaled layout (element <= 0):
    packed elements, a 1-byte scale per block (NVFP4 16, MX 32) or an fp32 scale per head."""
    bits, block, block_scale, head_scale = _SCALED[element]
    scales = -(-count // block) * block_scale if block else 0
    return -(-count * bits // 8) + scales + heads * head_scale


def _elements(count: int, element: int) -> int:
    """Bytes of ``count`` elements; element 0 is NVFP4: two per byte plus an FP8 scale per 16."""
    return count * element if element > 0 else _scaled_bytes(1, count, element)


# ---- cache kinds as values: one class per kind, chosen from a kind -> class map ----
# Each class answers, for the layers of its kind: the row they add to a manager's plan (less
# the layer count; ``rows`` names the row list: 0 paged attention, 1 recurrent state, 2 cross,
# None for no cache of its own), its bytes per token at a tp, and for a life cycle (sliding,
# chunked) the pages a request keeps under a headroom. The refusals of each kind are its
# rows' (``sizing_options._dcp_size`` reads ``facts.DCP_ATTENTION``, ``sizing_split`` the
# uneven split of a state, ``sizing_options._encoder_tokens`` the cross kinds).


def _dims(kind: Kind) -> tuple[int, int]:
    """K's and V's head dims of an attention kind (V's is K's unless the spec gives one)."""
    return kind.head_dim, kind.v_head_dim or kind.head_dim


def _latent_bytes(kind: Kind) -> int:
    """An MLA layer's bytes per token, never split by tp (§1): the latent in the kind's dtype
    (FlashMLA's fp8_ds_mla packed), and a sparse indexer's key cache beside it; 0 but MLA."""
    rank = kind.kv_lora_rank
    if not rank:
        return 0
    if kind.dtype == DS_MLA:
        latent = ds_mla_bytes(rank, kind.qk_rope_head_dim)
    else:
        latent = _elements(rank + kind.qk_rope_head_dim, _ELEMENT_CODES.get(kind.dtype, 0))
    return latent + (index_k_bytes(kind.index_head_dim) if kind.index_head_dim else 0)


class _CacheKind:
    """A kind of layer with no cache of its own; subclasses name their row list and row."""

    rows: int | None = None

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        return ()


class _Full(_CacheKind):
    """Full attention: every token of history stays in the cache (§1)."""

    rows = 0

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        """(kv_heads, (K, V head dims), element code (0 without heads), bytes per token tp
        does not split)."""
        fixed = kind.bytes_per_token + kind.extra_bytes_per_token + _latent_bytes(kind)
        element = _ELEMENT_CODES.get(kind.dtype, 0) if kind.kv_heads else 0
        return (kind.kv_heads, _dims(kind), element, fixed)

    @staticmethod
    def bytes_per_token(
        kv_heads: int, head_dim: tuple[int, int], element: int, fixed: int, tp: int
    ) -> int:
        """K and V of a layer's heads on one rank per token, each of its own head dim, scales
        included (§1)."""
        if not kv_heads:
            return fixed
        heads = -(-kv_heads // tp)  # ceil: KV heads are replicated on more ranks than heads
        k, v = heads * head_dim[0], heads * head_dim[1]
        if element > 0:
            return fixed + (k + v) * element
        return fixed + _scaled_bytes(heads, k, element) + _scaled_bytes(heads, v, element)

    @staticmethod
    def per_head(kv_heads: int, head_dim: tuple[int, int], element: int, fixed: int) -> int | None:
        """K and V bytes per token of one head, where ``bytes_per_token`` is ``fixed +
        ceil(kv_heads / tp) * per_head`` (a plain dtype, or no heads: 0); None for a scaled
        layout, whose scales and blocks round per head."""
        if not kv_heads:
            return 0
        return (head_dim[0] + head_dim[1]) * element if element > 0 else None


class _Sliding(_Full):
    """Sliding-window attention: a request keeps the last ``window`` tokens (§1, §3)."""

    scratch_reuse = True  # a stale page is reused at once: one layer per (w, b_l) grows (§3)

    @staticmethod
    def retention(window: int, backoff: int) -> int:
        return window + backoff  # block reuse extends retention (§5)

    @staticmethod
    def live_pages(window: int, head: int, tpb: int) -> int:
        return -(-(window + head - 2) // tpb)  # pages(w, H) = live + 1 + sink pages (§3)

    @staticmethod
    def spare(window: int, tpb: int) -> int:
        """Tokens the headroom must exceed for pages(w, H) to keep a spare page (§4)."""
        return window - 2


class _Chunked(_Sliding):
    """Chunked attention: a request keeps its current chunk of ``chunk`` tokens (§1, §3)."""

    scratch_reuse = False  # a chunk boundary makes a whole chunk stale at once

    @staticmethod
    def retention(window: int, backoff: int) -> int:
        return window  # block reuse never extends a chunk

    @staticmethod
    def live_pages(window: int, head: int, tpb: int) -> int:
        # pages(C, H) = ceil((C + H - 1 + tpb - gcd(C, tpb))/tpb) = live + 1 (§3)
        return -(-(window + head - 1 - math.gcd(window, tpb)) // tpb)

    @staticmethod
    def spare(window: int, tpb: int) -> int:
        return window - 1 - math.gcd(window, tpb)


class _Cross(_Full):
    """Cross-attention: the K/V of a request's encoder tokens, whole pages, never grown (§4)."""

    rows = 2

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        return (*_Full.row(kind), kind.encoder_tokens)


class _Recurrent(_CacheKind):
    """A recurrent state (Mamba, GDN): one slot per request, by dimensions or raw bytes (§8)."""

    rows = 1

    @classmethod
    def row(cls, kind: Kind) -> tuple[Any, ...]:
        conv_el = _ELEMENT_CODES.get(kind.dtype, 0) if kind.ssm_heads else 0
        ssm_el = _ELEMENT_CODES.get(kind.ssm_dtype, 0)
        shape = (kind.ssm_heads, kind.ssm_head_dim, kind.d_state, kind.n_groups, kind.d_conv)
        return (kind.state_bytes, *shape, conv_el, ssm_el)


class _CacheLess(_CacheKind):
    """A layer with no cache (attention "none"): it only takes its index (§1)."""


class _SharedReader(_CacheKind):
    """A layer that reads another layer's cache (KV sharing): no cache of its own (§1)."""


_KIND_CLASSES: dict[str, type[_CacheKind]] = {
    "full": _Full,
    "sliding": _Sliding,
    "chunked": _Chunked,
    "cross": _Cross,
    "recurrent": _Recurrent,
    "none": _CacheLess,
}


def _kind_class(kind: Kind) -> type[_CacheKind]:
    return _SharedReader if kind.reads is not None else _KIND_CLASSES[kind.attention]


def kind_row(kind: Kind) -> tuple[Any, ...]:
    """One layer of ``kind`` as the interpreter's class of it sizes it: (KV heads, the head
    dims of its buffers, bytes per element, fixed bytes per token)."""
    return _kind_class(kind).row(kind)


def _derive_tables() -> None:
    """Per family, at bind (``sizing_core._derive``, over the family's namespace): the public
    tables of names."""
    global MODELS, SPECULATIVE, MAX_SEQ_LEN, PROFILES, MANAGERS
    MODELS = tuple(_MODELS)
    SPECULATIVE = tuple(_PROFILES)
    MAX_SEQ_LEN = {name: model.max_seq_len for name, model in _MODELS.items()}
    PROFILES = {name: model.profiles for name, model in _MODELS.items()}
    MANAGERS = {
        name: ("target",) if profile.draft is None else ("target", "draft")
        for name, profile in _PROFILES.items()
    }
