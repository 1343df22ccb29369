"""What a plan is (``kvgen plan``): the records ``kvgen._engines.planner`` and
``kvgen._engines.engine_plan`` fill and the commands print, the refusal they raise, and the search
both use. A leaf module: both planners import it, neither imports the other's records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kvgen.sizing.engines_registry import DEFAULT_RELEASE, Release

__all__ = ["BatchPlan", "ManagerPlan", "Plan", "PlanError", "largest"]


class PlanError(Exception):
    """A plan cannot be made: no generated module, unknown model, bad argument."""


@dataclass(frozen=True)
class ManagerPlan:
    name: str
    slope: int
    intercept: int
    share: int
    max_tokens: int | None  # None: nothing bounds it


@dataclass
class BatchPlan:
    max_batch_size: int
    managers: list[ManagerPlan] = field(default_factory=list)
    error: str | None = None  # the budget does not cover the intercepts
    max_seq_len_fit: int = 0  # largest max_seq_len for max_batch_size requests of that length


@dataclass
class Plan:
    family: str
    model: str
    speculative: str
    semantics: str
    gpu_memory: int
    max_num_tokens: int
    max_seq_len: int
    native_max_seq_len: int
    tp_size: int
    seq_len: int
    max_requests: int = 0  # requests of seq_len tokens that fit at once (batch = requests)
    batches: list[BatchPlan] = field(default_factory=list)
    dcp_size: int = 1  # decode context parallelism: history sharded over dcp TP ranks (§9)
    # whose terms: kvgen's TensorRT-LLM V2 model, vLLM's or SGLang's (JSON: the engine's label)
    engine: Release = DEFAULT_RELEASE
    engine_version: str = ""
    pp_size: int = 1  # pipeline stages: every rank is planned, the tightest one reported
    pp_rank: int = 0  # the binding rank (fewest target tokens at the first batch size)
    block_size: int | None = None  # page size asked for (None: the engine's own)
    kv_cache_dtype: str | None = None  # an override of the spec's dtype (None: as specified)
    rope_scaled: bool = False  # max_seq_len above the native length, by RoPE scaling
    capacity: dict[str, float] | None = None  # vLLM / SGLang: engine_capacity at max_seq_len
    engine_error: str | None = None  # vLLM / SGLang: why the engine would not start here
    notes: list[str] = field(default_factory=list)  # caps and refusals, in the engine's words
    engine_source: str = ""  # where the engine was chosen: --engine, the config, the default
    # SGLang on a recurrent hybrid: the Mamba radix cache strategy planned (its state slots per
    # running request); None where it does not apply.
    mamba_radix_cache_strategy: str | None = None
    heterogeneous_vocab: bool = False  # vLLM: speculative_config use_heterogeneous_vocab

    @property
    def fits(self) -> bool:
        if self.engine_error is not None:
            return False  # the engine would not start on this budget
        if self.capacity is not None and self.capacity["max_concurrency"] < 1:
            return False  # the engine cannot hold one request at max_seq_len
        return all(batch.error is None for batch in self.batches)


def largest(fits: Callable[[int], bool], high: int) -> int:
    """The largest n in [1, high] with fits(n) (assumed monotone), 0 when none."""
    if not fits(1):
        return 0
    low, step = 1, 2
    while step < high and fits(step):  # gallop: costs are cheap but the range is wide
        low, step = step, step * 2
    high = min(step, high)
    if fits(high):
        return high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low
