"""The engine rows: what the engine policies read of a model (``EngineModel``, its
``EngineLayer`` rows, its ``EngineDraft`` profiles), the tables of what each engine does with
a row's kind (``_ROW_KINDS``) and a recurrent row's mixer (``_MIXERS``), and the answer
(``EngineCapacity``). The first of the engine policies' parts (``engines_core.bind``)."""

# Every engine part: no `from __future__ import annotations` (NamedTuple import cost), and
# relative imports, as in the sizing runtime (the same in kvgen and in the output folder's copy).
from collections.abc import Callable
from typing import NamedTuple

from .facts import DTYPE_BYTES, SCALED_LAYOUTS
from .sizing_kinds import _Record
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


_FLASHINFER_GDN_ALIGNMENT = 64  # gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
# As vLLM 0.33.0 reads them (MambaStateShapeCalculator, MambaBase.get_kv_cache_spec); what
# each does is in docs/api.md, "The engine policies".
_MIXERS = {
    "": _Mixer(False, True, True, False, (0, 0), (1, 1), ""),  # a state known by its bytes
    "mamba2": _Mixer(True, True, True, True, (1, 1), (1, 1), ""),  # MambaMixer2
    "gdn": _Mixer(True, True, True, False, (1, 0), (_FLASHINFER_GDN_ALIGNMENT, 1), ""),  # GDN
    "kda": _Mixer(True, True, True, False, (0, 0), (1, 1), ""),  # Kimi Delta Attention
    "mamba1": _Mixer(True, True, False, False, (0, 0), (1, 1), ""),  # MambaMixer
    "linear": _Mixer(True, False, True, False, (0, 0), (1, 1), "trtllm_linear"),  # lightning
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
    "vllm_draft_vocab"): its use_heterogeneous_vocab takes the same layers."""

    def __init__(
        self,
        layers: tuple[EngineLayer, ...],
        retained: int,
        state_blocks: int,
        unmodelled: str = "",  # why vLLM's answer is not modelled: a key of UNMODELLED
        sglang_layers: int = 0,  # EAGLE3 / MTP / STANDALONE draft layers (eagle_draft_num_layers)
        sglang_draft_tokens: int = 0,  # SGLang's speculative_num_draft_tokens
        instead: str = "",  # with ``unmodelled``: the family's profile vLLM runs in its place
        sglang_unmodelled: str = "",  # why SGLang cannot run the profile: a key of UNMODELLED
        draft_model: bool = False,  # vLLM's "draft_model" method (use_heterogeneous_vocab's)
    ) -> None:
        self.layers = layers
        self.retained = retained
        self.state_blocks = state_blocks
        self.unmodelled = unmodelled
        self.sglang_layers = sglang_layers
        self.sglang_draft_tokens = sglang_draft_tokens
        self.instead = instead
        self.sglang_unmodelled = sglang_unmodelled
        self.draft_model = draft_model

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


# ---- a family's engine rows (each generated module defines them, then calls ``bind``) ----
# Per model: the cached layers as engines read them, how vLLM runs each speculative profile,
# and what SGLang needs beyond the layers (§9).
_ENGINE_MODELS: dict[str, EngineModel] = {}


SSM_DTYPES = ("fp32", "bf16", "fp16")


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
