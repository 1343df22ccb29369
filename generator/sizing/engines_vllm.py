"""vLLM 0.33.0's pool policy (``kvgen._engines._vllm`` names the engine modules it is read
from): a model and profile's layout (``vllm_layout``), the plan of a block size, tp and modes
on it (``vllm_plan_at``) and what a budget holds (``vllm_capacity``)."""

from math import lcm

from .engines_registry import VLLM, default_release, releases_of
from .engines_rows import (
    _MIXERS,
    _ROW_KINDS,
    UNMODELLED,
    EngineCapacity,
    EngineLayer,
    EngineModel,
    NotModelled,
    _fields_of,
    _Mixer,
    _native,
    _positive_ints,
    _token_bytes_split,
    qkv_split_refusal,
    split_heads,
)
from .facts import DTYPE_BYTES
from .sizing_kinds import _new, _Record
from .sizing_options import _MAX_INT

# The default release's CacheConfig.DEFAULT_BLOCK_SIZE (each release's is Release.block_size)
VLLM_BLOCK_SIZE = default_release(VLLM).block_size
VLLM_NAMED = default_release(VLLM).named  # what an answer names when not told the release
# UNMODELLED's vLLM words name the release they were read in; each holds for every vLLM
# release modelled (tests/fixtures/engines/release_facts_vllm.json: both refuse Mllama and
# OpenELM), so an answer names its own release in them (``_in_release``).
_WORDS_READ_IN = releases_of(VLLM)[0].named


def _in_release(text: str, named: str) -> str:
    return text.replace(_WORDS_READ_IN, named)


_KERNEL_BLOCK = 16  # FlashAttention kernel blocks: any multiple of 16 tokens
_MLA_HYBRID_BLOCK = 128  # MLA decode kernels in a Mamba hybrid
_EQUAL_GROUPS_BELOW = 1.5  # largest/smallest kind count under which groups take the largest
MAMBA_CACHE_MODES = ("none", "align")
# vLLM's default: prefix caching is on for hybrids, which selects "align" (MambaModelConfig).
VLLM_MAMBA_CACHE_MODE = "align"
GDN_PREFILL_BACKENDS = ("flashinfer", "triton")  # FlashInfer: the SM90 (H100/H200) default
GDN_PREFILL_BACKEND = GDN_PREFILL_BACKENDS[0]


class VllmGroups(_Record):
    """One kind of group: ``group_count`` groups of layers that reserve blocks the same way."""

    def __init__(
        self,
        attention: str,  # "full" (also MLA), "sliding", "chunked" or "recurrent"
        window: int | None,
        block_size: int,  # tokens per block of these layers (pages may be unified upwards)
        group_count: int,
        layers: int,  # layers in the widest of them
    ) -> None:
        self.attention = attention
        self.window = window
        self.block_size = block_size
        self.group_count = group_count
        self.layers = layers

    _fields = __slots__ = _fields_of(__init__)


class VllmPlan(_Record):
    """The static part of vLLM's plan: everything that does not depend on the budget."""

    def __init__(
        self,
        block_size: int,  # attention block size after Mamba page unification
        bytes_per_block: int,  # one block of the shared pool
        groups: tuple[VllmGroups, ...],
        group_size: int,  # layers per group
        padding_layers: int,  # pages per block no layer uses (group padding layers)
        mamba_page_padding: int,  # bytes added to each Mamba page (Mamba page unification)
        full: tuple[tuple[int, int], ...],  # (groups, block size)
        sliding: tuple[tuple[int, int, int], ...],  # (groups, window - 1 + retained, block size)
        state_groups: int,
        native_max_seq_len: int,  # the model's context length (vLLM's max_model_len limit)
        speculative_blocks: int,  # extra state blocks per request per Mamba group (draft tokens)
        checkpoint_blocks: int = 0,  # align mode: prefill checkpoint blocks per Mamba group
        chunked: tuple[tuple[int, int, int], ...] = (),  # (groups, chunk, block size)
    ) -> None:
        self.block_size = block_size
        self.bytes_per_block = bytes_per_block
        self.groups = groups
        self.group_size = group_size
        self.padding_layers = padding_layers
        self.mamba_page_padding = mamba_page_padding
        self.full = full
        self.sliding = sliding
        self.state_groups = state_groups
        self.native_max_seq_len = native_max_seq_len
        self.speculative_blocks = speculative_blocks
        self.checkpoint_blocks = checkpoint_blocks
        self.chunked = chunked

    _fields = __slots__ = _fields_of(__init__)


def _engine_state_bytes(layer: EngineLayer, tp_size: int) -> int:
    if layer.state_bytes % tp_size:
        raise ValueError(f"recurrent state of {layer.state_bytes} bytes does not split over tp")
    return layer.state_bytes // tp_size


def _vllm_state_bytes(layer: EngineLayer, tp_size: int, draft_tokens: int, ssm_dtype: str) -> int:
    """One Mamba page of vLLM on one rank (MambaStateShapeCalculator): the conv window holds
    ``d_conv - 1 + num_speculative_tokens`` rows (Mamba-2, GDN), Mamba-2 groups fewer than tp
    are replicated up to tp, the SSM state is in ``ssm_dtype`` ("": the conv dtype)."""
    mixer = _MIXERS[layer.mixer]
    if not mixer.dimensions:
        return _engine_state_bytes(layer, tp_size)
    if not mixer.vllm_ssm_dtype:
        ssm_dtype = ""
    channels = layer.conv_channels
    if mixer.replicated_groups and layer.n_groups % tp_size:
        channels += 2 * (tp_size - layer.n_groups) * layer.d_state  # extra_groups_for_head_shards
    if channels % tp_size or layer.ssm_heads % tp_size:
        raise ValueError(
            f"tp_size {tp_size} does not divide the recurrent layer's {channels} conv channels "
            f"and {layer.ssm_heads} heads (vLLM's divide() asserts)"
        )
    rows = layer.conv_rows + (draft_tokens if mixer.draft_rows else 0)
    conv = channels // tp_size * rows * DTYPE_BYTES[layer.dtype]
    ssm = layer.ssm_heads // tp_size * layer.ssm_head_elements
    return conv + ssm * DTYPE_BYTES[ssm_dtype or layer.dtype]


class VllmLayout(_Record):
    """What vLLM's plan reads from one model and profile, whatever the block size, tp and modes
    (``vllm_layout``): built once per (model, profile), so that a plan for another block size
    or tp does only the arithmetic that depends on them (``vllm_plan_at``)."""

    def __init__(
        self,
        query_heads: int,  # 0: unknown (no refusal)
        split_heads: tuple[int, ...],  # distinct KV heads of full/sliding layers, in order
        ssm_dtype: str,  # vLLM's SSM dtype for the model ("": the conv dtype)
        states: tuple[EngineLayer, ...],  # recurrent rows, in order (one page each)
        # Per row of layers, target then draft: (kind, window, shape, layers, index into
        # states or -1, per-token bytes fixed whatever tp (0: split by tp), KV heads, bytes
        # per head and token).
        rows: tuple[tuple[str, int | None, tuple[object, ...], int, int, int, int, int], ...],
        one_kind: tuple[str, int | None] | None,  # the one (kind, window) of every layer
        # A hybrid whose rows each make their own groups whatever their pages (no two of one
        # kind and shape): (group size, padding layers, widest group's layers, (groups,
        # layers per group) per row); None: grouped per plan.
        grouping: tuple[int, int, int, tuple[tuple[int, int], ...]] | None,
        first_attention: tuple[int, int, int] | None,  # (fixed, heads, bytes per head)
        mla: bool,  # an MLA layer: hybrid pages unify on the MLA kernels' block
        # Align mode per GDN prefill backend (flashinfer, triton): (prefill checkpoint blocks
        # per Mamba group, the token grid checkpoints land on).
        align: tuple[tuple[int, int], tuple[int, int]],
        native_max_seq_len: int,
        retained: int,
        state_blocks: int,
    ) -> None:
        self.query_heads = query_heads
        self.split_heads = split_heads
        self.ssm_dtype = ssm_dtype
        self.states = states
        self.rows = rows
        self.one_kind = one_kind
        self.grouping = grouping
        self.first_attention = first_attention
        self.mla = mla
        self.align = align
        self.native_max_seq_len = native_max_seq_len
        self.retained = retained
        self.state_blocks = state_blocks

    _fields = __slots__ = _fields_of(__init__)


def _vllm_group_sizes(counts: list[int]) -> tuple[int, int, int, tuple[tuple[int, int], ...]]:
    """vLLM's groups of kinds with ``counts`` layers: (group size, padding layers, widest
    group's layers, (groups, layers per group) per kind)."""
    smallest, biggest = min(counts), max(counts)
    group_size = biggest if biggest < smallest * _EQUAL_GROUPS_BELOW else smallest
    made = []
    padding = widest = 0
    for n in counts:
        count = -(-n // group_size)
        per_group = -(-n // count)
        made.append((count, per_group))
        padding += count * group_size - n
        widest = max(widest, per_group)
    return group_size, padding, widest, tuple(made)


# A draft model's vocabulary vLLM refuses by default (its layers kept: use_heterogeneous_vocab).
_VOCAB = "vllm_draft_vocab"


def vllm_layout(
    entry: EngineModel,
    speculative: str = "none",
    heterogeneous_vocab: bool = False,
    named: str = VLLM_NAMED,
) -> VllmLayout:
    """The part of vLLM's plan that depends on the model and profile only; raises
    ``NotModelled`` where vLLM's answer is not modelled, ValueError for a model without
    cached layers, and where vLLM refuses ``heterogeneous_vocab`` (its speculative_config's
    use_heterogeneous_vocab: a token mapping, which changes no cache spec). ``named``: the
    release its refusals name."""
    if entry.vllm_unmodelled:
        reason = entry.vllm_unmodelled
        raise NotModelled(_in_release(UNMODELLED[reason], named), reason)
    retained = state_blocks = 0
    draft: tuple[EngineLayer, ...] = ()
    if heterogeneous_vocab and (speculative == "none" or not entry.drafts[speculative].draft_model):
        # vllm/config/speculative.py SpeculativeConfig._verify_args
        raise ValueError(
            f"heterogeneous_vocab: {named}'s use_heterogeneous_vocab only works with "
            f"method='draft_model' (a separate draft model), not speculative {speculative!r}"
        )
    if speculative != "none":
        profile = entry.drafts[speculative]
        if profile.unmodelled and not (heterogeneous_vocab and profile.unmodelled == _VOCAB):
            reason = profile.unmodelled
            use = f"; use speculative {profile.instead!r} instead" if profile.instead else ""
            said = _in_release(UNMODELLED[reason], named)
            raise NotModelled(f"speculative {speculative!r}: {said}{use}", reason)
        draft, retained, state_blocks = profile.layers, profile.retained, profile.state_blocks
    if entry.unmodelled:
        raise NotModelled(_in_release(UNMODELLED[entry.unmodelled], named), entry.unmodelled)
    layers = entry.layers + draft
    if not layers:
        raise ValueError("the model has no cached layers")
    states: list[EngineLayer] = []
    rows: list[tuple[str, int | None, tuple[object, ...], int, int, int, int, int]] = []
    first = None
    mla = False
    joined: dict[tuple[object, ...], int] = {}  # row by every field but the layer count
    for lay in layers:
        row_kind = _ROW_KINDS[lay.attention]
        if draft:  # a draft layer like a target's joins its row (one spec, as vLLM groups it)
            values = lay._values()
            same = values[:1] + values[2:]
            if same in joined:
                row = rows[joined[same]]
                rows[joined[same]] = (*row[:3], row[3] + lay.layers, *row[4:])
                continue
            joined[same] = len(rows)
        if row_kind.state:
            rows.append(
                (row_kind.vllm_spec, None, (lay.state_bytes,), lay.layers, len(states), 0, 0, 0)
            )
            states.append(lay)
            continue
        kind = row_kind.vllm_spec
        shape = (lay.attention, lay.kv_heads, lay.head_dim, lay.value_dim, lay.dtype)
        split = _token_bytes_split(lay)
        rows.append((kind, lay.window, shape, lay.layers, -1, *split))
        if first is None:
            first = split
        mla = mla or row_kind.latent
    kinds = {(row[0], row[1]) for row in rows}
    grouping = None
    if len(kinds) > 1 and len({row[:3] for row in rows}) == len(rows):
        grouping = _vllm_group_sizes([row[3] for row in rows])
    align = ((0, 1), (0, 1))
    if states:
        mixers = {_MIXERS[lay.mixer] for lay in states}
        align = (_vllm_align(mixers, 0), _vllm_align(mixers, 1))
    return VllmLayout(
        entry.query_heads,
        split_heads(entry.layers),
        entry.vllm_ssm_dtype,
        tuple(states),
        tuple(rows),
        next(iter(kinds)) if len(kinds) == 1 else None,
        grouping,
        first,
        mla,
        align,
        entry.max_seq_len,
        retained,
        state_blocks,
    )


def _vllm_align(mixers: set[_Mixer], backend: int) -> tuple[int, int]:
    """Align mode under GDN prefill backend ``backend`` (an index of GDN_PREFILL_BACKENDS):
    (the prefill checkpoint blocks each Mamba layer keeps, the most any mixer keeps; the token
    grid the checkpoints land on, where every mixer lands them on one, else 1)."""
    checkpoint = max([mixer.checkpoint_blocks[backend] for mixer in mixers])
    grids = {mixer.align_grid[backend] for mixer in mixers}
    return checkpoint, grids.pop() if len(grids) == 1 else 1


def _vllm_tp_refusal(layout: VllmLayout, tp_size: int, named: str) -> None:
    """The tp sizes vLLM (release ``named``) refuses to start with, with its reason."""
    if layout.query_heads and layout.query_heads % tp_size:
        raise ValueError(
            f"{named} refuses tp_size {tp_size}: the model's {layout.query_heads} query "
            "heads must divide by it (ModelConfig.verify_with_parallel_config)"
        )
    failed = qkv_split_refusal(0, layout.split_heads, tp_size)
    if failed:
        raise ValueError(
            f"{named} refuses tp_size {tp_size}: its QKVParallelLinear splits the "
            f"model's {'/'.join(map(str, layout.split_heads))} KV heads over tp (or tp over "
            f"them), and divide() asserts {failed!r} (vllm/model_executor/layers/linear.py)"
        )


def _unified_block_size(
    layout: VllmLayout, block_size: int, tp_size: int, state: int, align: int
) -> tuple[int, int]:
    """Mamba page unification: (attention block size, bytes added to each Mamba page), for
    the largest Mamba page ``state``."""
    if layout.first_attention is None:
        return block_size, 0
    # The model's one head config sizes the attention page (vLLM reads it from the model).
    fixed, heads, per_head = layout.first_attention
    per_token = fixed or max(1, heads // tp_size) * per_head
    step = max(_KERNEL_BLOCK, block_size)
    if layout.mla and step < _MLA_HYBRID_BLOCK:
        step = _MLA_HYBRID_BLOCK
    if align > 1:  # align mode: prefill checkpoints land on block boundaries
        step = lcm(step, align)
    needed = step * -(-state // (step * per_token))
    needed = _KERNEL_BLOCK * -(-needed // _KERNEL_BLOCK)
    block_size = max(block_size, needed)
    return block_size, max(0, block_size * per_token - state)


def vllm_plan(
    entry: EngineModel,
    *,
    block_size: int,
    tp_size: int = 1,
    speculative: str = "none",
    mamba_cache_mode: str = VLLM_MAMBA_CACHE_MODE,
    gdn_prefill_backend: str = "flashinfer",
    ssm_dtype: str | None = None,
    heterogeneous_vocab: bool = False,
    named: str = VLLM_NAMED,
) -> VllmPlan:
    """Group the model's layers and size one block of the pool, as vLLM 0.33.0 and 0.34.0 do.
    ``ssm_dtype`` None: vLLM's default for the model (``entry.vllm_ssm_dtype``); ``named``:
    the release its refusals name."""
    layout = vllm_layout(entry, speculative, heterogeneous_vocab, named)
    return vllm_plan_at(
        layout, block_size, tp_size, mamba_cache_mode, gdn_prefill_backend, ssm_dtype, named
    )


def vllm_plan_at(
    layout: VllmLayout,
    block_size: int,
    tp_size: int,
    mamba_cache_mode: str,
    gdn_prefill_backend: str,
    ssm_dtype: str | None,
    named: str = VLLM_NAMED,
) -> VllmPlan:
    """``vllm_plan`` for a model's layout: what depends on the block size, tp and modes."""
    if tp_size != 1 and (layout.query_heads % tp_size or layout.split_heads):  # 1 divides all
        _vllm_tp_refusal(layout, tp_size, named)
    checkpoint = mamba_padding = 0
    pages = []
    if layout.states:  # a Mamba hybrid: align mode and page unification
        ssm = layout.ssm_dtype if ssm_dtype is None else ssm_dtype
        for lay in layout.states:
            pages.append(_vllm_state_bytes(lay, tp_size, layout.state_blocks, ssm))
        step = 1
        if mamba_cache_mode == "align":
            checkpoint, step = layout.align[gdn_prefill_backend != "flashinfer"]
        block_size, mamba_padding = _unified_block_size(
            layout, block_size, tp_size, max(pages), step
        )
    # A row's page at this block size (vLLM groups equal specs only: two layers with the same
    # page but other heads differ, hence the shape).
    specs = []
    largest = per_block = total = 0
    for row in layout.rows:
        if row[4] >= 0:
            page = pages[row[4]] + mamba_padding
        else:
            page = block_size * (row[5] or max(1, row[6] // tp_size) * row[7])
        specs.append(page)
        largest = max(largest, page)
        per_block += page * row[3]
        total += row[3]
    retained = layout.retained
    if layout.one_kind is not None:
        # One kind of layer (pages may differ): one group, a block holds every layer's page.
        kind, window = layout.one_kind
        return _vllm_plan(
            block_size, per_block, ((kind, window, block_size, 1, total),), total, 0, 0,
            layout.native_max_seq_len, retained, layout.state_blocks, checkpoint,
        )  # fmt: skip
    # Hybrid: pages are unified to the largest one. A smaller attention page that divides it
    # covers proportionally more tokens per block; otherwise the page is padded.
    grouping = layout.grouping
    if grouping is not None:  # each row its own groups: only the block sizes vary
        group_size, padding, widest, counts = grouping
        made = []
        full = []
        sliding = []
        chunked = []
        states = 0
        for i, row in enumerate(layout.rows):  # not zip(strict=True): a keyword call costs more
            page = specs[i]
            count, per_group = counts[i]
            kind = row[0]
            size = block_size
            if kind == "recurrent":
                states += count
            else:
                if largest % page == 0:
                    size = block_size * (largest // page)
                if kind == "full":
                    full.append((count, size))
                elif kind == "sliding":
                    sliding.append((count, (row[1] or 1) - 1 + retained, size))
                else:  # chunked
                    chunked.append((count, row[1] or 0, size))
            made.append(VllmGroups(kind, row[1], size, count, per_group))
        return VllmPlan(
            block_size, widest * largest, tuple(made), group_size, padding, mamba_padding,
            tuple(full), tuple(sliding), states, layout.native_max_seq_len,
            layout.state_blocks, checkpoint, tuple(chunked),
        )  # fmt: skip
    buckets: dict[tuple[str, int | None, int, tuple[object, ...]], int] = {}
    for i, row in enumerate(layout.rows):
        page = specs[i]
        size = block_size
        if row[0] != "recurrent" and largest % page == 0:
            size = block_size * (largest // page)
        key = (row[0], row[1], size, row[2])
        buckets[key] = buckets.get(key, 0) + row[3]
    group_size, padding, widest, counts = _vllm_group_sizes(list(buckets.values()))
    grouped = [
        (kind, window, size, count, per_group)
        for (kind, window, size, _shape), (count, per_group) in zip(buckets, counts, strict=True)
    ]
    return _vllm_plan(
        block_size, widest * largest, grouped, group_size, padding, mamba_padding,
        layout.native_max_seq_len, retained, layout.state_blocks, checkpoint,
    )  # fmt: skip


def _vllm_plan(
    block_size: int,
    bytes_per_block: int,
    groups: list[tuple[str, int | None, int, int, int]]
    | tuple[tuple[str, int | None, int, int, int], ...],
    group_size: int,
    padding: int,
    mamba_padding: int,
    native: int,
    retained: int,
    state_blocks: int,
    checkpoint: int,
) -> VllmPlan:
    """The plan of grouped layers, given as (kind, window, block size, groups, layers per
    group): the blocks each kind of group reserves per request."""
    made = []
    full = []
    sliding = []
    chunked = []
    states = 0
    for kind, window, size, count, layers in groups:
        made.append(VllmGroups(kind, window, size, count, layers))
        if kind == "full":
            full.append((count, size))
        elif kind == "sliding":
            sliding.append((count, (window or 1) - 1 + retained, size))
        elif kind == "recurrent":
            states += count
        else:  # chunked
            chunked.append((count, window or 0, size))
    return VllmPlan(
        block_size, bytes_per_block, tuple(made), group_size, padding, mamba_padding,
        tuple(full), tuple(sliding), states, native, state_blocks, checkpoint, tuple(chunked),
    )  # fmt: skip


def vllm_request_blocks(
    plan: VllmPlan, max_seq_len: int, in_flight: int, mamba_cache_mode: str = "none"
) -> int:
    """Blocks one request at ``max_seq_len`` reserves over all groups."""
    # "align" keeps the running state, the last block's and a prefill checkpoint (3 + K).
    states = plan.speculative_blocks + (
        2 + plan.checkpoint_blocks if mamba_cache_mode == "align" else 1
    )
    total = plan.state_groups * states
    for count, size in plan.full:
        total += count * -(-max_seq_len // size)
    for count, reach, size in plan.sliding:
        # Per-request SWA bound: the window plus everything in flight, +1 boundary block.
        held = min(reach + in_flight, max_seq_len)
        total += count * (-(-held // size) + 1)
    for count, chunk, size in plan.chunked:
        # ChunkedLocalAttentionSpec: one chunk plus everything in flight, no boundary block.
        total += count * -(-min(chunk + in_flight, max_seq_len) // size)
    return total


def vllm_longest_fitting(
    plan: VllmPlan, usable_bytes: int, max_seq_len: int, in_flight: int, mamba_cache_mode: str
) -> int:
    """The longest max_seq_len whose one request fits in ``usable_bytes`` (0 if none)."""
    low, high, best = 1, max_seq_len, 0
    while low <= high:
        mid = (low + high) // 2
        blocks = vllm_request_blocks(plan, mid, in_flight, mamba_cache_mode)
        if blocks * plan.bytes_per_block <= usable_bytes:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best


def vllm_capacity(
    plan: VllmPlan,
    budget_bytes: int,
    max_seq_len: int,
    max_num_tokens: int,
    async_scheduling: bool = True,
    mamba_cache_mode: str = VLLM_MAMBA_CACHE_MODE,
) -> EngineCapacity:
    """vLLM's capacity for a planned model: its logged KV cache size and maximum concurrency."""
    if not (
        type(budget_bytes) is int
        and type(max_seq_len) is int
        and type(max_num_tokens) is int
        and 0 < budget_bytes <= _MAX_INT
        and 0 < max_seq_len <= _MAX_INT
        and 0 < max_num_tokens <= _MAX_INT
    ):
        _positive_ints(
            ("budget_bytes", "max_seq_len", "max_num_tokens"),
            budget_bytes, max_seq_len, max_num_tokens,
        )  # fmt: skip
    _native(max_seq_len, plan.native_max_seq_len)
    in_flight = (2 if async_scheduling else 1) * max_num_tokens  # concurrent batches x N
    blocks = vllm_request_blocks(plan, max_seq_len, in_flight, mamba_cache_mode)
    request_bytes = blocks * plan.bytes_per_block
    # Null block: one block is never handed out, so a request must fit in the rest.
    usable = budget_bytes - plan.bytes_per_block
    if request_bytes > usable:
        longest = vllm_longest_fitting(plan, usable, max_seq_len, in_flight, mamba_cache_mode)
        raise ValueError(
            f"budget_bytes {budget_bytes} cannot hold one request of max_seq_len {max_seq_len} "
            f"in vLLM ({request_bytes} bytes plus the null block); longest that fits: {longest}"
        )
    num_blocks = budget_bytes // plan.bytes_per_block
    concurrency = num_blocks / blocks
    capacity: EngineCapacity = _new(
        EngineCapacity, (int(concurrency * max_seq_len), concurrency, request_bytes, num_blocks)
    )
    return capacity
