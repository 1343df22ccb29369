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
  request (``mamba_cache_mode="none"``; ``"align"`` keeps two).
- Speculative decoding (``ngram``, and drafters whose layers share the pool: ``eagle3``,
  ``mtp``, ``mtp_eagle``): the drafter's layers join the grouping like any other layer, every
  Mamba layer keeps one more state block per draft token, and a multi-module MTP drafter keeps
  K - 1 more tokens below each sliding window. Separate draft models are not modelled.
- Reported capacity: ``max_concurrency = num_blocks / blocks per request at max_seq_len`` (all
  groups together) and ``kv_tokens = int(max_concurrency x max_seq_len)``, the numbers vLLM logs
  as "KV cache size" and "Maximum concurrency".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kvgen.engines._layers import (
    DTYPE_BYTES,
    CachedLayer,
    NotModelled,
    cached_layers,
    stack_layers,
)

if TYPE_CHECKING:
    from kvgen.spec import Family, Model, Speculative

VLLM_VERSION = "0.33.0"
DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
KERNEL_BLOCK_MULTIPLE = 16  # FlashAttention kernel blocks: any multiple of 16 tokens
MLA_HYBRID_BLOCK_MULTIPLE = 128  # MLA decode kernels in a Mamba hybrid
EQUAL_GROUPS_BELOW = 1.5  # largest/smallest kind count under which groups take the largest
MAMBA_CACHE_MODES = ("none", "align")
# Drafters whose layers live in the target's pool (EAGLE-family, MTP); ngram has no layers.
SPECULATIVE_MODES = ("eagle3", "mtp", "mtp_eagle")


class VllmGroups(NamedTuple):
    """One kind of group: ``count`` groups of layers that reserve blocks the same way."""

    attention: str  # "full" (also MLA), "sliding" or "recurrent"
    window: int | None
    block_size: int  # tokens per block of these layers (pages may be unified upwards)
    group_count: int  # how many groups of this kind
    layers: int  # layers in the widest of them


class VllmPlan(NamedTuple):
    """The static part of vLLM's plan: everything that does not depend on the budget."""

    block_size: int  # attention block size after Mamba page unification
    bytes_per_block: int  # one block of the shared pool
    groups: tuple[VllmGroups, ...]
    group_size: int  # layers per group
    padding_layers: int  # pages per block no layer uses (group padding layers)
    mamba_page_padding: int  # bytes added to each Mamba page (Mamba page unification)
    # The groups again, flattened for the per-call arithmetic:
    full: tuple[tuple[int, int], ...]  # (groups, block size)
    sliding: tuple[tuple[int, int, int], ...]  # (groups, window - 1, block size)
    state_groups: int
    native_max_seq_len: int  # the model's context length (vLLM's max_model_len limit)
    speculative_blocks: int  # extra state blocks per request per Mamba group (draft tokens)


def _plan(
    block_size: int,
    bytes_per_block: int,
    groups: list[VllmGroups],
    group_size: int,
    padding: int,
    mamba_padding: int,
    native: int,
    retained: int = 0,
    speculative_blocks: int = 0,
) -> VllmPlan:
    full = tuple((g.group_count, g.block_size) for g in groups if g.attention == "full")
    sliding = tuple(
        (g.group_count, (g.window or 1) - 1 + retained, g.block_size)
        for g in groups
        if g.attention == "sliding"
    )
    states = sum(g.group_count for g in groups if g.attention == "recurrent")
    return VllmPlan(
        block_size,
        bytes_per_block,
        tuple(groups),
        group_size,
        padding,
        mamba_padding,
        full,
        sliding,
        states,
        native,
        speculative_blocks,
    )


def _bytes_per_token(layer: CachedLayer, tp_size: int) -> int:
    # vLLM splits KV heads over TP by floor, never below one head per rank; MLA is not split.
    heads = 1 if layer.attention == "mla" else max(1, layer.kv_heads // tp_size)
    return heads * (layer.head_dim + layer.value_dim) * DTYPE_BYTES[layer.dtype]


def _state_bytes(layer: CachedLayer, tp_size: int) -> int:
    if layer.state_bytes % tp_size:
        raise ValueError(f"recurrent state of {layer.state_bytes} bytes does not split over tp")
    return layer.state_bytes // tp_size


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _unified_block_size(
    layers: tuple[CachedLayer, ...], block_size: int, tp_size: int
) -> tuple[int, int]:
    """Mamba page unification: (attention block size, bytes added to each Mamba page)."""
    states = [_state_bytes(lay, tp_size) for lay in layers if lay.attention == "recurrent"]
    attention = [lay for lay in layers if lay.attention != "recurrent"]
    if not states or not attention:
        return block_size, 0
    state = max(states)
    # The model's one head config sizes the attention page (vLLM reads it from the model).
    per_token = _bytes_per_token(attention[0], tp_size)
    step = max(KERNEL_BLOCK_MULTIPLE, block_size)
    if any(lay.attention == "mla" for lay in attention):
        step = max(step, MLA_HYBRID_BLOCK_MULTIPLE)
    needed = step * _ceil(state, step * per_token)
    needed = KERNEL_BLOCK_MULTIPLE * _ceil(needed, KERNEL_BLOCK_MULTIPLE)
    block_size = max(block_size, needed)
    return block_size, max(0, block_size * per_token - state)


def speculative_layers(
    family: Family, model: Model, profile: Speculative | None
) -> tuple[tuple[CachedLayer, ...], int, int]:
    """(draft layers in the target's pool, retained tokens, Mamba speculative blocks).

    vLLM keeps an EAGLE/MTP drafter's layers in the one KV pool beside the target's; a
    multi-module MTP drafter re-prefills K - 1 tokens below each sliding window, so those stay
    retained; every Mamba layer keeps one state block per draft token (``num_speculative_tokens``).
    """
    if profile is None:
        return (), 0, 0
    k = profile.max_draft_len
    if profile.mode == "ngram":
        return (), 0, k
    if profile.mode not in SPECULATIVE_MODES:
        raise NotModelled(
            f"speculative {profile.name!r} ({profile.mode}) runs a separate draft model; "
            f"vLLM modes modelled: ngram, {', '.join(SPECULATIVE_MODES)}"
        )
    extra = profile.extra_layers
    draft = stack_layers(family, extra, model) if extra is not None else ()
    modules = extra.layers.count if extra is not None else 1
    lookahead = k if profile.mode == "mtp" and min(modules, k) > 1 else 1
    return draft, max(0, lookahead - 1), k


def vllm_plan(
    family: Family,
    model: Model,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
    tp_size: int = 1,
    speculative: Speculative | None = None,
) -> VllmPlan:
    """Group the model's layers and size one block of the pool, as vLLM 0.33.0 does."""
    draft, retained, spec_blocks = speculative_layers(family, model, speculative)
    layers = cached_layers(family, model) + draft
    if not layers:
        raise ValueError(f"{model.name}: no cached layers")
    block_size, mamba_padding = _unified_block_size(layers, block_size, tp_size)
    # A layer's spec: how it reserves blocks, its page at this block size, and its shape
    # (vLLM groups equal specs only: two layers with the same page but other heads differ).
    specs: list[tuple[str, int | None, int, int, tuple[object, ...]]] = []
    for lay in layers:
        shape = (lay.attention, lay.kv_heads, lay.head_dim, lay.value_dim, lay.dtype)
        if lay.attention == "recurrent":
            page = _state_bytes(lay, tp_size) + mamba_padding
            specs.append(("recurrent", None, block_size, page, (lay.state_bytes,)))
        else:
            page = block_size * _bytes_per_token(lay, tp_size)
            kind = "sliding" if lay.attention == "sliding" else "full"
            specs.append((kind, lay.window, block_size, page, shape))
    kinds = {(kind, window) for kind, window, *_rest in specs}
    if len(kinds) == 1:
        # One kind of layer (pages may differ): one group, a block holds every layer's page.
        ((kind, window),) = kinds
        group = VllmGroups(kind, window, block_size, 1, len(specs))
        return _plan(
            block_size,
            sum(page for _k, _w, _b, page, _s in specs),
            [group],
            len(specs),
            0,
            0,
            model.max_seq_len,
            retained,
            spec_blocks,
        )
    # Hybrid: pages are unified to the largest one. A smaller attention page that divides it
    # covers proportionally more tokens per block; otherwise the page is padded.
    largest = max(page for _k, _w, _b, page, _s in specs)
    unified = []
    for kind, window, size, page, shape in specs:
        if kind != "recurrent" and largest % page == 0:
            size = size * (largest // page)
        unified.append((kind, window, size, largest, shape))
    buckets: dict[tuple[str, int | None, int, int, tuple[object, ...]], int] = {}
    for spec in unified:
        buckets[spec] = buckets.get(spec, 0) + 1
    smallest, biggest = min(buckets.values()), max(buckets.values())
    group_size = biggest if biggest < smallest * EQUAL_GROUPS_BELOW else smallest
    groups = []
    padding = 0
    for (kind, window, size, _page, _shape), n in buckets.items():
        count = _ceil(n, group_size)
        groups.append(VllmGroups(kind, window, size, count, _ceil(n, count)))
        padding += count * group_size - n
    widest = max(g.layers for g in groups)
    return _plan(
        block_size,
        widest * largest,
        groups,
        group_size,
        padding,
        mamba_padding,
        model.max_seq_len,
        retained,
        spec_blocks,
    )


def in_flight_tokens(max_num_tokens: int, *, async_scheduling: bool, pp_size: int = 1) -> int:
    """Tokens scheduled but not yet settled: one batch per concurrent step."""
    return (2 if async_scheduling and pp_size == 1 else pp_size) * max_num_tokens


def request_blocks(
    plan: VllmPlan, max_seq_len: int, in_flight: int, mamba_cache_mode: str = "none"
) -> int:
    """Blocks one request at ``max_seq_len`` reserves over all groups."""
    states = (2 if mamba_cache_mode == "align" else 1) + plan.speculative_blocks
    total = plan.state_groups * states
    for count, size in plan.full:
        total += count * -(-max_seq_len // size)
    for count, reach, size in plan.sliding:
        # Per-request SWA bound: the window plus everything in flight, +1 boundary block.
        held = reach + in_flight
        if held > max_seq_len:
            held = max_seq_len
        total += count * (-(-held // size) + 1)
    return total


def longest_fitting(
    plan: VllmPlan, usable_bytes: int, max_seq_len: int, in_flight: int, mamba_cache_mode: str
) -> int:
    """The longest max_seq_len whose one request fits in ``usable_bytes`` (0 if none)."""
    low, high, best = 1, max_seq_len, 0
    while low <= high:
        mid = (low + high) // 2
        if request_blocks(plan, mid, in_flight, mamba_cache_mode) * plan.bytes_per_block <= (
            usable_bytes
        ):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best
