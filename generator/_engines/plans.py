"""What a plan is (``kvgen plan``): the records ``kvgen._engines.planner`` and
``kvgen._engines.engine_plan`` fill and the commands print, the refusal they raise, and the search
both use. A leaf module: both planners import it, neither imports the other's records."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kvgen.sizing.engines_registry import DEFAULT_RELEASE, Release

__all__ = [
    "BatchPlan",
    "ManagerPlan",
    "Plan",
    "PlanError",
    "fit_ranges",
    "largest",
    "misfits",
    "request_ranges",
]


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
    # The shorter max_seq_len that do not fit (first, last), where the lengths that fit are not
    # one interval (TensorRT-LLM 38198e34: fit_ranges), and why the first of them does not.
    misfits: list[tuple[int, int]] = field(default_factory=list)
    misfit_reason: str = ""

    @property
    def misfit_note(self) -> str | None:
        """The line under "largest max_seq_len" where some shorter ones do not fit."""
        return _misfit_note("shorter", self.misfits, self.misfit_reason)


def _misfit_note(smaller: str, misfits: list[tuple[int, int]], reason: str) -> str | None:
    """The line under a largest fit where some ``smaller`` values do not fit (None: all do)."""
    if not misfits:
        return None
    spans = ", ".join(str(a) if a == b else f"{a} to {b}" for a, b in misfits)
    return f"but not every {smaller} one fits: {spans} do not ({reason})"


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
    # The smaller request counts that do not fit (first, last), where the counts that fit are
    # not one interval (TensorRT-LLM 38198e34: request_ranges), and why the first does not.
    request_misfits: list[tuple[int, int]] = field(default_factory=list)
    request_misfit_reason: str = ""

    @property
    def request_misfit_note(self) -> str | None:
        """The line under "max concurrent requests" where some smaller counts do not fit."""
        return _misfit_note("smaller", self.request_misfits, self.request_misfit_reason)

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


# A probe of one max_seq_len S for B requests of S tokens: whether every condition whose
# capacity never grows with S holds (the target's pools, the intercepts), and the least tokens
# held by the pools whose capacity never shrinks with S (a separate draft's; None: none, or
# unbounded).
Probe = Callable[[int], tuple[bool, int | None]]


def fit_ranges(
    probe: Probe, batch: int, high: int, regimes: Sequence[int], cell: int, offset: int = 0
) -> list[tuple[int, int]]:
    """Every max_seq_len S in [1, high] at which ``batch`` requests of S tokens fit, as sorted
    disjoint (first, last) ranges: S fits when ``probe(S)`` settles and its growing capacity
    (if any) holds ``batch * S`` tokens. Exact, whatever the shape of the set, given what the
    caller states about the costs:

    - ``regimes``: the S at which the pools' layout changes (a window w of some layer is full
      attention up to S = w and sliding from w + 1); the search treats each regime apart;
    - within a regime, the settled conditions hold on a prefix (their capacity does not grow
      with S while the need ``batch * S`` does), so a bisection finds their last S;
    - the growing capacity does not shrink with S within a regime, so once it holds at S it
      holds up to ``capacity // batch`` (one probe covers that stretch);
    - it changes only where S + ``offset`` crosses a multiple of ``cell`` (a request's pages),
      so where it fails at S it fails up to the end of S's cell, and the next candidate is the
      next cell's first S.

    The cost is a bisection per regime plus a probe per stretch that fits and per cell that
    does not; a monotone predicate gives the answer of :func:`largest`."""
    memo: dict[int, tuple[bool, int | None]] = {}

    def at(s: int) -> tuple[bool, int | None]:
        if s not in memo:
            memo[s] = probe(s)
        return memo[s]

    starts = sorted({1, *(s for s in regimes if 1 < s <= high)})
    ranges: list[tuple[int, int]] = []
    for lo, hi in zip(starts, [s - 1 for s in starts[1:]] + [high], strict=True):
        if not at(lo)[0]:
            continue
        top = hi
        if not at(hi)[0]:  # the settled conditions' last S: a prefix of [lo, hi]
            low, top = lo, hi
            while top - low > 1:
                mid = (low + top) // 2
                low, top = (mid, top) if at(mid)[0] else (low, mid)
            top = low
        s = lo
        while s <= top:
            capacity = at(s)[1]
            if capacity is None or capacity >= batch * s:
                end = top if capacity is None else min(top, capacity // batch)
                if ranges and ranges[-1][1] == s - 1:
                    ranges[-1] = (ranges[-1][0], end)
                else:
                    ranges.append((s, end))
                s = end + 1
            else:  # fails to the end of its cell: S + offset a multiple of cell
                s += (-(s + offset)) % cell + 1
    return ranges


# A probe of B requests (max_batch_size B) of one length L at one max_seq_len: as Probe, with
# the settled conditions' capacity never growing with B and the need B x L.
RequestProbe = Callable[[int], tuple[bool, int | None]]


def request_ranges(
    probe: RequestProbe,
    length: int,
    high: int,
    capacity: Callable[[int], int | None] | None = None,
) -> list[tuple[int, int]]:
    """Every request count B in [1, high] at which B requests of ``length`` tokens fit, as
    sorted disjoint (first, last) ranges: B fits when ``probe(B)`` settles and its growing
    capacity (if any) holds ``B * length`` tokens. Exact given one premise the caller states:
    the settled conditions hold on a prefix of [1, high] (their capacity never grows with B,
    the need does), so a bisection finds their last B, T. The other capacity (a separate
    draft's at TensorRT-LLM 38198e34) follows no order in B (its share grows by a mirror per
    request, its own pool split jumps), so every B up to T is evaluated: from T down to the
    first that fits (the answer), then below it for the counts that do not. ``capacity(B)``,
    where given, is that capacity alone for a B at which the settled conditions hold (equal
    to ``probe(B)[1]`` there, cheaper: the scan does not recompute what settled). The cost is
    the bisection plus T evaluations (T is bounded by the budget over one request's fixed
    cost); with no such capacity the bisection alone, and the answer of :func:`largest`."""
    memo: dict[int, tuple[bool, int | None]] = {}

    def at(b: int) -> tuple[bool, int | None]:
        if b not in memo:
            memo[b] = probe(b)
        return memo[b]

    top = largest(lambda b: at(b)[0], high)
    grown = capacity or (lambda b: at(b)[1])

    def holds(b: int) -> bool:
        found = memo[b][1] if b in memo else grown(b)
        return found is None or found >= b * length

    ranges: list[tuple[int, int]] = []
    for b in range(top, 0, -1):
        if not holds(b):
            continue
        if ranges and ranges[0][0] == b + 1:
            ranges[0] = (b, ranges[0][1])
        else:
            ranges.insert(0, (b, b))
    return ranges


def misfits(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The lengths below the last range's end that are in no range (1 onward)."""
    out, after = [], 0
    for first, last in ranges:
        if first > after + 1:
            out.append((after + 1, first - 1))
        after = last
    return out
