"""TensorRT-LLM V2 (the reference engine) as an ``EngineCapacity``, from kvgen's own cost model.

The engine (the early-2026 revision) is handed the target's share of the budget in whole
grains (the quota ``kvgen plan --emit trtllm`` emits) and splits it over its pool groups
itself (``kvgen.sizing.trtllm_split``, docs/cost-model.md §4, §10); kvgen reads its numbers as:

- ``kv_tokens``: the largest multiple of tpb tokens of full-attention history T whose
  "trtllm-v2" pools, ceil(T/tpb) full pages and per sliding life cycle B * pages(w, H) +
  ceil(min(T, N)/tpb), fit the slots the split builds in every pool group (``B x
  max_seq_len`` when nothing grows with T); where the split is not modelled (recurrent
  state, DCP pages) the affine estimate's ``tokens(q)`` of §4;
- ``request_bytes``: one request at ``max_seq_len``: ``S*slope + per_request + min(S, N)*ctx_swa``;
- ``max_concurrency``: ``min(kv_tokens / max_seq_len, B)`` (no more than B requests reside);
- ``num_blocks``: full-attention pages of ``kv_tokens`` (``kv_tokens // block_size``).

``kvgen.sizing.engines_trtllm._trtllm_capacity`` computes it (one implementation: the generated
modules' ``engine_capacity`` is the same function over the family's tables).
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

from kvgen._model.cache_kinds import spec_kind
from kvgen.sizing.engines_rows import UNMODELLED, NotModelled

if TYPE_CHECKING:
    from kvgen._spec.models import Family

_SIZING_BOUND = 256
# Per (family object, page size): the family's sizing module, bound in memory.
_SIZING: dict[tuple[int, int], tuple[Family, types.ModuleType]] = {}


def sizing(family: Family, block_size: int) -> types.ModuleType:
    """The sizing interpreter bound to ``family``'s tables at ``block_size`` tokens per page:
    the static model every generated module binds, so the engine row and the module agree."""
    key = (id(family), block_size)
    hit = _SIZING.get(key)
    if hit is not None and hit[0] is family:
        return hit[1]
    from kvgen._generate.sizing_context import bound_module  # the render side: only when asked

    tables = family
    if block_size != family.tokens_per_block:
        tables = family.model_copy(update={"tokens_per_block": block_size})
    module = bound_module(tables)
    if len(_SIZING) >= _SIZING_BOUND:
        _SIZING.clear()
    _SIZING[key] = (family, module)
    return module


def target_terms(
    family: Family,
    model_name: str,
    *,
    speculative: str,
    max_batch_size: int,
    max_num_tokens: int,
    max_seq_len: int,
    tp_size: int,
    block_size: int,
) -> dict[str, int]:
    """The target manager's named static terms (§4) at ``block_size`` tokens/page.
    NotModelled for cross-attention layers: the engine sizes their encoder cache in a cross KV
    cache manager of its own (docs/cost-model.md §4)."""
    model = next((m for m in family.models if m.name == model_name), None)
    if model is not None and any(spec_kind(k).encoder_cache for k in model.layer_kinds.values()):
        raise NotModelled(f"{model_name}: {UNMODELLED['cross']}", "cross")
    terms: dict[str, dict[str, int]] = sizing(family, block_size).cost_terms(
        model_name,
        speculative=speculative,
        max_batch_size=max_batch_size,
        max_num_tokens=max_num_tokens,
        max_seq_len=max_seq_len,
        tp_size=tp_size,
    )
    return terms["target"]
