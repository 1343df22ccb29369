"""SGLang 0.5.23's pool policy (``kvgen._engines._sglang`` names the engine modules it is
read from): a model's layout (``sglang_layout``), the plan of a tp and SSM dtype on it
(``sglang_plan_at``), its pools for a budget (``sglang_pools``) and what they hold
(``sglang_capacity``)."""

from .engines_registry import DEFAULT_MAX_BATCH_SIZE, SGLANG, newest
from .engines_rows import (
    _MIXERS,
    _ROW_KINDS,
    SSM_DTYPES,
    UNMODELLED,
    EngineCapacity,
    EngineLayer,
    EngineModel,
    NotModelled,
    _fields_of,
    _native,
    _positive_ints,
    _token_bytes_split,
    qkv_split_refusal,
    split_heads,
)
from .facts import DTYPE_BYTES
from .sizing_kinds import _new, _Record
from .sizing_options import _MAX_INT, _real, _shown

SGLANG_PAGE_SIZE = newest(SGLANG).block_size  # ServerArgs page_size
SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
# The Mamba radix cache's strategy, as ServerArgs.resolve_once resolves it for a recurrent
# hybrid (arg_groups/overrides.py _mamba_radix_cache_resolution): "extra_buffer" where the
# architecture supports it (every shipped hybrid, linear_attn_backend triton), the platform
# keeps Mamba state snapshots (CUDA: mamba_hook.py) and the overlap scheduler is on (CUDA's
# default, speculative decoding included); otherwise "no_buffer", which turns overlap off.
# The others are what a launch command sets: "extra_buffer_lazy" (SGLang's strategy of that
# name, overlap on), "extra_buffer_no_overlap" (extra_buffer with --disable-overlap-schedule)
# and "disabled" (--disable-radix-cache: resolution then picks no strategy at all). One value
# per resolved configuration, so SGLang's refused pairing (lazy without overlap, an assert in
# _calculate_mamba_ratio) cannot be asked for.
SGLANG_MAMBA_STRATEGIES = (
    "extra_buffer", "no_buffer", "extra_buffer_lazy", "extra_buffer_no_overlap", "disabled",
)  # fmt: skip
SGLANG_MAMBA_STRATEGY = "extra_buffer"
# State slots per running request (kv_cache_configurator.py _calculate_mamba_ratio): with the
# radix cache on, MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO 3 plus the extra buffer's
# tracking slots (allocation_sizing.py get_mamba_tracking_slots: 2 with overlap, 1 without
# or lazy, 0 for no_buffer); with it disabled, 1. resolve_max_num_reqs runs at most
# slots // ratio requests at once, refusing 0.
SGLANG_MAMBA_SLOTS_PER_REQUEST = {
    "extra_buffer": 3 + 2, "no_buffer": 3, "extra_buffer_lazy": 3 + 1,
    "extra_buffer_no_overlap": 3 + 1, "disabled": 1,
}  # fmt: skip
# extra_buffer checkpoints a state every mamba_track_interval tokens, which pages must divide
# (mamba_hook.py validate_mamba_extra_buffer, lazy or not); no_buffer takes page_size 1 only;
# with the radix cache disabled neither validator runs (handle_mamba_radix_cache returns).
_SGLANG_MAMBA_TRACK_INTERVAL = 256
# What SGLang keeps of a multimodal model's KV budget for the allocations it makes after
# sizing the pools (kv_cache_configurator.py mm_runtime_reservation_gb: SGLANG_VLM_CACHE_SIZE_MB,
# 100; its GPU feature pool only under a cuda_ipc / cuda_vmm mm_feature_transport, not the
# single-node default). Of kvgen's rows, the encoder-decoder ones (Mllama) are multimodal.
SGLANG_VLM_CACHE_SIZE_MB = 100
_GIB = 1 << 30
_INFINITY = float("inf")


class SglangPlan(_Record):
    """The static part of SGLang's sizing for one model (bytes per pool token and per slot)."""

    def __init__(
        self,
        full_bytes_per_token: int,  # every layer sized full length
        swa_bytes_per_token: int,  # hybrid-SWA sliding layers (0 otherwise)
        window: int | None,  # the sliding window of a hybrid-SWA model
        state_bytes_per_request: int,  # all recurrent layers, SSM part in the SSM dtype
        ssm_extra_bytes: int,  # what the SSM dtype adds over the spec's dtype, per request
        native_max_seq_len: int,  # the model's context length (SGLang's context_len)
        draft_tokens: int = 0,  # EAGLE/MTP speculative_num_draft_tokens (0: no drafter)
        encoder_tokens: int = 0,  # pool slots a request's encoder tokens take (Mllama)
    ) -> None:
        self.encoder_tokens = encoder_tokens
        self.full_bytes_per_token = full_bytes_per_token
        self.swa_bytes_per_token = swa_bytes_per_token
        self.window = window
        self.state_bytes_per_request = state_bytes_per_request
        self.ssm_extra_bytes = ssm_extra_bytes
        self.native_max_seq_len = native_max_seq_len
        self.draft_tokens = draft_tokens

    _fields = __slots__ = _fields_of(__init__)


class SglangPools(_Record):
    def __init__(
        self,
        full_tokens: int,
        swa_tokens: int,  # 0 unless hybrid SWA
        state_slots: int,  # 0 unless Mamba hybrid (usable slots; one more is padding)
    ) -> None:
        self.full_tokens = full_tokens
        self.swa_tokens = swa_tokens
        self.state_slots = state_slots

    _fields = __slots__ = _fields_of(__init__)


class SglangLayout(_Record):
    """What SGLang's sizing reads from one model alone, whatever tp and the SSM dtype
    (``sglang_layout``): built once per model, so that a plan for another tp does only the
    arithmetic that depends on it (``sglang_plan_at``)."""

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
        encoder_tokens: int = 0,  # pool slots a request's encoder tokens take (Mllama)
        query_heads: int = 0,  # attention query heads (0: unknown)
        split_heads: tuple[int, ...] = (),  # distinct KV heads QKVParallelLinear splits
    ) -> None:
        self.encoder_tokens = encoder_tokens
        self.query_heads = query_heads
        self.split_heads = split_heads
        self.index_bytes = index_bytes
        self.attention = attention
        self.window = window
        self.attention_layers = attention_layers
        self.mamba = mamba
        self.states = states
        self.ssm_state_bytes = ssm_state_bytes
        self.native_max_seq_len = native_max_seq_len

    _fields = __slots__ = _fields_of(__init__)


def sglang_layout(entry: EngineModel) -> SglangLayout:
    """The part of SGLang's sizing that depends on the model only; raises ``NotModelled``
    where SGLang's answer is not modelled, ValueError for a model without cached layers."""
    if entry.sglang_unmodelled:
        raise NotModelled(UNMODELLED[entry.sglang_unmodelled], entry.sglang_unmodelled)
    # An encoder-decoder model in SGLang's one pool has rows of its own (its cross layers
    # among them), which no other engine's row of the model answers.
    if entry.unmodelled and not entry.sglang_encoder_tokens:
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
    mamba = bool(recurrent) and all(_MIXERS[lay.mixer].dimensions for lay in recurrent)
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
        entry.sglang_encoder_tokens,
        entry.query_heads,
        split_heads(layers),
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
    ``draft_layers``: an EAGLE3/MTP drafter's layers, which SGLang charges at the target's
    per-layer size on the same tokens (pool_configurator.py, eagle_draft_num_layers);
    ``draft_tokens``: its ``speculative_num_draft_tokens``, the intermediate recurrent states
    each verify step keeps per running request (``sglang_pools``)."""
    if ssm_dtype not in SSM_DTYPES:
        raise ValueError(f"ssm_dtype must be one of {SSM_DTYPES}, got {ssm_dtype!r}")
    return sglang_plan_at(sglang_layout(entry), tp_size, ssm_dtype, draft_layers, draft_tokens)


def sglang_plan_at(
    layout: SglangLayout, tp_size: int, ssm_dtype: str, draft_layers: int, draft_tokens: int = 0
) -> SglangPlan:
    """``sglang_plan`` for a model's layout (``ssm_dtype`` checked): what depends on tp."""
    failed = qkv_split_refusal(layout.query_heads, layout.split_heads, tp_size)
    if failed:
        shown = "/".join(map(str, (layout.query_heads or "?", *layout.split_heads)))
        raise ValueError(
            f"SGLang {newest(SGLANG).version} refuses tp_size {tp_size}: its "
            f"QKVParallelLinear divides the model's query/KV heads {shown} by tp (KV heads "
            f"fewer than tp: tp by them), and divide() asserts {failed!r} "
            "(sglang/srt/layers/linear.py)"
        )
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
        full, swa, layout.window, state, extra, layout.native_max_seq_len, draft_tokens,
        layout.encoder_tokens,
    )  # fmt: skip


def sglang_pools(
    plan: SglangPlan,
    budget_bytes: int,
    page_size: int,
    *,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
    max_running_requests: int = DEFAULT_MAX_BATCH_SIZE,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
) -> SglangPools:
    """Token slots of each pool for a KV budget (``max_running_requests``: read only on a
    recurrent hybrid, by an EAGLE/MTP drafter's intermediate states, and by the radix cache
    disabled as its state slots; the strategy: its state slots per running request)."""
    budget_gib = budget_bytes / _GIB  # SGLang keeps the budget in GiB as a float
    if plan.encoder_tokens:
        budget_gib -= SGLANG_VLM_CACHE_SIZE_MB / 1024  # _profile_available_bytes, first
    slots = 0
    if plan.state_bytes_per_request:
        # Mamba memory ratio: r/(1+r) of the budget to whole slots, one of them padding.
        share = budget_gib * mamba_full_memory_ratio / (1 + mamba_full_memory_ratio)
        per_slot = plan.state_bytes_per_request
        drafts = plan.draft_tokens
        ratio = _sglang_mamba_ratio(mamba_radix_cache_strategy, page_size)
        if ratio == 1:
            # Radix cache disabled with max_running_requests set (kvgen emits it):
            # _handle_max_mamba_cache keeps one slot per request, no memory ratio, and an
            # EAGLE/MTP drafter's D intermediate states for each of them and the padding slot.
            slots = max(1, max_running_requests)
            budget_gib -= per_slot * (slots + 1) * drafts / _GIB
        elif drafts:
            # EAGLE/MTP (kv_cache_configurator.py _handle_max_mamba_cache): each verify step
            # keeps D intermediate states per running request, solved jointly with the slots
            # (one running request per ratio slots), then reserved for the capped requests
            # plus the padding slot.
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
    if strategy in ("extra_buffer", "extra_buffer_lazy", "extra_buffer_no_overlap"):
        if _SGLANG_MAMBA_TRACK_INTERVAL % page_size:
            raise ValueError(
                f"block_size {page_size}: SGLang 0.5.23 refuses {strategy} where the page "
                f"does not divide mamba_track_interval {_SGLANG_MAMBA_TRACK_INTERVAL} "
                "(mamba_hook.py validate_mamba_extra_buffer)"
            )
        return SGLANG_MAMBA_SLOTS_PER_REQUEST[strategy]
    if strategy == "disabled":
        return 1
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


def _sglang_ratios(swa: object, mamba: object) -> tuple[float, float]:
    """The two ratios as floats (any real number: numpy, Decimal), or ValueError naming the
    one SGLang would not take: the sliding pool is a share (0, 1] of the full pool's tokens,
    the Mamba state a positive finite multiple of its memory."""
    share, multiple = _real(swa), _real(mamba)
    if share is None or not 0.0 < share <= 1.0:
        raise ValueError(
            f"swa_full_tokens_ratio must be in (0, 1], got {_shown(swa)}: SGLang 0.5.23 "
            "refuses to start, '--swa-full-tokens-ratio should be in range (0, 1.0].' "
            "(sglang/srt/arg_groups/kv_cache_hook.py)"
        )
    if multiple is None or not 0.0 < multiple < _INFINITY:
        bound = "a positive finite number"
        raise ValueError(f"mamba_full_memory_ratio must be {bound}, got {_shown(mamba)}")
    return share, multiple


def sglang_capacity(
    plan: SglangPlan,
    budget_bytes: int,
    max_seq_len: int,
    page_size: int = SGLANG_PAGE_SIZE,
    swa_full_tokens_ratio: float = SWA_FULL_TOKENS_RATIO,
    mamba_full_memory_ratio: float = MAMBA_FULL_MEMORY_RATIO,
    max_running_requests: int = DEFAULT_MAX_BATCH_SIZE,
    mamba_radix_cache_strategy: str = SGLANG_MAMBA_STRATEGY,
) -> EngineCapacity:
    """SGLang's pools for a planned model, read as an ``EngineCapacity``; a request's bytes
    count the intermediate states an EAGLE/MTP drafter keeps for it on a recurrent hybrid."""
    swa, mamba = swa_full_tokens_ratio, mamba_full_memory_ratio
    # Two floats in range pass here; anything else is checked (and named) by _sglang_ratios.
    if not (
        type(swa) is float and type(mamba) is float and 0.0 < swa <= 1.0 and 0.0 < mamba < _INFINITY
    ):
        swa, mamba = _sglang_ratios(swa, mamba)
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
    reads_running = plan.draft_tokens or (
        plan.state_bytes_per_request and mamba_radix_cache_strategy == "disabled"
    )
    if reads_running and not (type(running) is int and 0 < running <= _MAX_INT):
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
        raise ValueError(
            f"budget_bytes {budget_bytes} leaves SGLang no KV pool (MemoryPoolConfig."
            "__post_init__: not enough memory)"
        )
    sliding = sglang_sliding_tokens(plan, max_seq_len, page_size)
    # An encoder-decoder request's encoder tokens take full-pool slots before its text.
    pool_tokens = max_seq_len + plan.encoder_tokens
    request_bytes = (
        pool_tokens * plan.full_bytes_per_token
        + sliding * plan.swa_bytes_per_token
        + plan.state_bytes_per_request * (1 + plan.draft_tokens)
    )
    concurrency = pools.full_tokens / pool_tokens
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


# SGLang's pools by (plan identity, budget, page, ratios, running requests, strategy), with the
# plan they were computed for; bounded (``sglang_capacity``).
_SGLANG_POOLS: dict[tuple[object, ...], tuple[SglangPlan, SglangPools]] = {}
