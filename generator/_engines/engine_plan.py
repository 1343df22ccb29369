"""``kvgen plan --engine vllm|sglang``: the plan in that engine's terms, from the sizing module's
own ``engine_capacity`` (docs/cost-model.md §9), never re-derived here.

What an engine refuses is told apart from what does not fit by asking it twice: once with a
budget no deployment has (a refusal there is the engine's, whatever the memory: a tp size the
model's heads do not split over, a shape or mode it does not take) and once with the budget.
``trtllm_refusal`` asks TensorRT-LLM V2's policy the same first question for the default plan.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

from kvgen._engines.plans import BatchPlan, Plan, PlanError, largest
from kvgen.sizing.engines_registry import DEFAULT_MAX_BATCH_SIZE, TRTLLM

if TYPE_CHECKING:
    from kvgen.sizing.engines_rows import EngineCapacity

__all__ = ["engine_plan", "engine_refusal", "trtllm_refusal"]

_ANY_BUDGET = 1 << 62  # bytes: more than any device, so only a refusal can fail


def _capacity(
    sizing: types.ModuleType,
    plan: Plan,
    budget: int,
    max_seq_len: int,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
) -> EngineCapacity:
    """``engine_capacity`` of the plan; ``max_batch_size`` is SGLang's max_running_requests,
    which an EAGLE/MTP drafter on a recurrent hybrid reserves intermediate states for."""
    strategy = plan.mamba_radix_cache_strategy
    capacity: EngineCapacity = sizing.engine_capacity(
        plan.model,
        budget,
        engine=plan.engine.argument,  # the label for a default release (every runtime takes it)
        max_seq_len=max_seq_len,
        max_num_tokens=plan.max_num_tokens,
        block_size=plan.block_size,
        speculative=plan.speculative,
        tp_size=plan.tp_size,
        max_batch_size=max_batch_size,
        **({} if strategy is None else {"mamba_radix_cache_strategy": strategy}),
        **({"heterogeneous_vocab": True} if plan.heterogeneous_vocab else {}),
    )
    return capacity


def recurrent(sizing: types.ModuleType, model: str) -> bool:
    """Whether ``model`` keeps a recurrent state (SGLang's Mamba pool and radix cache)."""
    return any(layer.attention == "recurrent" for layer in sizing.ENGINE_MODELS[model].layers)


def engine_refusal(sizing: types.ModuleType, plan: Plan) -> str | None:
    """The engine's reason for refusing this deployment at any budget; None if it takes it."""
    try:
        _capacity(sizing, plan, _ANY_BUDGET, plan.max_seq_len)
    except ValueError as exc:  # NotModelled too: no answer is not an answer of "fits"
        return str(exc)
    return None


def engine_plan(
    sizing: types.ModuleType,
    plan: Plan,
    batch_sizes: list[int],
    limit: int,
    mamba_radix_cache_strategy: str,
) -> Plan:
    """Fill ``plan`` (an engine whose answer is its own ``engine_capacity``, vLLM or SGLang)
    from ``sizing.engine_capacity``; ``PlanError`` for a refusal, with the engine's reason.
    ``limit``: the longest max_seq_len sized for; ``mamba_radix_cache_strategy``: SGLang's on
    a recurrent hybrid (recorded on the plan where the engine reads it)."""
    engine = plan.engine.engine
    name = engine.title
    plan.engine_version = plan.engine.named
    for flag, value in (("--pp-size", plan.pp_size), ("--dcp-size", plan.dcp_size)):
        if value != 1:
            raise PlanError(
                f"{flag} {value}: kvgen's {name} model sizes one pipeline stage of the whole "
                "model without context parallelism; plan it with --engine trtllm-v2"
            )
    if plan.seq_len != plan.max_seq_len:
        raise PlanError(
            f"--seq-len: {name} reports its concurrency at max_seq_len (its max_model_len / "
            "context length); give --max-seq-len instead"
        )
    if "mamba_radix_cache_strategy" in engine.reads and recurrent(sizing, plan.model):
        plan.mamba_radix_cache_strategy = mamba_radix_cache_strategy
    refusal = engine_refusal(sizing, plan)
    if refusal is not None:
        raise PlanError(f"refused by {plan.engine_version}: {refusal}")
    try:
        # At the first --max-batch-size, as --emit sets max_running_requests.
        running = batch_sizes[0] if batch_sizes else DEFAULT_MAX_BATCH_SIZE
        cap = _capacity(sizing, plan, plan.gpu_memory, plan.max_seq_len, running)
        plan.capacity = dict(cap._asdict())
        plan.max_requests = int(cap.max_concurrency)
    except ValueError as exc:  # the budget does not hold one request: the engine would not start
        plan.engine_error = f"{plan.engine_version} would refuse to start: {exc}"
    strategy = plan.mamba_radix_cache_strategy
    if strategy == "disabled":
        plan.notes.append(
            "SGLang keeps one recurrent state slot per max_running_requests with the radix "
            "cache disabled (kv_cache_configurator.py _handle_max_mamba_cache), so each "
            f"--max-batch-size is sized with its own; the capacity above at {running}, as "
            "--emit sglang sets it (--mamba-radix-cache-strategy disabled)"
        )
    else:
        plan.notes.append(
            f"{name}'s concurrency is not capped by a batch size in the KV sizing: "
            f"{engine.settings.batch_field} limits the requests running at once, not the pool"
        )
    if plan.heterogeneous_vocab:
        plan.notes.append(
            "use_heterogeneous_vocab (--heterogeneous-vocab): vLLM runs the draft model of "
            "another vocabulary with greedy draft sampling only; its layers share the pool"
        )
    if strategy not in (None, "disabled") and plan.speculative != "none" and batch_sizes:
        plan.notes.append(
            "except the intermediate states of a drafter on a recurrent hybrid, which SGLang "
            f"reserves for max_running_requests (the first --max-batch-size, {batch_sizes[0]}, "
            "as --emit sglang sets it)"
        )
    if strategy is not None and strategy != "disabled":
        ratio = sizing.SGLANG_MAMBA_SLOTS_PER_REQUEST[strategy]
        plan.notes.append(
            f"SGLang runs at most one request per {ratio} recurrent state slots under "
            f"mamba_radix_cache_strategy {strategy} (kv_cache_configurator.py "
            "resolve_max_num_reqs), whatever its tokens hold (--mamba-radix-cache-strategy)"
        )
    for batch in batch_sizes:

        def fits(length: int, batch: int = batch) -> bool:
            try:
                cap = _capacity(sizing, plan, plan.gpu_memory, length, batch)
                return cap.max_concurrency >= batch
            except ValueError:
                return False

        entry = BatchPlan(batch)
        entry.max_seq_len_fit = largest(fits, limit)
        plan.batches.append(entry)
    return plan


def trtllm_refusal(sizing: types.ModuleType, plan: Plan) -> None:
    """``PlanError`` with TensorRT-LLM's reason where it refuses the deployment at any budget
    (the engine policy of the module's ``engine_capacity``; a shape that policy does not
    model, such as cross-attention, is no refusal: the cost functions answer for it)."""
    from kvgen.sizing.engines_rows import NotModelled

    if not hasattr(sizing, "engine_capacity"):
        return
    try:
        sizing.engine_capacity(
            plan.model, 1 << 62, engine=TRTLLM.label, max_seq_len=plan.max_seq_len,
            max_num_tokens=plan.max_num_tokens, speculative=plan.speculative,
            tp_size=plan.tp_size, max_batch_size=1,
        )  # fmt: skip
    except NotModelled:
        return
    except ValueError as exc:
        raise PlanError(f"refused: {exc}") from None
