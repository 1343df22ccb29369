"""The engine pool policies: the engine half of every generated sizing module.

``kvgen generate`` writes this file verbatim beside ``kvgen.sizing_core`` in the output folder
(``generated/_kvgen_runtime/engines_core.py``); a family's sizing module defines its engine
rows (``_ENGINE_MODELS``) and calls ``bind`` after the interpreter's, so that
``engine_capacity`` answers there without kvgen. ``kvgen._engines`` calls the same policy
functions with rows it builds from a loaded spec (``kvgen._engines._rows`` builds them for
both), so each policy has one implementation.

Policies (docs/cost-model.md §9), pinned: vLLM 0.33.0 (``vllm_plan``, ``vllm_capacity``) and
SGLang 0.5.23 (``sglang_plan``, ``sglang_pools``, ``sglang_capacity``); each is described in
``kvgen._engines._vllm`` and ``kvgen._engines._sglang`` with the engine modules it is read from.
Each plan is in two parts: the layout, what the model and profile alone decide
(``vllm_layout``, ``sglang_layout``; a generated module keeps one per model and profile), and
the arithmetic of a block size, tp and modes on it (``vllm_plan_at``, ``sglang_plan_at``), so
that a configuration not planned before costs a few microseconds (bench/bench_engines.py).
"""

# No `from __future__ import annotations`, as in the sizing runtime (NamedTuple import cost).
# Relative: the same import in kvgen and in the output folder's copy of the runtime.
from contextlib import suppress
from functools import lru_cache
from math import lcm
from typing import NamedTuple

from .facts import DTYPE_BYTES
from .sizing_core import install
from .sizing_kinds import _MODELS, MODELS, SPECULATIVE, TOKENS_PER_BLOCK, _new, _Record
from .sizing_options import (
    _BATCH_AT,
    _CHUNK_AT,
    _MAX_INT,
    _SEQ_LEN_AT,
    _integer,
    _name,
    _Options,
    _options,
    _shown,
)
from .sizing_quota import _shares, _tokens
from .sizing_terms import _cached_terms, _Terms
from .trtllm_split import PoolGroup, gpu_grain, slots_for_quota

__all__ = ["EngineCapacity", "engine_capacity"]


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
    "dtype": "its kv_cache_dtype is not modelled per engine (fp32, bf16, fp16 and fp8 are)",
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
    "vllm_draft_vocab": "vLLM 0.33.0 refuses a draft model whose vocab_size differs from the "
    "target's (vllm/config/speculative.py "
    "SpeculativeConfig.verify_equal_vocab_size_if_draft_model)",
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
    heads_split: bool  # vLLM's attention asserts that its KV heads split over tp


_ROW_KINDS = {
    "full": _RowKind("full", False, False, False, True),
    "sliding": _RowKind("sliding", False, False, True, True),
    "chunked": _RowKind("chunked", False, False, True, False),
    "mla": _RowKind("full", True, False, False, False),
    "recurrent": _RowKind("recurrent", False, True, False, False),
}


class EngineLayer(_Record):
    """``layers`` cached layers of one shape, as every engine reads them (§1); rows keep the
    order in which each shape first appears in the model."""

    _fields = (
        "attention",
        "layers",
        "kv_heads",
        "head_dim",
        "value_dim",
        "window",
        "state_bytes",
        "dtype",
        "mixer",
        "conv_channels",
        "conv_rows",
        "ssm_heads",
        "ssm_head_elements",
        "n_groups",
        "d_state",
        "token_bytes",
    )
    __slots__ = _fields

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
        mixer: str = "",  # "mamba2", "gdn" (Gated DeltaNet), "kda", "mamba1" or "linear"
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


class EngineDraft(_Record):
    """A speculative profile as vLLM runs it: drafter layers in the target's pool, tokens kept
    below each sliding window, and one more Mamba state block per draft token; and how
    SGLang runs it (EAGLE3/MTP, STANDALONE for a separate draft model, NGRAM): the draft
    layers it adds to the target's cell, the tokens each verify step holds
    (``speculative_num_draft_tokens``; 0: not answered for SGLang, ``sglang_unmodelled``
    saying why where SGLang cannot run it)."""

    _fields = (
        "layers", "retained", "state_blocks", "unmodelled", "sglang_layers", "sglang_draft_tokens",
        "sglang_unmodelled",
    )  # fmt: skip
    __slots__ = _fields

    def __init__(
        self,
        layers: tuple[EngineLayer, ...],
        retained: int,
        state_blocks: int,
        unmodelled: str = "",  # why vLLM's answer is not modelled: a key of UNMODELLED
        sglang_layers: int = 0,  # EAGLE3 / MTP / STANDALONE draft layers (eagle_draft_num_layers)
        sglang_draft_tokens: int = 0,  # SGLang's speculative_num_draft_tokens
        sglang_unmodelled: str = "",  # why SGLang cannot run the profile: a key of UNMODELLED
    ) -> None:
        self.layers = layers
        self.retained = retained
        self.state_blocks = state_blocks
        self.unmodelled = unmodelled
        self.sglang_layers = sglang_layers
        self.sglang_draft_tokens = sglang_draft_tokens
        self.sglang_unmodelled = sglang_unmodelled


class EngineModel(_Record):
    """One model's engine rows: native context, cached layers, vLLM profiles, and what SGLang
    needs beyond the layers (hybrid-SWA architecture, SSM share of each recurrent state)."""

    _fields = (
        "max_seq_len",
        "layers",
        "drafts",
        "hybrid_swa",
        "ssm_state_bytes",
        "unmodelled",
        "query_heads",
        "kv_heads_split",
        "vllm_ssm_dtype",
        "vllm_unmodelled",
        "sglang_unmodelled",
        "sglang_layers",
    )
    __slots__ = _fields

    def __init__(
        self,
        max_seq_len: int,
        layers: tuple[EngineLayer, ...],
        drafts: dict[str, EngineDraft],
        hybrid_swa: bool = False,
        ssm_state_bytes: int = 0,  # per recurrent layer, bf16, tp=1 (0: unknown)
        unmodelled: str = "",  # why no engine answers for the model: a key of UNMODELLED
        query_heads: int = 0,  # attention query heads (vLLM: must divide by tp); 0: unknown
        kv_heads_split: str = "",  # vLLM module whose attention asserts KV heads split over tp
        vllm_ssm_dtype: str = "",  # vLLM's SSM state dtype for the model ("": the conv dtype)
        vllm_unmodelled: str = "",  # why vLLM has no answer (it cannot run the model): a key
        sglang_unmodelled: str = "",  # the same for SGLang
        # The rows SGLang allocates where they differ from ``layers``: a KV-shared model's
        # reading layers too (its pool gives every layer a buffer; () : ``layers``).
        sglang_layers: tuple[EngineLayer, ...] = (),
    ) -> None:
        self.max_seq_len = max_seq_len
        self.layers = layers
        self.drafts = drafts
        self.hybrid_swa = hybrid_swa
        self.ssm_state_bytes = ssm_state_bytes
        self.unmodelled = unmodelled
        self.query_heads = query_heads
        self.kv_heads_split = kv_heads_split
        self.vllm_ssm_dtype = vllm_ssm_dtype
        self.vllm_unmodelled = vllm_unmodelled
        self.sglang_unmodelled = sglang_unmodelled
        self.sglang_layers = sglang_layers


# ---- a family's engine rows (each generated module defines them, then calls ``bind``) ----
# Per model: the cached layers as engines read them, how vLLM runs each speculative profile,
# and what SGLang needs beyond the layers (§9).
_ENGINE_MODELS: dict[str, EngineModel] = {}


ENGINE_VERSIONS = {"trtllm-v2": "V2 (cost-model §4)", "vllm": "0.33.0", "sglang": "0.5.23"}
VLLM_BLOCK_SIZE = 16  # vLLM's CacheConfig.DEFAULT_BLOCK_SIZE
_KERNEL_BLOCK = 16  # FlashAttention kernel blocks: any multiple of 16 tokens
_MLA_HYBRID_BLOCK = 128  # MLA decode kernels in a Mamba hybrid
_EQUAL_GROUPS_BELOW = 1.5  # largest/smallest kind count under which groups take the largest
MAMBA_CACHE_MODES = ("none", "align")
# vLLM's default: prefix caching is on for hybrids, which selects "align" (MambaModelConfig).
VLLM_MAMBA_CACHE_MODE = "align"
GDN_PREFILL_BACKENDS = ("flashinfer", "triton")  # FlashInfer: the SM90 (H100/H200) default
_FLASHINFER_GDN_ALIGNMENT = 64  # gdn_attn.py FLASHINFER_GDN_CHECKPOINT_ALIGNMENT
SGLANG_PAGE_SIZE = 1
SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
# The Mamba radix cache's strategy, as ServerArgs.resolve_once resolves it for a recurrent
# hybrid (arg_groups/overrides.py _mamba_radix_cache_resolution): "extra_buffer" where the
# architecture supports it (every shipped hybrid, linear_attn_backend triton), the platform
# keeps Mamba state snapshots (CUDA: mamba_hook.py) and the overlap scheduler is on (CUDA's
# default, speculative decoding included); otherwise "no_buffer", which turns overlap off.
SGLANG_MAMBA_STRATEGIES = ("extra_buffer", "no_buffer")
SGLANG_MAMBA_STRATEGY = "extra_buffer"
# State slots per running request with the radix cache on (kv_cache_configurator.py
# _calculate_mamba_ratio): MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3, plus the extra
# buffer's tracking slots (allocation_sizing.py get_mamba_tracking_slots: 2 with overlap).
# resolve_max_num_reqs runs at most slots // ratio requests at once, refusing 0.
SGLANG_MAMBA_SLOTS_PER_REQUEST = {"extra_buffer": 3 + 2, "no_buffer": 3}
# extra_buffer checkpoints a state every mamba_track_interval tokens, which pages must divide
# (mamba_hook.py validate_mamba_extra_buffer); no_buffer takes page_size 1 only.
_SGLANG_MAMBA_TRACK_INTERVAL = 256
SSM_DTYPES = ("fp32", "bf16", "fp16")
_GIB = 1 << 30
_INFINITY = float("inf")


class VllmGroups(_Record):
    """One kind of group: ``group_count`` groups of layers that reserve blocks the same way."""

    _fields = ("attention", "window", "block_size", "group_count", "layers")
    __slots__ = _fields

    def __init__(
        self,
        attention: str,  # "full" (also MLA), "sliding", "chunked" or "recurrent"
        window: int | None,
        block_size: int,  # tokens per block of these layers (pages may be unified upwards)
        group_count: int,
        layers: int,  # layers in the widest of them
    ) -> None:
        self.attention = attention
        self.window = window
        self.block_size = block_size
        self.group_count = group_count
        self.layers = layers


class VllmPlan(_Record):
    """The static part of vLLM's plan: everything that does not depend on the budget."""

    _fields = (
        "block_size",
        "bytes_per_block",
        "groups",
        "group_size",
        "padding_layers",
        "mamba_page_padding",
        "full",
        "sliding",
        "state_groups",
        "native_max_seq_len",
        "speculative_blocks",
        "checkpoint_blocks",
        "chunked",
    )
    __slots__ = _fields

    def __init__(
        self,
        block_size: int,  # attention block size after Mamba page unification
        bytes_per_block: int,  # one block of the shared pool
        groups: tuple[VllmGroups, ...],
        group_size: int,  # layers per group
        padding_layers: int,  # pages per block no layer uses (group padding layers)
        mamba_page_padding: int,  # bytes added to each Mamba page (Mamba page unification)
        full: tuple[tuple[int, int], ...],  # (groups, block size)
        sliding: tuple[tuple[int, int, int], ...],  # (groups, window - 1 + retained, block size)
        state_groups: int,
        native_max_seq_len: int,  # the model's context length (vLLM's max_model_len limit)
        speculative_blocks: int,  # extra state blocks per request per Mamba group (draft tokens)
        checkpoint_blocks: int = 0,  # align mode: prefill checkpoint blocks per Mamba group
        chunked: tuple[tuple[int, int, int], ...] = (),  # (groups, chunk, block size)
    ) -> None:
        self.block_size = block_size
        self.bytes_per_block = bytes_per_block
        self.groups = groups
        self.group_size = group_size
        self.padding_layers = padding_layers
        self.mamba_page_padding = mamba_page_padding
        self.full = full
        self.sliding = sliding
        self.state_groups = state_groups
        self.native_max_seq_len = native_max_seq_len
        self.speculative_blocks = speculative_blocks
        self.checkpoint_blocks = checkpoint_blocks
        self.chunked = chunked


class SglangPlan(_Record):
    """The static part of SGLang's sizing for one model (bytes per pool token and per slot)."""

    _fields = (
        "full_bytes_per_token",
        "swa_bytes_per_token",
        "window",
        "state_bytes_per_request",
        "ssm_extra_bytes",
        "native_max_seq_len",
        "draft_tokens",
    )
    __slots__ = _fields

    def __init__(
        self,
        full_bytes_per_token: int,  # every layer sized full length
        swa_bytes_per_token: int,  # hybrid-SWA sliding layers (0 otherwise)
        window: int | None,  # the sliding window of a hybrid-SWA model
        state_bytes_per_request: int,  # all recurrent layers, SSM part in the SSM dtype
        ssm_extra_bytes: int,  # what the SSM dtype adds over the spec's dtype, per request
        native_max_seq_len: int,  # the model's context length (SGLang's context_len)
        draft_tokens: int = 0,  # EAGLE/MTP speculative_num_draft_tokens (0: no drafter)
    ) -> None:
        self.full_bytes_per_token = full_bytes_per_token
        self.swa_bytes_per_token = swa_bytes_per_token
        self.window = window
        self.state_bytes_per_request = state_bytes_per_request
        self.ssm_extra_bytes = ssm_extra_bytes
        self.native_max_seq_len = native_max_seq_len
        self.draft_tokens = draft_tokens


class SglangPools(_Record):
    _fields = ("full_tokens", "swa_tokens", "state_slots")
    __slots__ = _fields

    def __init__(
        self,
        full_tokens: int,
        swa_tokens: int,  # 0 unless hybrid SWA
        state_slots: int,  # 0 unless Mamba hybrid (usable slots; one more is padding)
    ) -> None:
        self.full_tokens = full_tokens
        self.swa_tokens = swa_tokens
        self.state_slots = state_slots


def _layer_bytes(layer: EngineLayer, tp_size: int) -> int:
    if layer.token_bytes:
        return layer.token_bytes
    # vLLM and SGLang split KV heads over TP by floor, never below one head; MLA is not split.
    heads = 1 if _ROW_KINDS[layer.attention].latent else max(1, layer.kv_heads // tp_size)
    return heads * (layer.head_dim + layer.value_dim) * DTYPE_BYTES[layer.dtype]


def _engine_state_bytes(layer: EngineLayer, tp_size: int) -> int:
    if layer.state_bytes % tp_size:
        raise ValueError(f"recurrent state of {layer.state_bytes} bytes does not split over tp")
    return layer.state_bytes // tp_size


def _vllm_state_bytes(layer: EngineLayer, tp_size: int, draft_tokens: int, ssm_dtype: str) -> int:
    """One Mamba page of vLLM on one rank (MambaStateShapeCalculator): the conv window holds
    ``d_conv - 1 + num_speculative_tokens`` rows (Mamba-2, GDN), Mamba-2 groups fewer than tp
    are replicated up to tp, the SSM state is in ``ssm_dtype`` ("": the conv dtype)."""
    if not layer.mixer:
        return _engine_state_bytes(layer, tp_size)
    if layer.mixer == "linear":  # linear_attention_state_dtype: mamba_cache_dtype only
        ssm_dtype = ""
    channels = layer.conv_channels
    if layer.mixer == "mamba2" and layer.n_groups % tp_size:
        channels += 2 * (tp_size - layer.n_groups) * layer.d_state  # extra_groups_for_head_shards
    if channels % tp_size or layer.ssm_heads % tp_size:
        raise ValueError(
            f"tp_size {tp_size} does not divide the recurrent layer's {channels} conv channels "
            f"and {layer.ssm_heads} heads (vLLM's divide() asserts)"
        )
    rows = layer.conv_rows + (0 if layer.mixer == "mamba1" else draft_tokens)
    conv = channels // tp_size * rows * DTYPE_BYTES[layer.dtype]
    ssm = layer.ssm_heads // tp_size * layer.ssm_head_elements
    return conv + ssm * DTYPE_BYTES[ssm_dtype or layer.dtype]


class VllmLayout(_Record):
    """What vLLM's plan reads from one model and profile, whatever the block size, tp and modes
    (``vllm_layout``): built once per (model, profile), so that a plan for another block size
    or tp does only the arithmetic that depends on them (``vllm_plan_at``)."""

    _fields = (
        "query_heads",
        "split_heads",
        "kv_heads_split",
        "ssm_dtype",
        "states",
        "rows",
        "one_kind",
        "grouping",
        "first_attention",
        "mla",
        "align",
        "native_max_seq_len",
        "retained",
        "state_blocks",
    )
    __slots__ = _fields

    def __init__(
        self,
        query_heads: int,  # 0: unknown (no refusal)
        split_heads: tuple[int, ...],  # distinct KV heads of full/sliding layers, in order
        kv_heads_split: str,  # vLLM module that asserts them split over tp ("": none)
        ssm_dtype: str,  # vLLM's SSM dtype for the model ("": the conv dtype)
        states: tuple[EngineLayer, ...],  # recurrent rows, in order (one page each)
        # Per row of layers, target then draft: (kind, window, shape, layers, index into
        # states or -1, per-token bytes fixed whatever tp (0: split by tp), KV heads, bytes
        # per head and token).
        rows: tuple[tuple[str, int | None, tuple[object, ...], int, int, int, int, int], ...],
        one_kind: tuple[str, int | None] | None,  # the one (kind, window) of every layer
        # A hybrid whose rows each make their own groups whatever their pages (no two of one
        # kind and shape): (group size, padding layers, widest group's layers, (groups,
        # layers per group) per row); None: grouped per plan.
        grouping: tuple[int, int, int, tuple[tuple[int, int], ...]] | None,
        first_attention: tuple[int, int, int] | None,  # (fixed, heads, bytes per head)
        mla: bool,  # an MLA layer: hybrid pages unify on the MLA kernels' block
        # Align mode per GDN prefill backend (flashinfer, triton): (prefill checkpoint blocks
        # per Mamba group, the token grid checkpoints land on).
        align: tuple[tuple[int, int], tuple[int, int]],
        native_max_seq_len: int,
        retained: int,
        state_blocks: int,
    ) -> None:
        self.query_heads = query_heads
        self.split_heads = split_heads
        self.kv_heads_split = kv_heads_split
        self.ssm_dtype = ssm_dtype
        self.states = states
        self.rows = rows
        self.one_kind = one_kind
        self.grouping = grouping
        self.first_attention = first_attention
        self.mla = mla
        self.align = align
        self.native_max_seq_len = native_max_seq_len
        self.retained = retained
        self.state_blocks = state_blocks


def _token_bytes_split(layer: EngineLayer) -> tuple[int, int, int]:
    """(bytes per token fixed whatever tp (0: split), KV heads, bytes per head and token):
    ``_layer_bytes`` is ``fixed or max(1, heads // tp_size) * per_head``."""
    if layer.token_bytes:  # a packed layout: its dtype is never read
        return layer.token_bytes, layer.kv_heads, 0
    per_head = (layer.head_dim + layer.value_dim) * DTYPE_BYTES[layer.dtype]
    return (per_head if _ROW_KINDS[layer.attention].latent else 0), layer.kv_heads, per_head


def _vllm_group_sizes(counts: list[int]) -> tuple[int, int, int, tuple[tuple[int, int], ...]]:
    """vLLM's groups of kinds with ``counts`` layers: (group size, padding layers, widest
    group's layers, (groups, layers per group) per kind)."""
    smallest, biggest = min(counts), max(counts)
    group_size = biggest if biggest < smallest * _EQUAL_GROUPS_BELOW else smallest
    made = []
    padding = widest = 0
    for n in counts:
        count = -(-n // group_size)
        per_group = -(-n // count)
        made.append((count, per_group))
        padding += count * group_size - n
        widest = max(widest, per_group)
    return group_size, padding, widest, tuple(made)


def vllm_layout(entry: EngineModel, speculative: str = "none") -> VllmLayout:
    """The part of vLLM's plan that depends on the model and profile only; raises
    ``NotModelled`` where vLLM's answer is not modelled, ValueError for a model without
    cached layers."""
    if entry.vllm_unmodelled:
        raise NotModelled(UNMODELLED[entry.vllm_unmodelled], entry.vllm_unmodelled)
    retained = state_blocks = 0
    draft: tuple[EngineLayer, ...] = ()
    if speculative != "none":
        profile = entry.drafts[speculative]
        if profile.unmodelled:
            reason = profile.unmodelled
            raise NotModelled(f"speculative {speculative!r}: {UNMODELLED[reason]}", reason)
        draft, retained, state_blocks = profile.layers, profile.retained, profile.state_blocks
    if entry.unmodelled:
        raise NotModelled(UNMODELLED[entry.unmodelled], entry.unmodelled)
    layers = entry.layers + draft
    if not layers:
        raise ValueError("the model has no cached layers")
    split_heads: list[int] = []
    if entry.kv_heads_split:
        for lay in entry.layers:
            heads = lay.kv_heads
            if _ROW_KINDS[lay.attention].heads_split and heads and heads not in split_heads:
                split_heads.append(heads)
    states: list[EngineLayer] = []
    rows: list[tuple[str, int | None, tuple[object, ...], int, int, int, int, int]] = []
    first = None
    mla = False
    joined: dict[tuple[object, ...], int] = {}  # row by every field but the layer count
    for lay in layers:
        row_kind = _ROW_KINDS[lay.attention]
        if draft:  # a draft layer like a target's joins its row (one spec, as vLLM groups it)
            values = lay._values()
            same = values[:1] + values[2:]
            if same in joined:
                row = rows[joined[same]]
                rows[joined[same]] = (*row[:3], row[3] + lay.layers, *row[4:])
                continue
            joined[same] = len(rows)
        if row_kind.state:
            rows.append(
                (row_kind.vllm_spec, None, (lay.state_bytes,), lay.layers, len(states), 0, 0, 0)
            )
            states.append(lay)
            continue
        kind = row_kind.vllm_spec
        shape = (lay.attention, lay.kv_heads, lay.head_dim, lay.value_dim, lay.dtype)
        split = _token_bytes_split(lay)
        rows.append((kind, lay.window, shape, lay.layers, -1, *split))
        if first is None:
            first = split
        mla = mla or row_kind.latent
    kinds = {(row[0], row[1]) for row in rows}
    grouping = None
    if len(kinds) > 1 and len({row[:3] for row in rows}) == len(rows):
        grouping = _vllm_group_sizes([row[3] for row in rows])
    align = ((0, 1), (0, 1))
    if states:
        mixers = {lay.mixer for lay in states}  # "": a state known by its bytes only
        align = (_vllm_align(mixers, "flashinfer"), _vllm_align(mixers, "triton"))
    return VllmLayout(
        entry.query_heads,
        tuple(split_heads),
        entry.kv_heads_split,
        entry.vllm_ssm_dtype,
        tuple(states),
        tuple(rows),
        next(iter(kinds)) if len(kinds) == 1 else None,
        grouping,
        first,
        mla,
        align,
        entry.max_seq_len,
        retained,
        state_blocks,
    )


def _vllm_align(mixers: set[str], gdn_prefill_backend: str) -> tuple[int, int]:
    """Align mode: (the prefill checkpoint block each Mamba layer keeps, the token grid the
    checkpoints land on). MambaMixer2 keeps one always, Gated DeltaNet only when FlashInfer's
    prefill exports mid-prefill states (on its 64-token grid when every Mamba layer is GDN),
    Mamba-1 none."""
    flashinfer = gdn_prefill_backend == "flashinfer"
    checkpoint = 1 if "mamba2" in mixers or ("gdn" in mixers and flashinfer) else 0
    return checkpoint, _FLASHINFER_GDN_ALIGNMENT if flashinfer and mixers == {"gdn"} else 1


def _vllm_tp_refusal(layout: VllmLayout, tp_size: int) -> None:
    """The tp sizes vLLM refuses to start with, with its reason."""
    version = ENGINE_VERSIONS["vllm"]
    if layout.query_heads and layout.query_heads % tp_size:
        raise ValueError(
            f"vLLM {version} refuses tp_size {tp_size}: the model's {layout.query_heads} query "
            "heads must divide by it (ModelConfig.verify_with_parallel_config)"
        )
    for heads in layout.split_heads:
        if heads % tp_size if heads >= tp_size else tp_size % heads:
            raise ValueError(
                f"vLLM {version} refuses tp_size {tp_size}: its attention layer asserts the "
                f"{heads} KV heads split over tp (or tp over them) "
                f"(vllm/model_executor/models/{layout.kv_heads_split}.py)"
            )


def _unified_block_size(
    layout: VllmLayout, block_size: int, tp_size: int, state: int, align: int
) -> tuple[int, int]:
    """Mamba page unification: (attention block size, bytes added to each Mamba page), for
    the largest Mamba page ``state``."""
    if layout.first_attention is None:
        return block_size, 0
    # The model's one head config sizes the attention page (vLLM reads it from the model).
    fixed, heads, per_head = layout.first_attention
    per_token = fixed or max(1, heads // tp_size) * per_head
    step = max(_KERNEL_BLOCK, block_size)
    if layout.mla and step < _MLA_HYBRID_BLOCK:
        step = _MLA_HYBRID_BLOCK
    if align > 1:  # align mode: prefill checkpoints land on block boundaries
        step = lcm(step, align)
    needed = step * -(-state // (step * per_token))
    needed = _KERNEL_BLOCK * -(-needed // _KERNEL_BLOCK)
    block_size = max(block_size, needed)
    return block_size, max(0, block_size * per_token - state)


def vllm_plan(
    entry: EngineModel,
    *,
    block_size: int,
    tp_size: int = 1,
    speculative: str = "none",
    mamba_cache_mode: str = VLLM_MAMBA_CACHE_MODE,
    gdn_prefill_backend: str = "flashinfer",
    ssm_dtype: str | None = None,
) -> VllmPlan:
    """Group the model's layers and size one block of the pool, as vLLM 0.33.0 does.
    ``ssm_dtype`` None: vLLM's default for the model (``entry.vllm_ssm_dtype``)."""
    layout = vllm_layout(entry, speculative)
    return vllm_plan_at(
        layout, block_size, tp_size, mamba_cache_mode, gdn_prefill_backend, ssm_dtype
    )


def vllm_plan_at(
    layout: VllmLayout,
    block_size: int,
    tp_size: int,
    mamba_cache_mode: str,
    gdn_prefill_backend: str,
    ssm_dtype: str | None,
) -> VllmPlan:
    """``vllm_plan`` for a model's layout: what depends on the block size, tp and modes."""
    query = layout.query_heads
    if (query and query % tp_size) or layout.split_heads:
        _vllm_tp_refusal(layout, tp_size)
    checkpoint = mamba_padding = 0
    pages = []
    if layout.states:  # a Mamba hybrid: align mode and page unification
        ssm = layout.ssm_dtype if ssm_dtype is None else ssm_dtype
        for lay in layout.states:
            pages.append(_vllm_state_bytes(lay, tp_size, layout.state_blocks, ssm))
        step = 1
        if mamba_cache_mode == "align":
            checkpoint, step = layout.align[gdn_prefill_backend != "flashinfer"]
        block_size, mamba_padding = _unified_block_size(
            layout, block_size, tp_size, max(pages), step
        )
    # A row's page at this block size (vLLM groups equal specs only: two layers with the same
    # page but other heads differ, hence the shape).
    specs = []
    largest = 0
    for row in layout.rows:
        if row[4] >= 0:
            page = pages[row[4]] + mamba_padding
        else:
            page = block_size * (row[5] or max(1, row[6] // tp_size) * row[7])
        specs.append(page)
        largest = max(largest, page)
    retained = layout.retained
    if layout.one_kind is not None:
        # One kind of layer (pages may differ): one group, a block holds every layer's page.
        kind, window = layout.one_kind
        per_block = total = 0
        for row, page in zip(layout.rows, specs, strict=True):
            per_block += page * row[3]
            total += row[3]
        return _vllm_plan(
            block_size, per_block, ((kind, window, block_size, 1, total),), total, 0, 0,
            layout.native_max_seq_len, retained, layout.state_blocks, checkpoint,
        )  # fmt: skip
    # Hybrid: pages are unified to the largest one. A smaller attention page that divides it
    # covers proportionally more tokens per block; otherwise the page is padded.
    grouping = layout.grouping
    if grouping is not None:  # each row its own groups: only the block sizes vary
        group_size, padding, widest, counts = grouping
        made = []
        full = []
        sliding = []
        chunked = []
        states = 0
        for row, page, (count, per_group) in zip(layout.rows, specs, counts, strict=True):
            kind = row[0]
            size = block_size
            if kind == "recurrent":
                states += count
            else:
                if largest % page == 0:
                    size = block_size * (largest // page)
                if kind == "full":
                    full.append((count, size))
                elif kind == "sliding":
                    sliding.append((count, (row[1] or 1) - 1 + retained, size))
                else:  # chunked
                    chunked.append((count, row[1] or 0, size))
            made.append(VllmGroups(kind, row[1], size, count, per_group))
        return VllmPlan(
            block_size, widest * largest, tuple(made), group_size, padding, mamba_padding,
            tuple(full), tuple(sliding), states, layout.native_max_seq_len,
            layout.state_blocks, checkpoint, tuple(chunked),
        )  # fmt: skip
    buckets: dict[tuple[str, int | None, int, tuple[object, ...]], int] = {}
    for row, page in zip(layout.rows, specs, strict=True):
        size = block_size
        if row[0] != "recurrent" and largest % page == 0:
            size = block_size * (largest // page)
        key = (row[0], row[1], size, row[2])
        buckets[key] = buckets.get(key, 0) + row[3]
    group_size, padding, widest, counts = _vllm_group_sizes(list(buckets.values()))
    grouped = [
        (kind, window, size, count, per_group)
        for (kind, window, size, _shape), (count, per_group) in zip(buckets, counts, strict=True)
    ]
    return _vllm_plan(
        block_size, widest * largest, grouped, group_size, padding, mamba_padding,
        layout.native_max_seq_len, retained, layout.state_blocks, checkpoint,
    )  # fmt: skip


def _vllm_plan(
    block_size: int,
    bytes_per_block: int,
    groups: list[tuple[str, int | None, int, int, int]]
    | tuple[tuple[str, int | None, int, int, int], ...],
    group_size: int,
    padding: int,
    mamba_padding: int,
    native: int,
    retained: int,
    state_blocks: int,
    checkpoint: int,
) -> VllmPlan:
    """The plan of grouped layers, given as (kind, window, block size, groups, layers per
    group): the blocks each kind of group reserves per request."""
    made = []
    full = []
    sliding = []
    chunked = []
    states = 0
    for kind, window, size, count, layers in groups:
        made.append(VllmGroups(kind, window, size, count, layers))
        if kind == "full":
            full.append((count, size))
        elif kind == "sliding":
            sliding.append((count, (window or 1) - 1 + retained, size))
        elif kind == "recurrent":
            states += count
        else:  # chunked
            chunked.append((count, window or 0, size))
    return VllmPlan(
        block_size, bytes_per_block, tuple(made), group_size, padding, mamba_padding,
        tuple(full), tuple(sliding), states, native, state_blocks, checkpoint, tuple(chunked),
    )  # fmt: skip


def vllm_request_blocks(
    plan: VllmPlan, max_seq_len: int, in_flight: int, mamba_cache_mode: str = "none"
) -> int:
    """Blocks one request at ``max_seq_len`` reserves over all groups."""
    # "align" keeps the running state, the last block's and a prefill checkpoint (3 + K).
    states = plan.speculative_blocks + (
        2 + plan.checkpoint_blocks if mamba_cache_mode == "align" else 1
    )
    total = plan.state_groups * states
    for count, size in plan.full:
        total += count * -(-max_seq_len // size)
    for count, reach, size in plan.sliding:
        # Per-request SWA bound: the window plus everything in flight, +1 boundary block.
        held = min(reach + in_flight, max_seq_len)
        total += count * (-(-held // size) + 1)
    for count, chunk, size in plan.chunked:
        # ChunkedLocalAttentionSpec: one chunk plus everything in flight, no boundary block.
        total += count * -(-min(chunk + in_flight, max_seq_len) // size)
    return total


def vllm_longest_fitting(
    plan: VllmPlan, usable_bytes: int, max_seq_len: int, in_flight: int, mamba_cache_mode: str
) -> int:
    """The longest max_seq_len whose one request fits in ``usable_bytes`` (0 if none)."""
    low, high, best = 1, max_seq_len, 0
    while low <= high:
        mid = (low + high) // 2
        blocks = vllm_request_blocks(plan, mid, in_flight, mamba_cache_mode)
        if blocks * plan.bytes_per_block <= usable_bytes:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def _positive_ints(names: tuple[str, ...], *values: object) -> None:
    """Each value a positive int (never a bool or a float), else ValueError naming it."""
    for name, value in zip(names, values, strict=True):
        _integer(name, value, 1)


def _native(max_seq_len: int, native: int) -> None:
    if max_seq_len > native:
        raise ValueError(
            f"max_seq_len must be <= {native} (the model's native context), got {max_seq_len}"
        )


def vllm_capacity(
    plan: VllmPlan,
    budget_bytes: int,
    max_seq_len: int,
    max_num_tokens: int,
    async_scheduling: bool = True,
    mamba_cache_mode: str = VLLM_MAMBA_CACHE_MODE,
) -> EngineCapacity:
    """vLLM's capacity for a planned model: its logged KV cache size and maximum concurrency."""
    if not (
        type(budget_bytes) is int
        and type(max_seq_len) is int
        and type(max_num_tokens) is int
        and 0 < budget_bytes <= _MAX_INT
        and 0 < max_seq_len <= _MAX_INT
        and 0 < max_num_tokens <= _MAX_INT
    ):
        _positive_ints(
            ("budget_bytes", "max_seq_len", "max_num_tokens"),
            budget_bytes, max_seq_len, max_num_tokens,
        )  # fmt: skip
    _native(max_seq_len, plan.native_max_seq_len)
    in_flight = (2 if async_scheduling else 1) * max_num_tokens  # concurrent batches x N
    blocks = vllm_request_blocks(plan, max_seq_len, in_flight, mamba_cache_mode)
    request_bytes = blocks * plan.bytes_per_block
    # Null block: one block is never handed out, so a request must fit in the rest.
    usable = budget_bytes - plan.bytes_per_block
    if request_bytes > usable:
        longest = vllm_longest_fitting(plan, usable, max_seq_len, in_flight, mamba_cache_mode)
        raise ValueError(
            f"budget_bytes {budget_bytes} cannot hold one request of max_seq_len {max_seq_len} "
            f"in vLLM ({request_bytes} bytes plus the null block); longest that fits: {longest}"
        )
    num_blocks = budget_bytes // plan.bytes_per_block
    concurrency = num_blocks / blocks
    capacity: EngineCapacity = _new(
        EngineCapacity, (int(concurrency * max_seq_len), concurrency, request_bytes, num_blocks)
    )
    return capacity


class SglangLayout(_Record):
    """What SGLang's sizing reads from one model alone, whatever tp and the SSM dtype
    (``sglang_layout``): built once per model, so that a plan for another tp does only the
    arithmetic that depends on it (``sglang_plan_at``)."""

    _fields = (
        "attention",
        "window",
        "attention_layers",
        "mamba",
        "states",
        "ssm_state_bytes",
        "native_max_seq_len",
        "index_bytes",
    )
    __slots__ = _fields

    def __init__(
        self,
        # Per attention row: (layers, bytes per token fixed whatever tp (0: split by tp),
        # KV heads, bytes per head and token, in the sliding pool).
        attention: tuple[tuple[int, int, int, int, bool], ...],
        window: int | None,  # the sliding window of a hybrid-SWA model
        attention_layers: int,
        mamba: bool,  # every recurrent layer known by its dimensions (Mamba2StateShape)
        states: tuple[EngineLayer, ...],  # the recurrent rows
        ssm_state_bytes: int,  # per recurrent layer, bf16, tp=1 (state bytes only rows)
        native_max_seq_len: int,
        index_bytes: int = 0,  # a DSA indexer's key bytes per token and layer (0: none)
    ) -> None:
        self.index_bytes = index_bytes
        self.attention = attention
        self.window = window
        self.attention_layers = attention_layers
        self.mamba = mamba
        self.states = states
        self.ssm_state_bytes = ssm_state_bytes
        self.native_max_seq_len = native_max_seq_len


def sglang_layout(entry: EngineModel) -> SglangLayout:
    """The part of SGLang's sizing that depends on the model only; raises ``NotModelled``
    where SGLang's answer is not modelled, ValueError for a model without cached layers."""
    if entry.sglang_unmodelled:
        raise NotModelled(UNMODELLED[entry.sglang_unmodelled], entry.sglang_unmodelled)
    if entry.unmodelled:
        raise NotModelled(UNMODELLED[entry.unmodelled], entry.unmodelled)
    layers = entry.sglang_layers or entry.layers
    # A DSA indexer's keys ride in the layer's own cell (DSATokenToKVPool index_k buffers):
    # per layer, beside the latent, not a layer of its own (_compute_dsa_indexer_cell_size).
    index = [lay for lay in layers if _is_index_row(lay)]
    attention = [
        lay for lay in layers if not _ROW_KINDS[lay.attention].state and not _is_index_row(lay)
    ]
    if len({(lay.kv_heads, lay.head_dim, lay.dtype) for lay in attention}) > 1:
        raise NotModelled(
            "SGLang sizes every layer with one head count and head size; "
            "a model whose layers differ is not modelled"
        )
    rows = []
    window = None
    for lay in attention:
        sliding = entry.hybrid_swa and _ROW_KINDS[lay.attention].sglang_windowed
        if sliding:
            window = lay.window
        rows.append((lay.layers, *_token_bytes_split(lay), sliding))
    recurrent = [lay for lay in layers if _ROW_KINDS[lay.attention].state]
    # SGLang counts its pools in tokens of attention KV (a row's bytes per token are 0 at
    # every tp exactly when they are at tp 1).
    if not any(row[0] and (row[1] or row[3]) for row in rows):
        if not recurrent:
            raise ValueError("the model has no cached layers")
        raise NotModelled("SGLang sizes its pools by attention KV; a model without any is not")
    mamba = bool(recurrent) and all(lay.mixer for lay in recurrent)
    if recurrent and not mamba and not entry.ssm_state_bytes:
        raise NotModelled("the SSM share of its recurrent state is unknown")
    index_bytes = 0
    if index:
        if [lay.layers for lay in index] != [lay.layers for lay in attention]:
            raise NotModelled("SGLang keeps a DSA indexer in every latent layer's cell")
        index_bytes = index[0].token_bytes
        rows.append((sum([lay.layers for lay in index]), index_bytes, 1, 0, False))
    return SglangLayout(
        tuple(rows),
        window,
        sum([lay.layers for lay in attention]),
        mamba,
        tuple(recurrent),
        entry.ssm_state_bytes,
        entry.max_seq_len,
        index_bytes,
    )


def _is_index_row(layer: EngineLayer) -> bool:
    """A sparse-attention indexer's key cache: the fp8 packed row an MLA kind with
    index_head_dim adds beside its latent (cache_kinds._mla_layers)."""
    return _ROW_KINDS[layer.attention].latent and layer.dtype == "fp8" and layer.token_bytes > 0


def sglang_plan(
    entry: EngineModel,
    *,
    tp_size: int = 1,
    ssm_dtype: str = "fp32",
    draft_layers: int = 0,
    draft_tokens: int = 0,
) -> SglangPlan:
    """Bytes per token of each pool and per state slot, as SGLang 0.5.23 counts them.
    ``draft_layers``: an EAGLE3/MTP drafter's layers or a separate (STANDALONE) draft model's,
    which SGLang charges at the target's per-layer size on the same tokens
    (pool_configurator.py, eagle_draft_num_layers; NGRAM has none);
    ``draft_tokens``: its ``speculative_num_draft_tokens``, the intermediate recurrent states
    each verify step keeps per running request (``sglang_pools``)."""
    if ssm_dtype not in SSM_DTYPES:
        raise ValueError(f"ssm_dtype must be one of {SSM_DTYPES}, got {ssm_dtype!r}")
    return sglang_plan_at(sglang_layout(entry), tp_size, ssm_dtype, draft_layers, draft_tokens)


def sglang_plan_at(
    layout: SglangLayout, tp_size: int, ssm_dtype: str, draft_layers: int, draft_tokens: int = 0
) -> SglangPlan:
    """``sglang_plan`` for a model's layout (``ssm_dtype`` checked): what depends on tp."""
    full = swa = 0
    for count, fixed, heads, per_head, sliding in layout.attention:
        if sliding:
            swa += count * (fixed or max(1, heads // tp_size) * per_head)
        else:
            full += count * (fixed or max(1, heads // tp_size) * per_head)
    state = extra = 0
    if layout.mamba:
        # By dimensions (Mamba2StateShape.create): B/C groups fewer than tp are replicated up
        # to tp (Gated DeltaNet's key heads too), the SSM part in ssm_dtype.
        ssm_bytes = DTYPE_BYTES[ssm_dtype]
        for lay in layout.states:
            channels = lay.conv_channels
            if lay.n_groups and lay.n_groups % tp_size:
                channels += 2 * (tp_size - lay.n_groups) * lay.d_state
            if channels % tp_size or lay.ssm_heads % tp_size:
                raise ValueError(
                    f"tp_size {tp_size} does not divide the recurrent layer's {channels} conv "
                    f"channels and {lay.ssm_heads} heads (SGLang's divide() asserts)"
                )
            elements = lay.ssm_heads // tp_size * lay.ssm_head_elements
            conv = channels // tp_size * lay.conv_rows * DTYPE_BYTES[lay.dtype]
            state += lay.layers * (conv + elements * ssm_bytes)
            extra += lay.layers * elements * (ssm_bytes - DTYPE_BYTES[lay.dtype])
    elif layout.states:
        ssm = layout.ssm_state_bytes
        # fp32 SSM state: the SSM part is stored at ssm_dtype instead of the spec's 2 bytes.
        extra_per_layer = ssm * DTYPE_BYTES[ssm_dtype] // 2 - ssm
        for lay in layout.states:
            state += lay.layers * ((lay.state_bytes + extra_per_layer) // tp_size)
            extra += lay.layers * (extra_per_layer // tp_size)
    if draft_layers and swa:
        # Hybrid SWA (HybridSWAPoolConfigurator): a full-attention drafter's layers join the
        # full pool at the target's full-layer size (_draft_full_layers_num x _full_per_token).
        full_layers = sum([row[0] for row in layout.attention if not row[4]])
        if not full_layers:
            raise NotModelled("SGLang sizes a drafter by the target's full layers; it has none")
        full += draft_layers * (full // full_layers)
    elif draft_layers:
        # The draft shares the per-layer size (pool_configurator.py _compute_cell_size); a DSA
        # model's latent share, then the draft's own indexer keys per layer.
        indexer = layout.index_bytes * layout.attention_layers
        full += int((full - indexer) * draft_layers / layout.attention_layers)
        full += layout.index_bytes * draft_layers
    return SglangPlan(
        full, swa, layout.window, state, extra, layout.native_max_seq_len, draft_tokens
    )


def sglang_pools(
    plan: SglangPlan,
    budget_bytes: int,
    page_size: int,
    *,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
    max_running_requests: int = 8,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
) -> SglangPools:
    """Token slots of each pool for a KV budget (``max_running_requests``: read only by an
    EAGLE/MTP drafter's intermediate states on a recurrent hybrid; the strategy: its state
    slots per running request)."""
    budget_gib = budget_bytes / _GIB  # SGLang keeps the budget in GiB as a float
    slots = 0
    if plan.state_bytes_per_request:
        # Mamba memory ratio: r/(1+r) of the budget to whole slots, one of them padding.
        share = budget_gib * mamba_full_memory_ratio / (1 + mamba_full_memory_ratio)
        per_slot = plan.state_bytes_per_request
        drafts = plan.draft_tokens
        ratio = _sglang_mamba_ratio(mamba_radix_cache_strategy, page_size)
        if drafts:
            # Any drafter, NGRAM too (kv_cache_configurator.py _handle_max_mamba_cache): each
            # verify step keeps D intermediate states per running request, solved jointly with
            # the slots (one running request per ratio slots), then reserved for the capped
            # requests plus the padding slot.
            slots = int(
                (share * _GIB - per_slot * (1 + drafts)) // (per_slot * (1 + drafts / ratio))
            )
            capped = min(max(1, max_running_requests), slots // ratio)
            budget_gib -= per_slot * (capped + 1) * drafts / _GIB
        else:
            slots = int((share * _GIB - per_slot) // per_slot)
        if slots < ratio:
            raise ValueError(_sglang_too_few_slots(budget_bytes, slots, drafts, ratio))
        budget_gib -= (slots + 1) * per_slot / _GIB
    usable = int(budget_gib * _GIB)
    if plan.swa_bytes_per_token:
        # SWA ratio: the sliding pool is a fixed share of the full pool, whatever the window.
        per_token = plan.full_bytes_per_token + swa_full_tokens_ratio * plan.swa_bytes_per_token
        full = int(usable // per_token) // page_size * page_size
        swa = int(full * swa_full_tokens_ratio) // page_size * page_size
        return SglangPools(full, swa, slots)
    full = usable // plan.full_bytes_per_token // page_size * page_size
    return SglangPools(full, 0, slots)


def _sglang_mamba_ratio(strategy: object, page_size: int) -> int:
    """State slots per running request under the Mamba radix cache ``strategy``; ValueError
    where it is no strategy, or where SGLang 0.5.23 refuses it at that page size."""
    if strategy == "extra_buffer":
        if _SGLANG_MAMBA_TRACK_INTERVAL % page_size:
            raise ValueError(
                f"block_size {page_size}: SGLang 0.5.23 refuses extra_buffer where the page "
                f"does not divide mamba_track_interval {_SGLANG_MAMBA_TRACK_INTERVAL} "
                "(mamba_hook.py validate_mamba_extra_buffer)"
            )
        return SGLANG_MAMBA_SLOTS_PER_REQUEST["extra_buffer"]
    if strategy == "no_buffer":
        if page_size != 1:
            raise ValueError(
                f"block_size {page_size}: SGLang 0.5.23's no_buffer strategy takes page_size "
                "1 only (mamba_hook.py validate_mamba_no_buffer)"
            )
        return SGLANG_MAMBA_SLOTS_PER_REQUEST["no_buffer"]
    raise ValueError(
        f"mamba_radix_cache_strategy must be one of {SGLANG_MAMBA_STRATEGIES}, "
        f"got {_shown(strategy)}"
    )


def _sglang_too_few_slots(budget_bytes: int, slots: int, drafts: int, ratio: int) -> str:
    """Why SGLang 0.5.23 refuses to start a recurrent hybrid whose budget leaves fewer state
    slots than one running request keeps: ``_handle_max_mamba_cache`` raises at 0 slots,
    ``resolve_max_num_reqs`` where ``slots // ratio`` is 0 (kv_cache_configurator.py)."""
    beside = f" beside the {drafts} intermediate states of each draft" if drafts else ""
    where = (
        "_handle_max_mamba_cache: not enough memory for the state cache"
        if slots <= 0
        else f"resolve_max_num_reqs: {slots} // {ratio} = 0 requests"
    )
    return (
        f"budget_bytes {budget_bytes} leaves SGLang {max(slots, 0)} recurrent state slots"
        f"{beside}, fewer than the {ratio} it keeps per running request: SGLang 0.5.23 "
        f"refuses to start (kv_cache_configurator.py {where})"
    )


def sglang_sliding_tokens(plan: SglangPlan, max_seq_len: int, page_size: int) -> int:
    """Sliding-pool tokens one request needs at admission: its window plus a page."""
    if plan.window is None:
        return 0
    return min(max_seq_len, plan.window + page_size)


def _sglang_ratios(swa: object, mamba: object) -> None:
    """ValueError naming the ratio that SGLang would not take: the sliding pool is a share
    (0, 1] of the full pool's tokens, the Mamba state a positive multiple of its memory."""
    for argument, value, most in (
        ("swa_full_tokens_ratio", swa, 1.0),
        ("mamba_full_memory_ratio", mamba, float("inf")),
    ):
        if type(value) is float and 0.0 < value <= most and value != float("inf"):
            continue
        try:
            number = None if isinstance(value, bool | str | bytes) else float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            number = None
        if number is None or not 0.0 < number <= most or number == float("inf"):
            bound = "in (0, 1]" if most == 1.0 else "a positive finite number"
            raise ValueError(f"{argument} must be {bound}, got {_shown(value)}")


def sglang_capacity(
    plan: SglangPlan,
    budget_bytes: int,
    max_seq_len: int,
    page_size: int = SGLANG_PAGE_SIZE,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
    max_running_requests: int = 8,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
) -> EngineCapacity:
    """SGLang's pools for a planned model, read as an ``EngineCapacity``; a request's bytes
    count the intermediate states an EAGLE/MTP drafter keeps for it on a recurrent hybrid."""
    swa, mamba = swa_full_tokens_ratio, mamba_full_memory_ratio
    # Two floats in range pass here; anything else is checked (and named) by _sglang_ratios.
    if not (
        type(swa) is float and type(mamba) is float and 0.0 < swa <= 1.0 and 0.0 < mamba < _INFINITY
    ):
        _sglang_ratios(swa, mamba)
    if not (
        type(budget_bytes) is int
        and type(max_seq_len) is int
        and type(page_size) is int
        and 0 < budget_bytes <= _MAX_INT
        and 0 < max_seq_len <= _MAX_INT
        and 0 < page_size <= _MAX_INT
    ):
        _positive_ints(
            ("budget_bytes", "max_seq_len", "block_size"), budget_bytes, max_seq_len, page_size
        )
    _native(max_seq_len, plan.native_max_seq_len)
    if mamba_radix_cache_strategy not in SGLANG_MAMBA_STRATEGIES:
        _sglang_mamba_ratio(mamba_radix_cache_strategy, page_size)  # names it
    running = max_running_requests
    if plan.draft_tokens and not (type(running) is int and 0 < running <= _MAX_INT):
        _positive_ints(("max_batch_size",), running)
    # The pools are a function of the plan and these checked arguments alone, kept by the
    # plan's identity (the stored plan is compared, so a reused id never answers).
    key = (id(plan), budget_bytes, page_size, swa, mamba, running, mamba_radix_cache_strategy)
    known = _SGLANG_POOLS.get(key)
    if known is not None and known[0] is plan:
        pools = known[1]
    else:
        pools = sglang_pools(
            plan, budget_bytes, page_size, swa_full_tokens_ratio=swa,
            mamba_full_memory_ratio=mamba, max_running_requests=running,
            mamba_radix_cache_strategy=mamba_radix_cache_strategy,
        )  # fmt: skip
        if len(_SGLANG_POOLS) >= 4096:
            _SGLANG_POOLS.clear()
        _SGLANG_POOLS[key] = (plan, pools)
    if pools.full_tokens <= 0:
        raise ValueError(f"budget_bytes {budget_bytes} leaves SGLang no KV pool")
    sliding = sglang_sliding_tokens(plan, max_seq_len, page_size)
    request_bytes = (
        max_seq_len * plan.full_bytes_per_token
        + sliding * plan.swa_bytes_per_token
        + plan.state_bytes_per_request * (1 + plan.draft_tokens)
    )
    concurrency = pools.full_tokens / max_seq_len
    if sliding:
        concurrency = min(concurrency, pools.swa_tokens / sliding)
    if plan.state_bytes_per_request:
        # SGLang runs at most slots // ratio requests at once (resolve_max_num_reqs),
        # whatever tokens the attention pool holds.
        running = pools.state_slots // SGLANG_MAMBA_SLOTS_PER_REQUEST[mamba_radix_cache_strategy]
        concurrency = min(concurrency, float(running))
    full = pools.full_tokens
    capacity: EngineCapacity = _new(
        EngineCapacity, (full, concurrency, request_bytes, full // page_size)
    )
    return capacity


# Static plans by (model, block size or SSM dtype, tp, profile, Mamba cache mode); bounded,
# one pair per family (``_derive_engines``).
_VLLM_PLANS: dict[tuple[object, ...], VllmPlan]
_SGLANG_PLANS: dict[tuple[object, ...], SglangPlan]
# SGLang's pools by (plan identity, budget, page, ratios, running requests, strategy), with the
# plan they were computed for; bounded (``sglang_capacity``).
_SGLANG_POOLS: dict[tuple[object, ...], tuple[SglangPlan, SglangPools]] = {}
# By options: every manager's terms, TensorRT-LLM V2 pool groups, the target's request bytes
# and its tokens by share (``_trtllm_known``).
_TrtllmKnown = tuple[
    tuple[_Terms, ...], tuple["_TrtllmPlan | None", ...], int, dict[int, int | None]
]
_TRTLLM_PLANS: dict[_Options, _TrtllmKnown]
# Per model: its query heads (TensorRT-LLM refuses a tp they do not divide by), or the
# UNMODELLED reason of a model whose row TensorRT-LLM does not answer (``_derive_engines``).
_TRTLLM_HEADS: dict[str, int | str]
# What each plan reads from the model and profile alone, by (model, profile): filled on a
# model and profile's first plan, only for a pair ``_check_model`` accepted, so bounded by
# the family's models x profiles (``vllm_layout``, ``sglang_layout``).
_VLLM_LAYOUTS: dict[tuple[object, ...], VllmLayout]
# with the draft's layers and tokens
_SGLANG_LAYOUTS: dict[tuple[object, ...], tuple[SglangLayout, int, int]]


def _vllm_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _check_model(model: object, speculative: object, engine: str) -> EngineModel:
    """The model's rows, the profile checked to apply to it; else ValueError naming them."""
    name = model if type(model) is str and model in _MODELS else _name("model", model, MODELS)
    profile = speculative
    if type(profile) is not str or profile not in SPECULATIVE:
        profile = _name("speculative", speculative, SPECULATIVE)
    if profile not in _MODELS[name].profiles:
        raise ValueError(f"speculative {profile!r} does not apply to model {name!r}")
    entry: EngineModel = _ENGINE_MODELS[name]
    if engine == "sglang" and profile != "none" and not entry.drafts[profile].sglang_draft_tokens:
        reason = entry.drafts[profile].sglang_unmodelled
        if reason:
            raise NotModelled(f"speculative {profile!r}: {UNMODELLED[reason]}", reason)
        raise NotModelled(
            f"speculative {profile!r} is not modelled for engine 'sglang' (EAGLE3, MTP, NGRAM "
            "and separate draft model profiles are)"
        )
    return entry


def _trtllm_capacity(
    model: str,
    budget_bytes: int,
    max_seq_len: int,
    max_num_tokens: int,
    block_size: int | None,
    speculative: str,
    tp_size: int,
    max_batch_size: int,
    pp_size: int = 1,
    pp_rank: int = 0,
) -> EngineCapacity:
    """What TensorRT-LLM V2 holds for pipeline rank ``pp_rank`` of ``pp_size`` (its own
    layers in its own budget): the tokens of the pools the engine's own split builds from
    the target's share in whole grains (what ``plan --emit trtllm`` hands it), or the affine
    estimate of §4 where that split is not modelled (recurrent, cross or DCP pools)."""
    # 0 for a value that is no model of the tables: ``_options`` names it below.
    heads = _TRTLLM_HEADS.get(model, 0) if type(model) is str else 0
    if type(heads) is str:
        raise NotModelled(f"{model}: {UNMODELLED[heads]}", heads)
    if heads and type(tp_size) is int and tp_size > 0 and heads % tp_size:
        # KV heads are replicated up to tp (the ceil of §1); query heads are not.
        raise ValueError(
            f"TensorRT-LLM refuses tp_size {tp_size}: the model's {heads} query heads must "
            "divide by it (tensorrt_llm/_torch/modules/attention.py asserts "
            "num_heads % tp_size == 0)"
        )
    if block_size is not None and block_size != TOKENS_PER_BLOCK:
        _integer("block_size", block_size, 1)
        raise NotModelled(
            f"block_size must be {TOKENS_PER_BLOCK} (the spec's tokens_per_block) for "
            f"engine 'trtllm-v2' here; kvgen.engine_capacity (from the spec) answers for other "
            "page sizes"
        )
    options = _options(model, speculative, max_batch_size, max_num_tokens, max_seq_len, tp_size,
                       pp_size, pp_rank)  # fmt: skip
    # The terms and plans of these options in one look-up (not the answers cache and then
    # the plans': a warm call is mostly look-ups).
    known = _TRTLLM_PLANS.get(options)
    if known is None:
        known = _trtllm_known(options, _cached_terms(options))
    terms, plans, request_bytes, held = known
    budget = budget_bytes
    if type(budget) is not int or not 0 < budget <= _MAX_INT:
        budget = _integer("budget_bytes", budget_bytes, 1)
    target = terms[0]
    if len(terms) > 1:  # a separate draft pool takes its share first (§6)
        budget = _shares(terms, budget, "gpu")["target"]
    max_batch_size, max_num_tokens = options[_BATCH_AT], options[_CHUNK_AT]
    max_seq_len = options[_SEQ_LEN_AT]
    tokens = held.get(budget, -1)
    if tokens == -1:  # a share not seen with these options
        plan = plans[0]  # None: recurrent, cross or fixed pools lie outside the engine's split
        if plan is None:  # pools outside the engine's split: the affine estimate
            tokens = _tokens(target, budget, max_num_tokens)
        else:  # the engine's split of the share
            tokens = _trtllm_held(plan, _whole_grains(budget))[0]
        if len(held) >= 64:
            held.clear()
        held[budget] = tokens
    if tokens is None:  # nothing grows with history: every request reaches max_seq_len
        tokens = max_batch_size * max_seq_len
    concurrency = tokens / max_seq_len
    if concurrency > max_batch_size:  # at most B requests are resident, whatever the tokens
        concurrency = float(max_batch_size)
    capacity: EngineCapacity = _new(
        EngineCapacity, (tokens, concurrency, request_bytes, tokens // TOKENS_PER_BLOCK)
    )
    return capacity


@lru_cache(maxsize=4096)  # a function of the share alone; its two logarithms cost most
def _whole_grains(share: int) -> int:
    """A share as the quota kvgen hands TensorRT-LLM V2: its whole grains (the engine rounds a
    quota up to its grain, so it keeps these bytes as given); a share under one grain as is."""
    return share - share % gpu_grain(share) or share


class _TrtllmPlan(NamedTuple):
    """One manager's pool groups in TensorRT-LLM V2 (``_trtllm_plans``): per group its slot
    bytes, life cycles, the pages B requests hold whatever T (B * pages(w, H) per sliding
    cycle), its sliding cycles (each also min(k, n) context pages) and full ones (k pages);
    the groups as the engine's split sees them, n = ceil(N/tpb), N, and whether a full pool
    grows with T."""

    groups: tuple[tuple[int, tuple[tuple[int, int, int], ...], int, int, int], ...]
    pools: tuple[PoolGroup, ...]
    context: int
    chunk: int
    grows: bool


def _trtllm_plans(options: _Options, terms: tuple[_Terms, ...]) -> tuple[_TrtllmPlan | None, ...]:
    """Each manager's ``_TrtllmPlan`` for validated options (None where the split is not
    modelled: recurrent states, cross caches, DCP or resume-rounded pages), remembered."""
    return _trtllm_known(options, terms)[1]


def _trtllm_known(options: _Options, terms: tuple[_Terms, ...]) -> _TrtllmKnown:
    """``_TRTLLM_PLANS``' entry of validated options, built and kept on their first call."""
    known = _TRTLLM_PLANS.get(options)
    if known is None:
        batch, chunk = options[_BATCH_AT], options[_CHUNK_AT]
        plans: tuple[_TrtllmPlan | None, ...] = ()
        for t in terms:  # a loop, not a comprehension: its frame costs a never-seen call more
            plans += (_trtllm_plan(t, batch, chunk),)
        # What ``_trtllm_capacity`` reads beside the plans, so that a warm call makes one
        # look-up: the terms, the bytes of one target request at max_seq_len, and the
        # target's tokens for each share seen (a function of the share and these options).
        target, seq_len = terms[0], options[_SEQ_LEN_AT]
        request_bytes = (seq_len * target.slope + target.per_request
                         + min(seq_len, chunk) * target.ctx_swa)  # fmt: skip
        if len(_TRTLLM_PLANS) >= 4096:
            _TRTLLM_PLANS.clear()
        known = _TRTLLM_PLANS[options] = (terms, plans, request_bytes, {})
    return known


def _trtllm_plan(t: _Terms, batch: int, chunk: int) -> _TrtllmPlan | None:
    """Life cycles of equal slot bytes share a pool group (a chunked one keeps its own, as
    the shim builds it), in registry order: sliding and chunked cycles, then full."""
    tpb = TOKENS_PER_BLOCK
    if t.states or t.fixed_pool_bytes or t.resume_rounding is not None or t.span != tpb:
        return None
    # slot bytes, or a chunked cycle's own key -> [slot bytes, cycles, fixed, sliding, full]
    groups: dict[int, list] = {}  # type: ignore[type-arg]
    window_bytes = 0  # kvgen's window pages of one request
    for i, (window, sinks, pages, b, attn_chunk) in enumerate(t.life_cycles):
        size = tpb * b
        window_bytes += size * pages
        key = -i - 1 if attn_chunk else size
        group = groups.get(key)
        if group is None:
            group = groups[key] = [size, [], 0, 0, 0]
        group[1].append((window, sinks, attn_chunk))
        group[2] += batch * pages
        group[3] += 1
    if t.per_request != window_bytes:  # a per-request state beside the pages: not split
        return None
    if t.slope:
        group = groups.get(tpb * t.slope)
        if group is None:
            group = groups[tpb * t.slope] = [tpb * t.slope, [], 0, 0, 0]
        group[1].append((0, 0, 0))
        group[4] += 1
    if not groups:  # no page grows with history: nothing to split (the affine answer)
        return None
    members = []
    pools = []
    for size, cycles, fixed, sliding, full in groups.values():
        members.append((size, tuple(cycles), fixed, sliding, full))
        pools.append(_new(PoolGroup, ((size,), len(cycles))))
    plan: _TrtllmPlan = _new(
        _TrtllmPlan, (tuple(members), tuple(pools), -(-chunk // tpb), chunk, t.slope > 0)
    )
    return plan


@lru_cache(maxsize=4096)
def _engine_slots(pools: tuple[PoolGroup, ...], quota: int) -> tuple[int, ...]:
    """The slots the engine's split of ``quota`` builds per pool group: a function of the
    slot bytes and the quota alone (no family table), so one cache serves every family."""
    try:
        return slots_for_quota(quota, pools)
    except ValueError:
        raise ValueError(
            f"TensorRT-LLM V2 cannot build its {len(pools)} pool groups from a quota of "
            f"{quota} B: its least grain per pool overruns it (the engine asserts)"
        ) from None


def _trtllm_held(plan: _TrtllmPlan, quota: int) -> tuple[int | None, tuple[int, ...], int]:
    """What the engine's pools for ``quota`` bytes hold (§4): the slots its split builds per
    group, and the largest T, a multiple of tpb, whose kvgen pools fit them all: k =
    ceil(T/tpb) full pages and, per sliding cycle, B * pages(w, H) + min(k, n) (T None when
    no full pool bounds it; 0 when not even B requests' window pages fit). Returns (T,
    slots, k); ValueError where the engine's least grains per pool overrun the quota."""
    slots = _engine_slots(plan.pools, quota)
    context = plan.context
    most = -1  # the largest k every group allows (-1: no group bounds it)
    for (_size, _cycles, fixed, sliding, full), built in zip(plan.groups, slots, strict=True):
        room = built - fixed
        if room < 0:
            return 0, slots, 0  # not even B requests' window pages: nothing is served
        if full:  # k <= n: (sliding + 1) k <= room; past n: k <= room - sliding * n
            k = room // (sliding + 1)
            if k >= context:
                k = room - sliding * context
        elif room >= sliding * context:
            continue  # every context page fits: this group never bounds k
        else:
            k = room // sliding
        if most < 0 or k < most:
            most = k
    if most < 0:
        return None, slots, context
    if plan.grows:
        return most * TOKENS_PER_BLOCK, slots, most
    tokens = min(most * TOKENS_PER_BLOCK, plan.chunk - 1)  # no full pool: pages below N
    return tokens, slots, -(-tokens // TOKENS_PER_BLOCK)


def engine_capacity(
    model: str,
    budget_bytes: int,
    *,
    engine: str,
    max_seq_len: int,
    max_num_tokens: int,
    block_size: int | None = None,
    speculative: str = "none",
    tp_size: int = 1,
    max_batch_size: int = 8,
    async_scheduling: bool = True,
    mamba_cache_mode: str = VLLM_MAMBA_CACHE_MODE,
    gdn_prefill_backend: str = "flashinfer",
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
    ssm_dtype: str | None = None,
    pp_size: int = 1,
    pp_rank: int = 0,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
) -> EngineCapacity:
    """What ``engine`` ("trtllm-v2", "vllm" 0.33.0 or "sglang" 0.5.23) gives ``model`` for a
    KV budget of ``budget_bytes``: tokens, requests at ``max_seq_len`` at once, bytes of one
    such request, blocks of the pool (docs/cost-model.md §9).

    ``block_size`` defaults to the engine's own page size (TensorRT-LLM: TOKENS_PER_BLOCK,
    the only one answered here; vLLM: 16; SGLang: 1). ``max_num_tokens`` is the per-iteration
    token budget (vLLM's ``max_num_batched_tokens``). Engine keywords: ``max_batch_size``
    (TensorRT-LLM; SGLang's max_running_requests, read by a drafter on hybrids),
    ``async_scheduling``, ``mamba_cache_mode`` ("align", vLLM's default for hybrids, whose
    prefix caching is on by default; "none" with prefix caching off) and
    ``gdn_prefill_backend`` ("flashinfer", the H100/H200 default, or "triton") (vLLM),
    ``swa_full_tokens_ratio``, ``mamba_full_memory_ratio`` and ``mamba_radix_cache_strategy``
    ("extra_buffer", what an H100/H200 launch resolves for a recurrent hybrid: 5 state slots
    per running request; "no_buffer": 3, the overlap scheduler off) (SGLang); ``ssm_dtype`` (both;
    None: the engine's default, fp32 in SGLang, in vLLM the conv dtype except where a model
    hook sets it: Nemotron-H fp32). ``pp_size`` / ``pp_rank``: one pipeline stage, its own
    layers in its own budget (TensorRT-LLM only; ``NotModelled`` for the others).
    Raises ``ValueError`` naming the argument on bad input, when the engine would refuse to
    start, and (``NotModelled``, a ValueError) for a shape or mode not modelled per engine.
    """
    if engine == "trtllm-v2":
        return _trtllm_capacity(
            model, budget_bytes, max_seq_len, max_num_tokens, block_size, speculative,
            tp_size, max_batch_size, pp_size, pp_rank,
        )  # fmt: skip
    if pp_size != 1 and engine in ENGINE_VERSIONS:
        raise NotModelled(
            f"pp_size {pp_size!r}: pipeline parallelism is not modelled for engine {engine!r} "
            "here (its pools are sized for the whole model)"
        )
    if engine == "vllm":
        key = (model, block_size, tp_size, speculative, mamba_cache_mode, gdn_prefill_backend,
               ssm_dtype)  # fmt: skip
        try:
            plan = _VLLM_PLANS.get(key)
        except TypeError:  # an unhashable argument: named below
            plan = None
        if plan is None:
            try:
                layout = _VLLM_LAYOUTS.get((model, speculative))
            except TypeError:  # an unhashable argument: named below
                layout = None
            if layout is None:  # known layouts are of a model and profile checked before
                entry = _check_model(model, speculative, engine)
            size = block_size
            if size is None:
                size = VLLM_BLOCK_SIZE
            elif type(size) is not int or not 0 < size <= _MAX_INT:
                size = _integer("block_size", block_size, 1)
            if mamba_cache_mode not in MAMBA_CACHE_MODES:
                raise ValueError(
                    f"mamba_cache_mode must be one of {MAMBA_CACHE_MODES}, got {mamba_cache_mode!r}"
                )
            _vllm_choice("gdn_prefill_backend", gdn_prefill_backend, GDN_PREFILL_BACKENDS)
            if ssm_dtype is not None:
                _vllm_choice("ssm_dtype", ssm_dtype, SSM_DTYPES)
            tp = tp_size
            if type(tp) is not int or not 0 < tp <= _MAX_INT:
                tp = _integer("tp_size", tp_size, 1)
            if layout is None:
                layout = vllm_layout(entry, speculative)
                _VLLM_LAYOUTS[(model, speculative)] = layout  # bounded: models x profiles
            plan = vllm_plan_at(layout, size, tp, mamba_cache_mode, gdn_prefill_backend, ssm_dtype)
            if len(_VLLM_PLANS) >= 4096:
                _VLLM_PLANS.clear()
            _VLLM_PLANS[key] = plan
        return vllm_capacity(
            plan, budget_bytes, max_seq_len, max_num_tokens, async_scheduling, mamba_cache_mode
        )
    if engine != "sglang":
        _name("engine", engine, ENGINE_VERSIONS)
    key_s = (model, ssm_dtype, tp_size, speculative)
    try:
        plan_s = _SGLANG_PLANS.get(key_s)
    except TypeError:  # an unhashable argument: named below
        plan_s = None
    if plan_s is None:
        try:
            layout_s = _SGLANG_LAYOUTS.get((model, speculative))
        except TypeError:  # an unhashable argument: named below
            layout_s = None
        if layout_s is None:  # known layouts are of a model and profile checked before
            entry = _check_model(model, speculative, engine)
        tp = tp_size
        if type(tp) is not int or not 0 < tp <= _MAX_INT:
            tp = _integer("tp_size", tp_size, 1)
        ssm = ssm_dtype or "fp32"
        if ssm not in SSM_DTYPES:
            raise ValueError(f"ssm_dtype must be one of {SSM_DTYPES}, got {ssm!r}")
        if layout_s is None:
            layout_s = _sglang_layout(entry, speculative)
            _SGLANG_LAYOUTS[(model, speculative)] = layout_s  # bounded: models x profiles
        pools_of, draft_layers, draft_tokens = layout_s
        plan_s = sglang_plan_at(pools_of, tp, ssm, draft_layers, draft_tokens)
        if len(_SGLANG_PLANS) >= 4096:
            _SGLANG_PLANS.clear()
        _SGLANG_PLANS[key_s] = plan_s
    page = SGLANG_PAGE_SIZE if block_size is None else block_size
    return sglang_capacity(
        plan_s, budget_bytes, max_seq_len, page, swa_full_tokens_ratio, mamba_full_memory_ratio,
        max_batch_size, mamba_radix_cache_strategy,
    )  # fmt: skip


def _sglang_layout(entry: EngineModel, speculative: str) -> tuple[SglangLayout, int, int]:
    """SGLang's layout of a model and profile (checked by ``_check_model``), with the
    EAGLE3/MTP/STANDALONE draft layers it adds and the tokens each verify step holds."""
    if speculative == "none":
        return sglang_layout(entry), 0, 0
    draft = entry.drafts[speculative]
    return sglang_layout(entry), draft.sglang_layers, draft.sglang_draft_tokens


def bind(namespace: dict[str, object]) -> None:
    """Install the engine policies over a family's namespace, after ``sizing_core.bind``
    (they read its tables, ``_ENGINE_MODELS`` and the interpreter installed there)."""
    install(globals(), namespace)
    namespace["_derive_engines"]()  # type: ignore[operator]  # the copy over the family's globals


def _trtllm_refusal(name: str) -> str:
    """The UNMODELLED reason of a model TensorRT-LLM's row does not answer, or ""."""
    if any(kind.attention == "cross" for kind in _MODELS[name].layers.kinds.values()):
        return "cross"
    if any(lay.mixer == "linear" for lay in _ENGINE_MODELS[name].layers):
        return "trtllm_linear"
    return ""


def _derive_engines() -> None:
    """Per family, at bind: its own plan caches (model names repeat across families), and the
    layout of every model and profile that each engine answers (what they alone decide), so
    that the first plan of a configuration is only its arithmetic (``vllm_plan_at``,
    ``sglang_plan_at``)."""
    global _VLLM_PLANS, _SGLANG_PLANS, _VLLM_LAYOUTS, _SGLANG_LAYOUTS, _TRTLLM_HEADS
    global _TRTLLM_PLANS
    _TRTLLM_HEADS = {name: _trtllm_refusal(name) or _ENGINE_MODELS[name].query_heads
                     for name in _MODELS}  # fmt: skip
    _VLLM_PLANS = {}
    _SGLANG_PLANS = {}
    _TRTLLM_PLANS = {}
    _VLLM_LAYOUTS = {}
    _SGLANG_LAYOUTS = {}
    for model, entry in _ENGINE_MODELS.items():
        for speculative in _MODELS[model].profiles:
            # A pair an engine does not answer (NotModelled too) keeps no layout: the call
            # raises the same error.
            with suppress(ValueError):
                _VLLM_LAYOUTS[model, speculative] = vllm_layout(entry, speculative)
            with suppress(ValueError):
                _check_model(model, speculative, "sglang")  # its refusals, as a call's
                _SGLANG_LAYOUTS[model, speculative] = _sglang_layout(entry, speculative)
