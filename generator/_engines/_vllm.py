"""vLLM's KV-cache pool policy, pinned to vLLM 0.33.0, in kvgen's own terms (stdlib only).

What vLLM 0.33.0 does with the same layers kvgen describes, as its engine core plans the pool at
start-up (read in ``vllm/v1/core/kv_cache_planning.py``, ``kv_cache_utils.py``,
``vllm/v1/kv_cache_interface.py`` and ``vllm/platforms/interface.py``; verified against numbers
that vLLM's own code produced, ``tests/fixtures/engines/vllm.json``):

- One shared pool of blocks. A *group* is a set of layers that share one block table; a block
  of the pool holds one page of every layer of the widest group, so
  ``bytes_per_block = max over groups of (layers in group x page bytes)``.
- **group padding layers**: a hybrid (sliding + full, or Mamba + attention) model is cut into
  groups of equal layer count: the smallest kind's count, or the largest when it is under 1.5x
  the smallest. A kind whose count is not a multiple gets a short group, whose missing layers
  still take a page in every block (gemma3_27b: 52 sliding + 10 full -> 7 groups of 10, 8
  padding layers).
- **null block**: one block of the pool is never handed out; a request at ``max_seq_len`` must fit
  in the rest or the engine refuses to start.
- **per-request SWA bound**: a sliding layer reserves
  ``ceil(min(window - 1 + in_flight, max_seq_len) / block_size) + 1`` blocks per request, where
  ``in_flight = concurrent batches x max_num_batched_tokens`` (2 batches under async scheduling,
  the default). It adds the whole in-flight budget to every request.
- **Mamba page unification**: in a Mamba hybrid the attention block size grows (in multiples
  of the kernel block, 16 tokens for FlashAttention) until one attention page holds a Mamba
  state; the Mamba page is padded up to the attention page. A Mamba group takes one block per
  request with ``mamba_cache_mode="none"`` (prefix caching off); ``"align"``, vLLM's default
  for hybrids (prefix caching on, ``MambaModelConfig``), keeps the running state, the last
  block's and one prefill checkpoint block (Mamba-2 always; Gated DeltaNet under the FlashInfer
  prefill, which also puts attention blocks on a 64-token grid): 3 + K blocks.
- **Mamba page** (``MambaStateShapeCalculator``): the conv window holds
  ``d_conv - 1 + num_speculative_tokens`` rows (Mamba-2, Gated DeltaNet); Mamba-2 B/C groups
  fewer than tp are replicated up to tp (``extra_groups_for_head_shards``); the SSM state is
  in the conv dtype unless a model hook sets it (Nemotron-H: fp32,
  ``NemotronHForCausalLMConfig``).
- **tp refusals**: the query heads must divide by tp (``ModelConfig.verify_with_parallel_config``)
  and most attention classes assert that the KV heads split over tp (or tp over them).
- Speculative decoding (``ngram``, and drafters whose layers share the pool: ``eagle3``,
  ``mtp``, ``mtp_eagle``): the drafter's layers join the grouping like any other layer, every
  Mamba layer keeps one more state block per draft token, and a multi-module MTP drafter keeps
  K - 1 more tokens below each sliding window. A separate draft model (``draft_target``,
  vLLM's ``draft_model`` method) puts its own layers in the same pool; other separate
  drafters (PARD, DFlash, two-model EAGLE) are not modelled.
- Reported capacity: ``max_concurrency = num_blocks / blocks per request at max_seq_len`` (all
  groups together) and ``kv_tokens = int(max_concurrency x max_seq_len)``, the numbers vLLM logs
  as "KV cache size" and "Maximum concurrency".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvgen._model.engine_rows import VLLM_SPECULATIVE_MODES as SPECULATIVE_MODES
from kvgen._model.engine_rows import engine_model
from kvgen.sizing import engines_vllm
from kvgen.sizing.engines_vllm import (
    GDN_PREFILL_BACKENDS,
    MAMBA_CACHE_MODES,
    VLLM_MAMBA_CACHE_MODE,
    VllmGroups,
    VllmPlan,
)

if TYPE_CHECKING:
    from kvgen._spec.models import Family, Model, Speculative
    from kvgen.sizing.engines_registry import Release

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "GDN_PREFILL_BACKENDS",
    "MAMBA_CACHE_MODES",
    "SPECULATIVE_MODES",
    "VLLM_MAMBA_CACHE_MODE",
    "VllmGroups",
    "VllmPlan",
    "in_flight_tokens",
    "longest_fitting",
    "request_blocks",
    "vllm_plan",
]

DEFAULT_BLOCK_SIZE = engines_vllm.VLLM_BLOCK_SIZE
request_blocks = engines_vllm.vllm_request_blocks
longest_fitting = engines_vllm.vllm_longest_fitting


def vllm_plan(
    family: Family,
    model: Model,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    tp_size: int = 1,
    speculative: Speculative | None = None,
    mamba_cache_mode: str = engines_vllm.VLLM_MAMBA_CACHE_MODE,
    gdn_prefill_backend: str = "flashinfer",
    ssm_dtype: str | None = None,
    heterogeneous_vocab: bool = False,
    named: str = engines_vllm.VLLM_NAMED,
    served_by: Release | None = None,
    dtype: str | None = None,
) -> VllmPlan:
    """Group the model's layers and size one block of the pool, as vLLM 0.33.0 and 0.34.0
    do (``kvgen.sizing.engines_vllm.vllm_plan`` on the model's engine rows); ``named``: the release
    its refusals name; ``served_by`` / ``dtype``: the rows in the dtype that release serves
    them in (``kvgen._model.engine_rows.engine_model``; None: the spec's)."""
    return engines_vllm.vllm_plan(
        engine_model(family, model, served_by, dtype),
        block_size=block_size,
        tp_size=tp_size,
        speculative="none" if speculative is None else speculative.name,
        mamba_cache_mode=mamba_cache_mode,
        gdn_prefill_backend=gdn_prefill_backend,
        ssm_dtype=ssm_dtype,
        heterogeneous_vocab=heterogeneous_vocab,
        named=named,
    )


def in_flight_tokens(max_num_tokens: int, *, async_scheduling: bool, pp_size: int = 1) -> int:
    """Tokens scheduled but not yet settled: one batch per concurrent step."""
    return (2 if async_scheduling and pp_size == 1 else pp_size) * max_num_tokens
