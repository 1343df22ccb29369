"""Facts about cache layouts, defined once: inputs of every derivation, never derived.

The static side (the sizing interpreter ``kvgen.sizing.sizing_core``, the engine policies
``kvgen.sizing.engines_core``, ``kvgen._model.quant``, ``kvgen._model.geometry``, the engine and
import-hf models) and the shim runtime (``kvgen.runtime``) import these; the runtime still measures
its bytes from the shapes and itemsize of the tensors it builds, so the diff between the two sides
stays meaningful. Stdlib only and a leaf module: generation writes it verbatim beside the sizing
runtime (``generated/_kvgen_runtime/facts.py``). docs/cost-model.md §1 describes the layouts.
"""

import struct
from collections.abc import Sequence

__all__ = [
    "DCP_ATTENTION",
    "DS_MLA",
    "DS_MLA_SCALE_BLOCK",
    "DTYPE_BYTES",
    "HEADROOM",
    "INDEX_SCALE_BLOCK",
    "MODEL_DTYPES",
    "MX_BLOCK",
    "NVFP4_BLOCK",
    "SCALED_DTYPES",
    "SCALED_LAYOUTS",
    "TWO_MODEL_MODES",
    "dcp_attention",
    "dcp_heads",
    "dcp_outside_tp",
    "dcp_with_attention_dp",
    "ds_mla_bytes",
    "float32",
    "float32s",
    "index_k_bytes",
    "kv_sharing_rank",
    "mode_headroom",
    "no_encoder",
    "state_heads_name",
    "uneven_state",
]

# Bytes per element of the plain cache dtypes.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
# The float ones, a model's dtype -> its name as torch_dtype and the engines' --dtype: a plain
# float cache follows the model dtype (``Release.cache_dtype``); an SSM state is in one of them.
MODEL_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}

NVFP4_BLOCK = 16  # NVFP4: one FP8 (e4m3) block scale per 16 elements
MX_BLOCK = 32  # OCP MX: one e8m0 scale byte per 32 elements
# FlashMLA's sparse fp8 layout (vLLM ``flashmla_sparse.py`` "fp8_ds_mla", the FlashMLA
# README): the no-RoPE latent in fp8 with one fp32 scale per 128 elements, the RoPE part bf16.
DS_MLA = "fp8_ds_mla"
DS_MLA_SCALE_BLOCK = 128
# vLLM ``DeepseekV32IndexerCache``: the indexer key in fp8 with one fp32 scale per 128.
INDEX_SCALE_BLOCK = 128


def ds_mla_bytes(kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """``fp8_ds_mla``: fp8 latent + fp32 scale per 128 latent elements + bf16 RoPE part."""
    scales = -(-kv_lora_rank // DS_MLA_SCALE_BLOCK)
    return kv_lora_rank + 4 * scales + 2 * qk_rope_head_dim


def index_k_bytes(index_head_dim: int) -> int:
    """A sparse-attention indexer's key cache per token per layer: fp8 + fp32 per 128."""
    return index_head_dim + 4 * -(-index_head_dim // INDEX_SCALE_BLOCK)


# The per-element scaled layouts: (bits per element, elements per block scale (0: none), bytes
# of that scale, fp32 bytes per (token, head) scale (0: none)). Block scales count over the
# elements of one token of one K (or V) buffer on a rank, ``ceil(n / block)``.
SCALED_LAYOUTS = {
    "nvfp4": (4, NVFP4_BLOCK, 1, 0),
    "mxfp8": (8, MX_BLOCK, 1, 0),
    "mxfp4": (4, MX_BLOCK, 1, 0),
    "fp8_per_token_head": (8, 0, 0, 4),
    "int8_per_token_head": (8, 0, 0, 4),
}
# Layouts that carry their scales in the cache: the per-element ones and the MLA-only one.
SCALED_DTYPES = frozenset({*SCALED_LAYOUTS, DS_MLA})

# Speculative headroom per mode (docs/cost-model.md §2, §5), with K = max_draft_len: E (how
# far capacity runs ahead of history before a step), the draft slots one generation step
# carries (the step adds 1 + slots tokens: G), and the block-reuse backoff D, each written
# (a, b) for a*K + b. A two-model mode's drafter keeps its own engine, so the target only
# verifies K draft tokens a step; PARD pads K drafts to 2K - 1 slots.
_ONE_MODEL = ((1, -1), (1, 0), (0, 0))
TWO_MODEL_MODES = ("eagle3_two_model", "mtp_eagle_two_model", "draft_target_two_model", "ngram")
HEADROOM = {
    "none": ((0, 0), (0, 0), (0, 0)),
    "eagle3": ((1, -1), (1, 0), (0, 1)),
    "mtp": ((1, -1), (1, 0), (1, 0)),
    "mtp_eagle": ((1, -1), (1, 0), (0, 1)),
    "draft_target": _ONE_MODEL,
    "dflash": _ONE_MODEL,
    "pard": ((1, -1), (2, -1), (0, 0)),
    **dict.fromkeys(TWO_MODEL_MODES, ((0, 0), (1, 0), (0, 0))),
}

# Attention kinds decode context parallelism shards (full) or leaves whole on every rank
# (recurrent state, cache-less layers); the engines refuse DCP with any other attention
# (vLLM ``SlidingWindowSpec`` asserts "DCP not support sliding window"), docs/cost-model.md §9.
DCP_ATTENTION = ("full", "recurrent", "none")

_FLOAT32 = struct.Struct("f")


def mode_headroom(
    mode: str, max_draft_len: int, tree_draft_tokens: int | None = None
) -> tuple[int, int, int]:
    """(E, draft slots a step, D) of ``mode`` with K = ``max_draft_len`` (``HEADROOM``); an
    EAGLE3 draft tree carries ``tree_draft_tokens`` slots instead of K."""
    extra, slots, backoff = (a * max_draft_len + b for a, b in HEADROOM[mode])
    if mode == "eagle3" and tree_draft_tokens is not None:
        slots = tree_draft_tokens
    return extra, slots, backoff


def float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as the engine stores max_util_for_resume."""
    rounded: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    return rounded


# struct formats of n float32s, by n (a split has a handful of pool groups; bounded below).
_FLOAT32S: dict[int, struct.Struct] = {}


def float32s(values: Sequence[float]) -> list[float]:
    """:func:`float32` of each of ``values``, in one pass (the same rounding, one pack)."""
    count = len(values)
    packer = _FLOAT32S.get(count)
    if packer is None:
        packer = struct.Struct(f"{count}f")
        if len(_FLOAT32S) < 64:
            _FLOAT32S[count] = packer
    return list(packer.unpack(packer.pack(*values)))


# ---- refusals: what the engines refuse, worded once for the interpreter and the shim runtime


def dcp_with_attention_dp(dcp: int) -> str:
    return (
        f"dcp_size {dcp} shards the KV cache over the TP ranks that hold copies of it; "
        "attention_dp=True leaves every rank whole heads of its own requests "
        "(use dcp_size=1 with attention_dp=True)"
    )


def dcp_outside_tp(tp_size: int, dcp: int) -> str:
    return (
        f"tp_size {tp_size} must be divisible by dcp_size {dcp}: the DCP group is carved "
        "from the TP group"
    )


def dcp_attention(dcp: int, kind: str, attention: str) -> str:
    return (
        f"dcp_size {dcp} shards full-attention caches only; layer kind {kind!r} is "
        f"{attention} attention, which the engines refuse under decode "
        "context parallelism (use dcp_size=1)"
    )


def dcp_heads(dcp: int, kind: str, kv_heads: int, tp_size: int) -> str:
    return (
        f"dcp_size {dcp} needs {dcp} TP ranks holding copies of each KV head, but "
        f"layer kind {kind!r} splits {kv_heads} KV heads over tp_size {tp_size}: "
        f"dcp_size must be <= tp_size // kv_heads = {tp_size // kv_heads} "
        "(and tp_size > kv_heads)"
    )


def state_heads_name(n_groups: int, d_conv: int) -> str:
    """The spec's name for the heads of a state lowered to Mamba-2 dimensions (§8), as a tp
    refusal says it: a Mamba-1 state (no B/C groups, a conv window) splits ``d_inner``; a
    Mamba-2 / GDN state (groups) and a linear-attention state (no conv window) ``num_heads``."""
    return "num_heads" if n_groups or d_conv == 1 else "d_inner"


def uneven_state(tp_size: int, what: str, value: int) -> str:
    return (
        f"tp_size {tp_size} does not divide {what} {value} of the recurrent kind; "
        "the engine splits the state evenly (use a divisor, or attention_dp=True)"
    )


def no_encoder(model: object) -> str:
    return f"encoder_tokens is only for models with cross-attention layers; {model} has none"


def kv_sharing_rank(pp_size: int, pp_rank: int, layer: int, reads: int) -> str:
    # vLLM validate_kv_sharing_target: a reader's cache is on its own pipeline rank.
    return (
        f"pp_size {pp_size}: layer {layer} (pipeline rank {pp_rank}) reads the cache of "
        f"layer {reads}, held by an earlier rank; a layer reads only a cache on its own "
        "rank (choose a pp_size that keeps the shared layers with the layers they read)"
    )
