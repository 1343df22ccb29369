"""Issue 18 item 10: every call the generated shims refuse raises the runtime's AllocatorError
tree (never torch's TypeError, StopIteration or IndexError), and leaves the shim unchanged.

The reproducers use two shipped families: llama3 (one full-attention pool) and
llama3_2_vision (a full pool and a cross-attention pool of encoder pages)."""

from __future__ import annotations

import importlib

import pytest
from kvgen.runtime import allocator as rt

from tests.workloads import snapshot_state

HUGE = 10**30  # far past torch's int64 sizes (2**63 - 1 ~ 9.2e18)
PLAIN = dict(max_batch_size=2, max_num_tokens=256, max_seq_len=1024, device="meta")


def _allocator(family: str):
    return importlib.import_module(f"generated.{family}.allocator")


def _state(s: rt.KVCacheShim) -> tuple[object, ...]:
    return snapshot_state(s), s.bytes_in_use(), s.peak_bytes(), s.requests, frozenset(s._freed)


@pytest.mark.parametrize(
    "argument",
    [dict(quota_bytes=HUGE), dict(max_tokens=HUGE), dict(max_tokens=100, reserve_pages=HUGE)],
    ids=["quota_bytes", "max_tokens", "reserve_pages"],
)
def test_sizes_past_64_bits_are_refused_by_name(argument):
    llama3 = _allocator("llama3")
    name = next(key for key, value in argument.items() if value == HUGE)
    with pytest.raises(
        rt.InvalidStepError, match=f"{name} must be <= {2**63 - 1} \\(a 64-bit count\\)"
    ) as info:
        llama3.KVCacheShim("llama3_1_8b", **PLAIN, **argument)
    assert isinstance(info.value, rt.AllocatorError) and isinstance(info.value, ValueError)


def test_pools_past_what_torch_can_address_are_a_pool_allocation_error():
    # max_tokens 2**62 is a valid int64, but the full pool would need 2**62 tokens x 32 layers
    # x (K+V) 2 x 8 heads x 128 x 2 B = 2**62 x 2**17 bytes: past torch's int64 sizes.
    llama3 = _allocator("llama3")
    with pytest.raises(rt.PoolAllocationError, match="over torch's"):
        llama3.KVCacheShim("llama3_1_8b", **PLAIN, max_tokens=2**62)


@pytest.fixture
def vision():
    s = _allocator("llama3_2_vision").KVCacheShim(
        "llama3_2_11b_vision", **PLAIN, max_tokens=4096, encoder_tokens=100
    )
    s.add_request(1)
    s.context_chunk(1, 100)
    return s


def test_block_table_of_the_cross_pool_is_the_requests_encoder_pages(vision):
    # 100 encoder tokens at tokens_per_block 32: ceil(100 / 32) = 4 pages, taken at admission.
    row = vision.block_table(1, "cross")
    assert row.tolist() == [0, 1, 2, 3]
    vision.suspend(1)  # a suspended request keeps its pages, as TensorRT-LLM V2 does
    assert vision.block_table(1, "cross").tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("pool", ["cross", "nope"])
def test_dcp_slot_of_a_pool_without_history_is_an_unknown_name(vision, pool):
    before = _state(vision)
    with pytest.raises(rt.UnknownNameError):
        vision.dcp_slot(1, 0, pool)
    assert _state(vision) == before


def test_dcp_slot_of_a_suspended_request_is_an_invalid_step(vision):
    vision.suspend(1)
    before = _state(vision)
    with pytest.raises(rt.InvalidStepError, match="suspended"):
        vision.dcp_slot(1, 0)
    assert _state(vision) == before


def test_block_table_of_a_batch_slot_state_pool_is_an_unknown_name():
    # Under speculative decoding a recurrent model keeps intermediate states in "state/spec",
    # rows indexed by batch slot, never by request (docs/cost-model.md §8): no block table.
    allocator = _allocator("qwen3_next")
    s = allocator.KVCacheShim("qwen3_next_80b_a3b", speculative="mtp2", **PLAIN, max_tokens=4096)
    s.add_request(1)
    before = _state(s)
    with pytest.raises(rt.UnknownNameError, match="batch slot"):
        s.block_table(1, "state/spec")
    assert _state(s) == before
