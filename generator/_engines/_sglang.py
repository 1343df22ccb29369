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
- **running requests**: at most one request runs per ``ratio`` state slots
  (``resolve_max_num_reqs``, ``_calculate_mamba_ratio``), whatever the attention pool holds;
  fewer slots than that and SGLang refuses to start. The ratio follows the Mamba radix cache's
  strategy as ``ServerArgs.resolve_once`` picks it (``arg_groups/overrides.py``
  ``_mamba_radix_cache_resolution``): on CUDA every shipped hybrid gets ``extra_buffer`` with
  the overlap scheduler on (speculative decoding too), 3 + 2 tracking slots = 5
  (``get_mamba_tracking_slots``); ``no_buffer`` (``--mamba-radix-cache-strategy no_buffer
  --disable-overlap-schedule``, page size 1 only) keeps 3; ``extra_buffer_lazy`` and
  ``extra_buffer_no_overlap`` (one tracking slot) 4; ``disabled`` (``--disable-radix-cache``)
  1, its slots ``max(1, max_running_requests)`` instead of the memory ratio
  (``_handle_max_mamba_cache``).
- **KV-shared layers** (Gemma 3n) get a buffer of their own: the pool is sized for every
  hidden layer. A **DSA indexer** (DeepSeek-V3.2) keeps its fp8 keys (132 B) in each latent
  layer's cell; an fp8_e4m3 latent on Hopper (flashmla_kv) is 656 B.
- **drafters**: an EAGLE3/MTP drafter's layers are charged at the target's per-layer size
  (a hybrid-SWA model's: its full layers' size, in the full pool); so are a separate draft
  model's (STANDALONE: its config's layer count, SGLang assuming the target's per-layer KV
  size whatever the draft's own heads). NGRAM adds no layers. On a recurrent hybrid every
  drafter's verify keeps ``speculative_num_draft_tokens`` (k + 1) intermediate states per
  running request. PARD and TensorRT-LLM's two-model EAGLE3 are refused (SGLang has neither).
- **fp32 SSM state**: the SSM part of a recurrent state is kept in fp32 by default (the conv
  part in bf16), doubling the SSM bytes a bf16 spec describes.
- Page alignment: each pool's token count is rounded down to whole pages.

``EngineCapacity`` for SGLang (kvgen's reading; SGLang logs pool sizes, not these):
``kv_tokens`` is the full pool's tokens, ``num_blocks`` its pages, ``request_bytes`` one
request at ``max_seq_len`` (full-length layers, plus ``min(S, window + page)`` sliding tokens
in a hybrid-SWA model, plus one state slot), and ``max_concurrency`` how many such requests the
pools hold together (in a Mamba hybrid at most state slots // ratio, what SGLang runs at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvgen._model.engine_rows import SGLANG_HYBRID_SWA_ARCHITECTURES as HYBRID_SWA_ARCHITECTURES
from kvgen._model.engine_rows import engine_model
from kvgen.sizing import engines_rows, engines_sglang
from kvgen.sizing.engines_rows import SSM_DTYPES, EngineDraft, EngineModel, NotModelled
from kvgen.sizing.engines_sglang import (
    MAMBA_FULL_MEMORY_RATIO,
    SWA_FULL_TOKENS_RATIO,
    SglangPlan,
    SglangPools,
    sglang_pools,
)

if TYPE_CHECKING:
    from kvgen._spec.models import Family, Model, Speculative
    from kvgen.sizing.engines_registry import Release

__all__ = [
    "HYBRID_SWA_ARCHITECTURES",
    "MAMBA_FULL_MEMORY_RATIO",
    "MAMBA_STRATEGIES",
    "MAMBA_STRATEGY",
    "SLOTS_PER_RUNNING_REQUEST",
    "SSM_DTYPES",
    "SWA_FULL_TOKENS_RATIO",
    "SglangPlan",
    "SglangPools",
    "sglang_plan",
    "sglang_pools",
    "sliding_tokens_per_request",
]

SLOTS_PER_RUNNING_REQUEST = engines_sglang.SGLANG_MAMBA_SLOTS_PER_REQUEST  # by strategy
MAMBA_STRATEGIES = engines_sglang.SGLANG_MAMBA_STRATEGIES
MAMBA_STRATEGY = engines_sglang.SGLANG_MAMBA_STRATEGY
sliding_tokens_per_request = engines_sglang.sglang_sliding_tokens


def sglang_plan(
    family: Family,
    model: Model,
    *,
    tp_size: int = 1,
    ssm_dtype: str = "fp32",
    hybrid_swa: bool | None = None,
    speculative: Speculative | None = None,
    served_by: Release | None = None,
    dtype: str | None = None,
) -> SglangPlan:
    """Bytes per token of each pool and per state slot, as SGLang 0.5.23 counts them
    (``kvgen.sizing.engines_sglang.sglang_plan`` on the model's engine rows; ``served_by`` /
    ``dtype``: in the dtype that release serves them in, ``_vllm.vllm_plan``)."""
    entry = engine_model(family, model, served_by, dtype)
    if hybrid_swa is not None:
        entry = EngineModel(
            entry.max_seq_len, entry.layers, entry.drafts, hybrid_swa, entry.ssm_state_bytes,
            entry.unmodelled, entry.query_heads, entry.vllm_ssm_dtype,
            entry.vllm_unmodelled, entry.sglang_unmodelled, entry.sglang_layers,
            entry.sglang_encoder_tokens,
        )  # fmt: skip
    draft = EngineDraft() if speculative is None else entry.drafts[speculative.name]
    if speculative is not None and not draft.sglang_draft_tokens:
        reason = draft.sglang_unmodelled
        if reason:
            raise NotModelled(
                f"speculative {speculative.name!r}: {engines_rows.UNMODELLED[reason]}", reason
            )
        raise NotModelled(
            f"speculative {speculative.name!r} is not modelled for engine 'sglang' "
            "(EAGLE3, MTP, NGRAM and separate draft model profiles are)"
        )
    return engines_sglang.sglang_plan(
        entry, tp_size=tp_size, ssm_dtype=ssm_dtype, draft_layers=draft.sglang_layers,
        draft_tokens=draft.sglang_draft_tokens,
    )  # fmt: skip
