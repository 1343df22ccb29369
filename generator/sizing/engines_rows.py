"""The engine rows: what the engine policies read of a model (``EngineModel``, its
``EngineLayer`` rows, its ``EngineDraft`` profiles), derived from the interpreter's tables
(``engine_models``: each layer is written once, in the family's ``Kind`` rows), the tables of
what each engine does with a row's kind (``_ROW_KINDS``) and a recurrent row's mixer
(``_MIXERS``), and the answer (``EngineCapacity``). The first of the engine policies' parts
(``engines_core.bind``)."""

# Every engine part: no `from __future__ import annotations` (NamedTuple import cost), and
# relative imports, as in the sizing runtime (the same in kvgen and in the output folder's copy).
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .facts import (
    DS_MLA,
    DTYPE_BYTES,
    MODEL_DTYPES,
    SCALED_LAYOUTS,
    ds_mla_bytes,
    index_k_bytes,
)
from .sizing_kinds import (
    _ELEMENT_CODES,
    _KIND_CLASSES,
    Kind,
    Model,
    Profile,
    SizingTables,
    Stack,
    _CacheKind,
    _CacheLess,
    _Chunked,
    _Cross,
    _elements,
    _Full,
    _Record,
    _Recurrent,
    _Sliding,
)
from .sizing_options import _integer


def _fields_of(init: Callable[..., None]) -> tuple[str, ...]:
    """A row type's fields (``_Record._fields``, its ``__slots__``): the parameters of its
    ``__init__`` after ``self``, in order, so that each field is written once."""
    code = init.__code__
    return code.co_varnames[1 : code.co_argcount]


class EngineCapacity(NamedTuple):
    """What an engine reports or uses for one KV budget (docs/cost-model.md §9)."""

    kv_tokens: int  # tokens the KV cache holds (vLLM's logged "KV cache size")
    max_concurrency: float  # requests at max_seq_len at once (vLLM's "Maximum concurrency")
    request_bytes: int  # bytes one request at max_seq_len needs
    num_blocks: int  # blocks (pages) of the pool


class NotModelled(ValueError):
    """The engine model has no answer for this input (a shape or mode it does not cover yet),
    as opposed to an answer of "does not fit". ``reason`` is a key of ``UNMODELLED``."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


# Why a model or profile has no engine answer; rows name the key, so tables stay short.
UNMODELLED = {
    "dtype": "its kv_cache_dtype is not modelled per engine (fp32, bf16, fp16 and fp8 are; "
    "fp8_per_token_head and int8_per_token_head on full attention in vLLM)",
    "synthetic": "synthetic byte shapes have no engine equivalent",
    "sinks": "attention sinks are not modelled per engine",
    "sliding_mla": "sliding-window or chunked MLA is not modelled per engine",
    "separate_draft": "a separate draft model is not modelled for vLLM",
    "cross": "cross-attention (encoder) caches are not modelled per engine: vLLM keeps them in "
    "a CrossAttentionManager group, TensorRT-LLM in a separate cross KV cache manager",
    "index_cache": "a sparse-attention index-K cache (index_head_dim) is modelled per engine "
    "beside an MLA latent only",
    # Models an engine cannot run at all (its own refusal, with its version):
    "vllm_no_mllama": "vLLM 0.33.0 cannot run Mllama (Llama 3.2 Vision): "
    "MllamaForConditionalGeneration was supported until vLLM 0.10.2 "
    "(vllm/model_executor/models/registry.py _PREVIOUSLY_SUPPORTED_MODELS)",
    "vllm_no_openelm": "vLLM 0.33.0 cannot run OpenELM: OpenELMForCausalLM is not in its "
    "model registry (vllm/model_executor/models/registry.py); only its Transformers backend "
    "with the checkpoint's remote code might, which is not modelled",
    "vllm_two_model": "vLLM 0.33.0 cannot run TensorRT-LLM's two-model speculative decoding "
    "(the drafter as a second engine with its own KV cache): vLLM's EAGLE3, MTP and draft-model "
    "drafters always keep their layers in the target's KV pool, which the family's one-model "
    "profiles model",
    "vllm_draft_vocab": "vLLM 0.33.0 refuses a draft model whose vocab_size differs from the "
    "target's (vllm/config/speculative.py "
    "SpeculativeConfig.verify_equal_vocab_size_if_draft_model) unless its opt-in "
    "use_heterogeneous_vocab is set (greedy draft sampling only): heterogeneous_vocab=True "
    "(kvgen's --heterogeneous-vocab) sizes the pair as vLLM then plans it",
    "trtllm_linear": "a linear-attention (lightning) state is not modelled for TensorRT-LLM: "
    "its V2 KV cache manager (kv_cache_manager_v2) keeps per-token pages only, and no "
    "TensorRT-LLM model with a linear-attention state was read to model a pool for it",
    "vllm_no_minimax": "vLLM 0.33.0 cannot run MiniMax-Text-01 / MiniMax-M1 (lightning "
    "attention): MiniMaxText01ForCausalLM, MiniMaxM1ForCausalLM and MiniMaxForCausalLM were "
    "supported until vLLM 0.23.0 (vllm/model_executor/models/registry.py "
    "_PREVIOUSLY_SUPPORTED_MODELS)",
    "sglang_no_minimax": "SGLang 0.5.23 cannot run MiniMax-Text-01 / MiniMax-M1: it has no "
    "MiniMaxText01ForCausalLM model class (sglang/srt/models has MiniMax-M2 and M3 only)",
    "sglang_no_jamba": "SGLang 0.5.23 cannot run Jamba: it has no JambaForCausalLM model class "
    "(sglang/srt/models) and no Mamba hybrid config for it (configs/hybrid_arch.py)",
    "sglang_no_pard": "SGLang 0.5.23 cannot run PARD (a parallel draft model proposing every "
    "draft token in one forward): its SpeculativeAlgorithm (sglang/srt/speculative/"
    "spec_info.py) has no parallel-draft method; STANDALONE drafts one token per step",
    "sglang_no_per_token_head": "SGLang 0.5.23 has no per-token-head scaled KV cache: its "
    "kv_cache_dtype choices (sglang/srt/arg_groups/fields/model.py) are auto, fp8_e5m2, "
    "fp8_e4m3, mxfp8, bf16, bfloat16, nvfp4 and fp4_mx_block16, and configure_kv_cache_dtype "
    "(sglang/srt/mem_cache/kv_cache_dtype.py) raises 'Unsupported kv_cache_dtype' for any other",
    "sglang_no_openelm": "SGLang 0.5.23 cannot run OpenELM: it has no OpenELMForCausalLM model "
    "class (sglang/srt/models); only its Transformers fallback (models/transformers.py) with the "
    "checkpoint's remote code might, which is not modelled",
    "sglang_two_model_eagle3": "eagle3_two_model is TensorRT-LLM's two-model EAGLE3 (the "
    "drafter in a KV cache manager of its own); SGLang 0.5.23 runs EAGLE3 one way only, the "
    "draft's layers in the target's pool (speculative_algorithm EAGLE3): use the family's "
    "eagle3 profile for engine 'sglang'",
}


class _RowKind(NamedTuple):
    """What the engine policies read of a row's kind (``EngineLayer.attention``, built from
    the spec's cache-kind classes): a new kind is one entry of ``_ROW_KINDS``."""

    vllm_spec: str  # vLLM's KV cache spec: "full", "sliding", "chunked" or "recurrent"
    latent: bool  # one MLA latent on every rank, never split by tp
    state: bool  # a recurrent state per request, not attention KV
    sglang_windowed: bool  # in SGLang's SWA pool when the architecture is hybrid SWA
    heads_split: bool  # its KV heads are split over tp by QKVParallelLinear (vLLM and SGLang)


_ROW_KINDS = {
    "full": _RowKind("full", False, False, False, True),
    "sliding": _RowKind("sliding", False, False, True, True),
    "chunked": _RowKind("chunked", False, False, True, True),
    "mla": _RowKind("full", True, False, False, False),
    "recurrent": _RowKind("recurrent", False, True, False, False),
}


class _Mixer(NamedTuple):
    """What each engine does with a recurrent row's mixer (``EngineLayer.mixer``): a new
    recurrent mixer is one entry of ``_MIXERS``. Per GDN prefill backend: by the index of
    ``GDN_PREFILL_BACKENDS`` (flashinfer, triton)."""

    dimensions: bool  # known by its dimensions (vLLM's and SGLang's state shapes), not bytes
    vllm_ssm_dtype: bool  # vLLM keeps its SSM part in the SSM dtype (False: the conv dtype)
    draft_rows: bool  # vLLM widens its conv window by the draft tokens
    replicated_groups: bool  # vLLM replicates B/C groups fewer than tp up to tp
    checkpoint_blocks: tuple[int, int]  # align mode: prefill checkpoint blocks per backend
    align_grid: tuple[int, int]  # align mode: the token grid its checkpoints land on
    trtllm_unmodelled: str  # why TensorRT-LLM's row does not answer: a key of UNMODELLED
    plain_dtype: bool  # its state is modelled in a plain dtype only (else UNMODELLED "dtype")
    family_form: bool  # the form a family's ``EngineArch.mamba2_form`` renames (Mamba-2)


_FLASHINFER_GDN_ALIGNMENT = 64  # gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
# As vLLM 0.33.0 reads them (MambaStateShapeCalculator, MambaBase.get_kv_cache_spec); what
# each does is in docs/api.md, "The engine policies".
_MIXERS = {
    "": _Mixer(False, True, True, False, (0, 0), (1, 1), "", False, False),  # by its bytes
    "mamba2": _Mixer(True, True, True, True, (1, 1), (1, 1), "", False, True),  # MambaMixer2
    # Gated DeltaNet
    "gdn": _Mixer(
        True, True, True, False, (1, 0), (_FLASHINFER_GDN_ALIGNMENT, 1), "", False, False
    ),
    "kda": _Mixer(True, True, True, False, (0, 0), (1, 1), "", False, False),  # Kimi Delta Attn
    "mamba1": _Mixer(True, True, False, False, (0, 0), (1, 1), "", False, False),  # MambaMixer
    # lightning attention
    "linear": _Mixer(True, False, True, False, (0, 0), (1, 1), "trtllm_linear", True, False),
}


class EngineLayer(_Record):
    """``layers`` cached layers of one shape, as every engine reads them (§1); rows keep the
    order in which each shape first appears in the model."""

    def __init__(
        self,
        attention: str,  # "full", "sliding", "mla" or "recurrent"
        layers: int,
        kv_heads: int = 0,  # 1 for MLA (one latent), 0 for recurrent
        head_dim: int = 0,  # K head size; MLA: kv_lora_rank + qk_rope_head_dim
        value_dim: int = 0,  # V head size; 0 for MLA
        window: int | None = None,  # sliding layers only
        state_bytes: int = 0,  # recurrent layers only, at tp=1
        dtype: str = "",
        # Recurrent layers by dimensions (§8); mixer "" means only state_bytes is known.
        mixer: str = "",  # a key of _MIXERS: "mamba2", "gdn" (Gated DeltaNet), "kda", ...
        conv_channels: int = 0,  # conv_dim at tp=1 (d_inner for Mamba-1)
        conv_rows: int = 0,  # d_conv - 1
        ssm_heads: int = 0,  # split by tp (Mamba-1: d_inner)
        ssm_head_elements: int = 0,  # head_dim x d_state (Mamba-1: d_state)
        n_groups: int = 0,  # Mamba-2 B/C groups (replicated when fewer than tp)
        d_state: int = 0,
        # A packed per-token layout, never split by tp (0: heads x dims x dtype): FlashMLA's
        # fp8_ds_mla latent (656 B for DeepSeek-V3.2), a sparse indexer's key (132 B).
        token_bytes: int = 0,
    ) -> None:
        self.attention = attention
        self.layers = layers
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.value_dim = value_dim
        self.window = window
        self.state_bytes = state_bytes
        self.dtype = dtype
        self.mixer = mixer
        self.conv_channels = conv_channels
        self.conv_rows = conv_rows
        self.ssm_heads = ssm_heads
        self.ssm_head_elements = ssm_head_elements
        self.n_groups = n_groups
        self.d_state = d_state
        self.token_bytes = token_bytes

    _fields = __slots__ = _fields_of(__init__)


class EngineDraft(_Record):
    """A speculative profile as vLLM runs it: drafter layers in the target's pool, tokens kept
    below each sliding window, and one more Mamba state block per draft token; and how
    SGLang runs it (EAGLE3/MTP, STANDALONE for a separate draft model, NGRAM): the draft
    layers it adds to the target's cell, the tokens each verify step holds
    (``speculative_num_draft_tokens``; 0: not answered for SGLang, ``sglang_unmodelled``
    saying why where SGLang cannot run it). A profile vLLM cannot run may name the one it
    runs in its place (``instead``). A separate draft model (vLLM's "draft_model" method,
    ``draft_model``) keeps its layers where vLLM refuses its vocabulary (``unmodelled``
    "vllm_draft_vocab"): its use_heterogeneous_vocab takes the same layers. A family's
    tables write every field but ``layers``, which ``engine_models`` derives."""

    def __init__(
        self,
        retained: int = 0,
        state_blocks: int = 0,
        unmodelled: str = "",  # why vLLM's answer is not modelled: a key of UNMODELLED
        sglang_layers: int = 0,  # EAGLE3 / MTP / STANDALONE draft layers (eagle_draft_num_layers)
        sglang_draft_tokens: int = 0,  # SGLang's speculative_num_draft_tokens
        instead: str = "",  # with ``unmodelled``: the family's profile vLLM runs in its place
        sglang_unmodelled: str = "",  # why SGLang cannot run the profile: a key of UNMODELLED
        draft_model: bool = False,  # vLLM's "draft_model" method (use_heterogeneous_vocab's)
        layers: tuple[EngineLayer, ...] = (),  # the drafter's layers in vLLM's pool
    ) -> None:
        self.retained = retained
        self.state_blocks = state_blocks
        self.unmodelled = unmodelled
        self.sglang_layers = sglang_layers
        self.sglang_draft_tokens = sglang_draft_tokens
        self.instead = instead
        self.sglang_unmodelled = sglang_unmodelled
        self.draft_model = draft_model
        self.layers = layers

    _fields = __slots__ = _fields_of(__init__)


class EngineArch(_Record):
    """What the engine policies read of a family's architecture as a whole, written once in
    its tables (``SizingTables.engines``): whether SGLang sizes it as hybrid SWA, why vLLM
    or SGLang cannot run it (keys of UNMODELLED), the form of its Mamba-2-shaped recurrent
    layers to vLLM ("gdn": Gated DeltaNet, "kda": Kimi Delta Attention, "": Mamba-2; a key
    of ``_MIXERS``) and whether SGLang runs it as an encoder-decoder model in its one token
    pool."""

    def __init__(
        self,
        hybrid_swa: bool = False,
        vllm_unmodelled: str = "",
        sglang_unmodelled: str = "",
        mamba2_form: str = "",
        sglang_encoder_decoder: bool = False,
    ) -> None:
        self.hybrid_swa = hybrid_swa
        self.vllm_unmodelled = vllm_unmodelled
        self.sglang_unmodelled = sglang_unmodelled
        self.mamba2_form = mamba2_form
        self.sglang_encoder_decoder = sglang_encoder_decoder

    _fields = __slots__ = _fields_of(__init__)


def split_heads(layers: tuple[EngineLayer, ...]) -> tuple[int, ...]:
    """The distinct KV head counts of the rows whose heads tp splits, in order."""
    heads: list[int] = []
    for lay in layers:
        if _ROW_KINDS[lay.attention].heads_split and lay.kv_heads and lay.kv_heads not in heads:
            heads.append(lay.kv_heads)
    return tuple(heads)


def qkv_split_refusal(query_heads: int, kv_heads: tuple[int, ...], tp_size: int) -> str:
    """The assertion QKVParallelLinear.__init__ fails at tp ``tp_size`` ("" where none), as
    vLLM 0.33 (vllm/model_executor/layers/linear.py) and SGLang 0.5.23
    (sglang/srt/layers/linear.py) both write it: ``num_heads = divide(total_num_heads, tp)``,
    then ``divide(tp, total_num_kv_heads)`` when tp >= the KV heads (each replicated), else
    ``divide(total_num_kv_heads, tp)``; divide() asserts ``"{} is not divisible by {}"``."""
    if query_heads and query_heads % tp_size:
        return f"{query_heads} is not divisible by {tp_size}"
    for heads in kv_heads:
        pair = (tp_size, heads) if tp_size >= heads else (heads, tp_size)
        if pair[0] % pair[1]:
            return f"{pair[0]} is not divisible by {pair[1]}"
    return ""


class EngineModel(_Record):
    """One model's engine rows: native context, cached layers, vLLM profiles, and what SGLang
    needs beyond the layers (hybrid-SWA architecture, SSM share of each recurrent state)."""

    def __init__(
        self,
        max_seq_len: int,
        layers: tuple[EngineLayer, ...],
        drafts: dict[str, EngineDraft],
        hybrid_swa: bool = False,
        ssm_state_bytes: int = 0,  # per recurrent layer, bf16, tp=1 (0: unknown)
        unmodelled: str = "",  # why no engine answers for the model: a key of UNMODELLED
        query_heads: int = 0,  # attention query heads (must divide by tp); 0: unknown
        vllm_ssm_dtype: str = "",  # vLLM's SSM state dtype for the model ("": the conv dtype)
        vllm_unmodelled: str = "",  # why vLLM has no answer (it cannot run the model): a key
        sglang_unmodelled: str = "",  # the same for SGLang
        # The rows SGLang allocates where they differ from ``layers``: a KV-shared model's
        # reading layers too (its pool gives every layer a buffer; () : ``layers``).
        sglang_layers: tuple[EngineLayer, ...] = (),
        # An encoder-decoder model SGLang runs in its one token pool (Mllama): the encoder
        # tokens each request's text follows there (the spec's encoder_tokens; 0: none).
        sglang_encoder_tokens: int = 0,
    ) -> None:
        self.max_seq_len = max_seq_len
        self.layers = layers
        self.drafts = drafts
        self.hybrid_swa = hybrid_swa
        self.ssm_state_bytes = ssm_state_bytes
        self.unmodelled = unmodelled
        self.query_heads = query_heads
        self.vllm_ssm_dtype = vllm_ssm_dtype
        self.vllm_unmodelled = vllm_unmodelled
        self.sglang_unmodelled = sglang_unmodelled
        self.sglang_layers = sglang_layers
        self.sglang_encoder_tokens = sglang_encoder_tokens

    _fields = __slots__ = _fields_of(__init__)


# ---- a family's engine rows, derived from its tables when it binds (``engine_models``) ----
# Per model: the cached layers as engines read them, how vLLM runs each speculative profile,
# and what SGLang needs beyond the layers (§9).
ENGINE_MODELS: dict[str, EngineModel] = {}


SSM_DTYPES = tuple(MODEL_DTYPES)  # an SSM state's dtype: one of the float dtypes
# kvgen's per-token-head layouts that vLLM 0.33.0 stores in the same bytes under the same
# kv_cache_dtype name: one byte per element and, for K and for V, one fp32 scale per (token,
# head) packed after the head's data (TritonAttentionBackend.customize_spec: state_content_bytes
# (head_size + head_size_v) x 1 + 2 x 4; Triton is the only CUDA backend that takes them).
VLLM_PER_TOKEN_HEAD = ("fp8_per_token_head", "int8_per_token_head")


def _head_bytes(layer: EngineLayer) -> int:
    """Bytes of one head of one token, K and V together, scales included."""
    plain = DTYPE_BYTES.get(layer.dtype)
    if plain is not None:
        return (layer.head_dim + layer.value_dim) * plain
    bits, _, _, head_scale = SCALED_LAYOUTS[layer.dtype]  # a per-token-head layout
    return (layer.head_dim + layer.value_dim) * bits // 8 + 2 * head_scale


def _token_bytes_split(layer: EngineLayer) -> tuple[int, int, int]:
    """(bytes per token fixed whatever tp (0: split), KV heads, bytes per head and token): a
    rank's bytes per token are ``fixed or max(1, heads // tp_size) * per_head`` (vLLM and
    SGLang split KV heads over tp by floor, never below one head; an MLA latent is not split)."""
    if layer.token_bytes:  # a packed layout: its dtype is never read
        return layer.token_bytes, layer.kv_heads, 0
    per_head = _head_bytes(layer)
    return (per_head if _ROW_KINDS[layer.attention].latent else 0), layer.kv_heads, per_head


def _positive_ints(names: tuple[str, ...], *values: object) -> None:
    """Each value a positive int (never a bool or a float), else ValueError naming it."""
    for name, value in zip(names, values, strict=True):
        _integer(name, value, 1)


def _native(max_seq_len: int, native: int) -> None:
    if max_seq_len > native:
        raise ValueError(
            f"max_seq_len must be <= {native} (the model's native context), got {max_seq_len}"
        )


# ---- the engine rows of a family's tables: each layer is written once, as its Kind row ----
# vLLM's drafters whose layers join the target's one pool: a separate draft model (the
# profile's draft stack; PARD is its parallel-drafting form) and the EAGLE-family and MTP
# heads (the model's extra layers for the profile). The other modes add no layers there.
VLLM_DRAFT_MODEL_MODES = ("draft_target", "pard")
VLLM_POOL_DRAFTERS = ("eagle3", "mtp", "mtp_eagle")
# A kind's rows, per layer of it, as every engine reads them: the fields of ``EngineLayer``
# but its layer count, with the recurrent ones as a tuple: (attention, kv_heads, head_dim,
# value_dim, window, state_bytes, dtype, (mixer, conv channels, conv rows, SSM heads,
# elements per SSM head, B/C groups, d_state) or (), token_bytes).
_LayerRow = tuple[str, int, int, int, "int | None", int, str, tuple[Any, ...], int]


def _attention_rows(kind: Kind, cls: type[_CacheKind]) -> "tuple[_LayerRow, ...] | str":
    """Full or sliding attention (or an MLA latent with its indexer key), and a parallel
    hybrid layer's state beside it; the UNMODELLED key of what no engine model holds."""
    dtype, rank = kind.dtype, kind.kv_lora_rank
    full = cls is _Full
    # vLLM's per-token-head dtypes on plain full attention only (SGLang refuses them at the
    # model level); a window, a latent or a parallel state with them is not modelled.
    per_token_head = full and dtype in VLLM_PER_TOKEN_HEAD and not rank and not kind.ssm_heads
    if dtype not in DTYPE_BYTES and not (dtype == DS_MLA and rank) and not per_token_head:
        return "dtype"
    if kind.bytes_per_token or kind.extra_bytes_per_token:
        return "synthetic"
    if kind.sink_tokens:
        return "sinks"
    if rank and not full:
        return "sliding_mla"
    if cls is _Chunked:  # vLLM's ChunkedLocalAttentionSpec; SGLang a sliding window of it
        value = kind.v_head_dim or kind.head_dim
        return (("chunked", kind.kv_heads, kind.head_dim, value, kind.chunk, 0, dtype, (), 0),)
    if rank:  # one latent per token (packed under fp8_ds_mla) and a sparse indexer's key
        rope = kind.qk_rope_head_dim
        packed = ds_mla_bytes(rank, rope) if dtype == DS_MLA else 0
        rows: tuple[_LayerRow, ...] = (("mla", 1, rank + rope, 0, None, 0, dtype, (), packed),)
        index = kind.index_head_dim
        if index:  # vLLM DeepseekV32IndexerCache: fp8 with a scale per 128 elements
            rows += (("mla", 1, index, 0, None, 0, "fp8", (), index_k_bytes(index)),)
        return rows
    if kind.index_head_dim:
        return "index_cache"
    attention = "sliding" if kind.window is not None else "full"
    value = kind.v_head_dim or kind.head_dim
    row = (attention, kind.kv_heads, kind.head_dim, value, kind.window, 0, dtype, (), 0)
    if full and kind.ssm_heads:
        # A parallel hybrid layer (Falcon-H1) is two cache layers to both engines: vLLM's
        # FalconH1ParallelHybrid builds an Attention, then a MambaMixer2; SGLang lists it in
        # full_attention_layer_ids and in linear_layer_ids.
        return (row, _state_row(kind))
    return (row,)


def _state_row(kind: Kind) -> _LayerRow:
    """A recurrent state, one slot per request as both engines allocate it: by its bytes,
    or by its dimensions (§8: the conv and SSM buffers at tp 1, each in its own dtype; a
    state without a conv window, a linear-attention one, has no conv channels)."""
    dtype = kind.dtype
    if not kind.ssm_heads:  # a state known by its bytes only
        return ("recurrent", 0, 0, 0, None, kind.state_bytes, dtype, (), 0)
    heads, head, d_state, groups = kind.ssm_heads, kind.ssm_head_dim, kind.d_state, kind.n_groups
    rows = kind.d_conv - 1
    channels = heads * head + 2 * groups * d_state if rows else 0
    state = _elements(channels * rows, _ELEMENT_CODES.get(dtype, 0)) + _elements(
        heads * head * d_state, _ELEMENT_CODES.get(kind.ssm_dtype, 0)
    )
    dims = (kind.state_form, channels, rows, heads, head * d_state, groups, d_state)
    return ("recurrent", 0, 0, 0, None, state, dtype, dims, 0)


def _recurrent_rows(kind: Kind, cls: type[_CacheKind]) -> "tuple[_LayerRow, ...] | str":
    if kind.ssm_heads and _MIXERS[kind.state_form].plain_dtype and kind.dtype not in DTYPE_BYTES:
        return "dtype"
    return (_state_row(kind),)


def _cross_rows(kind: Kind, cls: type[_CacheKind]) -> "tuple[_LayerRow, ...] | str":
    return "cross"  # the engines keep encoder caches in pools of their own (§9)


def _no_rows(kind: Kind, cls: type[_CacheKind]) -> "tuple[_LayerRow, ...] | str":
    return ()


# Each cache kind's rows, by the interpreter's class of its kind (a new kind: an entry here).
_ENGINE_ROWS: dict[type[_CacheKind], Callable[..., "tuple[_LayerRow, ...] | str"]] = {
    _Full: _attention_rows,
    _Sliding: _attention_rows,
    _Chunked: _attention_rows,
    _Cross: _cross_rows,
    _Recurrent: _recurrent_rows,
    _CacheLess: _no_rows,
}


def kind_rows(kind: Kind, model: str, cross_as_full: bool = False) -> tuple[_LayerRow, ...]:
    """One layer of ``kind``'s rows as the engines read them (a shared reader as its
    attention's own kind); ``NotModelled`` naming ``model`` where no engine model holds the
    kind. ``cross_as_full``: a cross-attention layer sized as a self-attention one (SGLang's
    encoder-decoder pool)."""
    cls = _KIND_CLASSES[kind.attention]
    if cross_as_full and cls is _Cross:
        cls = _Full
    rows = _ENGINE_ROWS[cls](kind, cls)
    if isinstance(rows, str):
        raise NotModelled(f"{model}: {UNMODELLED[rows]}", rows)
    return rows


def engine_rows(
    stack: Stack, model: str, form: str = "", *, shared: bool = False, cross_as_full: bool = False
) -> tuple[EngineLayer, ...]:
    """The rows of ``stack``: one per distinct shape with its layer count, in the order each
    shape first appears in the layers; a reader of another layer's cache holds none (vLLM
    skips it) unless ``shared`` (SGLang gives it a buffer); ``form`` names what vLLM builds
    the Mamba-2 form as (``EngineArch.mamba2_form``). ``NotModelled`` for the first layer no
    engine holds."""
    counts: dict[_LayerRow, int] = {}
    seen = set()
    for name in stack.pattern[: stack.layer_count]:  # kinds by their first layer
        if name in seen:
            continue
        seen.add(name)
        kind = stack.kinds[name]
        if kind.reads is not None and not shared:
            continue
        for row in kind_rows(kind, model, cross_as_full):
            counts[row] = counts.get(row, 0) + kind.layers
    out = []
    for row, count in counts.items():
        attention, heads, head, value, window, state, dtype, dims, packed = row
        if not dims:
            out.append(EngineLayer(attention, count, heads, head, value, window, state, dtype,
                                   token_bytes=packed))  # fmt: skip
            continue
        mixer, channels, conv_rows, ssm_heads, elements, groups, d_state = dims
        if form and _MIXERS[mixer].family_form:
            mixer = form
        out.append(EngineLayer(attention, count, heads, head, value, window, state, dtype,
                               mixer, channels, conv_rows, ssm_heads, elements, groups,
                               d_state))  # fmt: skip
    return tuple(out)


def ssm_state_bytes(stack: Stack) -> int:
    """The SSM part of one recurrent layer's state at tp 1 in its conv dtype (SGLang keeps
    it in its own dtype, fp32 by default); 0 without a state of known dimensions."""
    for kind in stack.kinds.values():
        if kind.ssm_heads and _KIND_CLASSES[kind.attention] in (_Recurrent, _Full):
            return kind.ssm_heads * kind.ssm_head_dim * kind.d_state * DTYPE_BYTES[kind.dtype]
    return 0


def _engine_draft(
    model: str, entry: Model, profile: str, spec: Profile, row: EngineDraft
) -> EngineDraft:
    """``row`` (a profile as the family's tables write it) with the drafter's layers in
    vLLM's pool: a separate draft model's stack or the model's EAGLE/MTP extra layers."""
    stack = None
    if spec.mode in VLLM_DRAFT_MODEL_MODES:
        stack = spec.draft
    elif spec.mode in VLLM_POOL_DRAFTERS:
        stack = entry.extra_layers.get(profile)
    if stack is None:
        return row
    try:
        layers = engine_rows(stack, model)
    except NotModelled:  # the row says why (``unmodelled``)
        return row
    return EngineDraft(row.retained, row.state_blocks, row.unmodelled, row.sglang_layers,
                       row.sglang_draft_tokens, row.instead, row.sglang_unmodelled,
                       row.draft_model, layers)  # fmt: skip


def engine_model(
    name: str,
    entry: Model,
    profiles: Mapping[str, Profile],
    arch: "EngineArch | None",
    known: "dict[tuple[Any, ...], EngineDraft] | None" = None,
) -> EngineModel:
    """Model ``name``'s engine rows from its table row (``entry``) and the family's
    profiles and architecture (``SizingTables.engines``; None: no engine knows more);
    ``known``: the drafts already derived for other models, so that a draft several models
    share is one row."""
    arch = arch or EngineArch()
    known = {} if known is None else known
    drafts = {}
    for profile, row in entry.drafts.items():
        draft = _engine_draft(name, entry, profile, profiles[profile], row)
        drafts[profile] = known.setdefault(draft._values(), draft)
    stack = entry.layers
    fields: dict[str, Any] = {
        "query_heads": entry.query_heads,
        "vllm_ssm_dtype": entry.vllm_ssm_dtype,
        "vllm_unmodelled": arch.vllm_unmodelled,
        "sglang_unmodelled": arch.sglang_unmodelled,
    }
    ssm = ssm_state_bytes(stack)
    try:
        rows = engine_rows(stack, name, arch.mamba2_form)
        if any(kind.reads is not None for kind in stack.kinds.values()):
            fields["sglang_layers"] = engine_rows(stack, name, shared=True)
    except NotModelled as exc:
        if exc.reason == "cross" and arch.sglang_encoder_decoder:
            # SGLang's encoder-decoder models (Mllama): every text layer, cross-attention
            # ones included, is a layer of its one token pool, sized like a self-attention
            # layer; a request's encoder tokens take slots there before its text.
            try:
                fields["sglang_layers"] = engine_rows(stack, name, shared=True, cross_as_full=True)
                fields["sglang_encoder_tokens"] = max(
                    k.encoder_tokens for k in stack.kinds.values()
                )
            except NotModelled as sglang:  # a layer SGLang's rows cannot hold either: its reason
                fields["sglang_unmodelled"] = fields["sglang_unmodelled"] or sglang.reason
        return EngineModel(entry.max_seq_len, (), drafts, arch.hybrid_swa, ssm, exc.reason,
                           **fields)  # fmt: skip
    if not fields["sglang_unmodelled"] and any(row.dtype in VLLM_PER_TOKEN_HEAD for row in rows):
        fields["sglang_unmodelled"] = "sglang_no_per_token_head"
    return EngineModel(entry.max_seq_len, rows, drafts, arch.hybrid_swa, ssm, "", **fields)


def engine_models(tables: SizingTables) -> dict[str, EngineModel]:
    """Every model's engine rows of a family's tables (what ``bind`` installs as
    ``ENGINE_MODELS``)."""
    known: dict[tuple[Any, ...], EngineDraft] = {}
    return {
        name: engine_model(name, entry, tables.profiles, tables.engines, known)
        for name, entry in tables.models.items()
    }


def model_dtype(entry: EngineModel, family_dtype: str) -> str:
    """A model's cache dtype: its attention rows' one dtype where they share it (a model's own
    kv_cache_dtype), else the family's (``family_dtype``, ``SizingTables.kv_cache_dtype``)."""
    dtypes = {row.dtype for row in entry.layers if row.kv_heads and not row.token_bytes}
    found: str = dtypes.pop() if len(dtypes) == 1 else family_dtype
    return found


def served_stack(stack: Stack, old: str, new: str) -> Stack:
    """``stack`` with its kinds cached in ``old`` cached in ``new`` (the SSM dtype stays)."""
    kinds = {k: v._replace(dtype=new) if v.dtype == old else v for k, v in stack.kinds.items()}
    return stack._replace(kinds=kinds)


def served_tables(tables: SizingTables, old: str, new: str) -> SizingTables:
    """A family's tables as an engine running the model in ``new`` caches them where the spec
    caches ``old`` (a plain float cache follows the model dtype): every model's layers, its
    EAGLE/MTP layers and each separate draft model (``served_stack``)."""
    models = {
        name: m._replace(
            layers=served_stack(m.layers, old, new),
            extra_layers={k: served_stack(v, old, new) for k, v in m.extra_layers.items()},
        )
        for name, m in tables.models.items()
    }
    profiles = {
        k: p if p.draft is None else p._replace(draft=served_stack(p.draft, old, new))
        for k, p in tables.profiles.items()
    }
    family_dtype = new if tables.kv_cache_dtype == old else tables.kv_cache_dtype
    return tables._replace(kv_cache_dtype=family_dtype, models=models, profiles=profiles)
