"""A layer-by-layer reference of the static cost: a validated family plus runtime parameters in,
costs out. A second opinion for the tests, not part of kvgen.

kvgen's one static model is the sizing interpreter (``kvgen.sizing.sizing_core``), which every
generated module and kvgen itself bind to a family's tables and which works per layer kind.
This module writes docs/cost-model.md again layer by layer, for readability; the tests check
the two agree on every shipped family (``tests/generated/test_sizing_agreement.py``), beside
the hand derivations, the runtime diff and the engine goldens that are the oracles.

Two semantics:
- ``"trtllm-v2"`` reproduces the engine's static estimate term by term (§4).
- ``"exact"`` adds what that estimate leaves out so that the result bounds the runtime peak
  of the page model (§3) from above, tightly (the terms of docs/cost-model.md §4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from kvgen._spec.models import (
    MODES_WITH_DRAFT_POOL,
    Family,
    Model,
    Speculative,
)
from kvgen.sizing.facts import float32, mode_headroom, no_encoder

from tests.reference.dcp import check_dcp, dcp_slope
from tests.reference.layers import (
    MAMBA_STATE_UPDATES,
    Layer,
    cross_pages,
    cycle_pages,
    pp_layer_range,
    stack_layers,
    state_terms,
)

SEMANTICS = ("trtllm-v2", "exact")

TIERS = ("gpu", "host")

# What the engine does beside the quota (§9): reported by ``engine_terms``, never added to the
# intercept or to any quota.
ENGINE_TERMS = {
    "startup_estimate_difference": (
        "the startup estimate calls the target manager with max_num_tokens = 0: it leaves out "
        "N*ctx_swa bytes that the runtime quota charges (target, where ctx_swa > 0)"
    ),
    "watermark_quota": (
        "a quota from max_tokens is divided by the resume watermark: ceil(quota(T) / "
        "float32(u)) - quota(T), reported at T = max_seq_len (the least max_tokens holding one "
        "request of S); absent where resume_rounding already applies the watermark"
    ),
    "cuda_graph_padding": (
        "the one CUDA-graph padding dummy (one per distinct runtime draft length): a "
        "generation request of one token at its step, capacity 1 + H, holding "
        "ceil((1 + H)/tpb) pages of every attention life cycle (its state row is "
        "state_reserved_rows)"
    ),
    "overlap_scheduler_requests": (
        "the overlap scheduler's index mapper admits B*pp*2 requests: a second batch of B "
        "would need B*per_request bytes more"
    ),
}


# --------------------------------------------------------------------------- headroom (§2)


@dataclass(frozen=True)
class Headroom:
    """Speculative headroom of one profile: E before a step, G consumed by a step (§2)."""

    extra: int  # E: capacity runs ahead of history by E before a step
    step: int  # G: tokens one generation step adds (1 + draft slots)
    slack: int  # opt-in overlap slack (the draft width K)
    backoff: int  # D: block-reuse window extension (§5)

    @property
    def total(self) -> int:
        """H = E + G (+ K with overlap slack): capacity minus history at the allocation peak."""
        return self.extra + self.step + self.slack

    @property
    def draft_slots(self) -> int:
        return self.step - 1


def headroom(profile: Speculative | None, *, overlap_slack: bool = False) -> Headroom:
    if profile is None:
        return Headroom(extra=0, step=1, slack=0, backoff=0)
    slack = profile.max_draft_len if overlap_slack else 0
    extra, slots, backoff = mode_headroom(
        profile.mode, profile.max_draft_len, profile.tree_draft_tokens
    )
    return Headroom(extra=extra, step=slots + 1, slack=slack, backoff=backoff)


# --------------------------------------------------------------------------- runtime params


@dataclass(frozen=True)
class RuntimeParams:
    max_batch_size: int
    max_num_tokens: int
    max_seq_len: int
    tp_size: int = 1
    pp_size: int = 1
    pp_rank: int = 0
    scratch_reuse: bool = False
    block_reuse: bool = False
    max_util_for_resume: float = 0.95
    overlap_slack: bool = False
    semantics: str = "trtllm-v2"
    attention_dp: bool = False  # tp = 1 for the KV cache and the state, one more reserved row
    mamba_state_update: str = "default"  # "replay": compact history instead of SSM states
    dcp_size: int = 1  # decode context parallelism: full-attention history sharded (§9)
    encoder_tokens: int | None = None  # cross-attention: overrides the spec's count (§4)

    @property
    def cache_tp_size(self) -> int:
        """The tp size the caches are split by: 1 under attention-DP (§9)."""
        return 1 if self.attention_dp else self.tp_size

    def page_span(self, tokens_per_block: int) -> int:
        """Tokens one full-attention page covers: a page of ``tpb`` tokens on each of the
        ``dcp_size`` ranks, which hold every dcp_size-th token (§9)."""
        return tokens_per_block * self.dcp_size

    def validate(self, model: Model) -> None:
        for name in ("max_batch_size", "max_num_tokens", "max_seq_len", "tp_size", "pp_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.max_seq_len > model.max_seq_len:
            raise ValueError(
                f"max_seq_len must be <= {model.max_seq_len} (native context of {model.name}), "
                f"got {self.max_seq_len}"
            )
        if self.pp_size > model.layers.count:
            raise ValueError(f"pp_size must be <= {model.layers.count} layers, got {self.pp_size}")
        if not isinstance(self.pp_rank, int) or not 0 <= self.pp_rank < self.pp_size:
            raise ValueError(f"pp_rank must be in [0, {self.pp_size}), got {self.pp_rank!r}")
        if not 0.0 < self.max_util_for_resume <= 1.0:
            raise ValueError(
                f"max_util_for_resume must be in (0, 1], got {self.max_util_for_resume!r}"
            )
        if self.semantics not in SEMANTICS:
            raise ValueError(f"semantics must be one of {SEMANTICS}, got {self.semantics!r}")
        if self.attention_dp is not True and self.attention_dp is not False:
            raise ValueError(f"attention_dp must be True or False, got {self.attention_dp!r}")
        if self.encoder_tokens is not None:
            check_encoder_tokens(model, self.encoder_tokens)
        if self.mamba_state_update not in MAMBA_STATE_UPDATES:
            raise ValueError(
                f"mamba_state_update must be one of {MAMBA_STATE_UPDATES}, "
                f"got {self.mamba_state_update!r}"
            )
        dcp = self.dcp_size
        if not isinstance(dcp, int) or isinstance(dcp, bool) or dcp < 1:
            raise ValueError(f"dcp_size must be a positive int, got {dcp!r}")


def cross_encoder_tokens(model: Model) -> int:
    """The most encoder tokens the model's cross-attention kinds cache per request; 0 for a
    model without cross-attention."""
    counts = [k.encoder_tokens or 0 for k in model.layer_kinds.values() if k.attention == "cross"]
    return max(counts, default=0)


def check_encoder_tokens(model: Model, value: object) -> None:
    """ValueError unless ``value`` is a positive int no larger than the model's encoder
    tokens (the encoder cannot produce more), and the model has cross-attention layers."""
    most = cross_encoder_tokens(model)
    if not most:
        raise ValueError(no_encoder(model.name))
    if type(value) is not int or not 1 <= value <= most:
        raise ValueError(
            f"encoder_tokens must be an int in [1, {most}] for {model.name}, got {value!r}"
        )


# --------------------------------------------------------------------------- managers (§4)


@dataclass(frozen=True)
class ManagerCost:
    """The static cost of one cache manager: ``cost(T) = slope * T + intercept``."""

    name: str
    slope: int
    per_request: int
    ctx_swa: int
    max_batch_size: int
    max_num_tokens: int
    exact_terms: dict[str, int] = field(default_factory=dict)
    resume_rounded_intercept: int | None = None  # single-SWA-pool draft (§4)
    state_terms: dict[str, int] = field(default_factory=dict)  # recurrent rows (§8)
    # "exact" (§4): the pools as whole pages. Bytes of the pools that do not grow with T, and
    # per growing pool (bytes per page, tokens its pages are rounded up with, capped at N).
    tokens_per_block: int = 1
    fixed_pool_bytes: int = 0
    pools: tuple[tuple[int, int, bool], ...] | None = None

    @property
    def base_intercept(self) -> int:
        return (
            self.max_batch_size * self.per_request
            + self.max_num_tokens * self.ctx_swa
            + sum(self.state_terms.values())
        )

    @property
    def intercept(self) -> int:
        if self.resume_rounded_intercept is not None:
            return self.resume_rounded_intercept
        return self.base_intercept + sum(self.exact_terms.values())

    @property
    def fixed(self) -> int:
        """Bytes held before any token of full-attention history."""
        return (
            self.max_batch_size * self.per_request
            + sum(self.exact_terms.values())
            + sum(self.state_terms.values())
        )

    def quota(self, tokens: int) -> int:
        """quota(T) = T*slope + B*per_request + min(T, N)*ctx_swa (+ exact terms)."""
        if self.resume_rounded_intercept is not None:
            return self.resume_rounded_intercept
        if self.pools is not None:
            return self.pool_bytes(tokens)
        return tokens * self.slope + self.fixed + min(tokens, self.max_num_tokens) * self.ctx_swa

    def max_tokens(self, quota: int) -> int | None:
        """Inverse of ``quota``: the largest T with quota(T) <= q; None when unbounded."""
        if self.resume_rounded_intercept is not None:
            return None if quota >= self.resume_rounded_intercept else 0
        if self.pools is not None:
            return self._whole_page_tokens(quota)
        room = quota - self.fixed
        if room < 0:
            return 0
        rate = self.slope + self.ctx_swa
        if self.slope == 0 and room >= self.max_num_tokens * self.ctx_swa:
            return None  # every context token fits and nothing else grows with T
        if room <= self.max_num_tokens * rate:
            return room // rate
        return self.max_num_tokens + (room - self.max_num_tokens * rate) // self.slope

    @property
    def pool_page_rounding(self) -> int | None:
        """ "exact": the most bytes whole pages add to ``slope*T + intercept`` at some T."""
        if self.pools is None or self.resume_rounded_intercept is not None:
            return None
        tpb = self.tokens_per_block
        return (tpb - 1) * sum(page_bytes // tpb for page_bytes, _, _ in self.pools)

    def pool_bytes(self, tokens: int) -> int:
        """ "exact": each pool holds ``ceil((min(T, N) + rounding) / tpb)`` pages (the full
        pool ``ceil((T + B*(tpb-1)) / tpb)``) on top of the pages that do not grow with T."""
        assert self.pools is not None
        tpb, total = self.tokens_per_block, self.fixed_pool_bytes
        for page_bytes, rounding, capped in self.pools:
            held = min(tokens, self.max_num_tokens) if capped else tokens
            total += page_bytes * -(-(held + rounding) // tpb)
        return total

    def _whole_page_tokens(self, quota: int) -> int | None:
        """The largest T with ``pool_bytes(T) <= quota``, by bisection over the monotone
        page counts (this reference model favours plainness over speed)."""
        if quota < self.pool_bytes(0):
            return 0
        grows = any(not capped for _, _, capped in self.pools or ())
        if self.pool_bytes(self.max_num_tokens) <= quota:
            if not grows:
                return None
            low, high = self.max_num_tokens, 2 * self.max_num_tokens + 1
            while self.pool_bytes(high) <= quota:
                low, high = high, 2 * high
        else:
            low, high = 0, self.max_num_tokens
        while high - low > 1:
            mid = (low + high) // 2
            if self.pool_bytes(mid) <= quota:
                low = mid
            else:
                high = mid
        return low


@dataclass(frozen=True)
class ManagerLayers:
    name: str  # "target" or "draft"
    layers: list[Layer]
    scratch_reuse: bool  # targets only


def manager_layers(
    family: Family, model: Model, profile: Speculative | None, params: RuntimeParams
) -> list[ManagerLayers]:
    """The layers each cache manager holds on this rank."""
    head = headroom(profile, overlap_slack=params.overlap_slack)
    backoff = head.backoff if params.block_reuse else 0
    last_rank = params.pp_rank == params.pp_size - 1
    common = {
        "tp_size": params.cache_tp_size,
        "max_seq_len": params.max_seq_len,
        "backoff": backoff,
    }
    encoder = params.encoder_tokens
    target = stack_layers(
        model,
        family.kv_cache_dtype,
        pp_layer_range(model.layers.count, params.pp_size, params.pp_rank),
        shape_of=model,
        encoder_tokens=encoder,
        **common,
    )
    if profile is not None and profile.extra_layers is not None and last_rank:
        extra = profile.extra_layers
        target += stack_layers(
            extra,
            family.kv_cache_dtype,
            range(extra.layers.count),
            shape_of=model,
            encoder_tokens=encoder,
            **common,
        )
    managers = [ManagerLayers("target", target, params.scratch_reuse)]
    if profile is not None and profile.mode in MODES_WITH_DRAFT_POOL and profile.draft is not None:
        draft = profile.draft
        layers = (
            stack_layers(
                draft,
                family.kv_cache_dtype,
                range(draft.layers.count),
                shape_of=draft,
                encoder_tokens=encoder,
                **common,
            )
            if last_rank
            else []
        )
        managers.append(ManagerLayers("draft", layers, False))
    return managers


def _life_cycles(layers: list[Layer]) -> dict[tuple[int, int, int], list[Layer]]:
    """SWA and chunked life cycles: layers grouped by (window, sinks, chunk)."""
    cycles: dict[tuple[int, int, int], list[Layer]] = {}
    for layer in layers:
        if layer.is_swa:
            key = (layer.window, layer.sinks, layer.chunk)
            cycles.setdefault(key, []).append(layer)  # type: ignore[arg-type]
    return dict(sorted(cycles.items()))


def _ctx_bytes(layers: list[Layer], scratch_reuse: bool) -> int:
    """Per-token context bytes of SWA layers; with scratch reuse one layer per key.

    The key is (window, b_l) within a life cycle (§3); life cycles that share a window
    but differ in sink count keep their own scratch pages, as their pools are separate.
    Chunked layers never use scratch pages: a chunk boundary makes a whole chunk of pages
    stale at once, which a scratch pool sized by the context chunk cannot hold.
    """
    chunked = sum(lay.bytes_per_token for lay in layers if lay.chunk)
    if scratch_reuse:
        keys = {(lay.window, lay.sinks, lay.bytes_per_token) for lay in layers if not lay.chunk}
        return chunked + sum(b for _w, _s, b in keys)
    return sum(lay.bytes_per_token for lay in layers)


def manager_cost(
    family: Family,
    managed: ManagerLayers,
    head: Headroom,
    params: RuntimeParams,
    profile: Speculative | None = None,
) -> ManagerCost:
    tpb = family.tokens_per_block
    span = params.page_span(tpb)  # tokens of one full-attention page (§9: tpb * dcp_size)
    layers = managed.layers
    full = sum(lay.bytes_per_token for lay in layers if lay.is_full)
    slope = dcp_slope(managed.name, full, params.dcp_size)
    cycles = _life_cycles(layers)
    per_request = sum(lay.state_bytes for lay in layers)
    # Cross-attention: each request's encoder K/V in whole pages, held from admission (§4).
    per_request += sum(
        cross_pages(lay.encoder_tokens, tpb) * tpb * lay.bytes_per_token
        for lay in layers
        if lay.is_cross
    )
    for (window, sinks, attn_chunk), members in cycles.items():
        pages = cycle_pages(window, sinks, attn_chunk, head.total, tpb)
        per_request += pages * tpb * sum(lay.bytes_per_token for lay in members)
    swa = [lay for lay in layers if lay.is_swa]
    ctx_swa = _ctx_bytes(swa, managed.scratch_reuse)
    batch, chunk = params.max_batch_size, params.max_num_tokens
    exact: dict[str, int] = {}
    if params.semantics == "exact":
        exact["full_page_rounding"] = batch * (span - 1) * slope
        context_rounding = 0
        for (window, sinks, attn_chunk), members in cycles.items():
            at_peak = cycle_pages(window, sinks, attn_chunk, head.total, tpb)
            before_step = cycle_pages(window, sinks, attn_chunk, head.extra, tpb)
            if at_peak == before_step:
                ctx = _ctx_bytes(members, managed.scratch_reuse)
                context_rounding += min(batch, chunk) * (tpb - 1) * ctx
        exact["context_page_rounding"] = context_rounding
    states = state_terms(
        [(lay.state_bytes, lay.mamba) for lay in layers],
        batch,
        profile,
        attention_dp=params.attention_dp,
        mamba_state_update=params.mamba_state_update,
    )
    cost = ManagerCost(managed.name, slope, per_request, ctx_swa, batch, chunk, exact, None, states)
    if params.semantics == "exact":
        cost = _with_pools(cost, cycles, head, tpb, managed.scratch_reuse, span)
    stateful = any(lay.state_bytes or lay.is_cross for lay in layers)
    if managed.name == "draft" and len(cycles) == 1 and slope == 0 and not stateful:
        # Resume watermark (§4, drift 4): a single-SWA-pool draft rounds its intercept
        # so that a suspended request can come back under max_util_for_resume (a float32).
        ((_key, members),) = cycles.items()
        slot = tpb * sum(lay.bytes_per_token for lay in members)
        slots = -(-cost.intercept // slot)
        rounded = math.ceil(slots / float32(params.max_util_for_resume)) * slot
        cost = ManagerCost(managed.name, slope, per_request, ctx_swa, batch, chunk, exact, rounded)
    return cost


def _with_pools(
    cost: ManagerCost,
    cycles: dict[tuple[int, int, int], list[Layer]],
    head: Headroom,
    tpb: int,
    scratch_reuse: bool,
    span: int,
) -> ManagerCost:
    """``cost`` with its pools in whole pages (§3, §4): the B*pages(w, H) pages of each SWA life
    cycle and the recurrent slots are fixed; each SWA cycle's context pages grow with min(T, N)
    (rounded up by (tpb-1) per chunk slot where no spare page exists); the full pool grows
    with T, each of B requests rounding up to whole pages of ``span`` tokens (tpb, or
    tpb * dcp_size under DCP, where no SWA cycle exists, §9)."""
    batch, chunk = cost.max_batch_size, cost.max_num_tokens
    # SWA peak pages and recurrent state per request, plus the reserved and speculative state
    # rows (§8), which the runtime's state pools hold beside the B request slots.
    fixed = cost.per_request * batch + sum(cost.state_terms.values())
    pools: list[tuple[int, int, bool]] = []
    for (window, sinks, attn_chunk), members in cycles.items():
        at_peak = cycle_pages(window, sinks, attn_chunk, head.total, tpb)
        rounding = 0
        if at_peak == cycle_pages(window, sinks, attn_chunk, head.extra, tpb):
            rounding = min(batch, chunk) * (tpb - 1)
        pools.append((tpb * _ctx_bytes(members, scratch_reuse), rounding, True))
    if cost.slope:
        pools.append((span * cost.slope, batch * (span - 1), False))
    return replace(cost, tokens_per_block=span, fixed_pool_bytes=fixed, pools=tuple(pools))


def cache_costs(
    family: Family, model_name: str, speculative: str, params: RuntimeParams
) -> dict[str, ManagerCost]:
    """Static cost per cache manager (``"target"``, and ``"draft"`` for a separate pool)."""
    model = _model(family, model_name)
    profile = _profile(family, speculative)
    _check_applies(family, model, profile)
    params.validate(model)
    if params.dcp_size != 1:
        check_dcp(
            model, profile, dcp=params.dcp_size, tp=params.tp_size, attention_dp=params.attention_dp
        )
    head = headroom(profile, overlap_slack=params.overlap_slack)
    return {
        managed.name: manager_cost(family, managed, head, params, profile)
        for managed in manager_layers(family, model, profile, params)
    }


def engine_terms(
    family: Family, model_name: str, speculative: str, params: RuntimeParams
) -> dict[str, dict[str, int]]:
    """Per manager, the ``ENGINE_TERMS`` that apply (§9), in bytes, layer by layer."""
    costs = cache_costs(family, model_name, speculative, params)
    profile = _profile(family, speculative)
    head = headroom(profile, overlap_slack=params.overlap_slack).total
    tpb = family.tokens_per_block
    span = params.page_span(tpb)  # a full page under DCP covers tpb tokens per rank (§9)
    util = float32(params.max_util_for_resume)
    out: dict[str, dict[str, int]] = {}
    for managed in manager_layers(family, _model(family, model_name), profile, params):
        cost = costs[managed.name]
        terms: dict[str, int] = {}
        if managed.name == "target" and cost.ctx_swa:
            terms["startup_estimate_difference"] = cost.max_num_tokens * cost.ctx_swa
        if cost.resume_rounded_intercept is None:
            quota = cost.quota(params.max_seq_len)
            terms["watermark_quota"] = math.ceil(quota / util) - quota
        # A dummy of history 1 has no stale SWA page (§3): ceil((1 + H)/tpb) on every layer.
        pages = -(-(1 + head) // span)
        paged = sum(lay.bytes_per_token for lay in managed.layers if lay.is_full or lay.is_swa)
        if paged:
            terms["cuda_graph_padding"] = pages * tpb * paged
        if cost.per_request:
            terms["overlap_scheduler_requests"] = cost.max_batch_size * cost.per_request
        out[managed.name] = terms
    return out


def _model(family: Family, name: str) -> Model:
    try:
        return family.model(name)
    except KeyError:
        names = ", ".join(m.name for m in family.models)
        raise ValueError(f"model must be one of {names}; got {name!r}") from None


def _profile(family: Family, name: str) -> Speculative | None:
    try:
        return family.profile(name)
    except KeyError:
        raise ValueError(
            f"speculative must be one of {', '.join(family.profile_names)}; got {name!r}"
        ) from None


def _check_applies(family: Family, model: Model, profile: Speculative | None) -> None:
    """A per-model profile (``models:``) is used only with the models it names."""
    if profile is not None and not profile.applies_to(model.name):
        raise ValueError(
            f"speculative {profile.name!r} does not apply to model {model.name!r}; "
            f"profiles for {model.name}: {', '.join(family.profiles_for(model.name))}"
        )


def quota_for_requests(
    family: Family, model_name: str, speculative: str, params: RuntimeParams
) -> dict[str, int]:
    """The least quota per manager with which ``params.max_batch_size`` requests each run to
    ``params.max_seq_len`` tokens (§3, §4): the quota of the T whose pools hold every request
    at its last step (capacity S - 1 + H) at once, in whole pages ("trtllm-v2": the least
    quota from which TensorRT-LLM V2's split builds those pages, ``_engine_split``)."""
    if params.overlap_slack:
        raise ValueError("quota_for_requests takes no overlap_slack")
    costs = cache_costs(family, model_name, speculative, params)
    profile = _profile(family, speculative)
    head = headroom(profile)
    tpb, requests = params.page_span(family.tokens_per_block), params.max_batch_size
    # The full pool: requests * pages_one whole pages, planned from the least T that gives them.
    peak = params.max_seq_len - 1 + head.total
    exact = params.semantics == "exact"
    pages_one = -(-peak // tpb)
    # Whole pages in both semantics: "exact" pools ceil((T + R*(tpb-1))/tpb) full pages,
    # "trtllm-v2" pools ceil(T/tpb) (R * peak tokens would hold fewer than R * pages_one).
    full_tokens = requests * pages_one * tpb
    if exact:
        full_tokens = max(0, full_tokens - requests * (tpb - 1) - tpb + 1)
    out = {}
    for managed in manager_layers(family, _model(family, model_name), profile, params):
        cost = costs[managed.name]
        tokens = full_tokens if cost.slope else 0
        for window, sinks, attn_chunk in _life_cycles(managed.layers):
            rounding = 0
            if exact and cycle_pages(window, sinks, attn_chunk, head.total, tpb) == cycle_pages(
                window, sinks, attn_chunk, head.extra, tpb
            ):
                rounding = min(requests, params.max_num_tokens) * (tpb - 1)
            context = _context_pages(window, head, tpb, requests, params.max_num_tokens, attn_chunk)
            tokens = max(tokens, max(0, (context - 1) * tpb + 1 - rounding))
        whole = _whole_pages(cost, tokens, tpb, family.tokens_per_block)
        if exact:
            out[managed.name] = cost.quota(tokens)
        else:
            out[managed.name] = _engine_split(
                managed, cost, tokens, head, tpb, family.tokens_per_block, whole
            )
    return out


def _engine_split(
    managed: ManagerLayers,
    cost: ManagerCost,
    tokens: int,
    head: Headroom,
    span: int,
    tpb: int,
    whole: int,
) -> int:
    """ "trtllm-v2": TensorRT-LLM V2 (early-2026) is handed one quota and splits it over its
    pool groups (full and window life cycles of equal slot bytes in one group; a chunked life
    cycle alone) in proportion to slot bytes x life cycles (``kvgen.sizing.trtllm_split``, checked
    against the engine's own pools): the least quota that builds every group's whole pages,
    plus the bytes held outside the split (recurrent states, cross caches). One group: the
    whole pages themselves, which the engine rounds up to its grain."""
    from kvgen.sizing.trtllm_split import PoolGroup, least_quota

    if cost.resume_rounded_intercept is not None:
        return whole
    rounded = -(-tokens // span) * span
    context = -(-min(rounded, cost.max_num_tokens) // tpb)
    groups: dict[object, list[int]] = {}  # key -> [slot bytes, life cycles, pages]
    for (window, sinks, attn_chunk), members in _life_cycles(managed.layers).items():
        slot = tpb * sum(lay.bytes_per_token for lay in members)
        pages = cost.max_batch_size * cycle_pages(window, sinks, attn_chunk, head.total, tpb)
        group = groups.setdefault(("chunk", window) if attn_chunk else slot, [slot, 0, 0])
        group[1] += 1
        group[2] += pages + context
    if cost.slope:
        group = groups.setdefault(span * cost.slope, [span * cost.slope, 0, 0])
        group[1] += 1
        group[2] += -(-tokens // span)
    if len(groups) <= 1:
        return whole
    if managed.scratch_reuse and any(not lay.chunk for lay in managed.layers if lay.is_swa):
        raise ValueError("trtllm-v2: SWA scratch reuse beside another pool group")
    outside = whole - sum(slot * pages for slot, _n, pages in groups.values())
    pool_groups = [PoolGroup((slot,), n) for slot, n, _p in groups.values()]
    return least_quota(pool_groups, [pages for _s, _n, pages in groups.values()]) + outside


def _whole_pages(cost: ManagerCost, tokens: int, span: int, tpb: int) -> int:
    """ "trtllm-v2" pools of T tokens as the runtime builds them: ceil(T/span) full pages and
    ceil(min(T, N)/tpb) context pages, where the affine quota charges T and min(T, N)."""
    if cost.resume_rounded_intercept is not None:
        return cost.resume_rounded_intercept
    tokens = -(-tokens // span) * span
    context = min(tokens, cost.max_num_tokens)
    return cost.quota(tokens) + (-context % tpb) * cost.ctx_swa


def _context_pages(
    window: int, head: Headroom, tpb: int, requests: int, chunk: int, attn_chunk: int = 0
) -> int:
    """The most pages an iteration's context chunks (N tokens among at most R requests) hold
    on an SWA life cycle beyond R * pages(w, H) (§3): a chunk of n tokens at its worst
    position holds pages(w, n + E); it adds a page to pages(w, H) from n = ``first`` on, and
    one more every tpb tokens, so k chunks add at most k + (N - k*first) // tpb pages. A
    chunked life cycle is the same with pages(C, x) = ceil((C - 1 - gcd(C, tpb) + x)/tpb) + 1
    in place of pages(w, x) = ceil((w - 2 + x)/tpb) + 1."""
    offset = attn_chunk - 1 - math.gcd(attn_chunk, tpb) if attn_chunk else window - 2
    first = -(-(offset + head.total) // tpb) * tpb - (offset + head.extra) + 1
    chunks = range(1, min(requests, chunk // first) + 1)
    return max((k + (chunk - k * first) // tpb for k in chunks), default=0)


def max_blocks_per_seq(
    family: Family,
    speculative: str,
    max_seq_len: int,
    *,
    overlap_slack: bool = False,
    dcp_size: int = 1,
) -> int:
    """ceil((S + H) / tpb), rounded up to a multiple of 4 (the block-table width); under DCP
    a page spans tpb * dcp_size tokens (§9)."""
    head = headroom(_profile(family, speculative), overlap_slack=overlap_slack)
    blocks = -(-(max_seq_len + head.total) // (family.tokens_per_block * dcp_size))
    return -(-blocks // 4) * 4


def split_budget(
    budget_bytes: int, costs: dict[str, ManagerCost], *, tier: str = "gpu"
) -> dict[str, int]:
    """Share one budget between a target and its separate draft pool (§6)."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
    if "draft" not in costs:
        return {"target": budget_bytes}
    target, draft = costs["target"], costs["draft"]
    slopes = target.slope + draft.slope
    if tier == "host":
        share = budget_bytes * draft.slope // slopes if slopes else 0
        return {"target": budget_bytes - share, "draft": share}
    room = budget_bytes - (target.intercept + draft.intercept)
    if room < 0 or (room == 0 and slopes > 0):
        raise ValueError(
            f"budget_bytes {budget_bytes} does not cover the fixed costs "
            f"{target.intercept} (target) + {draft.intercept} (draft)"
        )
    draft_share = draft.intercept + (room * draft.slope // slopes if slopes else 0)
    return {"target": budget_bytes - draft_share, "draft": draft_share}
