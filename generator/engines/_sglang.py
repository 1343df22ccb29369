"""SGLang's KV pool policy, pinned to SGLang 0.5.23, in kvgen's own terms (stdlib only).

SGLang sizes token pools, not block tables: a budget becomes a number of token slots per pool.
Its policies for the physics kvgen describes (read in ``sglang/srt/model_executor/
pool_configurator.py``, ``sglang/srt/mem_cache/kv_cache_configurator.py`` and
``sglang/srt/configs/mamba_utils.py``; checked against ``tests/fixtures/engines/sglang.json``,
numbers SGLang's own pool configurators produced on CPU):

- **full-length layers**: unless the architecture is on SGLang's hybrid-SWA list, every
  attention layer (sliding ones included) gets a slot per pool token. Of kvgen's families only
  gpt-oss is on that list; Gemma 2/3, Cohere2, Mistral and Phi-3 are sized full length.
- **SWA ratio**: a hybrid-SWA model gets a sliding pool of a fixed ``swa_full_tokens_ratio``
  (0.8) of the full pool's tokens, whatever the window; the budget is divided by
  ``full bytes + 0.8 x sliding bytes`` per token.
- **Mamba memory ratio**: a Mamba/linear-attention hybrid first gives
  ``r / (1 + r)`` of the budget (``mamba_full_memory_ratio`` r = 0.9) to whole state slots,
  one of them a padding slot, and the attention pool gets what is left.
- **fp32 SSM state**: the SSM part of a recurrent state is kept in fp32 by default (the conv
  part in bf16), doubling the SSM bytes a bf16 spec describes.
- Page alignment: each pool's token count is rounded down to whole pages.

``EngineCapacity`` for SGLang (kvgen's reading; SGLang logs pool sizes, not these):
``kv_tokens`` is the full pool's tokens, ``num_blocks`` its pages, ``request_bytes`` one
request at ``max_seq_len`` (full-length layers, plus ``min(S, window + page)`` sliding tokens
in a hybrid-SWA model, plus one state slot), and ``max_concurrency`` how many such requests the
pools hold together (limited by state slots in a Mamba hybrid).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kvgen.engines._layers import DTYPE_BYTES, NotModelled, cached_layers

if TYPE_CHECKING:
    from kvgen.spec import Family, Model

SGLANG_VERSION = "0.5.23"
DEFAULT_PAGE_SIZE = 1
SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
SSM_DTYPES = ("fp32", "bf16", "fp16")
# kvgen families whose architecture SGLang sizes as hybrid SWA (configs/model_config.py
# is_hybrid_swa_model: gpt-oss is in SWA_SINK_ARCHS).
HYBRID_SWA_FAMILIES = frozenset({"gpt_oss"})
# The SSM part of each recurrent layer's state_bytes (bf16, tp=1), from the shipped specs'
# derivations: a spec gives only the total, and SGLang stores this part in fp32.
# TODO(spec): move into the spec as a recurrent-kind field (docs/cost-model.md §8).
SSM_STATE_BYTES = {
    "qwen3_next_80b_a3b": 524288 * 2,  # 32 value heads x 128 x 128
    "nemotron_h_8b": 1048576 * 2,  # 128 heads x 64 x 128
    "nemotron_h_4b": 917504 * 2,  # 112 heads x 64 x 128
}
GIB = 1 << 30
_new = tuple.__new__  # a C call; NamedTuple's own __new__ is a Python function


class SglangPlan(NamedTuple):
    """The static part of SGLang's sizing for one model (bytes per pool token and per slot)."""

    full_bytes_per_token: int  # every layer sized full length
    swa_bytes_per_token: int  # hybrid-SWA sliding layers (0 otherwise)
    window: int | None  # the sliding window of a hybrid-SWA model
    state_bytes_per_request: int  # all recurrent layers, SSM part in the SSM dtype
    ssm_extra_bytes: int  # what the SSM dtype adds over the spec's dtype, per request
    native_max_seq_len: int  # the model's context length (SGLang's context_len)


def sglang_plan(
    family: Family,
    model: Model,
    *,
    tp_size: int = 1,
    ssm_dtype: str = "fp32",
    hybrid_swa: bool | None = None,
) -> SglangPlan:
    """Bytes per token of each pool and per state slot, as SGLang 0.5.23 counts them."""
    if ssm_dtype not in SSM_DTYPES:
        raise ValueError(f"ssm_dtype must be one of {SSM_DTYPES}, got {ssm_dtype!r}")
    layers = cached_layers(family, model)
    attention = [lay for lay in layers if lay.attention != "recurrent"]
    shapes = {(lay.kv_heads, lay.head_dim, lay.dtype) for lay in attention}
    if len(shapes) > 1:
        raise NotModelled(
            f"{model.name}: SGLang sizes every layer with one head count and head size; "
            "a model whose layers differ is not modelled"
        )
    if hybrid_swa is None:
        hybrid_swa = family.family in HYBRID_SWA_FAMILIES
    full = swa = 0
    window = None
    for lay in attention:
        heads = 1 if lay.attention == "mla" else max(1, lay.kv_heads // tp_size)
        per_token = heads * (lay.head_dim + lay.value_dim) * DTYPE_BYTES[lay.dtype]
        if hybrid_swa and lay.attention == "sliding":
            swa += per_token
            window = lay.window
        else:
            full += per_token
    state = extra = 0
    recurrent = [lay for lay in layers if lay.attention == "recurrent"]
    if recurrent:
        if model.name not in SSM_STATE_BYTES:
            raise NotModelled(f"{model.name}: the SSM share of its recurrent state is unknown")
        ssm = SSM_STATE_BYTES[model.name]
        # fp32 SSM state: the SSM part is stored at ssm_dtype instead of the spec's 2 bytes.
        extra_per_layer = ssm * DTYPE_BYTES[ssm_dtype] // 2 - ssm
        for lay in recurrent:
            state += (lay.state_bytes + extra_per_layer) // tp_size
            extra += extra_per_layer // tp_size
    return SglangPlan(full, swa, window, state, extra, model.max_seq_len)


class SglangPools(NamedTuple):
    full_tokens: int
    swa_tokens: int  # 0 unless hybrid SWA
    state_slots: int  # 0 unless Mamba hybrid (usable slots; one more is padding)


def sglang_pools(
    plan: SglangPlan,
    budget_bytes: int,
    page_size: int,
    *,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
) -> SglangPools:
    """Token slots of each pool for a KV budget."""
    budget_gib = budget_bytes / GIB  # SGLang keeps the budget in GiB as a float
    slots = 0
    if plan.state_bytes_per_request:
        # Mamba memory ratio: r/(1+r) of the budget to whole slots, one of them padding.
        share = budget_gib * mamba_full_memory_ratio / (1 + mamba_full_memory_ratio)
        per_slot = plan.state_bytes_per_request
        slots = int((share * GIB - per_slot) // per_slot)
        budget_gib -= (slots + 1) * per_slot / GIB
    usable = int(budget_gib * GIB)
    if plan.swa_bytes_per_token:
        # SWA ratio: the sliding pool is a fixed share of the full pool, whatever the window.
        per_token = plan.full_bytes_per_token + swa_full_tokens_ratio * plan.swa_bytes_per_token
        full = int(usable // per_token) // page_size * page_size
        swa = int(full * swa_full_tokens_ratio) // page_size * page_size
        return _new(SglangPools, (full, swa, slots))
    full = usable // plan.full_bytes_per_token // page_size * page_size
    return _new(SglangPools, (full, 0, slots))


def sliding_tokens_per_request(plan: SglangPlan, max_seq_len: int, page_size: int) -> int:
    """Sliding-pool tokens one request needs at admission: its window plus a page."""
    if plan.window is None:
        return 0
    return min(max_seq_len, plan.window + page_size)
